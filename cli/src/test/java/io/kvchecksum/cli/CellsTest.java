package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Index-K caches ({@code layers.<L>.index_k}), pieces straddling K and V, and {@code --pad-cells}, through
 * {@code sum}, {@code verify} and {@code diff}. Expected values are NumPy's ({@code golden/generator/dumps_cells.py},
 * {@code dumps-cells/cells.json}); payloads are built from them, never from the code under test.
 */
class CellsTest {
    static final Path DUMPS = Path.of("src/test/resources/dumps-cells");
    private static final long FP = 0x9E3779B97F4A7C15L;

    private static JsonNode manifest() {
        return assertDoesNotThrow(() -> Cli.JSON.readTree(DUMPS.resolve("cells.json").toFile()));
    }

    private static JsonNode dump(String file) {
        for (JsonNode d : manifest().get("dumps")) {
            if (d.get("file").asText().equals(file)) {
                return d;
            }
        }
        throw new AssertionError("no dump " + file + " in cells.json");
    }

    private static String path(String file) {
        return DUMPS.resolve(file).toString();
    }

    private static List<String> withArgs(List<String> base, JsonNode c) {
        List<String> a = new ArrayList<>(base);
        a.addAll(Cli.strings(c.get("args")));
        return a;
    }

    private static String payload(JsonNode values, int blockSize, long numTokens) {
        long[] v = Cli.strings(values).stream().mapToLong(Long::parseUnsignedLong).toArray();
        return PayloadCodec.encodeBase64(ChecksumPayload.of(1, numTokens, List.of(new GroupChecksums(0, FP, blockSize, 0, v))));
    }

