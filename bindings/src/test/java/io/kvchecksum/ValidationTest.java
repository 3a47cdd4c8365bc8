package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad input is refused before any byte is read, with a message naming the problem. */
class ValidationTest {
    private static void assertMessage(Runnable r, String fragment) {
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class, r::run);
        assertTrue(e.getMessage().contains(fragment), "message '" + e.getMessage() + "' lacks '" + fragment + "'");
    }

    private static final KvLayouts.PagedShape SHAPE = new KvLayouts.PagedShape(4, 16, 2, 64, 2);
    private static final long LAYER_BYTES = 2L * 4 * 16 * 2 * 64 * 2;

    @Test
    void pageIdOutOfRange() {
        try (Arena a = Arena.ofConfined()) {
            KvCacheGroup g = KvLayouts.vllmFlash(SHAPE, 0, null, List.of(KvMemory.host(a.allocate(LAYER_BYTES))));
            for (KvChecksum k : List.of(KvChecksums.reference(), KvChecksums.cpu())) {
                assertMessage(() -> k.blockChecksums(g, RequestBlocks.of(new int[] {0, 4}, 20, 16)), "pageTable[1] = 4 is out of range");
                assertMessage(() -> k.blockChecksums(g, RequestBlocks.of(new int[] {-1}, 5, 16)), "pageTable[0] = -1");
                assertMessage(() -> k.blockChecksums(g, RequestBlocks.of(new int[] {0}, 20, 16)), "need 2 pages");
            }
        }
    }

    @Test
    void regionTooSmall() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment small = a.allocate(LAYER_BYTES - 8);
            assertMessage(() -> KvLayouts.vllmFlash(SHAPE, 0, null, List.of(KvMemory.host(small))), "region is too small");
        }
    }

    @Test
    void cellsNotWholePieces() {
        // K and V of 6 bytes each (head dim 3, fp16): 12-byte cells, refused by the plan (not by the shape or region,
        // since K and V need not be whole pieces each, only their total)
        KvLayouts.PagedShape odd = new KvLayouts.PagedShape(4, 16, 2, 3, 2);
        try (Arena a = Arena.ofConfined()) {
            KvCacheGroup g = KvLayouts.vllmFlash(odd, 0, null, List.of(KvMemory.host(a.allocate(2L * 4 * 16 * 2 * 6))));
            assertMessage(() -> SlicePlan.of(g, RequestBlocks.of(new int[] {0}, 5, 16)),
                    "K 6 + V 6 = 12 bytes are not whole 8-byte pieces");
            for (KvChecksum k : List.of(KvChecksums.reference(), KvChecksums.cpu())) {
                assertMessage(() -> k.blockChecksums(g, RequestBlocks.of(new int[] {0}, 5, 16)), "not whole 8-byte pieces");
            }
            KvRegion r12 = new KvRegion(KvMemory.host(a.allocate(64)), 0, 0, 0, 0, 12);
            KvCacheGroup k12 = KvCacheGroup.of(1, 1, List.of(CacheLayer.kOnly(3, 0, 1, r12)));
            assertMessage(() -> SlicePlan.of(k12, RequestBlocks.of(new int[] {0}, 1, 1)), "layer 3 heads 0..0: cells of 12 bytes");
        }
    }

    @Test
    void tooManyHeadsAndNegativeOrOverflowingSizes() {
        try (Arena a = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(a.allocate(1024));
            KvRegion r = new KvRegion(m, 0, 0, 0, 0, 8);
            assertMessage(() -> CacheLayer.kOnly(0, 65535, 2, r), "exceed the limit of 65536");
            assertMessage(() -> new KvRegion(m, -1, 0, 0, 0, 8), "offset must be non-negative");
            assertMessage(() -> new KvRegion(m, 0, 0, -8, 0, 8), "tokenStride must be non-negative");
            assertMessage(() -> KvCacheGroup.of(1, Long.MAX_VALUE / 2,
                    List.of(CacheLayer.kOnly(0, 0, 1, new KvRegion(m, 0, 64, 0, 0, 8)))), "overflows");
            assertMessage(() -> RequestBlocks.of(new int[0], 10, Long.MAX_VALUE / 2, 16), "overflows a long");
            assertMessage(() -> RequestBlocks.of(new int[0], 10, 2, 16), "past numTokens");
            assertMessage(() -> KvCacheGroup.of(1, 1, List.of(CacheLayer.kOnly(0, 0, 1, r), CacheLayer.kOnly(0, 0, 1, r))),
                    "appears twice");
        }
    }

    @Test
    void cpuBackendsRefuseDeviceMemory() {
        KvMemory d = KvMemory.device(0x7000_0000L, 1 << 20);
        KvCacheGroup g = KvLayouts.vllmFlash(SHAPE, 0, null, List.of(d));
        for (KvChecksum k : List.of(KvChecksums.reference(), KvChecksums.cpu())) {
            assertMessage(() -> k.blockChecksums(g, RequestBlocks.of(new int[] {0}, 3, 16)), "reads host memory only");
        }
    }

    @Test
    void badRechunkArgumentsAreRejected() {
        assertMessage(() -> Rechunked.of(null, 0, 2), "values is null");
        assertMessage(() -> Rechunked.of(new long[] {1, 2}, 0, 0), "factor must be positive");
        assertMessage(() -> Rechunked.of(new long[] {1, 2}, -1, 2), "firstBlock must be non-negative");
        assertEquals(0, Rechunked.of(new long[0], 3, 2).numChunks());
    }

    @Test
    void aPlanIsValidatedOnceAndReusable() {
        try (Arena arena = Arena.ofConfined()) {
            KvCacheGroup g = KvLayouts.vllmFlash(SHAPE, 0, null, List.of(KvMemory.host(arena.allocate(1 << 16, 64))));
            assertMessage(() -> SlicePlan.of(g, RequestBlocks.of(new int[] {0, 99}, 20, 16)), "pageTable[1] = 99");
            assertMessage(() -> SlicePlan.of(null, RequestBlocks.of(new int[] {0}, 1, 16)), "must not be null");
            SlicePlan plan = SlicePlan.of(g, RequestBlocks.of(new int[] {1, 0, 7}, 20, 16));
            assertEquals(SlicePlan.Residency.HOST, plan.residency());
            assertEquals(2, plan.numPages());
            assertEquals(2, plan.numBlocks());
            for (KvChecksum k : List.of(KvChecksums.reference(), KvChecksums.cpu())) {
                assertArrayEquals(k.blockChecksums(plan), k.blockChecksums(plan), k.name());
                assertArrayEquals(k.blockChecksums(plan), k.sliceSums(plan).combine(), k.name());
            }
        }
    }

    @Test
    void unknownAndMissingBackendsSayWhy() {
        BackendUnavailableException e = assertThrows(BackendUnavailableException.class, () -> KvChecksums.byName("cuda"));
        assertTrue(e.getMessage().contains("kvchecksum-kernels-cuda"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> KvChecksums.byName("tpu"));
    }
}
