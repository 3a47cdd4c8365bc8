package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.PolicyTest;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.Verifier;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * Startup gating ({@link CacheGate}) and, end to end, several caches per layer: an attention cache sharded across TP
 * next to an indexer cache every rank holds, taking consecutive heads of their layer.
 */
class CacheGateTest {
    private static final long SEED = 0xCA_C4E5L;
    private static final int BLOCK = 16;
    private static final int BLOCKS = 3;
    private static final long TOKENS = 40;

    /** A cache of {@code heads} local heads, pages of one block, layout [page][slot][head][cell], filled by the test. */
    record Mem(MemorySegment k, MemorySegment v, int heads, int kBytes, int vBytes) {
        static Mem of(Arena a, int heads, int kBytes, int vBytes) {
            long n = (long) BLOCKS * BLOCK * heads;
            return new Mem(a.allocate(n * kBytes, 8), vBytes == 0 ? null : a.allocate(n * vBytes, 8), heads, kBytes, vBytes);
        }

        CacheLayer layer(int layer, int firstHead) {
            KvRegion kr = new KvRegion(KvMemory.host(k), 0, (long) BLOCK * heads * kBytes, (long) heads * kBytes, kBytes, kBytes);
            if (v == null) {
                return CacheLayer.kOnly(layer, firstHead, heads, kr);
            }
            KvRegion vr = new KvRegion(KvMemory.host(v), 0, (long) BLOCK * heads * vBytes, (long) heads * vBytes, vBytes, vBytes);
            return CacheLayer.of(layer, firstHead, heads, kr, vr);
        }

        /** Writes a cell (K then V bytes) of local head {@code h} at token {@code t} (block id = block position). */
        void write(int h, long t, byte[] cell) {
            long at = (t * heads + h);
            MemorySegment.copy(MemorySegment.ofArray(cell), 0, k, at * kBytes, kBytes);
            if (v != null) {
                MemorySegment.copy(MemorySegment.ofArray(cell), kBytes, v, at * vBytes, vBytes);
            }
        }
    }

    /** A bf16 attention cache in blocks of one page, described by {@code mem} (null: a cache the gate must not build). */
    static CacheGate.CacheSpec.Builder spec(String name, int group, int kBytes, int vBytes, Mem mem) {
        return CacheGate.CacheSpec.builder(name).group(group).fingerprint("FullAttentionSpec", "torch.bfloat16")
                .cells(kBytes, vBytes).blockSize(BLOCK).layer(mem == null ? (l, f) -> {
                    throw new AssertionError("a skipped cache must not be built");
                } : mem::layer);
    }

