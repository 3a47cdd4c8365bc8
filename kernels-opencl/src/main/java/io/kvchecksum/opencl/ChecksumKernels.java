package io.kvchecksum.opencl;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;

import java.util.Arrays;
import java.util.List;

/**
 * One batch of a compiled plan ({@link CompiledPlan#batches()}: one launch, or a step's requests over one group) as one
 * launch of the kernels of {@code kvchecksum.cl}: whole pieces through {@code block_checksums} or {@code slice_sums}
 * (the GPU or the CPU build, {@link LaunchGeometry}), byte cells through {@code byte_cell_sums} of
 * {@code kvchecksum_byte_cells.cl}, partial sums added by {@code sum_parts}; over its memory as {@link MemoryPlacement}
 * places it, enqueued without waiting ({@link Enqueuer}). A batch of several launches gives the kernels its page tables
 * one after the other and each launch's request words ({@link Descriptors#requests}), from which each work item takes
 * the fields of its block's request.
 */
record ChecksumKernels(Enqueuer enqueuer, MemoryPlacement memory, LaunchGeometry geometry) {

    /**
     * Enqueues one batch and returns without waiting: its {@link CompiledPlan.Batch#numValues} values, each launch's
     * ({@code numBlocks} block checksums, or its slices x {@code numBlocks} slice sums, slice-major) one after the
     * other, as {@link CompiledPlan#startBatches} places them.
     */
    PendingChecksums start(CompiledPlan.Batch batch, CompiledPlan.Output output) {
        List<SlicePlan> plans = batch.launches().stream().map(CompiledPlan.Launch::slices).toList();
        Descriptors d = memory.layout(plans).d();
        boolean blocks = output == CompiledPlan.Output.BLOCK_CHECKSUMS;
        int nb = batch.numBlocks();
        return switch (batch.first().cellKind()) {
            case WHOLE_PIECES -> blocks ? blockChecksums(plans, d, nb) : sliceSums(plans, d, nb);
            case BYTE_CELLS -> byteCells(plans, d, nb, blocks);
        };
    }

    /** The fused pass: every KV byte of a block read once, weighted in registers. */
    private PendingChecksums blockChecksums(List<SlicePlan> plans, Descriptors d, int nb) {
        SlicePlan plan = plans.getFirst();
        if (geometry.contiguous()) {
            // CPU build: one work item per part, every block in address order.
            int items = geometry.cpuItems(d);
            return launch(plan, "block_checksums", d, LaunchGeometry.addressOrder(plans), d.numSlices, nb, items, 1,
                    new long[] {items});
        }
        int parts = geometry.unitParts((long) nb, d);
        int localSize = geometry.localSize();
        return launch(plan, "block_checksums", d, null, d.numSlices, nb, parts, localSize,
                new long[] {(long) localSize * parts, nb});
    }

    private PendingChecksums sliceSums(List<SlicePlan> plans, Descriptors d, int nb) {
        SlicePlan plan = plans.getFirst();
        int n = Math.multiplyExact(d.numSlices, nb);
        if (geometry.contiguous()) {
            // CPU build: a work item per slice (those of a slice group but the first return at once), every block in
            // address order; the output (one part) is the slice sums.
            return launch(plan, "slice_sums", d, LaunchGeometry.addressOrder(plans), nb, n, 1, 1,
                    new long[] {1, 1, d.numSlices});
        }
        int parts = geometry.partsPerColumn((long) n, d, plan.request().blockSize());
        int localSize = geometry.localSize();
        return launch(plan, "slice_sums", d, null, nb, n, parts, localSize,
                new long[] {(long) localSize * parts, nb, d.numSlices});
    }

    /**
     * Enqueues a whole-piece kernel ({@code block_checksums} or {@code slice_sums}, in the plan's mode): the layout
     * arguments ({@code order}: the CPU build's block order, or null), {@code count}, {@code parts}, the partial sums
     * ({@code parts} per each of the {@code n} outputs) and {@code localSize} ulongs of local memory, over
     * {@code global} items in work-groups of {@code localSize} x 1 x ...; then the parts added.
     */
    private PendingChecksums launch(SlicePlan plan, String kernel, Descriptors d, int[] order, int count, int n,
            int parts, int localSize, long[] global) {
        long[] local = new long[global.length];
        Arrays.fill(local, 1);
        local[0] = localSize;
        return enqueuer.enqueue(n, op -> {
            cl_mem partials = op.buffer((long) n * parts * Sizeof.cl_ulong);
            cl_kernel k = op.kernel(kernel + modeSuffix(plan));
            int a = setLayoutArgs(op, k, d, plan, order);
            op.arg(k, a++, count);
            op.arg(k, a++, parts);
            op.arg(k, a++, partials);
            op.local(k, a, (long) localSize * Sizeof.cl_ulong);
            op.launch(k, global, local);
            return sumParts(op, partials, parts, n);
        });
    }

