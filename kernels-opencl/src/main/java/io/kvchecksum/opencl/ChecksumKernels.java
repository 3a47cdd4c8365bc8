package io.kvchecksum.opencl;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;

/**
 * One launch of a compiled plan through the kernels of {@code kvchecksum.cl}: the whole-piece launches through
 * {@code block_checksums} or {@code slice_sums} (the GPU or the CPU build, {@link LaunchGeometry}), the byte-cell ones
 * through {@code byte_cell_sums} of {@code kvchecksum_byte_cells.cl}, partial sums added by {@code sum_parts}; each
 * over its memory as {@link MemoryPlacement} places it, enqueued without waiting ({@link Enqueuer}).
 */
final class ChecksumKernels {
    private final Enqueuer enqueuer;
    private final MemoryPlacement memory;
    private final LaunchGeometry geometry;

    ChecksumKernels(Enqueuer enqueuer, MemoryPlacement memory, LaunchGeometry geometry) {
        this.enqueuer = enqueuer;
        this.memory = memory;
        this.geometry = geometry;
    }

    /**
     * Enqueues one launch and returns without waiting: its {@code numBlocks} block checksums, or its slices x
     * {@code numBlocks} slice sums (slice-major), as {@link CompiledPlan#gather} places them.
     */
    PendingChecksums start(CompiledPlan.Launch launch, CompiledPlan.Output output) {
        SlicePlan plan = launch.slices();
        boolean blocks = output == CompiledPlan.Output.BLOCK_CHECKSUMS;
        return switch (launch.cellKind()) {
            case WHOLE_PIECES -> blocks ? blockChecksums(plan) : sliceSums(plan);
            case BYTE_CELLS -> blocks ? byteCellBlockChecksums(plan) : byteCellSliceSums(plan);
        };
    }

    /** The fused pass: every KV byte of a block read once, weighted in registers. */
    private PendingChecksums blockChecksums(SlicePlan plan) {
        int nb = plan.numBlocks();
        Descriptors d = memory.layout(plan).d();
        if (geometry.contiguous()) {
            int items = geometry.cpuItems(d);
            int[] order = LaunchGeometry.addressOrder(plan);
            return enqueuer.enqueue(nb, op -> {
                cl_mem partials = op.buffer((long) nb * items * Sizeof.cl_ulong);
                cl_kernel k = op.kernel("block_checksums" + modeSuffix(plan));
                int a = setLayoutArgs(op, k, d, plan, order);
                op.arg(k, a++, d.numSlices);
                op.arg(k, a++, items);
                op.arg(k, a++, partials);
                op.local(k, a, Sizeof.cl_ulong);
                op.launch(k, new long[] {items}, new long[] {1});
                return sumParts(op, partials, items, nb);
            });
        }
        int parts = geometry.unitParts((long) nb, d);
        int localSize = geometry.localSize();
        return enqueuer.enqueue(nb, op -> {
            cl_mem partials = op.buffer((long) nb * parts * Sizeof.cl_ulong);
            cl_kernel k = op.kernel("block_checksums" + modeSuffix(plan));
            int a = setLayoutArgs(op, k, d, plan, null);
            op.arg(k, a++, d.numSlices);
            op.arg(k, a++, parts);
            op.arg(k, a++, partials);
            op.local(k, a, (long) localSize * Sizeof.cl_ulong);
            op.launch(k, new long[] {(long) localSize * parts, nb}, new long[] {localSize, 1});
            return sumParts(op, partials, parts, nb);
        });
    }

    private PendingChecksums sliceSums(SlicePlan plan) {
        int nb = plan.numBlocks();
        Descriptors d = memory.layout(plan).d();
        int n = Math.multiplyExact(d.numSlices, nb);
        if (geometry.contiguous()) {
            // CPU build: a work item per slice (those of a slice group but the first return at once), every block in
            // address order; the output is the slice sums.
            int[] order = LaunchGeometry.addressOrder(plan);
            return enqueuer.enqueue(n, op -> {
                cl_mem sums = op.buffer((long) n * Sizeof.cl_ulong);
                cl_kernel k = op.kernel("slice_sums" + modeSuffix(plan));
                int a = setLayoutArgs(op, k, d, plan, order);
                op.arg(k, a++, nb);
                op.arg(k, a++, 1);
                op.arg(k, a++, sums);
                op.local(k, a, Sizeof.cl_ulong);
                op.launch(k, new long[] {1, 1, d.numSlices}, new long[] {1, 1, 1});
                return sums;
            });
        }
        int parts = geometry.partsPerColumn((long) n, d, plan.request().blockSize());
        int localSize = geometry.localSize();
        return enqueuer.enqueue(n, op -> {
            cl_mem partials = op.buffer((long) n * parts * Sizeof.cl_ulong);
            cl_kernel k = op.kernel("slice_sums" + modeSuffix(plan));
            int a = setLayoutArgs(op, k, d, plan, null);
            op.arg(k, a++, nb);
            op.arg(k, a++, parts);
            op.arg(k, a++, partials);
            op.local(k, a, (long) localSize * Sizeof.cl_ulong);
            op.launch(k, new long[] {(long) localSize * parts, nb, d.numSlices}, new long[] {localSize, 1, 1});
            return sumParts(op, partials, parts, n);
        });
    }