    @Test
    void groupsThatCannotBeChecksummedAreSkippedOnceWithTheReason() {
        PolicyTest.Recording log = new PolicyTest.Recording();
        try (Arena a = Arena.ofConfined()) {
            Mem m0 = Mem.of(a, 2, 16, 16);
            Mem m1 = Mem.of(a, 2, 16, 16);
            List<CacheGate.CacheSpec> caches = List.of(
                    spec("model.layers.0.self_attn.attn", 0, 16, 16, m0).heads(2).build(),
                    spec("model.layers.1.self_attn.attn", 0, 16, 16, m1).heads(2).build(),
                    spec("model.layers.2.self_attn.attn", 1, 12, 10, null).heads(2).build(),
                    spec("model.layers.3.self_attn.attn", 2, 16, 16, null).heads(2).build(),
                    spec("mtp.layers.3.self_attn.attn", 2, 16, 16, null).heads(2).build(),
                    spec("model.layers.4.self_attn.attn", 3, 16, 16, null).heads(2).hostResident(true).build(),
                    spec("model.layers.5.self_attn.attn", 4, 16, 16, null).heads(2).kernelBlockSize(6).build(),
                    spec("model.layers.6.self_attn.attn", 5, 16, 16, null).heads(1 << 16).build(),
                    spec("model.layers.6.self_attn.indexer", 5, 16, 0, null).build(),
                    spec("lm_head.attn", 6, 16, 16, null).heads(2).build());
            CacheGate g = CacheGate.of(caches, BLOCKS, log, CellPadding.NONE);
            assertEquals(List.of(0), g.groups().stream().map(WorkerChecksummer.WorkerGroup::groupId).toList());
            Map<Integer, String> s = g.skipped();
            assertEquals(List.of(1, 2, 3, 4, 5, 6), List.copyOf(s.keySet()));
            assertTrue(s.get(1).contains("not whole 8-byte pieces"), s.get(1));
            assertTrue(s.get(2).contains("share layer number 3 but belong to different modules"), s.get(2));
            assertTrue(s.get(3).contains("host-resident"), s.get(3));
            assertTrue(s.get(4).contains("do not tile"), s.get(4));
            assertTrue(s.get(5).contains("65537 KV heads"), s.get(5));
            assertTrue(s.get(6).contains("no layer number"), s.get(6));
            assertEquals(6, log.count("WARNING"), "one warning per skipped group, at startup: " + log.lines);
            long fp = Fingerprints.ofGroup(List.of(Fingerprints.ofLayer("model.layers.0.self_attn.attn", "FullAttentionSpec",
                    "torch.bfloat16"), Fingerprints.ofLayer("model.layers.1.self_attn.attn", "FullAttentionSpec", "torch.bfloat16")));
            assertEquals(fp, g.groups().get(0).fingerprint());
            // The worker reports the skipped groups in its record.
            List<BlockSelection> sel = List.of(BlockSelection.producer(0, new int[] {0, 1, 2}, -1, TOKENS, BLOCK, null),
                    BlockSelection.producer(1, new int[] {0, 1, 2}, -1, TOKENS, BLOCK, null));
            WorkerRecord r = WorkerChecksummer.builder(KvChecksums.reference()).layout(g).build()
                    .compute(Side.PRODUCER, TOKENS, sel);
            assertEquals(s, r.skippedGroups());
            assertEquals(1, r.groups().size());
            // The worker knows the layout, not the gate: any GatedLayout with the gate's three answers is the same worker.
            WorkerChecksummer.GatedLayout answers = new WorkerChecksummer.GatedLayout() {
                @Override
                public List<WorkerChecksummer.WorkerGroup> groups() {
                    return g.groups();
                }

                @Override
                public Map<Integer, String> skipped() {
                    return g.skipped();
                }

                @Override
                public CellPadding padding() {
                    return g.padding();
                }
            };
            assertEquals(r, WorkerChecksummer.builder(KvChecksums.reference()).layout(answers).build()
                    .compute(Side.PRODUCER, TOKENS, sel));
        }
        assertEquals(3, CacheGate.layerNumber("model.layers.3.mlp.experts.attn"));
        assertEquals(12, CacheGate.layerNumber("model.layers.12"));
        assertEquals(-1, CacheGate.layerNumber("model.layers.x.attn"));
        assertEquals("model.layers.12", CacheGate.module("model.layers.12.self_attn.attn"));
    }

    @Test
    void aCacheSharedByTwoLayersIsCountedOnceUnderTheLowestLayer() {
        try (Arena a = Arena.ofConfined()) {
            Mem m = Mem.of(a, 1, 16, 16);
            Random rnd = new Random(SEED);
            byte[] cell = new byte[32];
            for (long t = 0; t < TOKENS; t++) {
                rnd.nextBytes(cell);
                m.write(0, t, cell);
            }
            CacheGate g = CacheGate.of(List.of(
                    spec("model.layers.7.attn", 0, 16, 16, m).cacheId("shared").build(),
                    spec("model.layers.3.attn", 0, 16, 16, m).cacheId("shared").build()), BLOCKS, CellPadding.NONE);
            WorkerChecksummer.WorkerGroup wg = g.groups().get(0);
            assertEquals(Fingerprints.ofLayer("model.layers.3.attn", "FullAttentionSpec", "torch.bfloat16"), wg.fingerprint());
            List<CacheLayer> layers = wg.parts().get(0).cache().layers();
            assertEquals(1, layers.size());
            assertEquals(3, layers.get(0).layer());
        }
    }

    /** The three caches of each of layers 0 and 1: attention K/V (4 heads, 32-byte cells) and an indexer K (1 head). */
    static final class Model {
        final byte[][][][] attn = new byte[2][4][(int) TOKENS][32];
        final byte[][][] index = new byte[2][(int) TOKENS][16];

        Model(Random rnd) {
            for (int l = 0; l < 2; l++) {
                for (int h = 0; h < 4; h++) {
                    for (byte[] c : attn[l][h]) {
                        rnd.nextBytes(c);
                    }
                }
                for (byte[] c : index[l]) {
                    rnd.nextBytes(c);
                }
            }
        }

        /** One TP rank's caches of layers 0 and 1: attention heads sharded, the indexer replicated on every rank. */
        List<CacheGate.CacheSpec> rank(Arena a, int tp, int rank) {
            List<CacheGate.CacheSpec> out = new ArrayList<>();
            int heads = 4 / tp;
            for (int l = 0; l < 2; l++) {
                Mem at = Mem.of(a, heads, 16, 16);
                Mem ix = Mem.of(a, 1, 16, 0);
                for (long t = 0; t < TOKENS; t++) {
                    for (int h = 0; h < heads; h++) {
                        at.write(h, t, attn[l][rank * heads + h][(int) t]);
                    }
                    ix.write(0, t, index[l][(int) t]);
                }
                // Listed indexer first: name order, not listing order, sets the heads.
                out.add(spec("model.layers." + l + ".self_attn.indexer.k_cache", 0, 16, 0, ix).tp(rank, tp).build());
                out.add(spec("model.layers." + l + ".self_attn.attn", 0, 16, 16, at).heads(4).tp(rank, tp).build());
            }
            return out;
        }
    }

