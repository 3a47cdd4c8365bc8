package io.kvchecksum;

import io.kvchecksum.spi.BackendLimits;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The plan's fields, worked out by hand from small layouts. */
class SlicePlanTest {

    @Test
    void everySliceFieldFromTheLayout() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(8192, 64));
            // layer 7: heads 4..5, K 32-byte cells (offset 16, head stride 64), V 8-byte cells at odd strides
            CacheLayer a = CacheLayer.of(7, 4, 2, new KvRegion(m, 16, 1024, 128, 64, 32), new KvRegion(m, 4096, 520, 24, 8, 8));
            // layer 2: one MLA-like head, K only, 48-byte cells
            CacheLayer b = CacheLayer.kOnly(2, 0, 1, new KvRegion(m, 6000, 96, 48, 0, 48));
            KvCacheGroup g = KvCacheGroup.of(2, 4, List.of(a, b));
            SlicePlan p = SlicePlan.of(g, RequestBlocks.of(new int[] {3, 1, 2, 0}, 7, 1, 3)); // tokens 3..6: table entries 0..1

            assertEquals(3, p.numSlices());
            assertArrayEquals(new int[] {7, 7, 2}, p.layerNumbers());
            assertArrayEquals(new int[] {4, 5, 0}, p.headNumbers());
            assertEquals(2, p.numBlocks());            // blocks 1 and 2 of 3 tokens
            assertArrayEquals(new int[] {3, 1}, p.pageTable());
            assertEquals(SlicePlan.Residency.HOST, p.residency());
            assertEquals(List.of(new SlicePlan.LayerRun(0, 2, 64, 8), new SlicePlan.LayerRun(2, 1, 0, 0)), p.layerRuns());

            SlicePlan.Slice s1 = p.slice(1);
            assertEquals(2L * (7 * 65536 + 5) + 1, s1.factor());
            assertEquals(new SlicePlan.Part(m, 16 + 64, 1024, 128, 4, 16), s1.k());
            assertEquals(new SlicePlan.Part(m, 4096 + 8, 520, 24, 1, 8), s1.v());
            assertEquals(5, s1.pieces());
            assertEquals(8, s1.alignment());
            SlicePlan.Slice s2 = p.slice(2);
            assertEquals(1, s2.factor() - 2L * 2 * 65536);
            assertNull(s2.v());
            assertEquals(16, s2.k().alignment());

            // positions 3..5 are on page 3 (slots 0..1, then page 1 slot 0), by the table from token 3
            assertEquals(3, p.pageOf(3));
            assertEquals(1, p.slotOf(4));
            assertEquals(1, p.pageOf(5));
            assertEquals(0, p.slotOf(5));
        }
    }

    @Test
    void residencyIsDecidedOnceAndNamedInErrors() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory host = KvMemory.host(arena.allocate(4096, 64));
            KvMemory dev = KvMemory.device(0x7f0000000000L, 4096);
            KvCacheGroup mixed = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(0, 0, 1, new KvRegion(host, 0, 256, 64, 0, 16),
                    new KvRegion(dev, 0, 256, 64, 0, 16))));
            SlicePlan p = SlicePlan.of(mixed, RequestBlocks.of(new int[] {0}, 4, 4));
            assertEquals(SlicePlan.Residency.MIXED, p.residency());
            CompiledPlan c = CompiledPlan.of(p);
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> c.check("cpu", BackendLimits.HOST_ONLY, false));
            assertTrue(e.getMessage().startsWith("backend 'cpu' reads host memory only, but layer 0 V region is device memory"),
                    e.getMessage());
            BackendLimits deviceOnStream = new BackendLimits(Set.of(SlicePlan.Residency.HOST, SlicePlan.Residency.MIXED),
                    Set.of(SlicePlan.Residency.DEVICE), Integer.MAX_VALUE, "; use submit");
            c.check("gpu", deviceOnStream, false);
            e = assertThrows(InvalidLayoutException.class, () -> c.check("gpu", deviceOnStream, true));
            assertTrue(e.getMessage().startsWith("backend 'gpu' takes device memory only on an engine's stream, but layer 0 K"
                    + " region is host memory") && e.getMessage().endsWith("; use submit"), e.getMessage());
        }
    }
}
