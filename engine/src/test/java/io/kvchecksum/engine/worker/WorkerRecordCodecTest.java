package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.PageProbe;
import io.kvchecksum.engine.wire.MutationLoop;
import io.kvchecksum.engine.wire.StateDigestsSection;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * {@link WorkerRecordCodec}: every record survives the bytes; the wire form is the documented one; and, as untrusted
 * input, mutated records (bit flips, replaced bytes, truncations, insertions, duplicated spans, tampered lengths) are
 * either a record that round-trips or {@link MalformedRecordException}, never another exception (a seeded mutation
 * fuzzer in the style of {@code PayloadFuzzTest}; {@code -Dkvchecksum.fuzz.seed}, {@code -Dkvchecksum.fuzz.ms}).
 */
class WorkerRecordCodecTest {
    private static final long SEED = Long.getLong("kvchecksum.fuzz.seed", 0x2EC0_2D26L);
    private static final long BUDGET_MS = Long.getLong("kvchecksum.fuzz.ms", 4_000L);

    static WorkerRecord randomRecord(Random rnd) {
        int tp = rnd.nextInt(4);
        int pp = rnd.nextInt(2);
        long n = rnd.nextInt(300);
        ChecksumMode mode = ChecksumMode.values()[rnd.nextInt(ChecksumMode.values().length)];
        if (rnd.nextInt(8) == 0) {
            return new WorkerRecord(tp, pp, n, List.of(), Map.of(), "java.lang.IllegalStateException: device lost "
                    + rnd.nextInt(), mode);
        }
        List<PartialGroup> groups = new ArrayList<>();
        Map<Integer, String> skipped = new LinkedHashMap<>();
        for (int g = 0; g < rnd.nextInt(4); g++) {
            if (rnd.nextInt(4) == 0) {
                skipped.put(g, "no per-token KV (MambaSpec) \u00e9");
                continue;
            }
            int bs = 1 << (3 + rnd.nextInt(3));
            long start = rnd.nextInt(4);
            long end = start + rnd.nextInt(12);
            Map<ReplicaKey, long[]> cols = new LinkedHashMap<>();
            int r = 1 << rnd.nextInt(3);
            for (int i = 0; i < 1 + rnd.nextInt(2); i++) {
                cols.put(new ReplicaKey(r, rnd.nextInt(r)), rnd.longs(end - start).toArray());
            }
            groups.add(new PartialGroup(g, rnd.nextLong(), new BlockRange(bs, start, end), cols));
        }
        List<StateDigestsSection.Entry> state = null;
        if (rnd.nextBoolean()) {
            state = new ArrayList<>();
            for (int i = 0; i < rnd.nextInt(4); i++) {
                int shards = 1 << rnd.nextInt(3);
                int copies = 1 << rnd.nextInt(2);
                state.add(new StateDigestsSection.Entry("l" + i + ".ssm", rnd.nextInt(shards), shards, pp,
                        rnd.nextInt(copies), copies, rnd.nextInt(1 << 20), rnd.nextLong()));
            }
        }
        Map<ReplicaKey, PageProbe.Probes> probes = null;
        if (rnd.nextBoolean()) {
            probes = new LinkedHashMap<>();
            int ps = 8 << rnd.nextInt(2);
            long first = 16L * rnd.nextInt(3);
            long tokens = first + rnd.nextInt(80);
            int pages = (int) Math.ceilDiv(tokens - first, (long) ps);
            for (int k = 0; k < 1 + rnd.nextInt(2); k++) {
                probes.put(new ReplicaKey(2, k), new PageProbe.Probes(ps, 64, first, tokens, rnd.longs(pages).toArray(),
                        rnd.longs(pages).toArray()));
            }
        }
        return new WorkerRecord(tp, pp, n, groups, skipped, null, mode, state, probes);
    }

    @Test
    void everyRecordSurvivesTheBytes() {
        Random rnd = new Random(SEED);
        for (int i = 0; i < 500; i++) {
            WorkerRecord r = randomRecord(rnd);
            byte[] b = WorkerRecordCodec.encode(r);
            assertEquals(r, WorkerRecordCodec.decode(b), r.toString());
            assertArrayEquals(b, WorkerRecordCodec.encode(WorkerRecordCodec.decode(b)));
        }
    }

    /** The documented form: a record of one group of one copy, one skipped group, one state digest, one probe. */
    @Test
    void theWireForm() {
        WorkerRecord r = new WorkerRecord(1, 0, 20, List.of(new PartialGroup(0, 7, new BlockRange(16, 0, 1),
                Map.of(new ReplicaKey(2, 1), new long[] {5}))), Map.of(3, "x"), null, ChecksumMode.STANDARD,
                List.of(new StateDigestsSection.Entry("s", 1, 2, 0, 0, 1, 64, 9)),
                Map.of(ReplicaKey.NONE, new PageProbe.Probes(16, 64, 0, 20, new long[] {1, 2}, new long[] {3, 4})));
        String hex = "9a" + "01" + "01" + "00" + "14" + "a8" + "7374616e64617264" + "c0"
                + "91" + "96" + "00" + "07" + "10" + "00" + "01" + "91" + "93" + "02" + "01" + "c408" + "0500000000000000"
                + "81" + "03" + "a178"
                + "91" + "98" + "a173" + "09" + "01" + "02" + "00" + "00" + "01" + "40"
                + "91" + "97" + "01" + "00" + "10" + "40" + "00" + "14" + "c420"
                + "0100000000000000" + "0300000000000000" + "0200000000000000" + "0400000000000000";
        assertEquals(hex, HexFormat.of().formatHex(WorkerRecordCodec.encode(r)));
        assertEquals(r, WorkerRecordCodec.decode(HexFormat.of().parseHex(hex)));
    }

