package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

/**
 * A seeded mutation fuzzer for the decoders, bounded in time: bit flips, byte replacements, truncations, insertions,
 * duplicated spans and tampered length fields applied to valid payloads, and to valid sections values beside valid
 * checksums. Any outcome but a valid payload or
 * {@link MalformedPayloadException} fails, printing the input as hex: add it to {@code fuzz-regressions.txt}.
 */
class PayloadFuzzTest {
    private static final long SEED = Long.getLong("kvchecksum.fuzz.seed", 0xF022_2026L);
    private static final long BUDGET_MS = Long.getLong("kvchecksum.fuzz.ms", 8_000L);
    private static final long SECTIONS_BUDGET_MS = BUDGET_MS / 2;

    @Test
    void survivesMutatedPayloads() {
        Random rnd = new Random(SEED);
        List<byte[]> corpus = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            corpus.add(PayloadCodec.encode(PayloadCodecTest.randomPayload(rnd)));
        }
        MutationLoop.run("PayloadFuzzTest", SEED, corpus, rnd, BUDGET_MS, 1000, PayloadFuzzTest::mutate,
                PayloadFuzzTest::decodeSafely);
    }

    /** A random sections value's payload: the known sections, each present or not, with random contents. */
    static ChecksumPayload withRandomSections(ChecksumPayload p, Random rnd) {
        if (rnd.nextBoolean()) {
            Map<String, Long> d = new TreeMap<>();
            for (int i = rnd.nextInt(4); i > 0; i--) {
                d.put("l" + rnd.nextInt(40) + ".ssm.r" + rnd.nextInt(4), rnd.nextLong());
            }
            p = p.withSection(new StateDigestsSection(rnd.nextBoolean() ? "standard" : "mixed", d));
        }
        if (rnd.nextBoolean()) {
            List<SglangDigestSection.Entry> entries = new ArrayList<>();
            for (int w = rnd.nextInt(3); w > 0; w--) {
                entries.add(new SglangDigestSection.Entry(w, w, rnd.nextLong(), 16, 16L * rnd.nextInt(100), rnd.nextInt(50),
                        ((long) rnd.nextInt(65521) << 16) | rnd.nextInt(65521)));
            }
            p = p.withSection(new SglangDigestSection(entries));
        }
        if (rnd.nextBoolean()) {
            int pages = rnd.nextInt(4);
            int[] heads = rnd.ints(pages).toArray();
            p = p.withSection(new PageProbeSection(16, 64, 0, 16L * pages, heads, rnd.ints(pages).toArray()));
        }
        return p;
    }

    /** The sections value decoder, in the same way: mutated sections values beside valid checksums. */
    @Test
    void survivesMutatedSectionsValues() {
        Random rnd = new Random(SEED + 1);
        List<byte[][]> corpus = new ArrayList<>();
        while (corpus.size() < 64) {
            // Small checksums: the time goes to the sections value.
            ChecksumPayload p = ChecksumPayload.of(rnd.nextBoolean() ? io.kvchecksum.ChecksumMode.STANDARD
                    : io.kvchecksum.ChecksumMode.MIXED, 1 + rnd.nextInt(8), 16, List.of(new GroupChecksums(0, rnd.nextLong(),
                    16, 0, new long[] {rnd.nextLong()})));
            p = withRandomSections(p, rnd);
            if (!p.sections().isEmpty()) {
                corpus.add(new byte[][] {PayloadCodec.encode(p), PayloadCodec.encodeSections(p)});
            }
        }
        MutationLoop.run("PayloadFuzzTest sections", SEED + 1, corpus, rnd, SECTIONS_BUDGET_MS, 500,
                (one, r) -> new byte[][] {one[0], mutate(one[1], r)}, one -> decodeSafely(one[0], one[1]));
    }

    @Test
    void regressionInputs() throws IOException {
        try (InputStream in = getClass().getResourceAsStream("/fuzz-regressions.txt")) {
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            int n = 0;
            for (String line : text.split("\n")) {
                line = line.strip();
                if (line.isEmpty() || line.startsWith("#")) {
                    continue;
                }
                decodeSafely(HexFormat.of().parseHex(line));
                n++;
            }
            assertTrue(n > 0);
        }
    }

    /** True when decoded; false when rejected as malformed; fails on anything else. */
    static boolean decodeSafely(byte[] input) {
        return decodeSafely(input, null);
    }

    /** {@link #decodeSafely(byte[])} for checksums and the sections value beside them. */
    static boolean decodeSafely(byte[] checksums, byte[] sections) {
        String hex = HexFormat.of().formatHex(checksums) + (sections == null ? "" : " / " + HexFormat.of().formatHex(sections));
        try {
            ChecksumPayload p = PayloadCodec.decode(checksums, sections);
            // A decoded payload must survive a round trip unchanged.
            assertEquals(p, PayloadCodec.decode(PayloadCodec.encode(p), PayloadCodec.encodeSections(p)), hex);
            return true;
        } catch (MalformedPayloadException e) {
            return false;
        } catch (Throwable t) {
            fail("decoder threw " + t + " for input " + hex, t);
            return false;
        }
    }

    static byte[] mutate(byte[] in, Random rnd) {
        byte[] b = in.clone();
        int rounds = 1 + rnd.nextInt(3);
        for (int r = 0; r < rounds; r++) {
            int len = b.length;
            switch (rnd.nextInt(7)) {
                case 0 -> { // bit flip
                    if (len > 0) {
                        b[rnd.nextInt(len)] ^= (byte) (1 << rnd.nextInt(8));
                    }
                }
                case 1 -> { // byte replaced with an interesting value
                    if (len > 0) {
                        byte[] vals = {0, (byte) 0xff, (byte) 0x7f, (byte) 0x80, (byte) 0xc4, (byte) 0xc6, (byte) 0xdc,
                                (byte) 0xdd, (byte) 0xcf, (byte) 0xd3, (byte) 0xc0, (byte) 0x95, (byte) 0x94};
                        b[rnd.nextInt(len)] = vals[rnd.nextInt(vals.length)];
                    }
                }
                case 2 -> b = Arrays.copyOf(b, len == 0 ? 0 : rnd.nextInt(len)); // truncation
                case 3 -> { // insertion of random bytes
                    int at = rnd.nextInt(len + 1);
                    byte[] ins = new byte[1 + rnd.nextInt(9)];
                    rnd.nextBytes(ins);
                    byte[] out = new byte[len + ins.length];
                    System.arraycopy(b, 0, out, 0, at);
                    System.arraycopy(ins, 0, out, at, ins.length);
                    System.arraycopy(b, at, out, at + ins.length, len - at);
                    b = out;
                }
                case 4 -> { // duplicated span
                    if (len > 0) {
                        int from = rnd.nextInt(len);
                        int n = 1 + rnd.nextInt(Math.min(32, len - from));
                        byte[] out = new byte[len + n];
                        System.arraycopy(b, 0, out, 0, from + n);
                        System.arraycopy(b, from, out, from + n, len - from);
                        b = out;
                    }
                }
                case 5 -> { // length field tampering: a bin/array header's size bytes set large or off by one
                    for (int i = 0; i < len; i++) {
                        int tag = b[i] & 0xff;
                        if ((tag == 0xc4 || tag == 0xc5 || tag == 0xc6 || tag == 0xdc || tag == 0xdd) && i + 1 < len
                                && rnd.nextInt(3) == 0) {
                            int at = i + 1 + rnd.nextInt(Math.min(tag == 0xc6 || tag == 0xdd ? 4 : tag == 0xc4 ? 1 : 2, len - i - 1));
                            b[at] = (byte) (rnd.nextBoolean() ? 0xff : b[at] + (rnd.nextBoolean() ? 1 : -1));
                            break;
                        }
                    }
                }
                default -> { // trailing garbage
                    b = Arrays.copyOf(b, len + 1 + rnd.nextInt(4));
                }
            }
        }
        return b;
    }
}
