package io.kvchecksum.opencl;

import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.jocl.CL;
import org.jocl.Sizeof;
import org.jocl.cl_device_id;
import org.jocl.cl_program;

import java.util.Arrays;
import java.util.List;

/**
 * How the checksum kernels split their work on one device, fixed when the backend is opened from its {@link Tuning}:
 * the build of {@code block_checksums} (pieces per unit, and the GPU build with neighbouring work items on neighbouring
 * units or the CPU build {@code KVC_CONTIGUOUS_UNITS} with a run of units per work item), the work-group size, and per
 * launch the work-groups per output column (GPU build), the work items (CPU build) and the order in which the CPU build
 * visits blocks (by address).
 */
final class LaunchGeometry {
    private static final int MAX_PARTS_PER_COLUMN = 1024;
    /**
     * Work items per compute unit of the CPU build of {@code block_checksums} (see {@link #cpuItems}): 1 to 16 measured
     * the same on PoCL, 64 about 3 times slower (the module's README).
     */
    private static final long CPU_ITEMS_PER_COMPUTE_UNIT = 4;
    private static final String[] CHECKSUM_KERNELS = {"slice_sums", "block_checksums", "slice_sums_mixed",
        "block_checksums_mixed"};

    private final int computeUnits;
    private final int localSize;
    /** Pieces per unit the program was built with ({@code KVC_UNIT32}: 32, else 8). */
    private final int unitPieces;
    /** The CPU build of {@code block_checksums} ({@code KVC_CONTIGUOUS_UNITS}): unit runs per work item, blocks in address order. */
    private final boolean contiguous;

    /**
     * The geometry on {@code device}, whose checksum program was built with {@link Tuning#defines} of {@code tuning}:
     * the work-group size is the largest power of two the device, its local memory and every checksum kernel allow, at
     * most {@link Tuning#maxLocal} (PoCL runs a work-group's items as a loop on one core; 16 measured about 1.7x
     * faster there than 256).
     */
    LaunchGeometry(cl_device_id device, cl_program program, Tuning tuning) {
        this.unitPieces = tuning.unitPieces();
        this.contiguous = tuning.contiguousUnits();
        computeUnits = Math.max(1, OpenClDevices.deviceInt(device, CL.CL_DEVICE_MAX_COMPUTE_UNITS));
        long local = Math.min(tuning.maxLocal(), OpenClDevices.deviceLong(device, CL.CL_DEVICE_MAX_WORK_GROUP_SIZE));
        local = Math.min(local, OpenClDevices.deviceLong(device, CL.CL_DEVICE_LOCAL_MEM_SIZE) / 2 / Sizeof.cl_ulong);
        for (String k : CHECKSUM_KERNELS) {
            local = Math.min(local, ClPrograms.workGroupSize(program, device, k));
        }
        // The kernels' tree reduction needs a power of two.
        localSize = Integer.highestOneBit((int) Math.max(1, local));
    }

    /** Work items per work-group used by the checksum kernels (a power of two). */
    int localSize() {
        return localSize;
    }

    int computeUnits() {
        return computeUnits;
    }

    /** Whether the program is the CPU build ({@code KVC_CONTIGUOUS_UNITS}). */
    boolean contiguous() {
        return contiguous;
    }

    /**
     * How many work-groups share one output column (a block, or a slice's block): enough for a few work-groups per
     * compute unit overall, never more than the column has work items for.
     */
    int partsPerColumn(long columns, Descriptors d, int blockSize) {
        return parts(columns, (long) blockSize * d.maxPieces);
    }

    /**
     * Work-groups per block for {@code block_checksums}, whose work items each take whole 64-byte units of the block's
     * (slice, unit) sequence: a few work-groups per compute unit overall, never more than there are units to take.
     */
    int unitParts(long columns, Descriptors d) {
        return parts(columns, units(d));
    }

    /**
     * Work-groups per block of {@code copy_pieces} (work-groups of {@code local} items, each item taking pieces of the
     * block's (pair, piece) sequence of {@code items} and walking the block's tokens with each): as for the checksums,
     * a few per compute unit overall, never more than there are pieces to take.
     */
    int copyParts(long columns, long items, int local) {
        long wanted = Math.ceilDiv(4L * computeUnits, columns);
        long useful = Math.ceilDiv(items, local);
        return (int) Math.max(1, Math.min(MAX_PARTS_PER_COLUMN, Math.min(wanted, useful)));
    }

    /** Work-groups per column: {@code 4 x} compute units over all columns, at most one per {@code items} of a column. */
    private int parts(long columns, long items) {
        long wanted = Math.ceilDiv(4L * computeUnits, columns);
        long useful = Math.ceilDiv(items, localSize);
        return (int) Math.max(1, Math.min(MAX_PARTS_PER_COLUMN, Math.min(wanted, useful)));
    }

    /**
     * Work items of the CPU build of {@code block_checksums}: each takes one contiguous run of every block's units, so
     * a few per compute unit (the pthread driver hands work-groups of one item to its threads), never more than a
     * block has units.
     */
    int cpuItems(Descriptors d) {
        return (int) Math.max(1, Math.min(units(d), Math.min(MAX_PARTS_PER_COLUMN, CPU_ITEMS_PER_COMPUTE_UNIT * computeUnits)));
    }

    /** Units of one block: every slice's K and V pieces in units of {@link #unitPieces}. */
    private long units(Descriptors d) {
        long units = 0;
        for (int i = 0; i < d.numSlices; i++) {
            long pk = d.desc[i * Descriptors.WORDS + Descriptors.K_PIECES];
            long pv = d.desc[i * Descriptors.WORDS + Descriptors.PIECES] - pk;
            units += Math.ceilDiv(pk, unitPieces) + Math.ceilDiv(pv, unitPieces);
        }
        return units;
    }

    /**
     * The blocks of the plans (one launch's: a batch's plans, their blocks one after the other) sorted by the page id
     * of their first token (ties in block order): the order in which the CPU build visits them, so that every layer's
     * pages are read in address order (a layer's page {@code p} lies at {@code base + p * pageStride}), whatever the
     * order of the block tables.
     */
    static int[] addressOrder(List<SlicePlan> plans) {
        long[] keys = new long[plans.stream().mapToInt(SlicePlan::numBlocks).sum()];
        int b = 0;
        for (SlicePlan plan : plans) {
            RequestBlocks r = plan.request();
            for (int k = 0; k < plan.numBlocks(); k++, b++) {
                long t0 = Math.max(r.startToken(), (r.firstBlock() + (long) k) * r.blockSize());
                long page = plan.page((int) ((t0 - r.startToken()) / plan.pageSize()));
                keys[b] = page << 32 | b;
            }
        }
        Arrays.sort(keys);
        int[] order = new int[keys.length];
        for (int k = 0; k < keys.length; k++) {
            order[k] = (int) keys[k];
        }
        return order;
    }
}
