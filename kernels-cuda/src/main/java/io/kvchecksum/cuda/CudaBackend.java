package io.kvchecksum.cuda;

import com.sun.jna.Memory;
import io.kvchecksum.BackendUnavailableException;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.Definition;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.Rechunked;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import io.kvchecksum.internal.Arithmetic;
import io.kvchecksum.internal.Checks;
import io.kvchecksum.spi.BackendProvider.Availability;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static io.kvchecksum.cuda.Cuda.check;

/**
 * The CUDA backend: hand-written kernels (compiled by nvcc at build time, shipped in this jar as a fatbin with
 * sm_80 and sm_90 machine code and compute_90 PTX) driven through the CUDA driver API ({@code libcuda.so.1}).
 *
 * <p><b>For engines:</b> {@link #enqueue(KvCacheGroup, RequestBlocks, long)} takes the KV as the engine's own device
 * pointers ({@link KvMemory#device}) and the engine's own {@code CUstream} handle (e.g. PyTorch's
 * {@code torch.cuda.current_stream().cuda_stream}). It validates on the host, enqueues the upload of a small
 * descriptor and the kernel on that stream (so the checksum sees exactly the KV writes enqueued before it), copies
 * the results to pinned host memory on a side stream, and returns at once: nothing in it synchronizes the device,
 * the context or the caller's stream. Only {@link PendingChecksums#get()} blocks, on the result copy alone.
 *
 * <p><b>The {@link KvChecksum} methods</b> run on the backend's own stream in device {@code ordinal}'s primary context
 * and block until done. They also accept host memory ({@link KvMemory#host}) and copy it to the device first (a
 * convenience for tests and tools: it allocates and synchronizes; engines use {@code enqueue}).
 *
 * <p>Every argument is validated before anything is enqueued; bad input throws {@link InvalidLayoutException}
 * naming the problem, and the kernels read only the cells the group and request describe. Driver failures throw
 * {@link CudaException} with the call and the CUDA error name. Thread-safe. {@link #close()} frees the backend's
 * buffers, streams and events after the work in flight has finished.
 */
public final class CudaBackend implements KvChecksum {
    /** The backend's name for {@link io.kvchecksum.KvChecksums#byName}. */
    public static final String NAME = "cuda";

    static final String FUSED_V1 = "kvc_fused_v1";
    static final String FUSED_V2 = "kvc_fused_v2";
    static final String SLICES_V1 = "kvc_slices_v1";
    static final String SLICES_V2 = "kvc_slices_v2";
    static final String REDUCE = "kvc_reduce_parts";
    static final String COMBINE = "kvc_combine";
    static final String RECHUNK = "kvc_rechunk";
    static final String FILL = "kvc_fill_u64";
    static final String SUM = "kvc_sum_u64";
    static final List<String> KERNELS = List.of(FUSED_V1, FUSED_V2, SLICES_V1, SLICES_V2, REDUCE, COMBINE, RECHUNK, FILL, SUM);

    /** Kernel parameter block within a slot's pinned buffer: the struct, then the one-entry pointer array. */
    private static final long PARAMS_BYTES = 256;
    private static final long ARGV_OFFSET = 128;

    private final CudaDriver d;
    private final int device;
    private final long primaryContext;
    private final Memory image;
    private final long library;
    private final Map<String, Long> kernels = new LinkedHashMap<>();
    private final int maxBlocksPerLaunch;
    private final String description;
    private final Map<Long, ContextResources> contexts = new ConcurrentHashMap<>();
    private final Set<DeviceBuffer> uploads = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /** Device 0. @throws BackendUnavailableException with the reason when CUDA cannot run here */
    public static CudaBackend open() {
        return open(0);
    }