    @TestFactory
    Stream<DynamicTest> sumGivesNumPysValuesForEveryCase() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode d : manifest().get("dumps")) {
            for (JsonNode c : d.get("cases")) {
                List<String> args = withArgs(List.of("sum", path(d.get("file").asText()), "--layout", d.get("layout").asText(),
                        "--block-size", c.get("block_size").asText(), "--backend", "cpu", "--json", "-q"), c);
                tests.add(DynamicTest.dynamicTest("sum · " + d.get("file").asText() + " " + c.get("args"), () -> {
                    Cli.Run r = Cli.run(args.toArray(String[]::new));
                    assertEquals(Main.OK, r.code(), r.out() + r.err());
                    assertEquals(Cli.strings(c.get("values")), Cli.strings(r.json().get("values")), r.args());
                }));
            }
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> withoutPadCellsTheGroupIsSkippedWithTheReason() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode d : manifest().get("dumps")) {
            if (!d.get("skipped_without_padding").asBoolean()) {
                continue;
            }
            String file = d.get("file").asText();
            String layout = d.get("layout").asText();
            JsonNode c = d.get("cases").get(0);
            tests.add(DynamicTest.dynamicTest("skipped · " + file, () -> {
                Cli.Run text = Cli.run("sum", path(file), "--layout", layout, "--block-size", c.get("block_size").asText(), "-q");
                assertEquals(Main.UNVERIFIED, text.code(), text.out() + text.err());
                assertTrue(text.out().contains("skipped: ") && text.out().contains("not whole 8-byte pieces")
                        && text.out().contains("--pad-cells"), text.out());
                assertTrue(text.err().isBlank(), text.err());

                Cli.Run json = Cli.run("sum", path(file), "--layout", layout, "--block-size", c.get("block_size").asText(),
                        "--json", "-q");
                assertEquals(Main.UNVERIFIED, json.code());
                assertTrue(json.json().get("skipped").asText().contains("not whole 8-byte pieces"), json.out());
                assertEquals(0, json.json().get("values").size());

                // verify: the producer padded (NumPy's padded values), this side did not: unverified, never a mismatch
                String p = payload(c.get("values"), c.get("block_size").asInt(), c.get("num_tokens").asLong());
                Cli.Run v = Cli.run("verify", path(file), "--layout", layout, "--expected", p, "--fingerprint",
                        Long.toUnsignedString(FP), "--json", "-q");
                assertEquals(Main.UNVERIFIED, v.code(), v.out() + v.err());
                JsonNode j = v.json();
                assertEquals("UNVERIFIED", j.get("status").asText());
                assertEquals("ONE_SIDE_ONLY", j.get("groups").get(0).get("reason").asText(), v.out());
                assertTrue(j.get("skipped").asText().contains("not whole 8-byte pieces"), v.out());

                Cli.Run vt = Cli.run("verify", path(file), "--layout", layout, "--expected", p, "--fingerprint",
                        Long.toUnsignedString(FP), "-q");
                assertEquals(Main.UNVERIFIED, vt.code());
                assertTrue(vt.out().contains("group 0 skipped: ") && vt.out().contains("group 0: UNVERIFIED ONE_SIDE_ONLY"),
                        vt.out());

                Cli.Run diff = Cli.run("diff", path(file), path(file), "--layout", layout, "-q");
                assertEquals(Main.UNVERIFIED, diff.code(), diff.out() + diff.err());
                assertTrue(diff.out().startsWith("skipped: A "), diff.out());
            }));
        }
        return tests.stream();
    }

    /** The check: MATCH, then MISMATCH at the block holding one flipped bit of the index-K buffer. */
    @TestFactory
    Stream<DynamicTest> verifyMatchesAndFindsTheFlippedIndexKBit() {
        List<DynamicTest> tests = new ArrayList<>();
        for (String file : List.of("indexk-bf16.safetensors", "indexk-fp8-paged.safetensors")) {
            JsonNode d = dump(file);
            JsonNode c = d.get("cases").get(0);
            JsonNode f = d.get("flipped");
            String p = payload(c.get("values"), c.get("block_size").asInt(), c.get("num_tokens").asLong());
            tests.add(DynamicTest.dynamicTest("verify · " + file, () -> {
                List<String> base = withArgs(List.of("verify", path(file), "--layout", d.get("layout").asText(), "--expected", p,
                        "--fingerprint", Long.toUnsignedString(FP), "--json", "-q"), c);
                Cli.Run ok = Cli.run(base.toArray(String[]::new));
                assertEquals(Main.OK, ok.code(), ok.out() + ok.err());
                assertEquals("MATCH", ok.json().get("status").asText());
                assertNull(ok.json().get("skipped").textValue());

                base.set(1, path(f.get("file").asText()));
                Cli.Run bad = Cli.run(base.toArray(String[]::new));
                assertEquals(Main.MISMATCH, bad.code(), bad.out() + bad.err());
                JsonNode g = bad.json().get("groups").get(0);
                assertEquals("MISMATCH", g.get("status").asText());
                assertEquals(1, g.get("mismatched_blocks").size(), bad.out());
                assertEquals(f.get("block").asLong(), g.get("mismatched_blocks").get(0).asLong(), bad.out());

                // and the flipped dump's own checksums are NumPy's
                Cli.Run sum = Cli.run(withArgs(List.of("sum", path(f.get("file").asText()), "--layout", d.get("layout").asText(),
                        "--block-size", "16", "--json", "-q"), c).toArray(String[]::new));
                assertEquals(Cli.strings(f.get("values")), Cli.strings(sum.json().get("values")));
            }));
        }
        return tests.stream();
    }

    @Test
    void diffLocalizesTheIndexKChange() {
        Cli.Run r = Cli.run("diff", path("indexk-bf16.safetensors"), path("indexk-bf16-flipped.safetensors"), "--block-size",
                "16", "-q");
        assertEquals(Main.MISMATCH, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("block 1 (tokens 16..31)"), r.out());
        assertTrue(r.out().contains("layer 5 head 2 tokens 21..21: K bytes 77..77"), r.out());
        assertTrue(r.out().contains("layers.5.index_k"), r.out());

        Cli.Run padded = Cli.run("diff", path("indexk-fp8-paged.safetensors"), path("indexk-fp8-paged-flipped.safetensors"),
                "--layout", "vllm-mla", "--block-size", "16", "--pad-cells", "--json", "-q");
        assertEquals(Main.MISMATCH, padded.code(), padded.out() + padded.err());
        assertEquals(List.of("2"), Cli.strings(padded.json().get("blocks_differing")));
    }

    @Test
    void theDumpLineNamesTheIndexKCache() {
        Cli.Run r = Cli.run("sum", path("indexk-fp8-paged.safetensors"), "--layout", "vllm-mla", "--block-size", "16",
                "--pad-cells", "-q");
        assertEquals(Main.OK, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("index-K 132-byte cells of U8 (padded)"), r.out());
        Cli.Run bad = Cli.run("sum", path("indexk-bf16.safetensors"), "--block-size", "16", "--index-k-head", "-1", "-q");
        assertEquals(Main.USAGE, bad.code(), bad.out() + bad.err());
        assertTrue(bad.errorLine().contains("--index-k-head -1"), bad.err());
    }
}
