package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code diff} on the dump pairs dumps.py wrote: the same request in two layouts (identical), and with two changes
 * at known layers, heads, tokens and bytes, which the diff must localize exactly.
 */
class DiffTest {

    @TestFactory
    Stream<DynamicTest> diffLocalizesTheKnownChanges() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode d : Cli.manifest().get("diffs")) {
            String name = d.get("a").asText() + " vs " + d.get("b").asText();
            tests.add(DynamicTest.dynamicTest(name, () -> {
                Cli.Run r = Cli.run("diff", Cli.dump(d.get("a").asText()), Cli.dump(d.get("b").asText()), "--layout-a",
                        d.get("layout_a").asText(), "--layout-b", d.get("layout_b").asText(), "--block-size",
                        d.get("block_size").asText(), "--backend", "cpu", "--json", "-q");
                JsonNode expected = d.get("differences");
                assertEquals(expected.isEmpty() ? 0 : 1, r.code(), r.err());
                JsonNode j = r.json();
                assertEquals(Cli.strings(d.get("values_a")), Cli.strings(j.get("values_a")));
                assertEquals(Cli.strings(d.get("values_b")), Cli.strings(j.get("values_b")));
                assertEquals(expected.isEmpty(), j.get("identical").asBoolean());
                JsonNode got = j.get("differences");
                assertEquals(expected.size(), got.size(), got.toString());
                for (int i = 0; i < expected.size(); i++) {
                    JsonNode e = expected.get(i);
                    JsonNode g = got.get(i);
                    for (String f : List.of("block", "layer", "head", "token_first", "token_last", "k_bytes", "v_bytes")) {
                        assertEquals(e.get(f), g.get(f), f + " of difference " + i + ": " + g);
                    }
                }
                assertEquals(0, j.get("bytes_differ_but_checksums_agree").size());
            }));
        }
        return tests.stream();
    }

    @Test
    void textNamesBlockLayerHeadTokensAndBytes() {
        Cli.Run r = Cli.run("diff", Cli.dump("diff-a-gathered.safetensors"), Cli.dump("diff-b-flash.safetensors"),
                "--layout-b", "vllm-flash", "--backend", "cpu", "-q");
        assertEquals(1, r.code(), r.err());
        assertTrue(r.out().contains("block 1 (tokens 16..31)"), r.out());
        assertTrue(r.out().contains("layer 2 head 1 tokens 20..22: K bytes 10..13"), r.out());
        assertTrue(r.out().contains("layer 0 head 0 tokens 40..40: V bytes 100..100"), r.out());
        assertTrue(r.out().contains("2 of 3 blocks differ"), r.out());
    }

    @Test
    void dumpsOfDifferentModelsAreInvalidInput() {
        Cli.Run r = Cli.run("diff", Cli.dump("diff-a-gathered.safetensors"), Cli.dump("gathered-f32.npz"), "--backend", "cpu");
        assertEquals(Main.INVALID_INPUT, r.code(), r.out() + r.err());
        assertTrue(r.errorLine().contains("layers"), r.err());
    }
}