    // ---- Cells that are not whole pieces (SlicePlan.Slice.byteCells()): the kernels of kvchecksum_byte_cells.cl, over
    // the same memory paths (device buffer, zero-copy window, packed copy) and descriptors as the whole-piece kernels.

    /** Block checksums of a byte-cell launch: m*s per (block, slice), then each block's row summed. */
    private PendingChecksums byteCellBlockChecksums(SlicePlan plan) {
        int nb = plan.numBlocks();
        Descriptors d = memory.layout(plan).d();
        int ns = d.numSlices;
        long n = (long) nb * ns;
        return enqueuer.enqueue(nb, op -> {
            cl_mem weighted = op.buffer(n * Sizeof.cl_ulong);
            launchByteCells(op, plan, d, weighted, true);
            return sumParts(op, weighted, ns, nb);
        });
    }

    /** Slice sums of a byte-cell launch. */
    private PendingChecksums byteCellSliceSums(SlicePlan plan) {
        int nb = plan.numBlocks();
        Descriptors d = memory.layout(plan).d();
        int n = Math.multiplyExact(d.numSlices, nb);
        return enqueuer.enqueue(n, op -> {
            cl_mem out = op.buffer((long) n * Sizeof.cl_ulong);
            launchByteCells(op, plan, d, out, false);
            return out;
        });
    }

    private void launchByteCells(Enqueuer.Op op, SlicePlan plan, Descriptors d, cl_mem out, boolean weighted) {
        int ns = d.numSlices;
        int[] bytes = new int[2 * ns];
        for (int i = 0; i < ns; i++) {
            SlicePlan.Slice s = plan.slice(i);
            bytes[2 * i] = s.k().bytes();
            bytes[2 * i + 1] = s.v() == null ? 0 : s.v().bytes();
        }
        cl_kernel k = op.kernel("byte_cell_sums" + modeSuffix(plan));
        int a = setLayoutArgs(op, k, d, plan, null);
        op.arg(k, a++, op.upload(bytes));
        op.arg(k, a++, ns);
        op.arg(k, a++, plan.numBlocks());
        op.arg(k, a++, weighted ? 1 : 0);
        op.arg(k, a, out);
        op.launch(k, new long[] {plan.numBlocks(), ns}, null);
    }

    private static String modeSuffix(SlicePlan plan) {
        return plan.mode() == ChecksumMode.MIXED ? "_mixed" : "";
    }

    /**
     * Makes the KV buffer (in place or a copy), uploads the descriptors and the page table (followed by {@code after},
     * if not null: the CPU build's block order) and sets the eight layout arguments every checksum kernel starts with;
     * returns the next index.
     */
    private int setLayoutArgs(Enqueuer.Op op, cl_kernel k, Descriptors d, SlicePlan plan, int[] after) {
        RequestBlocks request = plan.request();
        op.arg(k, 0, memory.kvBuffer(op, plan, d));
        op.arg(k, 1, op.upload(d.desc));
        int[] table = d.table;
        if (after != null) {
            table = java.util.Arrays.copyOf(d.table, d.table.length + after.length);
            System.arraycopy(after, 0, table, d.table.length, after.length);
        }
        op.arg(k, 2, op.upload(table));
        op.arg(k, 3, request.startToken());
        op.arg(k, 4, (long) plan.pageSize());
        op.arg(k, 5, request.firstBlock());
        op.arg(k, 6, (long) request.blockSize());
        op.arg(k, 7, request.numTokens());
        return 8;
    }

    /** Adds the {@code parts} partial sums of each of {@code n} columns ({@code sum_parts}); one part needs nothing. */
    private static cl_mem sumParts(Enqueuer.Op op, cl_mem partials, int parts, int n) {
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
