package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The stream's order and extent (the digest values themselves are checked against NumPy's golden vectors). */
class PageDigestPlanTest {

    @Test
    void sglangStreamIsEveryLayersKPagesThenVPagesThenStateRowsInPageOrder() {
        KvLayouts.PagedShape s = new KvLayouts.PagedShape(6, 4, 2, 8, 2); // 4 slots x 2 heads x 8 x 2 bytes = 128-byte pages
        try (Arena arena = Arena.ofConfined()) {
            List<KvMemory> ks = new ArrayList<>();
            List<KvMemory> vs = new ArrayList<>();
            for (int l = 0; l < 2; l++) {
                ks.add(KvMemory.host(arena.allocate(6 * 128)));
                vs.add(KvMemory.host(arena.allocate(6 * 128)));
            }
            KvCacheGroup g = KvLayouts.sglang(s, 0, new int[] {0, 1}, ks, vs);
            SlicePlan plan = SlicePlan.of(g, RequestBlocks.of(new int[] {5, 2, 3}, 9, 4)); // 9 tokens: 3 pages
            MemorySegment state = arena.allocate(40);
            PageDigestPlan p = PageDigestPlan.of(plan, List.of(new StateRow("ssm", KvMemory.host(state), 8, 24)));
            List<PageDigestPlan.Run> runs = p.runs();
            assertEquals(2 * 2 * 3 + 1, runs.size());
            assertEquals(4 * 128 * 3 + 24, p.totalBytes());
            int[] pages = {5, 2, 3};
            for (int i = 0; i < 12; i++) {
                KvMemory expected = (i < 6 ? ks : vs).get((i % 6) / 3);
                assertEquals(new PageDigestPlan.Run(expected, pages[i % 3] * 128L, 128), runs.get(i), "run " + i);
            }
            assertEquals(new PageDigestPlan.Run(KvMemory.host(state), 8, 24), runs.get(12));
            assertTrue(p.isHostResident());
        }
    }

    @Test
    void aStateRowPastItsMemoryAndDeviceMemoryOnTheCpuAreRefusedBeforeAnyRead() {
        KvLayouts.PagedShape s = new KvLayouts.PagedShape(6, 4, 2, 8, 2);
        KvMemory dev = KvMemory.device(0x1000, 6 * 128);
        KvCacheGroup g = KvLayouts.sglang(s, 0, new int[] {0}, List.of(dev), List.of(dev));
        // Page spans are within the group's validated extent; a state row is checked when it is made.
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                () -> new StateRow("conv", dev, 6 * 128 - 8, 16));
        assertTrue(e.getMessage().contains("conv"), e.getMessage());
        PageDigestPlan ok = PageDigestPlan.of(SlicePlan.of(g, RequestBlocks.of(new int[] {5}, 4, 4)));
        InvalidLayoutException cpu = assertThrows(InvalidLayoutException.class,
                () -> KvChecksums.byName("reference").pageDigest(ok));
        assertTrue(cpu.getMessage().contains("device memory"), cpu.getMessage());
    }
}
