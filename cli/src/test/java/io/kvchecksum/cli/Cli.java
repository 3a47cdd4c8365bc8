package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** Runs the command line as a process would, with captured stdout and stderr. */
final class Cli {
    static final Path DUMPS = Path.of("src/test/resources/dumps");
    static final ObjectMapper JSON = new ObjectMapper();

    record Run(int code, String out, String err, String args) {
        JsonNode json() {
            // stdout must be exactly one JSON object and nothing else
            String text = out.strip();
            assertFalse(text.isEmpty(), "no stdout from " + args + "; stderr: " + err);
            assertEquals(1, text.lines().count(), "stdout is not one line of JSON: " + out);
            return assertDoesNotThrow(() -> JSON.readTree(text), "stdout is not JSON: " + out);
        }

        /** The one-line error an invalid input must produce. */
        String errorLine() {
            List<String> lines = err.lines().filter(l -> !l.isBlank()).toList();
            assertEquals(1, lines.size(), "expected one line on stderr for " + args + ", got:\n" + err);
            assertFalse(err.contains("Exception") || err.contains("\tat "), "stack trace on stderr: " + err);
            return lines.getFirst();
        }
    }

    private Cli() {
    }

    static Run run(String... args) {
        CommandLine cl = Main.commandLine(args); // as main() builds it: only the command named
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = Main.execute(cl, args);
        return new Run(code, out.toString(), err.toString(), String.join(" ", args));
    }

    static String dump(String name) {
        return DUMPS.resolve(name).toString();
    }

    static List<String> strings(JsonNode array) {
        List<String> s = new ArrayList<>();
        array.forEach(n -> s.add(n.asText()));
        return s;
    }

    static JsonNode manifest() {
        return assertDoesNotThrow(() -> JSON.readTree(DUMPS.resolve("dumps.json").toFile()));
    }
}
