package io.kvchecksum.cuda;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;

import java.util.List;
import java.util.function.ToLongFunction;

/**
 * One {@link CompiledPlan.Batch} serialized into the kernels' ABI and enqueued as one job: the batch's slice
 * descriptors once ({@code KvcSlice}, or for byte cells {@code KvcByteCellSlice}: the same layout with byte counts),
 * its launches' page tables one after the other and, for a batch of several requests, one {@code KvcRequest} each, all
 * uploaded from pinned memory in one copy; then one kernel launch over all the batch's blocks (cut only where a grid
 * would exceed {@link LaunchPlanner#maxBlocksPerLaunch()}), whose CTAs find their request in the descriptors
 * ({@code kvc_request_params}). Whole pieces go to the {@code kvc_block_checksums}/{@code kvc_slice_sums} kernels of
 * the parts' alignment class, byte cells to the {@code kvc_byte_cells_*} kernels. A package-private collaborator of
 * {@link CudaBackend}.
 */
final class BatchLaunch {
    static final String BYTE_CELLS_BLOCK_CHECKSUMS = "kvc_byte_cells_block_checksums";
    static final String BYTE_CELLS_SLICE_SUMS = "kvc_byte_cells_slice_sums";
    // With their _mixed variants, listed in CudaBackend.KERNELS and loaded with the others.

    /** The most byte-cell slices of one launch: a warp each, in a grid of at most {@link LaunchPlanner#MAX_GRID_Y} rows. */
    static final int MAX_BYTE_CELL_SLICES = LaunchPlanner.MAX_GRID_Y * LaunchPlanner.WARPS;

    private BatchLaunch() {
    }

    /**
     * Enqueues {@code batch} on {@code stream}: block checksums ({@code slices == false}) or slice sums, its values in
     * the batch's layout ({@link CompiledPlan.Batch#numValues}); {@code address} gives the device address of each
     * region's memory.
     */
    static CudaPending launch(CudaBackend backend, ContextResources resources, long stream, CompiledPlan.Batch batch,
            ToLongFunction<KvMemory> address, boolean slices) {
        List<CompiledPlan.Launch> launches = batch.launches();
        SlicePlan plan = batch.first().slices();
        boolean byteCells = batch.first().cellKind() == CompiledPlan.CellKind.BYTE_CELLS;
        int ns = plan.numSlices();
        int nb = batch.numBlocks();
        int pages = 0;
        for (CompiledPlan.Launch l : launches) {
            pages += l.slices().numPages();
        }
        long tableOff = (long) ns * KernelAbi.SLICE_BYTES;
        long requestsOff = tableOff + 8 * Math.ceilDiv(4L * pages, 8);
        boolean batched = launches.size() > 1;
        long upload = batched ? requestsOff + (long) launches.size() * KernelAbi.REQUEST_BYTES : tableOff + 4L * pages;
        String mode = plan.mode() == ChecksumMode.MIXED ? CudaBackend.MIXED_SUFFIX : "";
        // Device plans hold fixed addresses, so a plan (a batch of a reused compiled plan) always serializes to the same
        // bytes: it keys the upload.
        Object uploadKey = plan.residency() != SlicePlan.Residency.DEVICE ? null : batched ? batch : plan;
        return backend.job(resources, stream, upload, 0, batch.numValues(slices ? CompiledPlan.Output.SLICE_SUMS
                : CompiledPlan.Output.BLOCK_CHECKSUMS), uploadKey, (host, dUpload, dScratch, dOut, cached) -> {
            if (!cached) {
                KernelAbi.slices(host, plan, address, byteCells);
                writeTablesAndRequests(host, launches, tableOff, requestsOff, batched);
            }
            String name = byteCells ? (slices ? BYTE_CELLS_SLICE_SUMS : BYTE_CELLS_BLOCK_CHECKSUMS)
                    : CudaBackend.byAlignment(CudaBackend.alignmentOf(plan, address),
                            slices ? CudaBackend.SLICE_SUMS_16B : CudaBackend.BLOCK_CHECKSUMS_16B,
                            slices ? CudaBackend.SLICE_SUMS_8B : CudaBackend.BLOCK_CHECKSUMS_8B,
                            slices ? CudaBackend.SLICE_SUMS_1B : CudaBackend.BLOCK_CHECKSUMS_1B);
            long params = CudaBackend.paramsOffset(upload);
            RequestBlocks r = plan.request();
            return () -> {
                if (!slices) {
                    // The CTAs add into their block's word atomically: zero it first, on the same stream.
                    Cuda.check(backend.driver(), backend.driver().cuMemsetD8Async(dOut, 0, 8L * nb, stream),
                            "cuMemsetD8Async(results)");
                }
                for (Grid g : grids(resources.planner, byteCells, slices, ns, nb)) {
                    // One request: its fields, column 0 at its block b0. Several: column 0 is batch block b0, out_stride
                    // the values per block of the batch's output, and each CTA takes its request's fields from the
                    // descriptors (which serve both outputs: a cached upload may have been written for the other).
                    KernelAbi.checksumParams(host, params, dUpload, dUpload + tableOff, batched ? dOut : dOut + 8L * g.b0,
                            batched ? 0 : r.startToken(), batched ? g.b0 : r.firstBlock() + g.b0, batched ? 0 : r.numTokens(),
                            r.blockSize(), plan.pageSize(), g.blocks, ns, g.slicesPerPart, g.parts,
                            batched ? (slices ? ns : 1) : nb,
                            batched ? dUpload + requestsOff : 0, batched ? launches.size() : 0);
                    backend.launch(name + mode, g.blocks, g.rows, stream, host, upload);
                }
            };
        });
    }

    /** The launches' page ids one after the other; for several, a KvcRequest each saying where its parts lie. */
    private static void writeTablesAndRequests(java.lang.foreign.MemorySegment host, List<CompiledPlan.Launch> launches,
            long tableOff, long requestsOff, boolean batched) {
        long entry = 0;
        long begin = 0;
        for (int k = 0; k < launches.size(); k++) {
            SlicePlan p = launches.get(k).slices();
            if (batched) {
                RequestBlocks q = p.request();
                KernelAbi.request(host, requestsOff + (long) k * KernelAbi.REQUEST_BYTES, q.startToken(), q.firstBlock(),
                        q.numTokens(), begin, (int) entry, p.numBlocks());
            }
            for (int i = 0; i < p.numPages(); i++) {
                host.set(KernelAbi.U32, tableOff + 4L * entry++, p.page(i));
            }
            begin += p.numBlocks();
        }
    }

    /** One kernel launch: columns {@code b0 .. b0+blocks-1} of the batch, {@code rows} rows of CTAs. */
    private record Grid(int b0, int blocks, int rows, int parts, int slicesPerPart) {
    }

    private static List<Grid> grids(LaunchPlanner planner, boolean byteCells, boolean slices, int ns, int nb) {
        if (!byteCells && !slices) {
            return planner.blocks(ns, nb).launches().stream()
                    .map(f -> new Grid(f.blockOffset(), f.numBlocks(), f.numParts(), f.numParts(), f.slicesPerPart()))
                    .toList();
        }
        // A warp per slice: the slice-sum kernels, and the byte-cell kernels in both outputs.
        return planner.slices(ns, nb).stream().map(s -> new Grid(s.blockOffset(), s.numBlocks(), s.sliceGroups(), 0, 0))
                .toList();
    }
}