    @Test
    void malformedRecordsNameTheField() {
        assertEquals("version: unknown record version 2 (this reader knows 1)", malformed("9a02" + "00".repeat(9)));
        assertEquals("record: an array of 3 elements; expected 10 (version 1)", malformed("93010203"));
        assertEquals("tp_rank: -1 is outside 0..2147483647", malformed("9a01ff" + "00".repeat(8)));
        assertEquals("mode: unknown checksum mode 'fast'", malformed("9a01000000a466617374" + "00".repeat(5)));
        // A group of blocks 0..1 whose values hold 16 bytes.
        assertEquals("groups[0].columns[0].values: 16 bytes, but blocks 0..1 need 8",
                malformed("9a01000014a87374616e64617264c0" + "91960007100001" + "91930100" + "c410" + "00".repeat(16)));
        // A group array claiming 1000 groups in a few bytes.
        assertTrue(malformed("9a01000014a87374616e64617264c0dc03e8").startsWith("groups: claims 1000 elements but only"));
        // A failed record that also carries groups.
        assertTrue(malformed("9a01000014a87374616e64617264a178" + "91960007100000" + "90" + "80c0c0")
                .startsWith("record: a failed record carries no groups"));
        // Trailing bytes.
        byte[] ok = WorkerRecordCodec.encode(new WorkerRecord(0, 0, 1, List.of(), Map.of()));
        byte[] more = Arrays.copyOf(ok, ok.length + 1);
        assertEquals("record: 1 bytes after the record",
                assertThrows(MalformedRecordException.class, () -> WorkerRecordCodec.decode(more)).getMessage());
        assertThrows(MalformedRecordException.class, () -> WorkerRecordCodec.decode(new byte[0]));
    }

    private static String malformed(String hex) {
        return assertThrows(MalformedRecordException.class, () -> WorkerRecordCodec.decode(HexFormat.of().parseHex(hex)))
                .getMessage();
    }

    @Test
    void survivesMutatedRecords() {
        Random rnd = new Random(SEED);
        List<byte[]> corpus = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            corpus.add(WorkerRecordCodec.encode(randomRecord(rnd)));
        }
        MutationLoop.run("WorkerRecordCodecTest", SEED, corpus, rnd, BUDGET_MS, 1000, WorkerRecordCodecTest::mutate,
                WorkerRecordCodecTest::decodeSafely);
    }

    /** True when decoded (and the record round-trips); false when rejected; fails on anything else. */
    private static boolean decodeSafely(byte[] input) {
        try {
            WorkerRecord r = WorkerRecordCodec.decode(input);
            assertEquals(r, WorkerRecordCodec.decode(WorkerRecordCodec.encode(r)), HexFormat.of().formatHex(input));
            return true;
        } catch (MalformedRecordException e) {
            return false;
        } catch (Throwable t) {
            fail("decoder threw " + t + " for input " + HexFormat.of().formatHex(input), t);
            return false;
        }
    }

    private static byte[] mutate(byte[] in, Random rnd) {
        byte[] b = in.clone();
        switch (rnd.nextInt(6)) {
            case 0 -> {
                for (int i = 0; i < 1 + rnd.nextInt(3); i++) {
                    int at = rnd.nextInt(b.length);
                    b[at] ^= (byte) (1 << rnd.nextInt(8));
                }
            }
            case 1 -> b[rnd.nextInt(b.length)] = (byte) new int[] {0x00, 0x7f, 0x80, 0xc0, 0xc4, 0xcf, 0xd3, 0xdc, 0xdd,
                0xde, 0xdf, 0xff, 0x90, 0x9f}[rnd.nextInt(14)];
            case 2 -> b = Arrays.copyOf(b, rnd.nextInt(b.length));
            case 3 -> {
                int at = rnd.nextInt(b.length + 1);
                byte[] out = new byte[b.length + 1];
                System.arraycopy(b, 0, out, 0, at);
                out[at] = (byte) rnd.nextInt(256);
                System.arraycopy(b, at, out, at + 1, b.length - at);
                b = out;
            }
            case 4 -> {
                int from = rnd.nextInt(b.length);
                int len = Math.min(b.length - from, 1 + rnd.nextInt(16));
                byte[] out = new byte[b.length + len];
                System.arraycopy(b, 0, out, 0, from + len);
                System.arraycopy(b, from, out, from + len, b.length - from);
                b = out;
            }
            default -> {
                // A length or count field made huge: 32-bit big-endian 0xffffffff after a bin32/array32 marker.
                int at = rnd.nextInt(b.length);
                byte[] out = new byte[b.length + 5];
                System.arraycopy(b, 0, out, 0, at);
                out[at] = (byte) (rnd.nextBoolean() ? 0xc6 : 0xdd);
                out[at + 1] = out[at + 2] = out[at + 3] = out[at + 4] = (byte) 0xff;
                System.arraycopy(b, at, out, at + 5, b.length - at);
                b = out;
            }
        }
        return b;
    }
}
