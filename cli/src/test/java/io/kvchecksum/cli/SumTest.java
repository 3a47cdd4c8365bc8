package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code sum} on every dump golden/generator/dumps.py wrote (each format and layout), compared exactly with the
 * block checksums NumPy computed from the definition; and every malformed dump refused with one line and exit 65.
 */
class SumTest {
    private static final List<String> BACKENDS = List.of("cpu", "reference");

    @AfterEach
    void restoreChunking() {
        ChunkedChecksums.chunkBytes = 64L << 20;
        System.clearProperty("kvchecksum.stderrTty");
    }

    static List<String> args(JsonNode dump, JsonNode c, String backend) {
        JsonNode a = c.get("args");
        List<String> args = new ArrayList<>(List.of("sum", Cli.dump(dump.get("file").asText()), "--layout",
                dump.get("layout").asText(), "--block-size", a.get("block_size").asText(), "--first-block",
                a.get("first_block").asText(), "--head-offset", a.get("head_offset").asText(), "--backend", backend, "--json",
                "--quiet"));
        if (!a.get("num_tokens").isNull()) {
            args.add("--num-tokens");
            args.add(a.get("num_tokens").asText());
        }
        return args;
    }

    @TestFactory
    Stream<DynamicTest> everyDumpEveryCaseMatchesNumpy() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode dump : Cli.manifest().get("dumps")) {
            for (JsonNode c : dump.get("cases")) {
                for (String backend : BACKENDS) {
                    List<String> args = args(dump, c, backend);
                    String name = backend + " · " + dump.get("file").asText() + " · " + String.join(" ", args.subList(2, 11));
                    tests.add(DynamicTest.dynamicTest(name, () -> {
                        Cli.Run r = Cli.run(args.toArray(String[]::new));
                        assertEquals(0, r.code(), r.err());
                        JsonNode j = r.json();
                        assertEquals(Cli.strings(c.get("values")), Cli.strings(j.get("values")), name);
                        assertEquals(c.get("num_tokens").asLong(), j.get("num_tokens").asLong(), name);
                        assertEquals(c.get("first_block").asLong(), j.get("first_block").asLong(), name);
                        assertEquals(c.get("args").get("block_size").asInt(), j.get("block_size").asInt(), name);
                        assertEquals(backend, j.get("backend").asText(), "the backend asked for is the one that ran");
                        assertTrue(r.err().isEmpty(), "--quiet leaves stderr empty: " + r.err());
                    }));
                }
            }
        }
        return tests.stream();
    }

    /** The same values when the request is split into many calls of a few blocks (the progress-bar path). */
    @TestFactory
    Stream<DynamicTest> chunkedCallsGiveTheSameValues() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode dump : Cli.manifest().get("dumps")) {
            JsonNode c = dump.get("cases").get(0);
            tests.add(DynamicTest.dynamicTest("chunked · " + dump.get("file").asText(), () -> {
                ChunkedChecksums.chunkBytes = 1;
                // chunks are cut only where a bar may be drawn: a terminal, no --quiet
                System.setProperty("kvchecksum.stderrTty", "true");
                List<String> args = args(dump, c, "cpu");
                args.remove("--quiet");
                Cli.Run r = Cli.run(args.toArray(String[]::new));
                assertEquals(0, r.code(), r.err());
                assertEquals(Cli.strings(c.get("values")), Cli.strings(r.json().get("values")));
            }));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> malformedInputIsOneLineAndExit65() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode m : Cli.manifest().get("malformed")) {
            String file = m.get("file").asText();
            tests.add(DynamicTest.dynamicTest(file + " · " + m.get("note").asText(), () -> {
                List<String> args = new ArrayList<>(List.of("sum", Cli.dump(file), "--layout", m.get("layout").asText(),
                        "--block-size", m.get("block_size").asText(), "--backend", "cpu", "--json"));
                m.get("args").forEach(a -> args.add(a.asText()));
                Cli.Run r = Cli.run(args.toArray(String[]::new));
                assertEquals(Main.INVALID_INPUT, r.code(), r.out() + r.err());
                assertTrue(r.out().isEmpty(), "no stdout on invalid input: " + r.out());
                String line = r.errorLine();
                assertTrue(line.toLowerCase().contains(m.get("error").asText().toLowerCase()),
                        "'" + line + "' should name " + m.get("error").asText());
            }));
        }
        return tests.stream();
    }

    @Test
    void textOutputListsEveryBlockWithItsTokens() {
        JsonNode dump = Cli.manifest().get("dumps").get(0);
        JsonNode c = dump.get("cases").get(0);
        Cli.Run r = Cli.run("sum", Cli.dump(dump.get("file").asText()), "--block-size", "16", "--backend", "cpu", "-q");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("backend: cpu ("), r.out());
        List<String> values = Cli.strings(c.get("values"));
        for (int i = 0; i < values.size(); i++) {
            assertTrue(r.out().matches("(?s).*\\n\\s+" + i + "\\s+\\d+\\.\\.\\d+\\s+" + values.get(i) + "\\n.*"), r.out());
        }
    }

    @Test
    void missingFileIsInvalidInput() {
        Cli.Run r = Cli.run("sum", Cli.dump("no-such-dump.safetensors"), "--block-size", "16");
        assertEquals(Main.INVALID_INPUT, r.code());
        assertTrue(r.errorLine().contains("no such file"), r.err());
    }

    @Test
    void usageErrorsExit64() {
        String d = Cli.dump("gathered-bf16.safetensors");
        assertEquals(Main.USAGE, Cli.run("sum", d).code(), "--block-size is required");
        assertEquals(Main.USAGE, Cli.run("sum", d, "--block-size", "16", "--no-such-option").code());
        assertEquals(Main.USAGE, Cli.run("sum", d, "--block-size", "x").code());
        assertEquals(Main.USAGE, Cli.run("sum", d, "--block-size", "16", "--backend", "tpu").code());
        assertEquals(Main.USAGE, Cli.run("no-such-command").code());
    }

    @Test
    void unavailableBackendIsReportedWithItsReasonNotReplaced() {
        Cli.Run r = Cli.run("sum", Cli.dump("gathered-bf16.safetensors"), "--block-size", "16", "--backend", "cuda", "--json");
        if (r.code() == 0) {
            assertEquals("cuda", r.json().get("backend").asText(), "what says cuda ran on cuda");
            return;
        }
        assertEquals(Main.USAGE, r.code(), r.err());
        assertTrue(r.out().isEmpty());
        assertTrue(r.errorLine().contains("cuda"), r.err());
    }

    @Test
    void helpDocumentsTheExitCodes() {
        Cli.Run r = Cli.run("--help");
        assertEquals(0, r.code());
        for (String code : List.of("0", "1", "2", "64", "65")) {
            assertTrue(r.out().matches("(?s).*\\n\\s+" + code + "\\s+\\S.*"), "exit code " + code + " in --help:\n" + r.out());
        }
    }
}
