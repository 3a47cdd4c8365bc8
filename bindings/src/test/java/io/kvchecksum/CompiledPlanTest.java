package io.kvchecksum;

import io.kvchecksum.internal.FastCpuBackend;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the compiler and the front decide once for every backend: declared limits refused before the backend runs,
 * requests without blocks never reaching it, several requests in one run, segments of different cells refused. The
 * expected values come from the reference on each request alone; the random combinations are in the golden module's
 * {@code Combinations}.
 */
class CompiledPlanTest {
    private static final long SEED = 20261202L;

    /** The CPU backend behind declared limits of the test's choosing, counting its runs. */
    private static final class Limited implements Backend {
        private final Backend cpu = new FastCpuBackend(1);
        private final BackendLimits limits;
        int runs;

        Limited(BackendLimits limits) {
            this.limits = limits;
        }

        @Override
        public String name() {
            return "limited";
        }

        @Override
        public String description() {
            return "limited (cpu)";
        }

        @Override
        public BackendLimits limits() {
            return limits;
        }

        @Override
        public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
            runs++;
            return cpu.run(plan, output, stream);
        }

        @Override
        public long pageDigest(PageDigestPlan plan) {
            return cpu.pageDigest(plan);
        }

        @Override
        public void close() {
        }
    }

    /** One layer of {@code heads} heads with K {@code kBytes} + V {@code vBytes} cells, token-major, pages of 4. */
    private static KvCacheGroup group(Arena arena, Random rnd, int heads, int kBytes, int vBytes, int pages) {
        long cell = kBytes + vBytes;
        MemorySegment m = arena.allocate(cell * heads * 4 * pages, 8);
        for (long o = 0; o < m.byteSize(); o++) {
            m.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
        }
        KvRegion k = new KvRegion(KvMemory.host(m), 0, cell * heads * 4, cell * heads, cell, kBytes);
        KvRegion v = vBytes == 0 ? null : new KvRegion(KvMemory.host(m), kBytes, cell * heads * 4, cell * heads, cell, vBytes);
        return KvCacheGroup.of(4, pages, List.of(v == null ? CacheLayer.kOnly(5, 0, heads, k) : CacheLayer.of(5, 0, heads, k, v)));
    }

    @Test
    void aDeclaredLimitIsRefusedBeforeTheBackendRunsAndACaseWithinItIsComputed() {
        System.out.println("seed " + SEED);
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(SEED);
            RequestBlocks r = RequestBlocks.of(new int[] {1, 0}, 7, 2);
            Limited limited = new Limited(new BackendLimits(Set.of(SlicePlan.Residency.HOST), Set.of(SlicePlan.Residency.HOST),
                    2, ""));
            KvChecksum k = KvChecksum.of(limited);
            KvCacheGroup three = group(arena, rnd, 3, 12, 20, 2);   // a piece straddles K and V: byte cells
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> k.blockChecksums(three, r));
            assertTrue(e.getMessage().startsWith("backend 'limited' takes at most 2 slices of byte cells in one launch, but"
                    + " request 0 has 3"), e.getMessage());
            assertThrows(InvalidLayoutException.class, () -> k.compile(three, List.of(r), ChecksumSpec.STANDARD));
            assertEquals(0, limited.runs);
            KvCacheGroup two = group(arena, rnd, 2, 12, 20, 2);
            assertArrayEquals(KvChecksums.reference().blockChecksums(two, r), k.blockChecksums(two, r));
            assertEquals(1, limited.runs);
            // whole pieces are not byte cells: the limit does not apply
            KvCacheGroup whole = group(arena, rnd, 3, 16, 16, 2);
            assertArrayEquals(KvChecksums.reference().blockChecksums(whole, r), k.blockChecksums(whole, r));
        }
    }

    @Test
    void deviceMemoryIsRefusedByAHostBackendNamingTheRegion() {
        KvMemory dev = KvMemory.device(0x7f0000000000L, 4096);
        KvCacheGroup g = KvCacheGroup.of(4, 4, List.of(CacheLayer.kOnly(2, 0, 1, new KvRegion(dev, 0, 256, 64, 0, 16))));
        Limited limited = new Limited(BackendLimits.HOST_ONLY);
        KvChecksum k = KvChecksum.of(limited);
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                () -> k.submit(g, RequestBlocks.of(new int[] {0}, 4, 4), 0L));
        assertTrue(e.getMessage().startsWith("backend 'limited' reads host memory only on an engine's stream, but layer 2 K"
                + " region is device memory"), e.getMessage());
        assertEquals(0, limited.runs);
    }

    @Test
    void requestsWithoutBlocksNeverReachTheBackend() {
        try (Arena arena = Arena.ofConfined()) {
            Limited limited = new Limited(BackendLimits.HOST_ONLY);
            KvChecksum k = KvChecksum.of(limited);
            KvCacheGroup g = group(arena, new Random(SEED), 2, 16, 16, 2);
            RequestBlocks none = RequestBlocks.of(new int[0], 0, 16);
            assertArrayEquals(new long[0], k.blockChecksums(g, none));
            assertEquals(0, k.sliceSums(g, none).values().length);
            CompiledPlan plan = k.compile(g, List.of(none, none), ChecksumSpec.STANDARD);
            assertTrue(plan.isEmpty());
            assertEquals(2, k.blockChecksums(plan).size());
            assertEquals(0, limited.runs);
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                    () -> k.compile(g, Arrays.asList(none, null), ChecksumSpec.STANDARD));
            assertEquals("request 1 is null", e.getMessage());
            assertThrows(InvalidLayoutException.class, () -> k.compile(g, List.of(), ChecksumSpec.STANDARD));
        }
    }

    @Test
    void severalRequestsRunInOneCallAndEachEqualsItsOwnCall() {
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(SEED + 1);
            KvCacheGroup g = group(arena, rnd, 3, 12, 20, 6);
            List<RequestBlocks> requests = List.of(RequestBlocks.of(new int[] {5, 1, 1}, 11, 4),
                    RequestBlocks.of(new int[] {2, 3}, 9, 1, 3), RequestBlocks.of(new int[0], 0, 8),
                    RequestBlocks.of(new int[] {0, 4, 5, 2, 3, 1}, 24, 16));
            for (ChecksumMode mode : ChecksumMode.values()) {
                Limited limited = new Limited(BackendLimits.HOST_ONLY);
                KvChecksum k = KvChecksum.of(limited);
                CompiledPlan plan = k.compile(g, requests, ChecksumSpec.of(mode));
                List<long[]> all = k.blockChecksums(plan);
                List<SliceSums> sums = k.sliceSums(plan);
                assertEquals(2, limited.runs, "one run per call, whatever the number of requests");
                for (int i = 0; i < requests.size(); i++) {
                    SlicePlan alone = SlicePlan.of(g, requests.get(i), ChecksumSpec.of(mode));
                    assertArrayEquals(KvChecksums.reference().blockChecksums(alone), all.get(i), mode + " request " + i);
                    assertEquals(KvChecksums.reference().sliceSums(alone), sums.get(i), mode + " request " + i);
                }
                try (PendingChecksums p = k.submit(plan)) {
                    long[] concatenated = p.get();
                    assertEquals(plan.offset(CompiledPlan.Output.BLOCK_CHECKSUMS, requests.size()), concatenated.length);
                    int at = plan.offset(CompiledPlan.Output.BLOCK_CHECKSUMS, 3);
                    assertArrayEquals(all.get(3), Arrays.copyOfRange(concatenated, at, at + all.get(3).length));
                }
            }
        }
    }

    @Test
    void aStepsRequestsOverOneGroupAreOneBatchPerCellKindAndABatchsValuesPlaceLikeItsLaunches() {
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(SEED + 2);
            KvChecksum reference = KvChecksums.reference();
            List<RequestBlocks> requests = List.of(RequestBlocks.of(new int[] {1, 0}, 7, 2),
                    RequestBlocks.of(new int[0], 0, 2), RequestBlocks.of(new int[] {2, 2, 0}, 11, 1, 2),
                    RequestBlocks.of(new int[] {0}, 3, 2));
            // whole pieces only: one batch of the three requests with blocks; K 12 + V 20 bytes: byte cells, one batch too;
            // two layers, one of each kind: two batches of three launches each
            for (KvCacheGroup g : List.of(group(arena, rnd, 2, 16, 16, 3), group(arena, rnd, 2, 12, 20, 3),
                    KvCacheGroup.of(4, 3, List.of(group(arena, rnd, 2, 16, 16, 3).layers().get(0),
                            relayer(group(arena, rnd, 1, 12, 20, 3).layers().get(0), 9))))) {
                for (ChecksumSpec spec : List.of(ChecksumSpec.STANDARD, new ChecksumSpec(ChecksumMode.MIXED, CellPadding.NONE))) {
                    CompiledPlan plan = reference.compile(g, requests, spec);
                    long kinds = plan.launches().stream().map(CompiledPlan.Launch::cellKind).distinct().count();
                    assertEquals(kinds, plan.batches().size(), plan.toString());
                    for (CompiledPlan.Batch b : plan.batches()) {
                        assertEquals(3, b.launches().size(), plan.toString());
                    }
                    for (CompiledPlan.Output output : CompiledPlan.Output.values()) {
                        // a batch's values: its launches' values, concatenated in order (what one batched launch returns)
                        long[][] perLaunch = new long[plan.launches().size()][];
                        for (int i = 0; i < perLaunch.length; i++) {
                            CompiledPlan one = CompiledPlan.of(plan.launches().get(i).slices());
                            perLaunch[i] = output == CompiledPlan.Output.BLOCK_CHECKSUMS
                                    ? reference.blockChecksums(one).get(0) : reference.sliceSums(one).get(0).values();
                        }
                        long[] expected = plan.gather(output, perLaunch);
                        try (PendingChecksums p = plan.startBatches(output, b -> {
                            long[] values = new long[b.numValues(output)];
                            int at = 0;
                            for (int i : b.indices()) {
                                System.arraycopy(perLaunch[i], 0, values, at, perLaunch[i].length);
                                at += perLaunch[i].length;
                            }
                            return PendingChecksums.completed(values);
                        })) {
                            assertArrayEquals(expected, p.get(), plan + " " + output);
                        }
                        if (output == CompiledPlan.Output.BLOCK_CHECKSUMS) {
                            List<long[]> each = reference.blockChecksums(plan);
                            for (int r = 0; r < requests.size(); r++) {
                                assertArrayEquals(reference.blockChecksums(reference.compile(g, List.of(requests.get(r)), spec)).get(0),
                                        each.get(r), "request " + r);
                                assertArrayEquals(each.get(r), plan.blockChecksums(expected, r), "request " + r);
                            }
                        }
                    }
                }
            }
        }
    }

    private static CacheLayer relayer(CacheLayer l, int layer) {
        return new CacheLayer(layer, l.firstHead(), l.numHeads(), l.k(), l.v());
    }

    @Test
    void segmentsMustHaveTheSameCellBytesAndPadLikeAGroup() {
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(SEED + 2);
            KvCacheGroup a = group(arena, rnd, 1, 128, 0, 2);
            KvCacheGroup b = group(arena, rnd, 1, 132, 0, 2);
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> KvSegments.of(List.of(a, b)));
            assertTrue(e.getMessage().contains("128-byte cells") && e.getMessage().contains("132-byte cells"), e.getMessage());
            KvSegments indexK = KvSegments.of(List.of(b, group(arena, rnd, 1, 132, 0, 1)));
            e = assertThrows(InvalidLayoutException.class, () -> indexK.plan(12, 0, 5));
            assertTrue(e.getMessage().contains("not whole 8-byte pieces"), e.getMessage());
            KvSegments.Plan padded = indexK.plan(12, 0, 5, new ChecksumSpec(ChecksumMode.MIXED, CellPadding.ZEROS));
            long[] values = padded.blockChecksums(KvChecksums.cpu(1));
            assertArrayEquals(padded.blockChecksums(KvChecksums.reference()), values);
            assertEquals(3, values.length);
        }
    }
}
