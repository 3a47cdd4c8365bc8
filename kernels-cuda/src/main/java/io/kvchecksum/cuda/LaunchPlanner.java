package io.kvchecksum.cuda;

import io.kvchecksum.InvalidLayoutException;

import java.util.ArrayList;
import java.util.List;

/**
 * Grid sizes for the kernels, as plain Java so CI tests them without a GPU.
 *
 * <p>The fused kernel's grid is (blocks x parts): CTA (b, q) reads part q of the group's slices for block b, each of
 * its 8 warps one slice at a time, and adds its partial to the block's output word atomically (one launch, no
 * reduce kernel). Parts are whole warps (multiples of 8 slices) and there are enough of them for about
 * {@link #CTAS_PER_SM} CTAs per SM, or one part per block once the blocks alone give that many. Requests of more
 * than the planner's {@code maxBlocksPerLaunch} blocks are cut into several launches.
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
     * @param slicesPerPart slices per CTA of the fused kernel; 0 for the slices kernels
     */
    record BlockLaunch(int blockOffset, int numBlocks, int numParts, int slicesPerPart) {
    }

    /** The launches of the fused kernel. */
    List<BlockLaunch> blocks(int numSlices, int numBlocks) {
        requirePositive(numSlices, "slices");
        requirePositive(numBlocks, "blocks");
        List<BlockLaunch> out = new ArrayList<>();
        for (int off = 0; off < numBlocks; off += Math.min(maxBlocksPerLaunch, numBlocks - off)) {
            int n = Math.min(maxBlocksPerLaunch, numBlocks - off);
            long target = (long) smCount * CTAS_PER_SM;
            long maxParts = Math.min(MAX_GRID_Y, Math.ceilDiv(numSlices, WARPS));
            long parts = Math.max(1, Math.min(maxParts, Math.ceilDiv(target, n)));
            // Whole warps: a part is a multiple of the CTA's 8 warps (where there are that many slices), so no warp of
            // a CTA waits on another that has one more slice to read.
            int perPart = (int) Math.ceilDiv(numSlices, parts);
            if (numSlices >= WARPS) {
                perPart = (int) Math.min(numSlices, Math.ceilDiv(perPart, WARPS) * WARPS);
            }
            parts = Math.ceilDiv(numSlices, perPart);
            out.add(new BlockLaunch(off, n, (int) parts, perPart));
        }
        return out;
    }

    /** The launches of a slices kernel (and of the byte-cell kernels): a warp per slice. */
    List<BlockLaunch> slices(int numSlices, int numBlocks) {
        requirePositive(numSlices, "slices");
        requirePositive(numBlocks, "blocks");
        long groups = Math.ceilDiv(numSlices, WARPS);
        if (groups > MAX_GRID_Y) {
            throw new InvalidLayoutException("the group has " + numSlices + " (layer, head) slices; per-slice sums on CUDA "
                    + "support at most " + (long) MAX_GRID_Y * WARPS);
        }
        List<BlockLaunch> out = new ArrayList<>();
        for (int off = 0; off < numBlocks; off += Math.min(maxBlocksPerLaunch, numBlocks - off)) {
            out.add(new BlockLaunch(off, Math.min(maxBlocksPerLaunch, numBlocks - off), (int) groups, 0));
        }
        return out;
    }

    private static void requirePositive(long n, String what) {
        if (n <= 0) {
            throw new IllegalArgumentException("a launch needs at least one of " + what + ", got " + n);
        }
    }
}
