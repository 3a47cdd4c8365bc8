package io.kvchecksum.jmh;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code jmh/compare.py} on small result files written here in JMH's JSON form: what it flags, what it refuses to
 * compare, and its exit codes. Needs {@code python3} (the build's golden generator needs it too).
 */
class CompareScriptTest {
    private static final Path SCRIPT = Path.of("compare.py").toAbsolutePath();

    @TempDir
    Path dir;

    /** A read bound of 100 ns and one fused pass whose fork measured its own bound at {@code bound} ns, taking 100 ns. */
    private static String file(double bound, boolean sameFork) {
        String read = """
                {"benchmark": "io.kvchecksum.jmh.BoundsBench.read",
                 "params": {"reader": "vector256", "shape": "llama3-8b-tp1", "size": "1MiB"},
                 "primaryMetric": {"score": 100.0, "scoreUnit": "ns/op", "rawData": [[100.0, 100.0]]},
                 "secondaryMetrics": {}}""";
        String secondary = sameFork ? String.format(Locale.ROOT, """
                {"boundNanos": {"score": %1$.1f, "rawData": [[%2$.1f, %2$.1f]]},
                 "boundIterations": {"score": 2.0, "rawData": [[1.0, 1.0]]}}""", 2 * bound, bound) : "{}";
        String pass = """
                {"benchmark": "io.kvchecksum.jmh.ChecksumBench.blockChecksums",
                 "params": {"backend": "cpu", "shape": "llama3-8b-tp1", "size": "1MiB"},
                 "primaryMetric": {"score": 100.0, "scoreUnit": "ns/op", "rawData": [[100.0, 100.0]]},
                 "secondaryMetrics": %s}""".formatted(secondary);
        return "[" + read + ",\n" + pass + "]\n";
    }

    private record Run(int exit, String out) {
    }

    private Run compare(String oldJson, String newJson) throws IOException, InterruptedException {
        Path oldFile = Files.writeString(dir.resolve("old.json"), oldJson, StandardCharsets.UTF_8);
        Path newFile = Files.writeString(dir.resolve("new.json"), newJson, StandardCharsets.UTF_8);
        Process p = new ProcessBuilder(List.of("python3", SCRIPT.toString(), oldFile.toString(), newFile.toString()))
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "compare.py did not finish");
        return new Run(p.exitValue(), out);
    }

    @Test
    void aRatioThatFellBeyondTheThresholdIsARegression() throws Exception {
        Run r = compare(file(80, true), file(60, true));
        assertEquals(1, r.exit(), r.out());
        assertTrue(r.out().contains("0.800  0.600") && r.out().contains("REGRESSION"), r.out());
    }

    @Test
    void anUnchangedRatioPasses() throws Exception {
        Run r = compare(file(80, true), file(78, true));
        assertEquals(0, r.exit(), r.out());
        assertFalse(r.out().contains("REGRESSION"), r.out());
    }

    @Test
    void aBaselineFasterThanItsBoundIsNotComparedAgainst() throws Exception {
        Run r = compare(file(108, true), file(88, true));
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("not compared: FAILED MEASUREMENT in the old file"), r.out());
        assertFalse(r.out().contains("REGRESSION"), r.out());
        assertTrue(r.out().contains("0 compared"), r.out());
    }

    @Test
    void aNewRunFasterThanItsBoundFails() throws Exception {
        Run r = compare(file(80, true), file(105, true));
        assertEquals(1, r.exit(), r.out());
        assertTrue(r.out().contains("FAILED MEASUREMENT in the new file"), r.out());
    }

    @Test
    void filesWithDifferentBoundsAreNotComparable() throws Exception {
        Run r = compare(file(80, false), file(40, true));
        assertEquals(2, r.exit(), r.out());
        assertTrue(r.out().contains("NOT COMPARABLE"), r.out());
        assertFalse(r.out().contains("REGRESSION"), r.out());
    }

    /** A v5 file: the pass's best sample {@code pass} ns against the bound's best sample {@code bound} ns, one fork. */
    private static String interleaved(double bound, double pass) {
        String read = """
                {"benchmark": "io.kvchecksum.jmh.BoundsBench.read",
                 "params": {"reader": "vector256", "shape": "llama3-8b-tp1", "size": "1MiB"},
                 "primaryMetric": {"score": 100.0, "scoreUnit": "ns/op", "rawData": [[100.0, 100.0]]},
                 "secondaryMetrics": {}}""";
        // the pass's mean (500 ns) is far from its best sample: a v5 ratio must use the best on both sides
        String pass5 = String.format(Locale.ROOT, """
                {"benchmark": "io.kvchecksum.jmh.ChecksumBench.blockChecksums",
                 "params": {"backend": "cpu", "shape": "llama3-8b-tp1", "size": "1MiB"},
                 "primaryMetric": {"score": 500.0, "scoreUnit": "ns/op", "rawData": [[500.0, 500.0]]},
                 "secondaryMetrics": {"boundBestNanos": {"score": %1$.1f, "rawData": [[%2$.1f, %1$.1f]]},
                                      "passBestNanos": {"score": %3$.1f, "rawData": [[%4$.1f, %3$.1f]]}}}""",
                bound, bound + 7, pass, pass + 9);
        return "[" + read + ",\n" + pass5 + "]\n";
    }

    @Test
    void interleavedFilesCompareBestAgainstBestAndFlagABrokenBound() throws Exception {
        Run same = compare(interleaved(80, 100), interleaved(80, 100));
        assertEquals(0, same.exit(), same.out());
        assertTrue(same.out().contains("v5"), same.out());
        Run fell = compare(interleaved(80, 100), interleaved(60, 100));
        assertEquals(1, fell.exit(), fell.out());
        assertTrue(fell.out().contains("REGRESSION"), fell.out());
        Run broken = compare(interleaved(80, 100), interleaved(110, 100));
        assertEquals(1, broken.exit(), broken.out());
        Run mixed = compare(file(80, true), interleaved(80, 100));
        assertEquals(2, mixed.exit(), mixed.out());
        assertTrue(mixed.out().contains("NOT COMPARABLE"), mixed.out());
    }
}