    @Test
    void severalCachesPerLayerTakeConsecutiveHeadsAndEveryCopyIsChecked() {
        Random rnd = new Random(SEED);
        System.out.println("CacheGateTest seed " + SEED);
        Model model = new Model(rnd);
        try (Arena a = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            // The independent expectation: one group with attention heads 0..3 and the indexer as head 4 of each layer.
            List<CacheLayer> whole = new ArrayList<>();
            for (CacheGate.CacheSpec c : model.rank(a, 1, 0)) {
                boolean indexer = c.layerName().contains("indexer");
                whole.add(c.factory().layer(CacheGate.layerNumber(c.layerName()), indexer ? 4 : 0));
            }
            long[] expected = KvChecksums.reference().blockChecksums(KvCacheGroup.of(BLOCK, BLOCKS, whole),
                    RequestBlocks.of(new int[] {0, 1, 2}, TOKENS, BLOCK));

            List<BlockSelection> sel = List.of(BlockSelection.producer(0, new int[] {0, 1, 2}, -1, TOKENS, BLOCK, null));
            List<WorkerRecord> producer = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                producer.add(WorkerChecksummer.builder(cpu).tpRank(r).layout(CacheGate.of(model.rank(a, 2, r), BLOCKS, CellPadding.NONE))
                        .build()
                        .compute(Side.PRODUCER, TOKENS, sel));
            }
            ChecksumPayload p = assertInstanceOf(Aggregator.Complete.class, Aggregator.producer(2, 1, TOKENS, sel, producer)).payload();
            assertArrayEquals(expected, p.groups().get(0).values(), "TP2 producer vs the unsharded definition");

            // A TP1 consumer of the same KV matches; one flipped indexer bit is a mismatch at its block.
            List<CacheGate.CacheSpec> consumer = model.rank(a, 1, 0);
            List<BlockSelection> csel = List.of(BlockSelection.consumer(0, new int[] {0, 1, 2}, -1, 0, TOKENS, BLOCK, null));
            WorkerRecord c = WorkerChecksummer.builder(cpu).layout(CacheGate.of(consumer, BLOCKS, CellPadding.NONE)).build()
                    .compute(Side.CONSUMER, TOKENS, csel);
            ChecksumPayload cp = assertInstanceOf(Aggregator.Complete.class, Aggregator.consumer(1, 1, TOKENS, csel, List.of(c))).payload();
            assertEquals(Status.MATCH, Verifier.compare(p, cp).status());

            model.index[1][33][5] ^= 0x40;
            WorkerRecord bad = WorkerChecksummer.builder(cpu).layout(CacheGate.of(model.rank(a, 1, 0), BLOCKS, CellPadding.NONE))
                    .build()
                    .compute(Side.CONSUMER, TOKENS, csel);
            LoadVerdict v = Verifier.compare(p, assertInstanceOf(Aggregator.Complete.class,
                    Aggregator.consumer(1, 1, TOKENS, csel, List.of(bad))).payload());
            assertEquals(Status.MISMATCH, v.status());
            assertArrayEquals(new long[] {2}, v.group(0).mismatchedBlocks());

            // A TP2 consumer checks both copies of the replicated indexer: a flip on rank 1's copy only is caught.
            List<WorkerRecord> tp2 = new ArrayList<>();
            model.index[1][33][5] ^= 0x40;   // restore
            for (int r = 0; r < 2; r++) {
                List<CacheGate.CacheSpec> caches = model.rank(a, 2, r);
                tp2.add(WorkerChecksummer.builder(cpu).tpRank(r).layout(CacheGate.of(caches, BLOCKS, CellPadding.NONE)).build()
                        .compute(Side.CONSUMER, TOKENS, csel));
                model.index[0][3][0] ^= 0x01;  // rank 1 gets a corrupted copy of layer 0's indexer at token 3
            }
            ChecksumPayload c2 = assertInstanceOf(Aggregator.Complete.class, Aggregator.consumer(2, 1, TOKENS, csel, tp2)).payload();
            assertEquals(2, c2.groups().size(), "one check per replica");
            LoadVerdict v2 = Verifier.compare(p, c2);
            assertEquals(Status.MISMATCH, v2.status(), v2.toString());
            assertArrayEquals(new long[] {0}, v2.group(0).mismatchedBlocks());
        }
    }

    @Test
    void limitsOfTheGate() {
        try (Arena a = Arena.ofConfined()) {
            Mem m = Mem.of(a, 1, 16, 16);
            // Kernel pages of 8 tokens: two pages per block, so the group holds twice as many pages as blocks.
            Mem half = Mem.of(a, 1, 16, 16);
            CacheGate.LayerFactory paged = (layer, first) -> CacheLayer.of(layer, first, 1,
                    new KvRegion(KvMemory.host(half.k()), 0, 8L * 16, 16, 16, 16),
                    new KvRegion(KvMemory.host(half.v()), 0, 8L * 16, 16, 16, 16));
            CacheGate g = CacheGate.of(List.of(spec("model.layers.0.attn", 0, 16, 16, null).kernelBlockSize(8).layer(paged).build()),
                    BLOCKS, CellPadding.NONE);
            KvCacheGroup kg = g.groups().get(0).parts().get(0).cache();
            assertEquals(8, kg.pageSize());
            assertEquals(2L * BLOCKS, kg.numPages());

            // The lowest layer NUMBER, not the first name in text order.
            CacheGate shared = CacheGate.of(List.of(
                    spec("model.layers.10.attn", 0, 16, 16, m).cacheId("s").build(),
                    spec("model.layers.9.attn", 0, 16, 16, m).cacheId("s").build()), BLOCKS, CellPadding.NONE);
            assertEquals(9, shared.groups().get(0).parts().get(0).cache().layers().get(0).layer());

            PolicyTest.Recording log = new PolicyTest.Recording();
            CacheGate bad = CacheGate.of(List.of(
                    spec("model.layers.0.attn", 0, 0, 16, null).build(),
                    spec("model.layers.1.attn", 1, 16, 16, null).kernelBlockSize(0).build(),
                    spec("model.layers.2.attn", 2, 16, 16, null).kernelBlockSize(16).blockSize(0).build(),
                    spec("model.layers.3.attn", 3, 16, 16, null).build(),
                    spec("model.layers.4.attn", 3, 16, 16, null).kernelBlockSize(16).blockSize(32).build(),
                    spec("model.layers.5.attn", 4, 16, -8, null).build(),
                    spec("model.layers.6.attn", 5, 16, 16, m).heads(1 << 16).build()), BLOCKS, log, CellPadding.NONE);
            assertEquals(List.of(5), bad.groups().stream().map(WorkerChecksummer.WorkerGroup::groupId).toList(),
                    "exactly 2^16 heads in a layer is allowed");
            assertTrue(bad.skipped().get(0).contains("not whole 8-byte pieces"), bad.skipped().get(0));
            assertTrue(bad.skipped().get(1).contains("kernel blocks of 0 tokens"), bad.skipped().get(1));
            assertTrue(bad.skipped().get(2).contains("do not tile blocks of 0"), bad.skipped().get(2));
            assertEquals("layer model.layers.4.attn has block size 32, other layers of the group 16", bad.skipped().get(3));
            assertTrue(bad.skipped().get(4).contains("not whole 8-byte pieces"), bad.skipped().get(4));
            assertEquals(5, log.count("WARNING"));
        }
        // The builder's TP placement: sharded heads, or (fewer KV heads than ranks) one head on consecutive ranks.
        CacheGate.CacheSpec sharded = spec("model.layers.0.attn", 0, 16, 16, null).heads(8).tp(3, 4).build();
        assertEquals(6, sharded.firstHead());
        assertEquals(ReplicaKey.NONE, sharded.replica());
        CacheGate.CacheSpec replicated = spec("model.layers.0.attn", 0, 16, 16, null).heads(2).tp(3, 4).build();
        assertEquals(1, replicated.firstHead());
        assertEquals(new ReplicaKey(2, 1), replicated.replica());
        assertEquals("model.layers.0.attn", replicated.cacheId());
        assertEquals(BLOCK, replicated.kernelBlockSize());
        assertThrows(IllegalArgumentException.class, () -> spec("model.layers.0.attn", 0, 16, 16, null).heads(3).tp(0, 4).build());
        assertThrows(NullPointerException.class, () -> CacheGate.CacheSpec.builder("model.layers.0.attn").cells(16, 16)
                .blockSize(BLOCK).layer((l, f) -> null).build(), "no fingerprint");
        assertEquals(123456789, CacheGate.layerNumber("model.layers.123456789.attn"));
        assertEquals(-1, CacheGate.layerNumber("model.layers.1234567890.attn"), "past an int: no layer number");
    }
}
