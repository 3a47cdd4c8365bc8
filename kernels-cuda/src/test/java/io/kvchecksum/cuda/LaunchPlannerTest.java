package io.kvchecksum.cuda;

import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.SlicePlan;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LaunchPlannerTest {
    private static final int H200_SMS = 132;
    /** A full 16-token block of a bf16 head-128 slice (256 + 256 bytes): 32 units of 16 bytes a token, 16 a lane. */
    private static final long LLAMA_ITEMS = 32 * 16;
    private static final int SLOTS = LaunchPlanner.BATCH_SLOTS_16B;

    @Test
    void singleBlockOfLlama8bSpreadsSlicesOverManyCtas() {
        // 32 layers x 8 KV heads, one 16-token block: one CTA per 8 slices (one per warp), adding atomically.
        List<LaunchPlanner.BlockLaunch> p = new LaunchPlanner(H200_SMS, 1 << 20).blocks(256, 1, LLAMA_ITEMS, SLOTS);
        assertEquals(1, p.size());
        LaunchPlanner.BlockLaunch f = p.get(0);
        assertEquals(32, f.numParts());
        assertEquals(8, f.slicesPerPart());
    }

    @Test
    void longRequestsUseOneCtaPerBlock() {
        // 128k tokens in 16-token blocks: 8192 CTAs already give 8 waves of 2 resident CTAs on 132 SMs.
        List<LaunchPlanner.BlockLaunch> p = new LaunchPlanner(H200_SMS, 1 << 20).blocks(256, 8192, LLAMA_ITEMS, SLOTS);
        LaunchPlanner.BlockLaunch f = p.get(0);
        assertEquals(1, f.numParts());
        assertEquals(256, f.slicesPerPart());
    }

    @Test
    void veryLongRequestsAreChunked() {
        List<LaunchPlanner.BlockLaunch> p = new LaunchPlanner(H200_SMS, 1000).blocks(80, 2500, LLAMA_ITEMS, SLOTS);
        assertEquals(3, p.size());
        assertEquals(0, p.get(0).blockOffset());
        assertEquals(1000, p.get(1).blockOffset());
        assertEquals(2000, p.get(2).blockOffset());
        assertEquals(500, p.get(2).numBlocks());
        assertEquals(2, new LaunchPlanner(1, 3).sliceSums(9, 4, 1).size());
    }

    @Test
    void everyPlanCoversEverySliceAndBlockOnceWithinGridLimits() {
        long seed = 77L;
        System.out.println("LaunchPlannerTest seed = " + seed);
        Random rnd = new Random(seed);
        for (int i = 0; i < 2000; i++) {
            int sms = 1 + rnd.nextInt(200);
            int maxBlocks = 1 + rnd.nextInt(i % 2 == 0 ? 10 : 1 << 20);
            int slices = 1 + rnd.nextInt(i % 10 == 0 ? 1_000_000 : 700);
            int blocks = 1 + rnd.nextInt(i % 3 == 0 ? 100_000 : 40);
            LaunchPlanner pl = new LaunchPlanner(sms, maxBlocks);
            long items = 1 + rnd.nextInt(i % 4 == 0 ? 2000 : 300);
            int slots = i % 2 == 0 ? LaunchPlanner.BATCH_SLOTS_16B : LaunchPlanner.BATCH_SLOTS_8B;
            List<LaunchPlanner.BlockLaunch> p = pl.blocks(slices, blocks, items, slots);
            int next = 0;
            for (LaunchPlanner.BlockLaunch f : p) {
                String who = "sms " + sms + " maxBlocks " + maxBlocks + " slices " + slices + " blocks " + blocks + ": " + f;
                assertEquals(next, f.blockOffset(), who);
                assertTrue(f.numBlocks() >= 1 && f.numBlocks() <= maxBlocks, who);
                assertTrue(f.numParts() >= 1 && f.numParts() <= LaunchPlanner.MAX_GRID_Y, who);
                // parts x slicesPerPart covers all slices, and the last part is not empty
                assertTrue((long) f.numParts() * f.slicesPerPart() >= slices, who);
                assertTrue((long) (f.numParts() - 1) * f.slicesPerPart() < slices, who);
                // whole warps: every part but a short group's is a multiple of the 8 warps
                assertTrue(slices < LaunchPlanner.WARPS || f.slicesPerPart() % LaunchPlanner.WARPS == 0
                        || f.slicesPerPart() == slices, who + ": " + f.slicesPerPart() + " slices per part");
                // a warp's walk fills a lane's batch where the slices allow (at most a chunk's walk of 8)
                long need = Math.min(LaunchPlanner.MAX_FUSED_WALK, LaunchPlanner.batchFill(items, slots));
                if (slices >= LaunchPlanner.WARPS * need) {
                    assertTrue(f.slicesPerPart() >= LaunchPlanner.WARPS * need, who + ": " + items + " items, walk of " + need);
                }
                next += f.numBlocks();
            }
            assertEquals(blocks, next);
        }
    }

    /**
     * The fused kernel's parts for tiny slices: fp8 with head size 64 (64 + 64 bytes, 8 units of 16 bytes a token) at
     * 16 MiB (24 layers x 2 heads, 171 blocks of 16) would get parts of 8 slices for CTAs enough on 132 SMs, one slice a
     * warp and half a lane's batch (4 of 8 loads); the planner takes parts of 16, two slices a warp, a full batch, and
     * still 513 CTAs (about 2 waves of the 264 resident). Shapes whose slices fill a batch alone keep today's parts.
     */
    @Test
    void fusedPartsOfTinySlicesFillALanesBatch() {
        LaunchPlanner planner = new LaunchPlanner(H200_SMS, 1 << 20);
        LaunchPlanner.BlockLaunch f = planner.blocks(48, 171, 8 * 16, LaunchPlanner.BATCH_SLOTS_16B).get(0);
        assertEquals(16, f.slicesPerPart());
        assertEquals(3, f.numParts());
        // 8-byte loads: 16 pieces a token, 8 a lane, a batch of 16: two slices a warp too
        assertEquals(16, planner.blocks(48, 171, 16 * 16, LaunchPlanner.BATCH_SLOTS_8B).get(0).slicesPerPart());
        // fp8 head 32, blocks of 4: 4 x 4 = 16 items, 1 a lane: 8 slices a warp (a chunk's walk), where there are 64
        assertEquals(64, planner.blocks(64, 10, 4 * 4, LaunchPlanner.BATCH_SLOTS_16B).get(0).slicesPerPart());
        // 20 slices: two a warp where 16 allow it, the rest in a short part
        LaunchPlanner.BlockLaunch few = planner.blocks(20, 1, 8 * 16, LaunchPlanner.BATCH_SLOTS_16B).get(0);
        assertEquals(16, few.slicesPerPart());
        assertEquals(2, few.numParts());
        // fewer than 8 slices: one part, as before
        assertEquals(5, planner.blocks(5, 1, 8 * 16, LaunchPlanner.BATCH_SLOTS_16B).get(0).slicesPerPart());
        // Llama-3-8B at 16 MiB: a slice fills two batches alone, parts of 8 as before
        assertEquals(8, planner.blocks(256, 8, LLAMA_ITEMS, SLOTS).get(0).slicesPerPart());
    }

    @Test
    void groupsTooLargeForTheSlicesKernelAreRejectedClearly() {
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                () -> new LaunchPlanner(1, 1).sliceSums(LaunchPlanner.MAX_GRID_Y * LaunchPlanner.WARPS + 1, 1, 1));
        assertTrue(e.getMessage().contains("slices"), e.getMessage());
        assertEquals(1, new LaunchPlanner(1, 1).sliceSums(LaunchPlanner.MAX_GRID_Y * LaunchPlanner.WARPS, 1, 1).size());
    }

    @Test
    void sliceSumsWarpsWalkEnoughSlicesToFillALanesBatch() {
        // Per lane and batch: 8 loads of 16 bytes, 16 of 8, 8 byte-assembled pieces (two 8-byte words each): 128 B.
        record Shape(String label, int unitsPerCell, int blockSize, int slots, int loadBytes) {
        }
        List<Shape> shapes = List.of(
                new Shape("fp8 head 64 (64+64 B), 16-byte loads, block 16", 8, 16, LaunchPlanner.BATCH_SLOTS_16B, 16),
                new Shape("fp8 head 64, 8-byte loads, block 16", 16, 16, LaunchPlanner.BATCH_SLOTS_8B, 8),
                new Shape("fp8 head 64, byte-assembled, block 16", 16, 16, LaunchPlanner.BATCH_SLOTS_1B, 16),
                new Shape("fp8 head 32 (32+32 B), 16-byte loads, block 16", 4, 16, LaunchPlanner.BATCH_SLOTS_16B, 16),
                new Shape("fp8 head 32, 8-byte loads, block 16", 8, 16, LaunchPlanner.BATCH_SLOTS_8B, 8),
                new Shape("fp8 head 64, block 4", 8, 4, LaunchPlanner.BATCH_SLOTS_16B, 16),
                new Shape("MLA 576 B, block 1", 36, 1, LaunchPlanner.BATCH_SLOTS_16B, 16),
                new Shape("MLA 576 B, block 2", 36, 2, LaunchPlanner.BATCH_SLOTS_16B, 16),
                new Shape("MLA 656 B, block 1", 41, 1, LaunchPlanner.BATCH_SLOTS_16B, 16),
                new Shape("bf16 head 128 (256+256 B), block 16", 32, 16, LaunchPlanner.BATCH_SLOTS_16B, 16));
        for (Shape s : shapes) {
            long items = (long) s.unitsPerCell() * s.blockSize();
            long perLane = Math.ceilDiv(items, 32);
            for (int slices : new int[] {8, 64, 256, 4096}) {
                for (int blocks : new int[] {1, 40, 100_000}) {
                    LaunchPlanner planner = new LaunchPlanner(H200_SMS, 1 << 20);
                    int spw = planner.sliceSumsSlicesPerWarp(slices, blocks, items, s.slots());
                    String who = s.label() + ", " + slices + " slices, " + blocks + " blocks: " + spw + " slices per warp";
                    assertTrue(spw >= 1 && spw <= LaunchPlanner.MAX_SLICES_PER_WARP, who);
                    assertTrue((long) spw * LaunchPlanner.WARPS <= Math.max(LaunchPlanner.WARPS, slices),
                            who + ": every warp of a CTA has a slice");
                    if (slices >= LaunchPlanner.WARPS * Math.ceilDiv(s.slots(), perLane)) {
                        // the slice count allows it: a lane's walk holds a whole batch, 128 bytes of loads
                        assertTrue(spw * perLane * s.loadBytes() >= 128, who + ": " + spw * perLane * s.loadBytes() + " B per lane");
                    }
                    if (blocks == 1) {
                        // one block: no more slices per warp than the batch needs, the slices spread over CTAs
                        assertTrue(spw == 1 || (spw - 1) * perLane < s.slots(), who + ": more than the batch needs");
                    }
                    if (blocks == 100_000 && slices >= LaunchPlanner.WARPS * LaunchPlanner.MAX_SLICES_PER_WARP) {
                        // blocks enough for the grid: the most slices per warp, the staging shared by the most loads
                        assertEquals(LaunchPlanner.MAX_SLICES_PER_WARP, spw, who);
                    }
                }
            }
        }
        // the grid shrinks with the slices per warp: 256 slices of fp8 head 64, 2 per warp, 16 CTA rows instead of 32
        List<LaunchPlanner.BlockLaunch> g = new LaunchPlanner(H200_SMS, 1 << 20).sliceSums(256, 10, 2);
        assertEquals(16, g.get(0).numParts());
        assertEquals(2, g.get(0).slicesPerPart());
        assertEquals(32, new LaunchPlanner(H200_SMS, 1 << 20).sliceSums(256, 10, 1).get(0).numParts());
        assertEquals(3, new LaunchPlanner(H200_SMS, 1 << 20).sliceSums(35, 1, 2).get(0).numParts());
        assertThrows(IllegalArgumentException.class, () -> new LaunchPlanner(1, 1).sliceSums(8, 1, LaunchPlanner.MAX_SLICES_PER_WARP + 1));
    }

    @Test
    void alignmentClassOfAbsoluteAddresses() {
        // What picks the 16-byte kernels: the plan's alignment class at the device address of the memory.
        KvMemory m = KvMemory.device(0x7f0000001000L, 1 << 20);
        assertEquals(16, part(m, 0, 4096, 2048, 32).alignmentAt(0x7f0000001000L));
        assertEquals(8, part(m, 0, 4096, 2048, 32).alignmentAt(0x7f0000001008L), "cell start 8 mod 16");
        assertEquals(16, part(m, 8, 4096, 2048, 32).alignmentAt(0x7f0000001008L), "address and base 8 mod 16 add up to 16");
        assertEquals(8, part(m, 0, 4104, 2048, 32).alignmentAt(0x7f0000001000L), "page stride");
        assertEquals(8, part(m, 0, 4096, 24, 2).alignmentAt(0x7f0000001000L), "token stride");
        assertEquals(8, part(m, 0, 4096, 2048, 3).alignmentAt(0x7f0000001000L), "odd piece count");
        assertEquals(1, part(m, 4, 4096, 2048, 2).alignmentAt(0x7f0000001000L), "base 4 mod 8");
    }

    private static SlicePlan.Part part(KvMemory m, long base, long pageStride, long tokenStride, int pieces) {
        return new SlicePlan.Part(m, base, pageStride, tokenStride, pieces, 0);
    }
}
