package io.kvchecksum.cuda;

import io.kvchecksum.InvalidLayoutException;

import java.util.ArrayList;
import java.util.List;

/**
 * Grid sizes for the kernels, as plain Java so CI tests them without a GPU.
 *
 * <p>The fused kernel's grid is (blocks x parts): CTA (b, q) reads part q of the group's slices for block b, each of
 * its 8 warps walking every 8th slice of the part, and adds its partial to the block's output word atomically (one
 * launch, no reduce kernel). Parts are whole warps (multiples of 8 slices) and there are enough of them for about
 * {@link #CTAS_PER_SM} CTAs per SM, or one part per block once the blocks alone give that many; but never so many
 * that a warp's walk is too short to fill a lane's batch of loads where the slice count allows (tiny slices: fp8 with
 * head size 64), the rule of the slices kernels ({@link #sliceSumsSlicesPerWarp}). Requests of more than the
 * planner's {@code maxBlocksPerLaunch} blocks are cut into several launches.
 */
final class LaunchPlanner {
    static final int THREADS = 256;
    static final int WARPS = THREADS / 32;
    static final int MAX_GRID_Y = 65535;
    /** CTAs of the fused kernels resident per SM: their launch bounds (116-128 registers, 0 spills: PtxEvidenceTest). */
    static final int RESIDENT_CTAS_PER_SM = 2;
    /**
     * CTAs per SM the planner aims for: 8 waves of the resident CTAs, so the last, partly filled wave costs at most
     * about an eighth (docs/gpu-performance.md, wave efficiency).
     */
    static final int CTAS_PER_SM = 8 * RESIDENT_CTAS_PER_SM;
    static final int DEFAULT_MAX_BLOCKS_PER_LAUNCH = 1 << 20;
    /** The most slices a warp of the slices kernels walks: KVC_SLICE_SUMS_MAX_SPW of kvchecksum.cuh (its stage). */
    static final int MAX_SLICES_PER_WARP = 16;
    /** Slices a warp of the fused kernel walks at most in one go: every 8th of a chunk of KVC_SLICE_CHUNK (64) staged descriptors. */
    static final int MAX_FUSED_WALK = 64 / WARPS;
    /** Loads a lane issues per batch (KVC_BATCH_SLOTS of kvchecksum.cuh) for 16-byte, 8-byte and byte-assembled pieces. */
    static final int BATCH_SLOTS_16B = 8;
    static final int BATCH_SLOTS_8B = 16;
    static final int BATCH_SLOTS_1B = 8;
    /** Items (pieces) a lane of the byte-cell kernels issues per batch (KVC_BYTE_CELL_BATCH): K-only cells, cells with V. */
    static final int BYTE_CELL_BATCH_K = 8;
    static final int BYTE_CELL_BATCH_KV = 4;

    private final int smCount;
    private final int maxBlocksPerLaunch;

    LaunchPlanner(int smCount, int maxBlocksPerLaunch) {
        if (smCount <= 0) {
            throw new IllegalArgumentException("smCount must be positive, got " + smCount);
        }
        if (maxBlocksPerLaunch <= 0) {
            throw new IllegalArgumentException("maxBlocksPerLaunch must be positive, got " + maxBlocksPerLaunch);
        }
        this.smCount = smCount;
        this.maxBlocksPerLaunch = maxBlocksPerLaunch;
    }

    int smCount() {
        return smCount;
    }

    /**
     * One launch of the request's blocks {@code [blockOffset, blockOffset + numBlocks)}.
     *
     * @param blockOffset index of this launch's first block among the request's checksummed blocks (its output offset)
     * @param numBlocks gridDim.x
     * @param numParts gridDim.y: the fused kernel's parts, or the slices kernels' groups of a warp's slices
     * @param slicesPerPart slices per CTA of the fused kernel; slices per warp of the slices kernels and of the
     *     byte-cell kernels
     */
    record BlockLaunch(int blockOffset, int numBlocks, int numParts, int slicesPerPart) {
    }

    /**
     * The launches of the fused kernel.
     *
     * @param numSlices slices of the group
     * @param numBlocks blocks of the request (of the batch)
     * @param itemsPerSlice a full block's items of the smallest slice: its load units per cell times the block size
     * @param batchSlots loads of a lane's batch in the kernel variant that runs
     */
    List<BlockLaunch> blocks(int numSlices, int numBlocks, long itemsPerSlice, int batchSlots) {
        requirePositive(numSlices, "slices");
        requirePositive(numBlocks, "blocks");
        requirePositive(itemsPerSlice, "items per slice");
        // Slices a warp's walk needs so that a lane's batch fills (at most a chunk's walk), where there are 8 times as many.
        long walk = Math.min(Math.min(MAX_FUSED_WALK, batchFill(itemsPerSlice, batchSlots)), Math.max(1, numSlices / WARPS));
        List<BlockLaunch> out = new ArrayList<>();
        for (int off = 0; off < numBlocks; off += Math.min(maxBlocksPerLaunch, numBlocks - off)) {
            int n = Math.min(maxBlocksPerLaunch, numBlocks - off);
            long target = (long) smCount * CTAS_PER_SM;
            long maxParts = Math.min(MAX_GRID_Y, Math.ceilDiv(numSlices, WARPS));
            long parts = Math.max(1, Math.min(maxParts, Math.ceilDiv(target, n)));
            // Whole warps: a part is a multiple of the CTA's 8 warps (where there are that many slices), so no warp of
            // a CTA waits on another that has one more slice to read; and each warp walks `walk` slices at least, even
            // where that leaves fewer CTAs than the target (a half-empty batch halves the bytes in flight).
            int perPart = (int) Math.ceilDiv(numSlices, parts);
            if (numSlices >= WARPS) {
                perPart = (int) Math.min(numSlices, Math.max(walk * WARPS, Math.ceilDiv(perPart, WARPS) * WARPS));
            }
            parts = Math.ceilDiv(numSlices, perPart);
            out.add(new BlockLaunch(off, n, (int) parts, perPart));
        }
        return out;
    }

