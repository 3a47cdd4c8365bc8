package io.kvchecksum.engine.worker;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The padded-cells extension in the engine: a group with a 132-byte fp8 indexer cache is skipped with the reason
 * where padding is off (never an exception mid-request), checksummed where it is on, and a producer and consumer
 * configured differently verify that group as ONE_SIDE_ONLY, never a mismatch; a group of straddling cells (K 4 +
 * V 4) needs no padding.
 */
class PaddedCellsTest {
    private static final long SEED = 132L;
    private static final int N = 40;
    private static final int B = 16;
    private static final int PAGES = 3;

    /** Group 0: layer 0 attention K 64 + V 64, 2 heads. Group 1: layer 3 MLA row (576) then its fp8 index-K (132). */
    private static List<WorkerChecksummer.WorkerGroup> layout(Arena a, long seed) {
        Random rnd = new Random(seed);
        KvRegion k = region(a, rnd, 2, 64);
        KvRegion v = region(a, rnd, 2, 64);
        KvCacheGroup attention = KvCacheGroup.of(B, PAGES, List.of(CacheLayer.of(0, 0, 2, k, v)));
        KvCacheGroup mla = KvCacheGroup.of(B, PAGES, List.of(CacheLayer.kOnly(3, 0, 1, region(a, rnd, 1, 576)),
                CacheLayer.kOnly(3, 1, 1, region(a, rnd, 1, 132))));
        return List.of(SingleWorker.group(0, 11, attention), SingleWorker.group(1, 22, mla));
    }

    private static KvRegion region(Arena a, Random rnd, int heads, int cell) {
        long token = (long) heads * cell;
        MemorySegment m = a.allocate(token * B * PAGES, 8);
        for (long o = 0; o < m.byteSize(); o++) {
            m.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
        }
        return new KvRegion(KvMemory.host(m), 0, token * B, token, cell, cell);
    }

    private static List<BlockSelection> select(Side side) {
        int[] table = {2, 0, 1};
        return List.of(0, 1).stream().map(g -> side == Side.PRODUCER
                ? BlockSelection.producer(g, table, -1, N, B, null)
                : BlockSelection.consumer(g, table, -1, 0, N, B, null)).toList();
    }

    private static LoadVerdict transfer(KvChecksum k, CellPadding producerPadding, CellPadding consumerPadding) {
        try (Arena a = Arena.ofConfined()) {
            SingleWorker producer = SingleWorker.builder(k).spec(ChecksumSpec.STANDARD.withPadding(producerPadding)).build();
            SingleWorker consumer = SingleWorker.builder(k).spec(ChecksumSpec.STANDARD.withPadding(consumerPadding)).build();
            PendingLoads pending = new PendingLoads();
            pending.expect("r", producer.producerBase64("r", layout(a, SEED), select(Side.PRODUCER)).orElseThrow());
            return consumer.verify(pending, "r", layout(a, SEED), select(Side.CONSUMER)).orElseThrow();
        }
    }

    @Test
    void aPeerWithoutPaddingSeesTheGroupOnOneSideOnlyNeverAMismatch() {
        System.out.println("PaddedCellsTest seed " + SEED);
        KvChecksum k = KvChecksums.cpu();
        LoadVerdict both = transfer(k, CellPadding.ZEROS, CellPadding.ZEROS);
        assertEquals(Status.MATCH, both.status(), both.toString());
        assertEquals(Status.MATCH, both.group(1).status());
        for (CellPadding[] sides : new CellPadding[][] {{CellPadding.ZEROS, CellPadding.NONE}, {CellPadding.NONE, CellPadding.ZEROS}}) {
            LoadVerdict v = transfer(k, sides[0], sides[1]);
            assertEquals(Status.MATCH, v.group(0).status(), v.toString());
            assertEquals(Status.UNVERIFIED, v.group(1).status(), v.toString());
            assertEquals(UnverifiedReason.ONE_SIDE_ONLY, v.group(1).reason(), v.toString());
            assertEquals(Status.UNVERIFIED, v.status(), "producer " + sides[0] + ", consumer " + sides[1] + ": " + v);
        }
        LoadVerdict neither = transfer(k, CellPadding.NONE, CellPadding.NONE);
        assertEquals(Status.MATCH, neither.status(), "the group skipped on both sides is left out: " + neither);
        assertEquals(Status.MATCH, neither.group(0).status());
    }

    @Test
    void withoutPaddingTheGroupIsSkippedWithTheReasonNotThrown() {
        try (Arena a = Arena.ofConfined()) {
            WorkerChecksummer w = WorkerChecksummer.builder(KvChecksums.cpu()).groups(layout(a, SEED)).build();
            WorkerRecord r = w.tryCompute(Side.PRODUCER, N, select(Side.PRODUCER));
            assertTrue(!r.isFailed(), r.toString());
            String why = r.skippedGroups().get(1);
            assertTrue(why != null && why.contains("layer 3 heads 1..1: cells of 132 bytes are not whole 8-byte pieces"), why);
            assertEquals(ChecksumSpec.STANDARD, w.spec());
            WorkerChecksummer padded = WorkerChecksummer.builder(KvChecksums.cpu()).groups(layout(a, SEED))
                    .spec(ChecksumSpec.STANDARD.withPadding(CellPadding.ZEROS)).build();
            WorkerRecord p = padded.tryCompute(Side.PRODUCER, N, select(Side.PRODUCER));
            assertTrue(p.skippedGroups().isEmpty(), p.toString());
        }
    }