    // ---- Cells that are not whole pieces (SlicePlan.Slice.byteCells()): the kernels of kvchecksum_byte_cells.cl, over
    // the same memory paths (device buffer, zero-copy window, packed copy) and descriptors as the whole-piece kernels.

    /**
     * A byte-cell launch: its slice sums, or for block checksums m*s per (block, slice) ({@code weighted}), each block's
     * row then summed.
     */
    private PendingChecksums byteCells(List<SlicePlan> plans, Descriptors d, int nb, boolean blocks) {
        SlicePlan plan = plans.getFirst();
        int ns = d.numSlices;
        int[] bytes = new int[2 * ns];
        for (int i = 0; i < ns; i++) {
            SlicePlan.Slice s = plan.slice(i);
            bytes[2 * i] = s.k().bytes();
            bytes[2 * i + 1] = s.v() == null ? 0 : s.v().bytes();
        }
        return enqueuer.enqueue(blocks ? nb : Math.multiplyExact(ns, nb), op -> {
            cl_mem out = op.buffer((long) ns * nb * Sizeof.cl_ulong);
            cl_kernel k = op.kernel("byte_cell_sums" + modeSuffix(plan));
            int a = setLayoutArgs(op, k, d, plan, null);
            op.arg(k, a++, op.upload(bytes));
            op.arg(k, a++, ns);
            op.arg(k, a++, nb);
            op.arg(k, a++, blocks ? 1 : 0);
            op.arg(k, a, out);
            op.launch(k, new long[] {nb, ns}, null);
            return blocks ? sumParts(op, out, ns, nb) : out;
        });
    }

    private static String modeSuffix(SlicePlan plan) {
        return plan.mode() == ChecksumMode.MIXED ? "_mixed" : "";
    }

    /**
     * Makes the KV buffer (in place or a copy), uploads the descriptors and the page tables (followed by {@code after},
     * if not null: the CPU build's block order) and sets the ten layout arguments every checksum kernel starts with
     * ({@code KVC_LAYOUT_ARGS}): one request's fields, or a batch's request words; returns the next index.
     */
    private int setLayoutArgs(Enqueuer.Op op, cl_kernel k, Descriptors d, SlicePlan plan, int[] after) {
        RequestBlocks request = plan.request();
        boolean one = d.requests == null;
        op.arg(k, 0, memory.kvBuffer(op, plan, d));
        op.arg(k, 1, op.upload(d.desc));
        int[] table = d.table;
        if (after != null) {
            table = Arrays.copyOf(d.table, d.table.length + after.length);
            System.arraycopy(after, 0, table, d.table.length, after.length);
        }
        op.arg(k, 2, op.upload(table));
        op.arg(k, 3, one ? request.startToken() : 0);
        op.arg(k, 4, (long) plan.pageSize());
        op.arg(k, 5, one ? request.firstBlock() : 0);
        op.arg(k, 6, (long) request.blockSize());
        op.arg(k, 7, one ? request.numTokens() : 0);
        op.arg(k, 8, one ? null : op.upload(d.requests));
        op.arg(k, 9, one ? 0 : d.requests.length / Descriptors.REQ_WORDS - 1);
        return 10;
    }

    /** Adds the {@code parts} partial sums of each of {@code n} columns ({@code sum_parts}); one part needs nothing. */
    static cl_mem sumParts(Enqueuer.Op op, cl_mem partials, int parts, int n) {
        if (parts == 1) {
            return partials;
        }
        cl_mem out = op.buffer((long) n * Sizeof.cl_ulong);
        cl_kernel k = op.kernel("sum_parts");
        op.arg(k, 0, partials);
        op.arg(k, 1, parts);
        op.arg(k, 2, n);
        op.arg(k, 3, out);
        op.launch(k, new long[] {n}, null);
        return out;
    }
}