    /**
     * The launches of a whole-piece slices kernel ({@code kvc_slice_sums_*}) or of a byte-cell kernel
     * ({@code kvc_byte_cells_*}, both outputs): each warp walks {@code slicesPerWarp} consecutive slices (from
     * {@link #sliceSumsSlicesPerWarp}), so a CTA row covers {@code 8 * slicesPerWarp} slices and the grid has that many
     * fewer rows; {@code slicesPerPart} carries the slices per warp to the kernel.
     */
    List<BlockLaunch> sliceSums(int numSlices, int numBlocks, int slicesPerWarp) {
        if (slicesPerWarp < 1 || slicesPerWarp > MAX_SLICES_PER_WARP) {
            throw new IllegalArgumentException("slices per warp must be 1.." + MAX_SLICES_PER_WARP + ", got " + slicesPerWarp);
        }
        requirePositive(numSlices, "slices");
        requirePositive(numBlocks, "blocks");
        long groups = Math.ceilDiv(numSlices, (long) WARPS * slicesPerWarp);
        if (groups > MAX_GRID_Y) {
            throw new InvalidLayoutException("the group has " + numSlices + " (layer, head) slices; per-slice sums on CUDA "
                    + "support at most " + (long) MAX_GRID_Y * WARPS * slicesPerWarp);
        }
        List<BlockLaunch> out = new ArrayList<>();
        for (int off = 0; off < numBlocks; off += Math.min(maxBlocksPerLaunch, numBlocks - off)) {
            out.add(new BlockLaunch(off, Math.min(maxBlocksPerLaunch, numBlocks - off), (int) groups, slicesPerWarp));
        }
        return out;
    }

    /**
     * Slices per warp of the whole-piece slices kernels and of the byte-cell kernels: at least enough consecutive slices
     * that a lane's batch of {@code batchSlots} loads (kvchecksum.cuh, {@code KVC_BATCH_SLOTS}, or the byte-cell kernels'
     * {@code KVC_BYTE_CELL_BATCH} pieces: 128 bytes of loads per thread) fills, where one
     * slice of a full block gives a lane fewer items than that (short cells, short blocks: fp8 with head size 64 gives 4
     * of 8); the kernel's walk runs a batch on into the next slice, as the fused kernel's does. More where the blocks
     * alone give the grid about {@link #CTAS_PER_SM} CTAs per SM (as {@link #blocks} takes fewer parts then), so that a
     * CTA's staging is shared by more loads. Never more than keeps all 8 warps of a CTA busy (a warp with no slice issues
     * nothing) nor more than the kernel stages ({@value #MAX_SLICES_PER_WARP}, {@code KVC_SLICE_SUMS_MAX_SPW}).
     *
     * @param numSlices slices of the group
     * @param numBlocks blocks of the request (of the batch)
     * @param itemsPerSlice a full block's items of the smallest slice: its load units per cell times the block size
     * @param batchSlots loads of a lane's batch in the kernel variant that runs
     */
    int sliceSumsSlicesPerWarp(int numSlices, int numBlocks, long itemsPerSlice, int batchSlots) {
        requirePositive(numSlices, "slices");
        requirePositive(numBlocks, "blocks");
        requirePositive(itemsPerSlice, "items per slice");
        long fill = batchFill(itemsPerSlice, batchSlots);
        long rows = Math.max(1, Math.ceilDiv((long) smCount * CTAS_PER_SM, Math.min(numBlocks, maxBlocksPerLaunch)));
        long grid = Math.ceilDiv(numSlices, WARPS * rows);
        return (int) Math.max(1, Math.min(Math.max(fill, grid), Math.min(MAX_SLICES_PER_WARP, numSlices / WARPS)));
    }

    /** Slices of {@code itemsPerSlice} items (32 lanes' share each) a lane's walk needs to fill a batch of {@code batchSlots} loads. */
    static long batchFill(long itemsPerSlice, int batchSlots) {
        return Math.ceilDiv(batchSlots, Math.ceilDiv(itemsPerSlice, 32));
    }

    private static void requirePositive(long n, String what) {
        if (n <= 0) {
            throw new IllegalArgumentException("a launch needs at least one of " + what + ", got " + n);
        }
    }
}
