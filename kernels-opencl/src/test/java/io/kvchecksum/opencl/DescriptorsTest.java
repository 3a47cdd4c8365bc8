package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Slice plans serialized for OpenCL: what is copied where, the descriptor words, and a batch's page tables and request
 * words. Pure Java; runs without OpenCL.
 */
class DescriptorsTest {

    @Test
    void oneSpanPerSegmentCoveringOnlyTheUsedPages() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(10 * 256, 64);
            KvMemory m = KvMemory.host(seg);
            // 10 pages of 4 slots x 2 heads; K and V of one layer interleaved in the same segment
            KvCacheGroup g = KvCacheGroup.of(4, 10, List.of(CacheLayer.of(1, 2, 2, new KvRegion(m, 0, 256, 64, 32, 16),
                    new KvRegion(m, 16, 256, 64, 32, 16))));
            Descriptors p = Descriptors.of(List.of(SlicePlan.of(g, RequestBlocks.of(new int[] {7, 3, 99}, 8, 4)))); // 2 pages needed; entry 2 ignored
            assertEquals(1, p.spans.size());
            Descriptors.Span s = p.spans.get(0);
            assertEquals(3 * 256, s.from());
            assertEquals(7 * 256 + 3 * 64 + 32 + 16 + 16, s.to());
            assertEquals(0, s.packedOffset());
            assertEquals(2, p.numSlices);
            assertEquals(2, p.table.length);
            // slice 1 = global head 3: factor, pieces, K base relative to the span (page 0 lies before it)
            int d = Descriptors.WORDS;
            assertEquals(2L * (65536 + 3) + 1, p.desc[d]);
            assertEquals(4, p.desc[d + 1]);
            assertEquals(2, p.desc[d + 2]);
            assertEquals(32 - 3 * 256, p.desc[d + 3]);
            assertEquals(3, p.desc[d + 9]);
        }
    }

    @Test
    void unalignedRegionsAreFlaggedAndSpansStartAligned() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory a = KvMemory.host(arena.allocate(1000, 64));
            KvMemory b = KvMemory.host(arena.allocate(1000, 64));
            KvCacheGroup g = KvCacheGroup.of(2, 3, List.of(CacheLayer.of(0, 0, 1, new KvRegion(a, 13, 40, 20, 0, 8),
                    new KvRegion(b, 16, 48, 24, 0, 8))));
            Descriptors p = Descriptors.of(List.of(SlicePlan.of(g, RequestBlocks.of(new int[] {2}, 2, 2))));
            assertEquals(2, p.spans.size());
            assertEquals(13 + 80 - 5, p.spans.get(0).from()); // 93 rounded down to 88: offsets keep their value mod 8
            assertEquals(0, p.spans.get(0).packedOffset());
            assertEquals(0, p.spans.get(1).packedOffset() % 64);
            assertEquals(2, p.desc[9]); // K unaligned, V aligned
        }
    }

    @Test
    void aBatchSpansEveryPlansPagesAndDescribesEachRequest() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(10 * 256, 64));
            KvCacheGroup g = KvCacheGroup.of(4, 10, List.of(CacheLayer.of(1, 2, 2, new KvRegion(m, 0, 256, 64, 32, 16),
                    new KvRegion(m, 16, 256, 64, 32, 16))));
            SlicePlan a = SlicePlan.of(g, RequestBlocks.of(new int[] {7, 3}, 8, 4));        // 2 blocks, pages 7, 3
            SlicePlan b = SlicePlan.of(g, RequestBlocks.of(new int[] {9, 5, 1}, 11, 1, 4)); // blocks 1, 2 from token 4
            Descriptors one = Descriptors.of(List.of(a));
            Descriptors both = Descriptors.of(List.of(a, b));
            assertNull(one.requests);
            assertArrayEquals(new int[] {7, 3, 9, 5}, both.table); // b uses 2 of its 3 entries
            assertEquals(3 * 256, both.spans.get(0).from());        // from page 3 (a's) to page 9 (b's)
            assertEquals(9 * 256 + 3 * 64 + 32 + 16 + 16, both.spans.get(0).to());
            assertArrayEquals(new long[] {
                0, 0, 8, 0, 0,   // a: start token, first block, tokens, first batch block, first table entry
                4, 1, 11, 2, 2,  // b
                0, 0, 0, 4, 4,   // the batch: 4 blocks, 4 table entries
            }, both.requests);
        }
    }
}