    @Test
    void theGateSkipsUnpaddedCellsAndAdmitsStraddlingOnes() {
        try (Arena a = Arena.ofConfined()) {
            Random rnd = new Random(SEED);
            KvRegion k4 = region(a, rnd, 1, 4);
            KvRegion v4 = region(a, rnd, 1, 4);
            KvRegion ik = region(a, rnd, 1, 132);
            List<CacheGate.CacheSpec> specs = List.of(
                    CacheGate.CacheSpec.builder("model.layers.0.attn").fingerprint("FullAttentionSpec", "torch.float8_e4m3fn")
                            .cells(4, 4).blockSize(B).layer((l, f) -> CacheLayer.of(l, f, 1, k4, v4)).build(),
                    CacheGate.CacheSpec.builder("model.layers.1.attn.indexer").group(1).fingerprint("IndexerSpec", "torch.uint8")
                            .cells(132, 0).blockSize(B).layer((l, f) -> CacheLayer.kOnly(l, f, 1, ik)).build());
            CacheGate plain = CacheGate.of(specs, PAGES, CellPadding.NONE);
            assertEquals(List.of(0), plain.groups().stream().map(WorkerChecksummer.WorkerGroup::groupId).toList(),
                    "K 4 + V 4: one straddling piece, admitted");
            assertTrue(plain.skipped().get(1).contains("cells of 132 bytes per head are not whole 8-byte pieces"),
                    plain.skipped().get(1));
            CacheGate padded = CacheGate.of(specs, PAGES, CellPadding.ZEROS);
            assertEquals(List.of(0, 1), padded.groups().stream().map(WorkerChecksummer.WorkerGroup::groupId).toList());
            assertEquals(CellPadding.ZEROS, padded.padding());
            WorkerChecksummer w = WorkerChecksummer.builder(KvChecksums.cpu()).layout(padded).build();
            assertEquals(CellPadding.ZEROS, w.spec().padding());
            // The gate decided the padding: a spec may change the mode, not the padding; a gate excludes explicit groups.
            assertEquals(new ChecksumSpec(ChecksumMode.MIXED, CellPadding.ZEROS), WorkerChecksummer.builder(KvChecksums.cpu())
                    .layout(padded).spec(new ChecksumSpec(ChecksumMode.MIXED, CellPadding.ZEROS)).build().spec());
            assertThrows(IllegalArgumentException.class, () -> WorkerChecksummer.builder(KvChecksums.cpu()).layout(padded)
                    .spec(ChecksumSpec.STANDARD).build());
            assertThrows(IllegalArgumentException.class, () -> WorkerChecksummer.builder(KvChecksums.cpu()).layout(padded)
                    .groups(padded.groups()).build());
            WorkerRecord r = w.tryCompute(Side.PRODUCER, N, select(Side.PRODUCER));
            assertTrue(r.skippedGroups().isEmpty() && !r.isFailed(), r.toString());
            assertEquals(2, r.groups().size());
            long[] direct = KvChecksums.reference().blockChecksums(io.kvchecksum.SlicePlan.of(
                    KvCacheGroup.of(B, PAGES, List.of(CacheLayer.of(0, 0, 1, k4, v4))),
                    io.kvchecksum.RequestBlocks.of(new int[] {2, 0, 1}, N, B)));
            assertArrayEquals(direct, r.groups().get(0).columns().values().iterator().next());
        }
    }

    /**
     * A request's KV in several allocations (Jlama's pages) is padded as one allocation is: the worker's spec reaches
     * the segments' plan (it once got the mode only, so padded segments failed while padded groups computed).
     */
    @Test
    void paddedCellsInSegmentsComputeAndVerifyAsOneAllocation() {
        try (Arena a = Arena.ofConfined()) {
            long page = 132L * B;
            MemorySegment m = a.allocate(page * PAGES, 8);
            Random rnd = new Random(SEED);
            for (long o = 0; o < m.byteSize(); o++) {
                m.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
            }
            KvCacheGroup one = KvCacheGroup.of(B, PAGES, List.of(CacheLayer.kOnly(3, 0, 1,
                    new KvRegion(KvMemory.host(m), 0, page, 132, 132, 132))));
            List<KvCacheGroup> pages = new java.util.ArrayList<>();
            for (int p = 0; p < PAGES; p++) {
                pages.add(KvCacheGroup.of(B, 1, List.of(CacheLayer.kOnly(3, 0, 1,
                        new KvRegion(KvMemory.host(m.asSlice(p * page, page)), 0, page, 132, 132, 132)))));
            }
            ChecksumSpec padded = ChecksumSpec.STANDARD.withPadding(CellPadding.ZEROS);
            long[] expected = KvChecksums.reference().blockChecksums(SlicePlan.of(one,
                    RequestBlocks.of(new int[] {0, 1, 2}, N, B), padded));

            SingleWorker worker = SingleWorker.builder(KvChecksums.cpu()).spec(padded).build();
            var layout = List.of(SingleWorker.group(0, 7, KvSegments.of(pages)));
            var sel = List.of(BlockSelection.producer(0, new int[] {0, 1, 2}, -1, N, B, null));
            Aggregator.Result produced = worker.producer(layout, sel);
            ChecksumPayload payload = assertInstanceOf(Aggregator.Complete.class, produced, produced.toString()).payload();
            assertArrayEquals(expected, payload.groups().get(0).values());

            PendingLoads pending = new PendingLoads();
            pending.expect("r", worker.producerBase64("r", layout, sel).orElseThrow());
            var csel = List.of(BlockSelection.consumer(0, new int[] {0, 1, 2}, -1, B, N, B, null));
            LoadVerdict v = worker.verify(pending, "r", layout, csel).orElseThrow();
            assertEquals(Status.MATCH, v.status(), v.toString());
        }
    }
}
