package io.kvchecksum.cuda;

import io.kvchecksum.InvalidLayoutException;

import java.util.ArrayList;
import java.util.List;

/**
 * Grid sizes for the kernels, as plain Java so CI tests them without a GPU.
 *
 * <p>The fused kernel's grid is (blocks x parts): CTA (b, q) reads part q of the group's slices for block b, each of
 * its 8 warps one slice at a time. Long requests get one part per block (the CTA writes the checksum itself);
 * short ones split the slices into parts so that even a single 16-token block gives every SM work, and a tiny
 * reduce kernel then sums the parts of each block. Requests of more than {@link #maxBlocksPerLaunch()} blocks are
 * cut into several launches so the scratch for parts stays small.
 */
final class LaunchPlanner {
    static final int THREADS = 256;
    static final int WARPS = THREADS / 32;
    static final int MAX_GRID_Y = 65535;
    /** CTAs per SM the planner aims for (4 resident CTAs of 256 threads, twice over). */
    static final int CTAS_PER_SM = 8;
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

    int maxBlocksPerLaunch() {
        return maxBlocksPerLaunch;
    }

    /**
     * One launch of the fused kernel (and, if {@code numParts > 1}, of the reduce kernel after it).
     *
     * @param blockOffset index of this launch's first block among the request's checksummed blocks (its output offset)
     * @param numBlocks gridDim.x
     * @param numParts gridDim.y
     * @param slicesPerPart slices per CTA
     */
    record BlockLaunch(int blockOffset, int numBlocks, int numParts, int slicesPerPart) {
        int reduceGrid() {
            return grid1d(numBlocks);
        }
    }

    /** All launches of one fused checksum; scratch for parts is reused by consecutive launches on one stream. */
    record BlockPlan(List<BlockLaunch> launches, long scratchElements) {
    }

    /** One launch of the slices kernel: grid (numBlocks, sliceGroups). */
    record SliceLaunch(int blockOffset, int numBlocks, int sliceGroups) {
    }

    BlockPlan blocks(int numSlices, int numBlocks) {
        requirePositive(numSlices, "slices");
        requirePositive(numBlocks, "blocks");
        List<BlockLaunch> out = new ArrayList<>();
        long scratch = 0;
        for (int off = 0; off < numBlocks; off += Math.min(maxBlocksPerLaunch, numBlocks - off)) {
            int n = Math.min(maxBlocksPerLaunch, numBlocks - off);
            long target = (long) smCount * CTAS_PER_SM;
            long maxParts = Math.min(MAX_GRID_Y, Math.ceilDiv(numSlices, WARPS));
            long parts = Math.max(1, Math.min(maxParts, Math.ceilDiv(target, n)));
            int perPart = (int) Math.ceilDiv(numSlices, parts);
            parts = Math.ceilDiv(numSlices, perPart);
            out.add(new BlockLaunch(off, n, (int) parts, perPart));
            if (parts > 1) {
                scratch = Math.max(scratch, (long) n * parts);
            }
        }
        return new BlockPlan(List.copyOf(out), scratch);
    }

    List<SliceLaunch> slices(int numSlices, int numBlocks) {
        requirePositive(numSlices, "slices");
        requirePositive(numBlocks, "blocks");
        long groups = Math.ceilDiv(numSlices, WARPS);
        if (groups > MAX_GRID_Y) {
            throw new InvalidLayoutException("the group has " + numSlices + " (layer, head) slices; per-slice sums on CUDA "
                    + "support at most " + (long) MAX_GRID_Y * WARPS);
        }
        List<SliceLaunch> out = new ArrayList<>();
        for (int off = 0; off < numBlocks; off += Math.min(maxBlocksPerLaunch, numBlocks - off)) {
            out.add(new SliceLaunch(off, Math.min(maxBlocksPerLaunch, numBlocks - off), (int) groups));
        }
        return List.copyOf(out);
    }

    /** CTAs for a one-thread-per-element kernel over {@code n} elements. */
    static int grid1d(long n) {
        requirePositive(n, "elements");
        long g = Math.ceilDiv(n, THREADS);
        if (g > Integer.MAX_VALUE) {
            throw new InvalidLayoutException(n + " elements are more than one launch can cover");
        }
        return (int) g;
    }

    private static void requirePositive(long n, String what) {
        if (n <= 0) {
            throw new IllegalArgumentException("a launch needs at least one of " + what + ", got " + n);
        }
    }
}
