package io.kvchecksum.cuda;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;

import java.util.function.ToLongFunction;

/**
 * The CUDA backend's byte-assembling path: a {@link io.kvchecksum.CompiledPlan.CellKind#BYTE_CELLS} launch (every slice
 * with {@link SlicePlan.Slice#byteCells() byte cells}: a piece straddling K and V, or padded cells) serialized for the
 * kernels of {@code kvchecksum_byte_cells_kernels.cuh}. A package-private collaborator of {@link CudaBackend}, which
 * dispatches each launch on its cell kind.
 * Same job machinery as the whole-piece kernels (pinned upload of descriptors and table, launch on the stream, result
 * copy on the side stream); the descriptors are {@code KvcByteCellSlice}, KvcSlice's layout with byte counts.
 */
final class ByteCellLaunch {
    static final String BLOCK_CHECKSUMS = "kvc_byte_cells_block_checksums";
    static final String SLICE_SUMS = "kvc_byte_cells_slice_sums";
    // With their _mixed variants, listed in CudaBackend.KERNELS and loaded with the others.

    private ByteCellLaunch() {
    }

    /** The most slices of one launch: a warp each, in a grid of at most {@link LaunchPlanner#MAX_GRID_Y} rows. */
    static final int MAX_SLICES = LaunchPlanner.MAX_GRID_Y * LaunchPlanner.WARPS;

    /**
     * Enqueues the byte-cell kernel for a byte-cell launch's {@code plan} on {@code stream}: block checksums
     * ({@code slices == false}) or slice sums; {@code address} gives the device address of each region's memory.
     */
    static CudaPending launch(CudaBackend backend, ContextResources resources, long stream, SlicePlan plan,
                              ToLongFunction<KvMemory> address, boolean slices) {
        int ns = plan.numSlices();
        int nb = plan.numBlocks();
        int sliceGroups = Math.ceilDiv(ns, LaunchPlanner.WARPS);   // at most MAX_GRID_Y: a declared limit
        int pages = plan.numPages();
        RequestBlocks r = plan.request();
        long tableOff = (long) ns * KernelAbi.SLICE_BYTES;
        long upload = tableOff + 4L * pages;
        int maxBlocks = resources.planner.maxBlocksPerLaunch();
        String name = (slices ? SLICE_SUMS : BLOCK_CHECKSUMS) + (plan.mode() == ChecksumMode.MIXED ? CudaBackend.MIXED_SUFFIX : "");
        Object uploadKey = plan.residency() == SlicePlan.Residency.DEVICE ? plan : null;
        return backend.job(resources, stream, upload, 0, slices ? ns * nb : nb, uploadKey, (host, dUpload, dScratch, dOut, cached) -> {
            if (!cached) {
                KernelAbi.slices(host, plan, address, true);
                for (int i = 0; i < pages; i++) {
                    host.set(KernelAbi.U32, tableOff + 4L * i, plan.page(i));
                }
            }
            long params = CudaBackend.paramsOffset(upload);
            return () -> {
                if (!slices) {
                    // The warps add into their block's word atomically: zero it first, on the same stream.
                    Cuda.check(backend.driver(), backend.driver().cuMemsetD8Async(dOut, 0, 8L * nb, stream),
                            "cuMemsetD8Async(results)");
                }
                for (int b0 = 0; b0 < nb; b0 += maxBlocks) {
                    int n = Math.min(maxBlocks, nb - b0);
                    KernelAbi.checksumParams(host, params, dUpload, dUpload + tableOff, dOut + 8L * b0, r.startToken(),
                            r.firstBlock() + b0, r.numTokens(), r.blockSize(), plan.pageSize(), n, ns, 0, 0, nb);
                    backend.launch(name, n, sliceGroups, stream, host, upload);
                }
            };
        });
    }
}
