package io.kvchecksum.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The wire format against an independent client: Python's msgpack ({@code golden/generator/payloads.py}).
 *
 * <ul>
 *   <li>Python to Java: every committed {@code interop/NAME.msgpack} (written by Python, regenerated and diffed in CI
 *       by {@code golden/generator/check.sh}) decodes to the values of its {@code NAME.txt}, and Java writes back
 *       exactly the bytes of the file {@code NAME.txt} names (the same file, except the version-1-tagged final form,
 *       which Java writes tagged 2).</li>
 *   <li>Java to Python: seeded random payloads encoded by Java are decoded by Python to the same values, and Python
 *       packing the decoded object again gives Java's bytes. Needs python3 with msgpack ({@code PYTHON} picks the
 *       interpreter); skipped with the reason when it is missing, except under {@code CI}, where it fails.</li>
 * </ul>
 */
class PayloadInteropTest {
    private static final long SEED = 0x1A7E_0B01L;
    private static final Path DIR = Path.of("src", "test", "resources", "interop");

    /** The NAME.txt form of a payload, as payloads.py writes it (without the trailing extra lines). */
    static String text(ChecksumPayload p, boolean taggedOne) {
        StringBuilder b = new StringBuilder();
        b.append("tag ").append(p.version() == 1 || taggedOne ? 1 : 2).append('\n');
        b.append("form ").append(p.version() == 1 ? "v1" : taggedOne ? "v1-tagged-final" : "v2").append('\n');
        if (p.tpSize() != null) {
            b.append("tp_size ").append(p.tpSize()).append('\n');
        }
        b.append("num_tokens ").append(p.numTokens()).append('\n');
        for (GroupChecksums g : p.groups()) {
            b.append("group ").append(g.groupId()).append(" fingerprint ").append(Long.toUnsignedString(g.fingerprint()));
            if (g.blockSize() != null) {
                b.append(" block_size ").append(g.blockSize());
            }
            b.append(" start ").append(g.start()).append(" values");
            for (long v : g.values()) {
                b.append(' ').append(Long.toUnsignedString(v));
            }
            b.append('\n');
        }
        return b.toString();
    }

    @TestFactory
    Stream<DynamicTest> pythonPayloadsDecodeToTheirValuesAndReencodeByteForByte() throws IOException {
        List<Path> txt;
        try (Stream<Path> s = Files.list(DIR)) {
            txt = s.filter(p -> p.toString().endsWith(".txt")).sorted().toList();
        }
        assertTrue(txt.size() >= 7, "expected the committed interop cases in " + DIR + ", found " + txt);
        return txt.stream().map(t -> DynamicTest.dynamicTest(t.getFileName().toString(), () -> {
            String name = t.getFileName().toString().replace(".txt", "");
            List<String> lines = Files.readAllLines(t);
            String reencoded = lines.getLast().substring("reencoded ".length());
            String expected = String.join("\n", lines.subList(0, lines.size() - 1)) + "\n";
            byte[] bytes = Files.readAllBytes(DIR.resolve(name + ".msgpack"));
            ChecksumPayload p = PayloadCodec.decode(bytes);
            boolean taggedOne = lines.contains("form v1-tagged-final");
            assertEquals(expected, text(p, taggedOne), name);
            assertArrayEquals(Files.readAllBytes(DIR.resolve(reencoded + ".msgpack")), PayloadCodec.encode(p), name);
        }));
    }

    static ChecksumPayload random(Random rnd, int version) {
        long n = rnd.nextInt(5) == 0 ? (1L << 32) + rnd.nextInt(1000) : rnd.nextInt(3000);
        List<GroupChecksums> groups = new ArrayList<>();
        int count = rnd.nextInt(4);
        for (int i = 0; i < count; i++) {
            int bs = 1 << rnd.nextInt(21);
            long blocks = Math.ceilDiv(n, (long) bs);
            long start = blocks - Math.min(blocks, rnd.nextInt(12));
            long[] v = new long[(int) (blocks - start)];
            for (int k = 0; k < v.length; k++) {
                v[k] = rnd.nextInt(3) == 0 ? rnd.nextInt(200) : rnd.nextLong();
            }
            groups.add(new GroupChecksums(i * (1 + rnd.nextInt(70000)), rnd.nextLong(), version == 1 ? null : bs, start, v));
        }
        return version == 1 ? new ChecksumPayload(1, null, n, groups)
                : ChecksumPayload.of(1 + rnd.nextInt(rnd.nextBoolean() ? 8 : 100000), n, groups);
    }

    @Test
    void pythonDecodesJavasPayloadsToTheSameValuesAndBytes() throws Exception {
        String python = interpreter();
        Path script = Path.of("..", "golden", "generator", "payloads.py");
        boolean ci = System.getenv("CI") != null && !System.getenv("CI").equalsIgnoreCase("false");
        String why = pythonProblem(python);
        if (why != null) {
            if (ci) {
                throw new AssertionError("CI is set but " + why);
            }
            Assumptions.abort(why);
        }
        Random rnd = new Random(SEED);
        System.out.println("PayloadInteropTest seed " + SEED + ", " + python);
        Path dir = Files.createTempDirectory("kvchecksum-interop");
        List<String> cmd = new ArrayList<>(List.of(python, script.toString(), "--decode"));
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < 40; i++) {
            ChecksumPayload p = random(rnd, i % 5 == 0 ? 1 : 2);
            Path f = dir.resolve("java-" + i + ".msgpack");
            Files.write(f, PayloadCodec.encode(p));
            cmd.add(f.toString());
            expected.append("file ").append(f.getFileName()).append('\n').append(text(p, false)).append("identical true\n");
        }
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, proc.exitValue(), out);
        assertEquals(expected.toString(), out);
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.toList()) {
                Files.delete(p);
            }
        }
        Files.delete(dir);
    }

    /** {@code PYTHON} if set, else the first of python3 on PATH and Debian's /usr/bin/python3 with msgpack and numpy. */
    private static String interpreter() {
        String chosen = System.getenv("PYTHON");
        if (chosen != null && !chosen.isBlank()) {
            return chosen;
        }
        for (String c : List.of("python3", "/usr/bin/python3")) {
            if (pythonProblem(c) == null) {
                return c;
            }
        }
        return "python3";
    }

    private static String pythonProblem(String python) {
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
