package io.kvchecksum.engine.wire;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The sglang-digest section against Python's msgpack ({@code golden/generator/payloads.py}): Python's payloads with the
 * section (beside the checksums, and inline as earlier releases wrote it) decode to the entries of their
 * {@code NAME.sections} and are written back as the current form; payloads with the section written by Java decode in
 * Python to the same entries, and Python packs them back to Java's bytes.
 */
class SglangDigestInteropTest {
    private static final long SEED = 0x5C1A_26L;
    private static final Path DIR = Path.of("src", "test", "resources", "interop");

    static List<String> lines(ChecksumPayload p) {
        List<String> out = new ArrayList<>();
        if (p.section(SglangDigestSection.NAME) instanceof SglangDigestSection s) {
            for (SglangDigestSection.Entry e : s.entries()) {
                out.add("section sglang-digest group " + e.groupId() + " worker " + e.worker() + " signature "
                        + Long.toUnsignedString(e.signature()) + " page_size " + e.pageSize() + " first_token "
                        + e.firstToken() + " num_pages " + e.numPages() + " digest " + e.digest());
            }
        }
        return out;
    }

    @Test
    void pythonsSectionDecodesToItsEntriesAndIsWrittenBackByteForByte() throws IOException {
        // An earlier release's inline form: read, and written back split (checksums, then the sections beside them).
        byte[] bytes = Files.readAllBytes(DIR.resolve("v3-sglang-digest.msgpack"));
        ChecksumPayload p = PayloadCodec.decode(bytes);
        assertEquals(Files.readAllLines(DIR.resolve("v3-sglang-digest.sections")), lines(p));
        assertEquals(3, ((SglangDigestSection) p.section(SglangDigestSection.NAME)).entries().size());
        assertArrayEquals(Files.readAllBytes(DIR.resolve("v3-sglang-digest.no-sections.msgpack")), PayloadCodec.encode(p));
        assertArrayEquals(Files.readAllBytes(DIR.resolve("v3-sglang-digest.known-sections-value.msgpack")),
                PayloadCodec.encodeSections(p));
        // The current form: version-2 checksums with the section beside them, read and written back byte for byte.
        byte[] checksums = Files.readAllBytes(DIR.resolve("v2-sglang-digest-separate.msgpack"));
        byte[] sections = Files.readAllBytes(DIR.resolve("v2-sglang-digest-separate.sections-value.msgpack"));
        ChecksumPayload q = PayloadCodec.decode(checksums, sections);
        assertEquals(2, q.version());
        assertEquals(Files.readAllLines(DIR.resolve("v2-sglang-digest-separate.sections")), lines(q));
        assertArrayEquals(checksums, PayloadCodec.encode(q));
        assertArrayEquals(sections, PayloadCodec.encodeSections(q));
    }

    @Test
    void pythonDecodesJavasSectionToTheSameEntriesAndBytes() throws Exception {
        String python = InteropPython.require();
        Random rnd = new Random(SEED);
        System.out.println("SglangDigestInteropTest seed " + SEED + ", " + python);
        Path dir = Files.createTempDirectory("kvchecksum-sglang-interop");
        List<Path> files = new ArrayList<>();
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < 12; i++) {
            ChecksumPayload base = PayloadInteropTest.random(rnd, 2 + rnd.nextInt(2));
            List<SglangDigestSection.Entry> entries = new ArrayList<>();
            int n = rnd.nextInt(5);
            for (int w = 0; w < n; w++) {
                int page = 1 << rnd.nextInt(8);
                long digest = ((long) rnd.nextInt(65521) << 16) | rnd.nextInt(65521);
                entries.add(new SglangDigestSection.Entry(rnd.nextInt(3), w, rnd.nextLong(), page,
                        (long) page * rnd.nextInt(1 << 20), rnd.nextInt(1 << 20), digest));
            }
            ChecksumPayload p = base.withSection(new SglangDigestSection(entries));
            Path f = dir.resolve("java-sglang-" + i + ".msgpack");
            Files.write(f, PayloadCodec.encode(p));
            Path s = dir.resolve("java-sglang-" + i + ".sections.msgpack");
            Files.write(s, PayloadCodec.encodeSections(p));
            files.add(Path.of(f + "," + s));
            expected.append("file ").append(f.getFileName()).append('\n').append(PayloadInteropTest.text(p, false));
            for (String l : lines(p)) {
                expected.append(l).append('\n');
            }
            expected.append("identical true\n");
        }
        InteropPython.assertDecodes(python, files, expected.toString(), dir);
    }
}