    /** The device of that ordinal (for the blocking methods; {@code enqueue} follows the caller's stream). */
    public static CudaBackend open(int ordinal) {
        return new CudaBackend(Cuda.driver(), ordinal, Cuda.fatbin(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
    }

    /** Whether CUDA can run here and, if not, why (no driver library, cuInit error, no device, old driver). */
    public static Availability availability() {
        return Cuda.availability();
    }

    CudaBackend(CudaDriver d, int ordinal, byte[] fatbin, int maxBlocksPerLaunch) {
        if (fatbin == null) {
            throw new BackendUnavailableException("backend 'cuda' is unavailable: this jar was built without kernels "
                    + "(-Dkvchecksum.skipCuda=true)");
        }
        this.d = d;
        this.maxBlocksPerLaunch = maxBlocksPerLaunch;
        check(d, d.cuInit(0), "cuInit(0)");
        int[] dev = new int[1];
        check(d, d.cuDeviceGet(dev, ordinal), "cuDeviceGet(" + ordinal + ")");
        this.device = dev[0];
        long[] h = new long[1];
        check(d, d.cuDevicePrimaryCtxRetain(h, device), "cuDevicePrimaryCtxRetain");
        this.primaryContext = h[0];
        // The driver may read the image lazily (lazy loading), so it lives as long as the library.
        this.image = new Memory(fatbin.length);
        image.write(0, fatbin, 0, fatbin.length);
        try {
            check(d, d.cuLibraryLoadData(h, image, null, null, 0, null, null, 0), "cuLibraryLoadData(kvchecksum.fatbin)");
            this.library = h[0];
            for (String k : KERNELS) {
                check(d, d.cuLibraryGetKernel(h, library, k), "cuLibraryGetKernel(" + k + ")");
                kernels.put(k, h[0]);
            }
            this.description = NAME + " (" + Cuda.describeDevice(d, device) + "; hand-written kernels, fatbin sm_80+sm_90+compute_90)";
        } catch (RuntimeException e) {
            d.cuDevicePrimaryCtxRelease(device);
            throw e;
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public String toString() {
        return description;
    }

    /**
     * Enqueues the fused checksum of the request's blocks on the caller's stream and returns without waiting.
     *
     * <p>The checksum covers the KV as it is when the stream reaches the kernel, so enqueue it after the writes (or
     * the transfer) it must see, on the same stream. The group's regions must be device memory of the stream's
     * context ({@link KvMemory#device}). The call uploads a small descriptor and the block table from pinned memory
     * asynchronously, launches on {@code stream}, and copies the results on a side stream that waits on an event;
     * none of it synchronizes. The first enqueue in a context, and one larger than any before it, allocates its
     * buffers (cuMemAlloc, cuMemAllocHost); steady-state enqueues allocate nothing.
     *
     * @param stream the caller's {@code CUstream} handle; 0 is the legacy default stream of the context current on
     *     this thread
     * @return the pending values, one per block {@code firstBlock .. ceil(numTokens/blockSize)-1}; call
     *     {@code get()} (which frees the buffers for reuse) or {@code close()}
     * @throws InvalidLayoutException on bad input (before anything is enqueued), or when a region is host memory
     */
    public PendingChecksums enqueue(KvCacheGroup group, RequestBlocks request, long stream) {
        ensureOpen();
        Checks.validate(group, request, NAME, false);
        requireDevice(group);
        int nb = request.numBlocks();
        ContextResources cr = resourcesForStream(stream);
        if (nb == 0) {
            return PendingChecksums.completed(new long[0]);
        }
        return launchGroup(cr, stream, group, request, nb, false);
    }

    /** The engine-facing form of {@link #enqueue}: {@code stream} is a {@code CUstream} handle. */
    @Override
    public PendingChecksums submit(KvCacheGroup group, RequestBlocks request, long stream) {
        return enqueue(group, request, stream);
    }

    @Override
    public long[] blockChecksums(KvCacheGroup group, RequestBlocks request) {
        try (PendingChecksums p = submit(group, request)) {
            return p.get();
        }
    }

    /**
     * Device-memory groups: enqueued on the backend's own stream and returned at once. Groups with host memory are
     * copied to the device and computed before this returns.
     */
    @Override
    public PendingChecksums submit(KvCacheGroup group, RequestBlocks request) {
        ensureOpen();
        Checks.validate(group, request, NAME, false);
        int nb = request.numBlocks();
        if (nb == 0) {
            return PendingChecksums.completed(new long[0]);
        }
        ContextResources cr = primaryResources();
        if (allDevice(group)) {
            return launchGroup(cr, cr.ownStream, group, request, nb, false);
        }
        try (Placed placed = place(group, cr)) {
            try (PendingChecksums p = launchGroup(cr, cr.ownStream, placed.group, request, nb, false)) {
                return PendingChecksums.completed(p.get());
            }
        }
    }

    @Override
    public SliceSums sliceSums(KvCacheGroup group, RequestBlocks request) {
        ensureOpen();
        Checks.validate(group, request, NAME, false);
        int nb = request.numBlocks();
        int ns = group.numSlices();
        int[] layers = new int[ns];
        int[] heads = new int[ns];
        int i = 0;
        for (CacheLayer l : group.layers()) {
            for (int h = 0; h < l.numHeads(); h++, i++) {
                layers[i] = l.layer();
                heads[i] = l.firstHead() + h;
            }
        }
        if ((long) ns * nb > Integer.MAX_VALUE - 16) {
            throw new InvalidLayoutException(ns + " slices x " + nb + " blocks of slice sums do not fit one array");
        }
        if (nb == 0) {
            return new SliceSums(layers, heads, request.firstBlock(), 0, new long[0]);
        }
        ContextResources cr = primaryResources();
        try (Placed placed = place(group, cr); PendingChecksums p = launchGroup(cr, cr.ownStream, placed.group, request, nb, true)) {
            return new SliceSums(layers, heads, request.firstBlock(), nb, p.get());
        }
    }

    @Override
    public long[] combine(SliceSums sums) {
        ensureOpen();
        if (sums == null) {
            throw new InvalidLayoutException("combine: sums is null");
        }
        int ns = sums.numSlices();
        int nb = sums.numBlocks();
        if (nb == 0 || ns == 0) {
            return new long[nb];
        }
        ContextResources cr = primaryResources();
        long factorsBytes = 8L * ns;
        long upload = factorsBytes + 8L * ns * nb;
        try (PendingChecksums p = job(cr, cr.ownStream, upload, 0, nb, (host, dUpload, dScratch, dOut) -> {
            for (int i = 0; i < ns; i++) {
                host.set(KernelAbi.U64, 8L * i, Definition.factor(sums.layers()[i], sums.heads()[i]));
            }
            MemorySegment.copy(sums.values(), 0, host, KernelAbi.U64, factorsBytes, ns * nb);
            return () -> {
                KernelAbi.combine(host, paramsOffset(upload), dUpload + factorsBytes, dUpload, dOut, ns, nb);
                launch(COMBINE, LaunchPlanner.grid1d(nb), 1, cr.ownStream, host, upload);
            };
        })) {
            return p.get();
        }
    }

    @Override
    public Rechunked rechunk(long[] values, long firstBlock, int factor) {
        ensureOpen();
        Arithmetic.checkRechunk(values, firstBlock, factor);
        long firstChunk = Math.ceilDiv(firstBlock, (long) factor);
        long skip = Math.min(values.length, firstChunk * factor - firstBlock);
        int n = (int) Math.ceilDiv(values.length - skip, (long) factor);
        if (n == 0) {
            return new Rechunked(firstChunk, factor, new long[0]);
        }
        ContextResources cr = primaryResources();
        long upload = 8L * values.length;
        try (PendingChecksums p = job(cr, cr.ownStream, upload, 0, n, (host, dUpload, dScratch, dOut) -> {
            MemorySegment.copy(values, 0, host, KernelAbi.U64, 0, values.length);
            return () -> {
                KernelAbi.rechunk(host, paramsOffset(upload), dUpload, dOut, values.length, skip, n, factor);
                launch(RECHUNK, LaunchPlanner.grid1d(n), 1, cr.ownStream, host, upload);
            };
        })) {
            return new Rechunked(firstChunk, factor, p.get());
        }
    }

    /**
     * Copies host bytes to new device memory in the primary context of this backend's device and returns when they are
     * there: for benchmarks, tests and tools that hold the KV in host memory but want {@link #submit} and
     * {@link #enqueue} to read device memory (so that what is timed is the kernel, not a copy over PCIe). Describe
     * the regions on {@link DeviceBuffer#memory()} with the same offsets and strides as on the segment.
     *
     * <p>It allocates ({@code cuMemAlloc}) and waits for the copy ({@code cuStreamSynchronize} on the backend's own
     * stream): never call it where synchronizing is not allowed. Engines pass their own device pointers instead.
     *
     * @param bytes host memory, native or heap (a heap segment is staged through native memory first)
     * @return the device copy; close it (after the work reading it has finished) to free it, or close the backend
     * @throws CudaException when the allocation or the copy fails (nothing is left allocated then)
     */
    public DeviceBuffer upload(MemorySegment bytes) {
        ensureOpen();
        if (bytes == null) {
            throw new NullPointerException("bytes");
        }
        long size = bytes.byteSize();
        ContextResources cr = primaryResources();
        long[] p = new long[1];
        check(d, d.cuMemAlloc(p, Math.max(16, size)), "cuMemAlloc(" + size + " bytes for upload)");
        boolean done = false;
        try {
            if (size > 0) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment src = bytes.isNative() ? bytes : arena.allocate(size, 16).copyFrom(bytes);
                    check(d, d.cuMemcpyHtoDAsync(p[0], src.address(), size, cr.ownStream), "cuMemcpyHtoDAsync(upload)");
                    check(d, d.cuStreamSynchronize(cr.ownStream), "cuStreamSynchronize(upload)");
                }
            }
            DeviceBuffer b = new DeviceBuffer(this, p[0], size);
            uploads.add(b);
            done = true;
            return b;
        } finally {
            if (!done) {
                d.cuStreamSynchronize(cr.ownStream);
                d.cuMemFree(p[0]);
            }
        }
    }

    /** Frees an upload unless the backend's close already did. */
    void free(DeviceBuffer b) {
        if (uploads.remove(b)) {
            makeCurrent(primaryContext);
            check(d, d.cuMemFree(b.address()), "cuMemFree(" + b + ")");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (!uploads.isEmpty()) {
            d.cuCtxSetCurrent(primaryContext);
            for (DeviceBuffer b : List.copyOf(uploads)) {
                if (uploads.remove(b)) {
                    b.detach();
                    d.cuMemFree(b.address());
                }
            }
        }
        for (ContextResources cr : contexts.values()) {
            d.cuCtxSetCurrent(cr.context);
            cr.close();
        }
        contexts.clear();
        d.cuLibraryUnload(library);
        d.cuDevicePrimaryCtxRelease(device);
    }

    // ---- internals ------------------------------------------------------------------------------------------------

    CudaDriver driver() {
        return d;
    }

    long kernel(String name) {
        Long k = kernels.get(name);
        if (k == null) {
            throw new IllegalArgumentException("no kernel " + name);
        }
        return k;
    }

    /** The resources of the primary context of this backend's device, made current on this thread. */
    ContextResources primaryResources() {
        makeCurrent(primaryContext);
        return resources(primaryContext);
    }

    private ContextResources resourcesForStream(long stream) {
        long[] ctx = new long[1];
        check(d, d.cuStreamGetCtx(stream, ctx), "cuStreamGetCtx(stream 0x" + Long.toHexString(stream) + ")");
        makeCurrent(ctx[0]);
        return resources(ctx[0]);
    }

    private ContextResources resources(long ctx) {
        return contexts.computeIfAbsent(ctx, c -> {
            ContextResources cr = new ContextResources(d, c, maxBlocksPerLaunch);
            // Load every kernel into this context now, so lazy module loading never happens inside an enqueue.
            long[] f = new long[1];
            for (Map.Entry<String, Long> k : kernels.entrySet()) {
                check(d, d.cuKernelGetFunction(f, k.getValue()), "cuKernelGetFunction(" + k.getKey() + ")");
            }
            return cr;
        });
    }

    private void makeCurrent(long ctx) {
        long[] cur = new long[1];
        check(d, d.cuCtxGetCurrent(cur), "cuCtxGetCurrent");
        if (cur[0] != ctx) {
            check(d, d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the CUDA backend is closed");
        }
    }

    /** Fills the job's upload area of pinned memory and returns the launches to enqueue once it is uploaded. */
    @FunctionalInterface
    interface JobBody {
        Runnable prepare(MemorySegment host, long dUpload, long dScratch, long dOut);
    }

    private static long align(long n, long a) {
        return (n + a - 1) / a * a;
    }

    private static long paramsOffset(long uploadBytes) {
        return align(uploadBytes, 256);
    }

    /**
     * One asynchronous computation on {@code stream}: upload {@code uploadBytes} from pinned memory, run the
     * launches, record an event, and copy {@code results} values back on a side stream that waits on it.
     * Pinned layout: [upload | kernel params (256) | results]; device layout: [upload | scratch | results].
     */
    // reinterpret: the pinned buffer comes from cuMemAllocHost, whose size the slot records.
    @SuppressWarnings("restricted")
    CudaPending job(ContextResources cr, long stream, long uploadBytes, long scratchBytes, int results, JobBody body) {
        long paramsOff = paramsOffset(uploadBytes);
        long resultOff = align(paramsOff + PARAMS_BYTES, 256);
        long scratchOff = align(Math.max(uploadBytes, 1), 256);
        long outOff = align(scratchOff + scratchBytes, 256);
        ContextResources.Slot slot = cr.acquire(resultOff + 8L * results, outOff + 8L * results);
        boolean enqueued = false;
        try {
            MemorySegment host = MemorySegment.ofAddress(slot.pinned).reinterpret(slot.pinnedBytes);
            host.set(KernelAbi.U64, paramsOff + ARGV_OFFSET, slot.pinned + paramsOff);
            Runnable launches = body.prepare(host, slot.device, slot.device + scratchOff, slot.device + outOff);
            if (uploadBytes > 0) {
                check(d, d.cuMemcpyHtoDAsync(slot.device, slot.pinned, uploadBytes, stream), "cuMemcpyHtoDAsync(descriptor)");
            }
            launches.run();
            check(d, d.cuEventRecord(slot.launched, stream), "cuEventRecord(after kernels)");
            long side = cr.sideStream();
            check(d, d.cuStreamWaitEvent(side, slot.launched, 0), "cuStreamWaitEvent");
            check(d, d.cuMemcpyDtoHAsync(slot.pinned + resultOff, slot.device + outOff, 8L * results, side),
                    "cuMemcpyDtoHAsync(results)");
            check(d, d.cuEventRecord(slot.copied, side), "cuEventRecord(after result copy)");
            enqueued = true;
            return new CudaPending(d, cr, slot, resultOff, results);
        } finally {
            if (!enqueued) {
                // Whatever was enqueued may still read the slot: mark its end on the stream and reuse it only after.
                d.cuEventRecord(slot.copied, stream);
                cr.retire(slot);
            }
        }
    }

    /** Launches {@code name} with the parameter struct already written at the params offset of {@code host}. */
    void launch(String name, int gridX, int gridY, long stream, MemorySegment host, long uploadBytes) {
        long argv = host.address() + paramsOffset(uploadBytes) + ARGV_OFFSET;
        check(d, d.cuLaunchKernel(kernel(name), gridX, gridY, 1, LaunchPlanner.THREADS, 1, 1, 0, stream, argv, 0),
                "cuLaunchKernel(" + name + ", grid " + gridX + "x" + gridY + ")");
    }

    /** The fused kernel ({@code slices == false}) or the per-slice kernel over a device-memory group. */
    private CudaPending launchGroup(ContextResources cr, long stream, KvCacheGroup g, RequestBlocks r, int nb, boolean slices) {
        int ns = g.numSlices();
        int pages = (int) r.pagesNeeded(g.pageSize());
        long tableOff = (long) ns * KernelAbi.SLICE_BYTES;
        long upload = tableOff + 4L * pages;
        LaunchPlanner.FusedPlan fused = slices ? null : cr.planner.fused(ns, nb);
        List<LaunchPlanner.Slices> sliced = slices ? cr.planner.slices(ns, nb) : null;
        long scratch = slices ? 0 : 8L * fused.scratchElements();
        int results = slices ? ns * nb : nb;
        return job(cr, stream, upload, scratch, results, (host, dUpload, dScratch, dOut) -> {
            boolean vec16 = writeSlices(host, g);
            for (int i = 0; i < pages; i++) {
                host.set(KernelAbi.U32, tableOff + 4L * i, r.page(i));
            }
            long dTable = dUpload + tableOff;
            long params = paramsOffset(upload);
            return () -> {
                if (slices) {
                    for (LaunchPlanner.Slices s : sliced) {
                        KernelAbi.fused(host, params, dUpload, dTable, dOut + 8L * s.blockOffset(), r.startToken(),
                                r.firstBlock() + s.blockOffset(), r.numTokens(), r.blockSize(), g.pageSize(), s.numBlocks(), ns,
                                0, 0, nb);
                        launch(vec16 ? SLICES_V2 : SLICES_V1, s.numBlocks(), s.sliceGroups(), stream, host, upload);
                    }
                    return;
                }
                for (LaunchPlanner.Fused f : fused.launches()) {
                    long out = dOut + 8L * f.blockOffset();
                    KernelAbi.fused(host, params, dUpload, dTable, f.numParts() == 1 ? out : dScratch, r.startToken(),
                            r.firstBlock() + f.blockOffset(), r.numTokens(), r.blockSize(), g.pageSize(), f.numBlocks(), ns,
                            f.slicesPerPart(), f.numParts(), 0);
                    launch(vec16 ? FUSED_V2 : FUSED_V1, f.numBlocks(), f.numParts(), stream, host, upload);
                    if (f.numParts() > 1) {
                        KernelAbi.reduce(host, params, dScratch, out, f.numBlocks(), f.numParts());
                        launch(REDUCE, f.reduceGrid(), 1, stream, host, upload);
                    }
                }
            };
        });
    }

    /** Writes one KvcSlice per (layer, head) and says whether 16-byte loads may be used for all of them. */
    private static boolean writeSlices(MemorySegment host, KvCacheGroup g) {
        boolean vec16 = true;
        long at = 0;
        for (CacheLayer l : g.layers()) {
            KvRegion k = l.k();
            KvRegion v = l.v();
            long kAddr = ((KvMemory.Device) k.memory()).address();
            long vAddr = v == null ? 0 : ((KvMemory.Device) v.memory()).address();
            for (int h = 0; h < l.numHeads(); h++) {
                long kb = kAddr + k.offset() + h * k.headStride();
                long vb = v == null ? 0 : vAddr + v.offset() + h * v.headStride();
                KernelAbi.slice(host, at, Definition.factor(l.layer(), l.firstHead() + h), kb, k.pageStride(), k.tokenStride(),
                        vb, v == null ? 0 : v.pageStride(), v == null ? 0 : v.tokenStride(), k.pieces(), v == null ? 0 : v.pieces());
                vec16 &= LaunchPlanner.aligned16(kb, k.pageStride(), k.tokenStride(), k.pieces())
                        && (v == null || LaunchPlanner.aligned16(vb, v.pageStride(), v.tokenStride(), v.pieces()));
                at += KernelAbi.SLICE_BYTES;
            }
        }
        return vec16;
    }

    private static boolean allDevice(KvCacheGroup g) {
        for (CacheLayer l : g.layers()) {
            if (!(l.k().memory() instanceof KvMemory.Device) || (l.v() != null && !(l.v().memory() instanceof KvMemory.Device))) {
                return false;
            }
        }
        return true;
    }

    private static void requireDevice(KvCacheGroup g) {
        for (CacheLayer l : g.layers()) {
            for (KvRegion r : l.v() == null ? List.of(l.k()) : List.of(l.k(), l.v())) {
                if (!(r.memory() instanceof KvMemory.Device)) {
                    throw new InvalidLayoutException("enqueue takes device memory only, but layer " + l.layer() + " has "
                            + r.memory() + "; use blockChecksums or submit for host memory");
                }
            }
        }
    }

    /** A group whose host regions were copied to temporary device buffers; closing frees them. */
    private final class Placed implements AutoCloseable {
        final KvCacheGroup group;
        final List<Long> buffers = new ArrayList<>();

        Placed(KvCacheGroup group) {
            this.group = group;
        }

        Placed(KvCacheGroup host, ContextResources cr) {
            Map<MemorySegment, KvMemory> moved = new LinkedHashMap<>();
            try {
                this.group = relocate(host, m -> m instanceof KvMemory.Host h ? moved.computeIfAbsent(h.segment(), s -> upload(s, cr)) : m);
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        private KvMemory upload(MemorySegment s, ContextResources cr) {
            long[] p = new long[1];
            check(d, d.cuMemAlloc(p, Math.max(16, s.byteSize())), "cuMemAlloc(" + s.byteSize() + " bytes for host KV)");
            buffers.add(p[0]);
            if (s.byteSize() > 0) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment src = s.isNative() ? s : arena.allocate(s.byteSize(), 16).copyFrom(s);
                    // From pageable memory the driver stages the bytes before returning, so src may go away after.
                    check(d, d.cuMemcpyHtoDAsync(p[0], src.address(), s.byteSize(), cr.ownStream), "cuMemcpyHtoDAsync(host KV)");
                }
            }
            return KvMemory.device(p[0], s.byteSize());
        }

        @Override
        public void close() {
            if (buffers.isEmpty()) {
                return;
            }
            // The computation that read these has completed (its result copy was waited for) or failed.
            for (long b : buffers) {
                d.cuMemFree(b);
            }
            buffers.clear();
        }
    }

    private Placed place(KvCacheGroup g, ContextResources cr) {
        return allDevice(g) ? new Placed(g) : new Placed(g, cr);
    }

    /** The same layout with every region's memory mapped through {@code f} (offsets and strides unchanged). */
    static KvCacheGroup relocate(KvCacheGroup g, java.util.function.UnaryOperator<KvMemory> f) {
        List<CacheLayer> layers = new ArrayList<>();
        for (CacheLayer l : g.layers()) {
            layers.add(new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), relocate(l.k(), f), l.v() == null ? null : relocate(l.v(), f)));
        }
        return new KvCacheGroup(layers, g.pageSize(), g.numPages());
    }

    private static KvRegion relocate(KvRegion r, java.util.function.UnaryOperator<KvMemory> f) {
        return new KvRegion(f.apply(r.memory()), r.offset(), r.pageStride(), r.tokenStride(), r.headStride(), r.cellBytes());
    }
}
