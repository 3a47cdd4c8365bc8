package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

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
        b.append("tag ").append(p.version() == 1 || taggedOne ? 1 : p.version()).append('\n');
        b.append("form ").append(p.version() == 1 ? "v1" : taggedOne ? "v1-tagged-final" : "v" + p.version()).append('\n');
        if (p.tpSize() != null) {
            b.append("tp_size ").append(p.tpSize()).append('\n');
        }
        b.append("num_tokens ").append(p.numTokens()).append('\n');
        if (p.version() == 3) {
            b.append("mode ").append(p.mode()).append('\n');
        }
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
        assertTrue(txt.size() >= 11, "expected the committed interop cases in " + DIR + ", found " + txt);
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
        int tp = 1 + rnd.nextInt(rnd.nextBoolean() ? 8 : 100000);
        return version == 1 ? new ChecksumPayload(1, null, n, groups)
                : version == 3 ? ChecksumPayload.of(io.kvchecksum.ChecksumMode.MIXED, tp, n, groups)
                : ChecksumPayload.of(tp, n, groups);
    }

    @Test
    void pythonDecodesJavasPayloadsToTheSameValuesAndBytes() throws Exception {
        String python = InteropPython.require();
        Random rnd = new Random(SEED);
        System.out.println("PayloadInteropTest seed " + SEED + ", " + python);
        Path dir = Files.createTempDirectory("kvchecksum-interop");
        List<Path> files = new ArrayList<>();
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < 40; i++) {
            ChecksumPayload p = random(rnd, i % 5 == 0 ? 1 : i % 5 == 1 ? 3 : 2);
            Path f = dir.resolve("java-" + i + ".msgpack");
            Files.write(f, PayloadCodec.encode(p));
            files.add(f);
            expected.append("file ").append(f.getFileName()).append('\n').append(text(p, false)).append("identical true\n");
        }
        InteropPython.assertDecodes(python, files, expected.toString(), dir);
    }
}
