package io.kvchecksum.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.readme.ReadmeBlocks.Block;
import io.kvchecksum.readme.ReadmeBlocks.Compiled;
import io.kvchecksum.readme.ReadmeBlocks.Preamble;

import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** The extractor and compiler of {@link ReadmeJavaTest} on small made-up Markdown files: they can fail. */
class ReadmeBlocksTest {
    private static final List<String> MARKDOWN = List.of(
            "# Title",                         // 1
            "```java",                         // 2
            "int x = 1;",                      // 3
            "```",                             // 4
            "## Section",                      // 5
            "```",                             // 6
            "# not a heading, inside a fence", // 7
            "```",                             // 8
            "```xml",                          // 9
            "<a/>",                            // 10
            "```",                             // 11
            "```java",                         // 12
            "import java.util.List;",          // 13
            "",                                // 14
            "List<String> names = List.of(name);",   // 15
            "int broken = names.size() +;",    // 16
            "```",                             // 17
            "```java",                         // 18
            "long y = missing;",               // 19
            "```");                            // 20

    @Test
    void blocksAreFoundWithTheirHeadingOrdinalAndLine() {
        List<Block> blocks = ReadmeBlocks.extract(MARKDOWN);
        assertEquals(List.of("Title #1", "Section #1", "Section #2"), blocks.stream().map(Block::key).toList());
        assertEquals(List.of(3, 13, 19), blocks.stream().map(Block::line).toList());
        assertEquals(List.of("import java.util.List;", "", "List<String> names = List.of(name);", "int broken = names.size() +;"),
                blocks.get(1).code());
    }

    @Test
    void anUnclosedBlockIsAnError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ReadmeBlocks.extract(List.of("# T", "```java", "int x;")));
        assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    }

    @Test
    void aBrokenBlockFailsWithItsLineAndABlockWithoutPreambleFailsByName() {
        List<Block> blocks = ReadmeBlocks.extract(MARKDOWN);
        Compiled c = ReadmeBlocks.compile(blocks, Map.of(
                "Title #1", Preamble.declaring(""),
                "Section #1", Preamble.declaring("String name = $arg(\"name\");")),
                ReadmeJavaTest.publishedClasspath());
        String all = String.join("\n", c.errors());
        assertTrue(c.errors().get(0).startsWith("README line 19 (Section #2): no preamble"), all);
        assertTrue(c.errors().stream().skip(1).allMatch(e -> e.startsWith("README line 16 (Section #1): ")), all);
        assertTrue(all.contains("README line 16 (Section #1): illegal start of expression"), all);
    }

    @Test
    void aFreeVariableWithoutDeclarationFailsAtItsLine() {
        List<Block> blocks = ReadmeBlocks.extract(MARKDOWN);
        Compiled c = ReadmeBlocks.compile(List.of(blocks.get(2)), Map.of("Section #2", Preamble.declaring("")),
                ReadmeJavaTest.publishedClasspath());
        assertEquals(1, c.errors().size(), String.join("\n", c.errors()));
        assertTrue(c.errors().get(0).startsWith("README line 19 (Section #2): cannot find symbol"), c.errors().get(0));
    }

    @Test
    void aCompiledBlockRunsWithItsArguments() throws Throwable {
        List<Block> blocks = ReadmeBlocks.extract(List.of("# T", "```java", "int twice = 2 * n;", "```"));
        Compiled c = ReadmeBlocks.compile(blocks, Map.of("T #1",
                Preamble.declaring("int n = $arg(\"n\");").returning("Map.of(\"twice\", twice)")),
                ReadmeJavaTest.publishedClasspath());
        assertEquals(List.of(), c.errors());
        assertEquals(Map.of("twice", 42), c.run(blocks.get(0), Map.of("n", 21)));
    }

    @Test
    void theReadmeIsTheRepositorysOwn() throws Exception {
        // the file the README test reads is the one at the project's root, not a copy in this module
        assertEquals("architecture", java.nio.file.Path.of("").toAbsolutePath().getFileName().toString());
        assertTrue(Files.readString(ReadmeBlocks.readme()).startsWith("# kvchecksum\n"));
        assertEquals(ReadmeBlocks.readme().getParent(), java.nio.file.Path.of("").toAbsolutePath().getParent());
    }
}
