package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/**
 * The order in which the CPU build visits blocks: by the page id of each block's first token, ties in block order.
 * Pure Java; runs without OpenCL. (That the checksums do not depend on it is shown by the golden and random-layout
 * suites, whose tables are in every order.)
 */
class AddressOrderTest {

    /** 10 pages of 4 slots, one layer, one head, K and V of 2 pieces each. */
    private static SlicePlan plan(Arena arena, RequestBlocks request) {
        KvMemory m = KvMemory.host(arena.allocate(10 * 4 * 32, 64));
        KvCacheGroup g = KvCacheGroup.of(4, 10, List.of(CacheLayer.of(0, 0, 1, new KvRegion(m, 0, 128, 32, 0, 16),
                new KvRegion(m, 16, 128, 32, 0, 16))));
        return SlicePlan.of(g, request);
    }

    @Test
    void onePagePerBlockSortedByPageId() {
        try (Arena arena = Arena.ofConfined()) {
            // blocks 0..4 on pages 7, 2, 9, 0, 5
            int[] order = LaunchGeometry.addressOrder(List.of(plan(arena, RequestBlocks.of(new int[] {7, 2, 9, 0, 5}, 20, 4))));
            assertArrayEquals(new int[] {3, 1, 4, 0, 2}, order);
        }
    }

    @Test
    void blocksSharingAPageKeepTheirOrder() {
        try (Arena arena = Arena.ofConfined()) {
            // blocks of 2 tokens: blocks 0, 1 on page 5, blocks 2, 3 on page 1, block 4 (partial, 1 token) on page 3
            int[] order = LaunchGeometry.addressOrder(List.of(plan(arena, RequestBlocks.of(new int[] {5, 1, 3}, 9, 2))));
            assertArrayEquals(new int[] {2, 3, 4, 0, 1}, order);
        }
    }

    @Test
    void aLaterFirstBlockIndexesTheTableFromItsStart() {
        try (Arena arena = Arena.ofConfined()) {
            // blocks 3, 4, 5 of 4 tokens (request positions 12..23), table from block 3: pages 8, 6, 4
            int[] order = LaunchGeometry.addressOrder(List.of(plan(arena, RequestBlocks.of(new int[] {8, 6, 4}, 24, 3, 4))));
            assertArrayEquals(new int[] {2, 1, 0}, order);
        }
    }

    @Test
    void aBatchsBlocksAreSortedTogether() {
        try (Arena arena = Arena.ofConfined()) {
            // batch blocks 0, 1 (first request) on pages 7, 2; blocks 2, 3, 4 (second) on pages 9, 0, 5
            SlicePlan a = plan(arena, RequestBlocks.of(new int[] {7, 2}, 8, 4));
            SlicePlan b = plan(arena, RequestBlocks.of(new int[] {9, 0, 5}, 12, 4));
            assertArrayEquals(new int[] {3, 1, 4, 0, 2}, LaunchGeometry.addressOrder(List.of(a, b)));
        }
    }
}
