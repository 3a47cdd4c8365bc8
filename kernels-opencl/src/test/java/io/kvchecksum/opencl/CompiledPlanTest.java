package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.KvSource;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Compiled plans of several launches through the OpenCL backend, compared exactly with the reference (which evaluates
 * the definition from the source, not from the launches): several requests of one step, layers of both cell kinds
 * (whole pieces and byte cells) in one group, a request without blocks between the others, and a segmented cache
 * whose second segment starts inside a block; every output, synchronously, submitted, and on the backend's queue.
 */
class CompiledPlanTest {
    private static final long SEED = 0xC0_9A11L;
    private static final int PAGE = 4;

    /**
     * Layer 0: two heads of 16-byte K and 16-byte V (whole pieces); layer 3: one head of 12-byte K and 12-byte V
     * (a piece straddles K's end: byte cells); layer 5: one head of a 20-byte K only (the last piece zero-padded).
     */
    private static KvCacheGroup group(Arena arena, Random rnd, int numPages) {
        return KvCacheGroup.of(PAGE, numPages, List.of(
                CacheLayer.of(0, 0, 2, region(arena, rnd, numPages, 2, 16), region(arena, rnd, numPages, 2, 16)),
                CacheLayer.of(3, 0, 1, region(arena, rnd, numPages, 1, 12), region(arena, rnd, numPages, 1, 12)),
                CacheLayer.kOnly(5, 0, 1, region(arena, rnd, numPages, 1, 20))));
    }

    private static KvRegion region(Arena arena, Random rnd, int numPages, int heads, int cellBytes) {
        long headStride = 8L * Math.ceilDiv(cellBytes, 8);
        long tokenStride = heads * headStride;
        long pageStride = PAGE * tokenStride;
        MemorySegment seg = arena.allocate(numPages * pageStride, 64);
        for (long i = 0; i < seg.byteSize(); i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return new KvRegion(KvMemory.host(seg), 0, pageStride, tokenStride, headStride, cellBytes);
    }

    private static void check(KvSource source, List<RequestBlocks> requests, String who) {
        KvChecksum cl = OpenClTests.checksum();
        KvChecksum ref = KvChecksums.reference();
        for (ChecksumMode mode : ChecksumMode.values()) {
            ChecksumSpec spec = new ChecksumSpec(mode, CellPadding.ZEROS);
            String label = who + ", " + mode.wireName() + ", seed " + SEED;
            CompiledPlan plan = cl.compile(source, requests, spec);
            CompiledPlan refPlan = ref.compile(source, requests, spec);
            assertTrue(plan.launches().size() > requests.size(), label + ": " + plan);
            List<long[]> expected = ref.blockChecksums(refPlan);
            List<long[]> got = cl.blockChecksums(plan);
            assertEquals(expected.size(), got.size(), label);
            long[] all = new long[0];
            for (int r = 0; r < expected.size(); r++) {
                assertArrayEquals(expected.get(r), got.get(r), label + ", request " + r);
                all = LongStream.concat(LongStream.of(all), LongStream.of(expected.get(r))).toArray();
            }
            assertEquals(ref.sliceSums(refPlan), cl.sliceSums(plan), label + " (slice sums)");
            try (PendingChecksums p = cl.submit(plan)) {
                assertArrayEquals(all, p.get(), label + " (submit)");
            }
            long queue = ((OpenClBackend) cl.backend()).commandQueue();
            try (PendingChecksums p = cl.submit(plan, queue)) {
                assertArrayEquals(all, p.get(), label + " (submit on the backend's queue)");
            }
        }
    }

    @Test
    void severalRequestsOfBothCellKindsMatchTheReference() {
        OpenClTests.requireOpenCl();
        try (Arena arena = Arena.ofShared()) {
            KvCacheGroup g = group(arena, new Random(SEED), 6);
            check(g, List.of(
                    RequestBlocks.of(new int[] {5, 0, 3}, 11, 4),
                    RequestBlocks.of(new int[0], 8, 2, 4),          // starts at its end: no blocks
                    RequestBlocks.of(new int[] {2, 4}, 8, 1, 2),
                    RequestBlocks.of(new int[] {1, 1, 5, 0, 2, 3}, 23, 0, 3)), "group");
        }
    }

    @Test
    void aSegmentedCacheMatchesTheReference() {
        OpenClTests.requireOpenCl();
        try (Arena arena = Arena.ofShared()) {
            Random rnd = new Random(SEED + 1);
            // positions 0..11 in the first segment, 12..27 in the second: block 1 of 8 tokens straddles them
            KvSegments s = KvSegments.of(List.of(group(arena, rnd, 3), group(arena, rnd, 4)));
            check(s, List.of(KvSegments.request(26, 0, 8), KvSegments.request(20, 1, 4), KvSegments.request(28, 0, 6)),
                    "segments");
        }
    }
}
