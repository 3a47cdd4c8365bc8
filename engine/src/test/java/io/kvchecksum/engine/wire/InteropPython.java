package io.kvchecksum.engine.wire;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Python side of the wire-format interop tests: {@code golden/generator/payloads.py} with Python's msgpack, and
 * {@code golden/generator/seed003_reader.py}, a reader of seed 003's final form only.
 */
final class InteropPython {
    private static final Path SCRIPT = Path.of("..", "golden", "generator", "payloads.py");
    private static final Path SEED_READER = Path.of("..", "golden", "generator", "seed003_reader.py");

    private InteropPython() {
    }

    /**
     * {@code PYTHON} if set, else the first of python3 on PATH and Debian's /usr/bin/python3 that imports msgpack and
     * numpy. Without one the test is skipped with the reason, except under {@code CI}, where it fails.
     */
    static String require() {
        String python = interpreter();
        String why = problem(python);
        if (why != null) {
            if (System.getenv("CI") != null && !System.getenv("CI").equalsIgnoreCase("false")) {
                throw new AssertionError("CI is set but " + why);
            }
            Assumptions.abort(why);
        }
        return python;
    }

    /**
     * Runs {@code payloads.py --decode} on {@code files} and asserts that it succeeds and prints exactly
     * {@code expected}; then deletes {@code dir}, where the files were written.
     */
    static void assertDecodes(String python, List<Path> files, String expected, Path dir) throws Exception {
        assertPrints(python, List.of(SCRIPT.toString(), "--decode"), files.stream().map(Path::toString).toList(), expected, dir);
    }

    /**
     * Runs {@code golden/generator/seed003_reader.py} (seed 003's plain reader of {@code kv_transfer_params}) on
     * {@code files} and asserts that it prints exactly {@code expected}; then deletes {@code dir}.
     */
    static void assertSeedReaderPrints(String python, List<Path> files, String expected, Path dir) throws Exception {
        assertPrints(python, List.of(SEED_READER.toString()), files.stream().map(Path::toString).toList(), expected, dir);
    }

    private static void assertPrints(String python, List<String> script, List<String> args, String expected, Path dir)
            throws Exception {
        List<String> cmd = new ArrayList<>(List.of(python));
        cmd.addAll(script);
        cmd.addAll(args);
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, proc.exitValue(), out);
        assertEquals(expected, out);
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.toList()) {
                Files.delete(p);
            }
        }
        Files.delete(dir);
    }

    private static String interpreter() {
        String chosen = System.getenv("PYTHON");
        if (chosen != null && !chosen.isBlank()) {
            return chosen;
        }
        for (String c : List.of("python3", "/usr/bin/python3")) {
            if (problem(c) == null) {
                return c;
            }
        }
        return "python3";
    }

    private static String problem(String python) {
        try {
            Process p = new ProcessBuilder(python, "-c", "import msgpack, numpy").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                return python + " cannot import msgpack and numpy (Debian: python3-msgpack python3-numpy; PYTHON= picks "
                        + "the interpreter): " + out.strip();
            }
            return null;
        } catch (IOException | InterruptedException e) {
            return "cannot run " + python + ": " + e.getMessage();
        }
    }
}
