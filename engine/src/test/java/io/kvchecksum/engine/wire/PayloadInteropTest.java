package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
        assertTrue(txt.size() >= 14, "expected the committed interop cases in " + DIR + ", found " + txt);
        return txt.stream().map(t -> DynamicTest.dynamicTest(t.getFileName().toString(), () -> {
            String name = t.getFileName().toString().replace(".txt", "");
            List<String> lines = Files.readAllLines(t);
            // The trailing lines name files: "input_sections", "reencoded_sections", then "reencoded".
            Map<String, String> files = new HashMap<>();
            int values = lines.size();
            while (values > 0 && lines.get(values - 1).matches("(input_sections|reencoded_sections|reencoded) .*")) {
                String[] kv = lines.get(--values).split(" ", 2);
                files.put(kv[0], kv[1]);
            }
            String expected = String.join("\n", lines.subList(0, values)) + "\n";
            byte[] bytes = Files.readAllBytes(DIR.resolve(name + ".msgpack"));
            byte[] sections = files.containsKey("input_sections")
                    ? Files.readAllBytes(DIR.resolve(files.get("input_sections") + ".msgpack")) : null;
            ChecksumPayload p = PayloadCodec.decode(bytes, sections);
            boolean taggedOne = lines.contains("form v1-tagged-final");
            assertEquals(expected, text(p, taggedOne), name);
            assertArrayEquals(Files.readAllBytes(DIR.resolve(files.get("reencoded") + ".msgpack")), PayloadCodec.encode(p), name);
            // The sections Java knows are written back beside the checksums, never inline; unknown ones are dropped.
            byte[] expectedSections = files.containsKey("reencoded_sections")
                    ? Files.readAllBytes(DIR.resolve(files.get("reencoded_sections") + ".msgpack")) : null;
            assertArrayEquals(expectedSections, PayloadCodec.encodeSections(p), name + " sections");
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

    /** The text {@code seed003_reader.py} prints for a standard-mode payload, from the payload's own values. */
    static String seedText(ChecksumPayload p) {
        StringBuilder b = new StringBuilder("version ").append(p.version()).append(" tp_size ").append(p.tpSize())
                .append(" num_tokens ").append(p.numTokens()).append('\n');
        for (GroupChecksums g : p.groups()) {
            b.append("group ").append(g.groupId()).append(" fingerprint ").append(Long.toUnsignedString(g.fingerprint()))
                    .append(" block_size ").append(g.blockSize()).append(" start ").append(g.start()).append(" values");
            for (long v : g.values()) {
                b.append(' ').append(Long.toUnsignedString(v));
            }
            b.append('\n');
        }
        return b.toString();
    }

    /** {@code kv_transfer_params} as a proxy forwards it: the payload's entries among the connector's own keys. */
    static String params(WirePayload w, int request) {
        StringBuilder b = new StringBuilder("{\"do_remote_prefill\": true, \"remote_block_ids\": [1, 2, 3], ");
        b.append("\"remote_request_id\": \"req-").append(request).append('"');
        w.params().forEach((k, v) -> b.append(", \"").append(k).append("\": \"").append(v).append('"'));
        return b.append('}').toString();
    }

    /**
     * Seed 003's plain reader ({@code golden/generator/seed003_reader.py}: {@code version, tp_size, num_tokens, groups
     * = msgpack.unpackb(...)}, no version 3, no sections) reads the checksums of standard-mode loads that carry every
     * known section as version 2, with their values; the earlier inline form is what it could not read.
     */
    @Test
    void seedThreesPlainReaderReadsTheChecksumsOfALoadWithSections() throws Exception {
        String python = InteropPython.require();
        Random rnd = new Random(SEED + 3);
        System.out.println("PayloadInteropTest seed-003 reader seed " + (SEED + 3) + ", " + python);
        Path dir = Files.createTempDirectory("kvchecksum-seed003");
        List<Path> files = new ArrayList<>();
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < 12; i++) {
            ChecksumPayload p = random(rnd, 2);
            if (i % 4 != 3) {
                p = p.withSection(new StateDigestsSection("standard", Map.of("l0.ssm.r" + i, rnd.nextLong())))
                        .withSection(new SglangDigestSection(List.of(new SglangDigestSection.Entry(0, 0, rnd.nextLong(), 16,
                                0, 1 + rnd.nextInt(9), rnd.nextInt(65521)))))
                        .withSection(new PageProbeSection(16, 64, 0, 20, new int[] {rnd.nextInt(), 2}, new int[] {3, -1}));
            }
            assertEquals(2, p.version(), "sections leave a standard-mode payload version 2");
            WirePayload w = WirePayload.of(p);
            assertEquals(i % 4 != 3, w.sections() != null);
            Path f = dir.resolve("params-" + i + ".json");
            Files.writeString(f, params(w, i));
            files.add(f);
            expected.append("file ").append(f.getFileName()).append('\n').append(seedText(p));
        }
        // The earlier release's form, sections inline in version 3 (written by Python's msgpack): not readable there.
        byte[] inline = Files.readAllBytes(DIR.resolve("v3-sglang-digest.msgpack"));
        Path f = dir.resolve("params-inline.json");
        Files.writeString(f, "{\"kv_checksums\": \"" + Base64.getEncoder().encodeToString(inline) + "\"}");
        files.add(f);
        expected.append("file params-inline.json\nerror ValueError: too many values to unpack (expected 4)\n");
        InteropPython.assertSeedReaderPrints(python, files, expected.toString(), dir);
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
