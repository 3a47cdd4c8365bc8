package io.kvchecksum.cuda;

import com.sun.jna.Memory;
import io.kvchecksum.BackendUnavailableException;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.Pending;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import io.kvchecksum.spi.BackendProvider.Availability;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import java.util.stream.Stream;

import static io.kvchecksum.cuda.Cuda.check;

/**
 * The CUDA backend: hand-written kernels (compiled by nvcc at build time, shipped in this jar as a fatbin with
 * sm_80 and sm_90 machine code and compute_90 PTX) driven through the CUDA driver API ({@code libcuda.so.1}).
 *
 * <p>A {@link Backend}: it runs behind the front, {@code KvChecksum cuda = KvChecksum.of(CudaBackend.open())} (or
 * {@code KvChecksums.byName("cuda")}), which compiles and checks every request before this backend sees it.
 *
 * <p><b>For engines:</b> {@link KvChecksum#submit(CompiledPlan, long) cuda.submit(plan, stream)} takes the KV as the
 * engine's own device pointers ({@link KvMemory#device}) and the engine's own {@code CUstream} handle (e.g. PyTorch's
 * {@code torch.cuda.current_stream().cuda_stream}). It enqueues the upload of a small descriptor and the kernel on
 * that stream (so the checksum sees exactly the KV writes enqueued before it), copies the results to pinned host
 * memory on a side stream, and returns at once: nothing in it synchronizes the device, the context or the caller's
 * stream. Only {@link PendingChecksums#get()} blocks, on the result copy alone. On an engine's stream it reads device
 * memory only ({@link #limits()}).
 *
 * <p><b>Without a stream</b> ({@code blockChecksums}, {@code sliceSums}, {@code submit(plan)}) it runs on the
 * backend's own stream in device {@code ordinal}'s primary context. It also accepts host memory
 * ({@link KvMemory#host}) and copies it to the device first (a convenience for tests and tools: it allocates and
 * synchronizes; engines pass device memory on their stream).
 *
 * <p>Bad input is refused by the front before anything is enqueued ({@link InvalidLayoutException} naming the
 * problem), and the kernels read only the cells the group and request describe. Driver failures throw
 * {@link CudaException} with the call and the CUDA error name. Thread-safe. {@link #close()} frees the backend's
 * buffers, streams and events after the work in flight has finished.
 */
public final class CudaBackend implements Backend {
    /** The backend's name for {@link io.kvchecksum.KvChecksums#byName}. */
    public static final String NAME = "cuda";

    /**
     * The kernels. The whole-piece ones are named as OpenCL's: what they compute, then the load width: 16- or 8-byte
     * aligned loads, or {@code _1b}, pieces at any byte address assembled from aligned words (a misaligned load would
     * be a sticky {@code CUDA_ERROR_MISALIGNED_ADDRESS} that kills the caller's context, so the variant follows the
     * alignment class of every part, {@link SlicePlan.Part#alignmentAt}). Then the byte-assembling kernels of
     * {@code kvchecksum_byte_cells_kernels.cuh} for byte-cell launches, the device-memory fill and read kernels for
     * measurements ({@code DeviceCheck}), and SGLang's page digest: the Adler-32 of each piece of the stream
     * ({@link CudaPageDigest}).
     */
    static final String BLOCK_CHECKSUMS_1B = "kvc_block_checksums_1b";
    static final String BLOCK_CHECKSUMS_8B = "kvc_block_checksums_8b";
    static final String BLOCK_CHECKSUMS_16B = "kvc_block_checksums_16b";
    static final String BYTE_CELL_BLOCK_CHECKSUMS = "kvc_byte_cells_block_checksums";
    static final String FILL = "kvc_fill_u64";
    static final String SUM = "kvc_sum_u64";
    static final String PAGE_DIGEST = "kvc_page_digest";
    /** The mixed mode's variant of a checksum kernel: the same kernel with every piece through the mixer. */
    static final String MIXED_SUFFIX = "_mixed";
    /**
     * The verifying copy's kernels ({@code kvchecksum_copy.cuh}): whole pieces with 16- or 8-byte loads and stores (both
     * sides' parts aligned, even piece counts), and byte cells, which also take whole pieces at any other alignment.
     */
    static final String COPY_16B = "kvc_copy_checksums_16b";
    static final String COPY_8B = "kvc_copy_checksums_8b";
    static final String COPY_BYTE_CELLS = "kvc_copy_byte_cells";
    /** The copy kernels in both modes. */
    static final List<String> COPY_KERNELS = Stream.of(COPY_16B, COPY_8B, COPY_BYTE_CELLS)
            .flatMap(k -> Stream.of(k, k + MIXED_SUFFIX)).toList();
    /**
     * The staged copy's kernel ({@link CopyPlan#staged()}: source and destination memory overlap): a CTA per staging
     * unit, read whole into shared memory before it is written.
     */
    static final String COPY_STAGED = "kvc_copy_staged";
    /**
     * Dynamic shared memory of a {@code kvc_copy_staged} launch beyond its unit: the warps' partial sums of the blocks
     * a unit meets ({@code KVC_STAGED_SPANS * KVC_WARPS} words, {@code kvchecksum_copy.cuh}).
     */
    static final int COPY_STAGE_PARTIALS = 16 * 8 * 8;
    /**
     * The largest staging unit where the device's opt-in to more dynamic shared memory is not available: the 48 KiB
     * every kernel may use, less the partial sums.
     */
    static final long COPY_STAGE_BYTES = (48 << 10) - COPY_STAGE_PARTIALS;
    /** Every checksum kernel in both outputs ({@link #sliceSums}) and both modes, then the others, then the copy's. */
    static final List<String> KERNELS = Stream.concat(Stream.concat(
            Stream.of(BLOCK_CHECKSUMS_1B, BLOCK_CHECKSUMS_8B, BLOCK_CHECKSUMS_16B, BYTE_CELL_BLOCK_CHECKSUMS)
                    .flatMap(k -> Stream.of(k, sliceSums(k))).flatMap(k -> Stream.of(k, k + MIXED_SUFFIX)),
            Stream.of(FILL, SUM, PAGE_DIGEST)), Stream.concat(COPY_KERNELS.stream(),
            Stream.of(COPY_STAGED, COPY_STAGED + MIXED_SUFFIX))).toList();

    /**
     * The system property that picks the occupancy variant of the whole-piece checksum kernels when a backend is
     * constructed: {@value #VARIANT_DEFAULT} (their default, {@code __launch_bounds__(256, 2)}) or
     * {@value #VARIANT_OCCUPANCY3} (the same code for 3 CTAs of 256 per SM, the {@code _occ3} kernels of the fatbin).
     */
    static final String VARIANT_PROPERTY = "kvchecksum.cuda.variant";
    static final String VARIANT_DEFAULT = "default";
    static final String VARIANT_OCCUPANCY3 = "occupancy3";
    /** The kernels that come in both variants: the whole-piece checksum kernels, all widths, outputs and modes. */
    static final List<String> VARIANT_KERNELS = KERNELS.stream()
            .filter(k -> k.matches("kvc_(block_checksums|slice_sums)_(16b|8b|1b)(_mixed)?")).toList();

    /**
     * {@return the kernel suffix of a variant name}
     *
     * @throws IllegalArgumentException naming the property and the accepted values for any other name
     */
    static String variantSuffix(String variant) {
        return switch (variant) {
            case VARIANT_DEFAULT -> "";
            case VARIANT_OCCUPANCY3 -> "_occ3";
            default -> throw new IllegalArgumentException("-D" + VARIANT_PROPERTY + "=" + variant + " is not a kernel variant; use "
                    + VARIANT_DEFAULT + " or " + VARIANT_OCCUPANCY3);
        };
    }

    /** {@return the slice-sums kernel of the same load width (or cell kind) as block-checksums kernel {@code blockKernel}} */
    static String sliceSums(String blockKernel) {
        return blockKernel.replace("block_checksums", "slice_sums");
    }

    /**
     * Any memory on the own stream (host memory is copied to the device first); device memory only on an engine's; the
     * byte-cell kernels' warps walk at least one slice each, in a grid of at most {@link LaunchPlanner#MAX_GRID_Y} rows of
     * 8 warps. The verifying copy: device memory to device memory, pinned host memory to device memory and device memory
     * to pinned host memory, on the own stream and on an engine's. Pinned host memory ({@link PinnedHostMemory}) the
     * kernels read and write in place through its mapped device address; pageable host memory is refused: the kernels
     * cannot reach it, and a pageable buffer staged through a temporary device copy would be a second copy, not a
     * verified one. The hint (appended to every refusal of host memory) says how to pin it.
     */
    private static final Set<BackendLimits.CopyRoute> COPY_ROUTES = Set.of(BackendLimits.CopyRoute.DEVICE_TO_DEVICE,
            BackendLimits.CopyRoute.PINNED_HOST_TO_DEVICE, BackendLimits.CopyRoute.DEVICE_TO_PINNED_HOST);
    private static final BackendLimits LIMITS = new BackendLimits(EnumSet.allOf(SlicePlan.Residency.class),
            Set.of(SlicePlan.Residency.DEVICE), LaunchPlanner.MAX_GRID_Y * LaunchPlanner.WARPS,
            "; the verifying copy on CUDA copies device memory and pinned host memory (pin a host buffer with "
                    + "CudaBackend.allocatePinned(bytes) or CudaBackend.pin(segment) and describe it on its memory(), "
                    + "KvMemory.pinnedHost); use the backend's own stream (submit without a stream) for host memory")
            .withCopies(COPY_ROUTES, COPY_ROUTES).withStagedUnits(COPY_STAGE_BYTES);

    /** {@code CUstreamCaptureStatus}: not capturing. */
    static final int CAPTURE_STATUS_NONE = 0;

    /** Kernel parameter block within a slot's pinned buffer: the struct, then the one-entry pointer array. */
    private static final long PARAMS_BYTES = 256;
    private static final long ARGV_OFFSET = 128;

    private final CudaDriver driver;
    private final int device;
    private final long primaryContext;
    private final Memory image;
    private final long library;
    private final Map<String, Long> kernels = new LinkedHashMap<>();
    private final int maxBlocksPerLaunch;
    private final String description;
    private final String variant;
    /** {@link #LIMITS} with the largest staging unit of this device ({@link #stagedUnits}). */
    private final BackendLimits limits;
    private final Map<Long, ContextResources> contexts = new ConcurrentHashMap<>();
    private final Set<DeviceBuffer> uploads = ConcurrentHashMap.newKeySet();
    /** The host memory this backend pinned and has not unpinned, by host address (ranges never overlap). */
    private final ConcurrentSkipListMap<Long, PinnedHostMemory> pinned = new ConcurrentSkipListMap<>();
    private volatile boolean closed;

    /**
     * {@return the backend on device 0}
     *
     * @throws BackendUnavailableException with the reason when CUDA cannot run here
     */
    public static CudaBackend open() {
        return open(0);
    }

    /**
     * {@return the backend on the device of that ordinal (for runs on the backend's own stream; a run on an engine's
     * stream follows that stream's context)}
     *
     * @param ordinal the device's ordinal, {@code 0 .. cuDeviceGetCount-1}
     * @throws BackendUnavailableException with the reason when CUDA cannot run here or the jar has no kernels
     * @throws CudaException when the device cannot be opened (no such ordinal, the kernels do not load on it)
     */
    public static CudaBackend open(int ordinal) {
        return new CudaBackend(Cuda.driver(), ordinal, Cuda.fatbin(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
    }

    /** {@return whether CUDA can run here and, if not, why (no driver library, cuInit error, no device, old driver)} */
    public static Availability availability() {
        return Cuda.availability();
    }

    CudaBackend(CudaDriver driver, int ordinal, byte[] fatbin, int maxBlocksPerLaunch) {
        this(driver, ordinal, fatbin, maxBlocksPerLaunch, System.getProperty(VARIANT_PROPERTY, VARIANT_DEFAULT));
    }

    /** As above with the occupancy variant named ({@link #VARIANT_PROPERTY}); the kernels keep their default names. */
    CudaBackend(CudaDriver driver, int ordinal, byte[] fatbin, int maxBlocksPerLaunch, String variant) {
        String suffix = variantSuffix(variant);
        if (fatbin == null) {
            throw new BackendUnavailableException("backend 'cuda' is unavailable: this jar was built without kernels "
                    + "(-Dkvchecksum.skipCuda=true)");
        }
        this.driver = driver;
        this.maxBlocksPerLaunch = maxBlocksPerLaunch;
        check(driver, driver.cuInit(0), "cuInit(0)");
        int[] dev = new int[1];
        check(driver, driver.cuDeviceGet(dev, ordinal), "cuDeviceGet(" + ordinal + ")");
        this.device = dev[0];
        long[] h = new long[1];
        check(driver, driver.cuDevicePrimaryCtxRetain(h, device), "cuDevicePrimaryCtxRetain");
        this.primaryContext = h[0];
        // The driver may read the image lazily (lazy loading), so it lives as long as the library.
        this.image = new Memory(fatbin.length);
        image.write(0, fatbin, 0, fatbin.length);
        try {
            check(driver, driver.cuLibraryLoadData(h, image, null, null, 0, null, null, 0), "cuLibraryLoadData(kvchecksum.fatbin)");
            this.library = h[0];
            for (String k : KERNELS) {
                String loaded = VARIANT_KERNELS.contains(k) ? k + suffix : k;
                check(driver, driver.cuLibraryGetKernel(h, library, loaded), "cuLibraryGetKernel(" + loaded + ")");
                kernels.put(k, h[0]);
            }
            this.variant = variant;
            this.limits = LIMITS.withStagedUnits(stagedUnits());
            this.description = NAME + " (" + Cuda.describeDevice(driver, device) + "; hand-written kernels, fatbin sm_80+sm_90+compute_90"
                    + (suffix.isEmpty() ? "" : ", variant " + variant) + ")";
        } catch (RuntimeException e) {
            driver.cuDevicePrimaryCtxRelease(device);
            throw e;
        }
    }

    /**
     * The largest staging unit of {@code kvc_copy_staged}: the device's opt-in maximum of shared memory per block (227
     * KiB on an H100, 163 KiB on an A100), both staged kernels opted in to it here, less the launch's partial sums
     * ({@link #COPY_STAGE_PARTIALS}); {@link #COPY_STAGE_BYTES} where the device does not report it or a kernel
     * refuses the opt-in (the staged copy is then limited, nothing else is).
     */
    private long stagedUnits() {
        try {
            int optIn = Cuda.attribute(driver, device, Cuda.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
            if (optIn - COPY_STAGE_PARTIALS <= COPY_STAGE_BYTES) {
                return COPY_STAGE_BYTES;
            }
            for (String k : List.of(COPY_STAGED, COPY_STAGED + MIXED_SUFFIX)) {
                check(driver, driver.cuKernelSetAttribute(Cuda.FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optIn,
                        kernels.get(k), device), "cuKernelSetAttribute(" + k + ", MAX_DYNAMIC_SHARED_SIZE_BYTES, " + optIn + ")");
            }
            return optIn - COPY_STAGE_PARTIALS;
        } catch (CudaException | UnsatisfiedLinkError e) {
            return COPY_STAGE_BYTES;
        }
    }

    /** {@return the occupancy variant of the checksum kernels this backend launches ({@link #VARIANT_PROPERTY})} */
    String variant() {
        return variant;
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

    /** Host and device memory (host memory copied first) on the own stream; device memory only on an engine's. */
    @Override
    public BackendLimits limits() {
        return limits;
    }

    /**
     * On an engine's stream ({@code stream} present, a {@code CUstream} handle; 0 is the legacy default stream of the
     * context current on this thread): the stream's context is made current for the call and the caller's restored
     * after it; a stream that is capturing a CUDA graph (vLLM and SGLang capture decode steps) is refused with
     * {@link IllegalStateException} before anything is enqueued (the upload, launch and result copy would be recorded
     * into the graph instead of running, and the values would never arrive); then every batch of the plan (a step's
     * requests over one group: one kernel launch for all of them) uploads its descriptors and page
     * tables from pinned memory (nothing, when the slot's device buffer already holds this plan's), runs on the stream, and has its results copied to pinned memory on a side stream that waits on an event. Nothing
     * in it synchronizes the device, the context or the caller's stream; the first call in a context, and one larger
     * than any before it, allocates its buffers (cuMemAlloc, cuMemAllocHost), steady-state calls allocate nothing.
     *
     * <p>On the backend's own stream ({@code stream} empty), in the primary context of the backend's device: launches
     * of device memory are enqueued and returned pending; launches reading host memory copy it to temporary device
     * buffers first and are computed before this returns (it allocates and synchronizes: a convenience for tests and
     * tools; engines pass their own device pointers).
     *
     * @throws InvalidLayoutException when the plan holds what the kernels' 64-bit addresses and 32-bit table offsets
     *     cannot represent (device memory reaching past the end of the 64-bit address space, a batch of more than
     *     {@code 2^31 - 1} page-table entries), before anything is enqueued
     * @throws IllegalStateException when {@code stream} is capturing a CUDA graph, or the backend is closed
     * @throws CudaException when a driver call fails
     */
    @Override
    public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
        ensureOpen();
        KernelAbi.requireRepresentable(plan);
        boolean slices = output == CompiledPlan.Output.SLICE_SUMS;
        if (stream.isPresent()) {
            long s = stream.getAsLong();
            return onStream(s, resources -> plan.startBatches(output,
                    b -> launch(resources, s, b, CudaBackend::deviceAddress, slices)));
        }
        return inPrimaryContext(resources -> {
            if (plan.launches().stream().allMatch(l -> l.memory() == SlicePlan.Residency.DEVICE)) {
                return plan.startBatches(output,
                        b -> launch(resources, resources.ownStream, b, CudaBackend::deviceAddress, slices));
            }
            return fromHost(resources, plan, output, slices);
        });
    }

    /**
     * {@code work} on an engine's stream: the stream's context made current for the call and the caller's restored
     * after it, a stream capturing a CUDA graph refused before {@code work} runs.
     */
    private <T> T onStream(long stream, Function<ContextResources, T> work) {
        long[] ctx = new long[1];
        check(driver, driver.cuStreamGetCtx(stream, ctx), "cuStreamGetCtx(stream 0x" + Long.toHexString(stream) + ")");
        long previous = enter(ctx[0]);
        try {
            refuseCapture(stream);  // first: creating the context's streams and events is no business of a capture either
            return work.apply(resources(ctx[0]));
        } finally {
            leave(previous, ctx[0]);
        }
    }

    /**
     * {@code work} in the primary context of this backend's device, made current for the call and the caller's
     * restored after it.
     */
    private <T> T inPrimaryContext(Function<ContextResources, T> work) {
        long previous = enter(primaryContext);
        try {
            return work.apply(resources(primaryContext));
        } finally {
            leave(previous, primaryContext);
        }
    }

    private void refuseCapture(long stream) {
        int[] status = new int[1];
        check(driver, driver.cuStreamIsCapturing(stream, status), "cuStreamIsCapturing(stream 0x" + Long.toHexString(stream) + ")");
        if (status[0] != CAPTURE_STATUS_NONE) {
            throw new IllegalStateException("checksum submitted on stream 0x" + Long.toHexString(stream) + ", which is "
                    + (status[0] == 1 ? "capturing a CUDA graph" : "in an invalidated CUDA graph capture")
                    + ": it would be recorded into the graph, not run; submit it outside the captured region");
        }
    }

    /**
     * The verifying copy ({@link CopyPlan}), device memory to device memory: one job on {@code stream} (an engine's
     * {@code CUstream}, treated as in {@link #run}: its context made current for the call, a capturing stream refused
     * before anything is enqueued) or on the backend's own stream: the pairs' descriptors (source and destination
     * {@code KvcSlice}s, byte counts for byte cells) and both page tables uploaded from pinned memory (nothing, when the
     * slot's device buffer already holds this plan's), the output zeroed, then one kernel launch per
     * {@link CopyPlan.Launch} (cut only where a grid would exceed the launch planner's {@code maxBlocksPerLaunch}),
     * both adding into the same block values, and the values copied to pinned memory on a side stream. Nothing in it synchronizes
     * the device, the context or the caller's stream. Whole pieces run {@code kvc_copy_checksums_16b} or {@code _8b}
     * when every part of both sides allows those loads and stores (even piece counts), else {@code kvc_copy_byte_cells}.
     * A staged plan ({@link CopyPlan#staged()}: source and destination memory overlap, vLLM's in-place rearrangement)
     * runs {@code kvc_copy_staged} instead, one launch per layer of each launch, a CTA per staging unit (the layer's
     * cells of one destination page, in dynamic shared memory up to the limit the backend declares:
     * {@link #stagedUnits}).
     *
     * <p>Pinned host memory on one side ({@link BackendLimits.CopyRoute#PINNED_HOST_TO_DEVICE},
     * {@link BackendLimits.CopyRoute#DEVICE_TO_PINNED_HOST}) is read or written by the same kernels in place, through
     * the mapped device address of the {@link PinnedHostMemory} holding it (each region's segment must lie in one that
     * this backend pinned and has not closed); such a plan's descriptors are uploaded on every call, since its device
     * addresses follow the pinning.
     *
     * @throws InvalidLayoutException when a launch reads or writes pageable host memory (the front refuses that first, by
     *     the limits), pinned host memory this backend does not hold pinned (never pinned by it, unpinned, freed, or a
     *     segment no longer alive), or the kernels' 64-bit addresses cannot represent the plan, before anything is
     *     enqueued
     * @throws IllegalStateException when {@code stream} is capturing a CUDA graph, or the backend is closed
     * @throws CudaException when a driver call fails
     */
    @Override
    public PendingChecksums runCopy(CopyPlan plan, OptionalLong stream) {
        ensureOpen();
        boolean deviceOnly = true;
        for (CopyPlan.Launch l : plan.launches()) {
            if (!COPY_ROUTES.contains(l.route())) {
                throw new InvalidLayoutException("backend 'cuda' cannot copy " + l.route() + ": the verifying copy on CUDA "
                        + "copies " + COPY_ROUTES.stream().map(Object::toString).sorted().toList() + LIMITS.hint());
            }
            deviceOnly &= l.route().equals(BackendLimits.CopyRoute.DEVICE_TO_DEVICE);
        }
        ToLongFunction<KvMemory> address = deviceOnly ? CudaBackend::deviceAddress : mappedAddresses(plan);
        KernelAbi.requireRepresentable(plan);
        boolean onDevice = deviceOnly;
        if (stream.isPresent()) {
            long s = stream.getAsLong();
            return onStream(s, resources -> copy(resources, s, plan, address, onDevice));
        }
        return inPrimaryContext(resources -> copy(resources, resources.ownStream, plan, address, onDevice));
    }

    /**
     * The device address of every memory of the plan's pairs: device memory's own, pinned host memory's mapped one
     * ({@link PinnedHostMemory#deviceAddress()} plus the offset in it), checked before anything is enqueued.
     */
    private ToLongFunction<KvMemory> mappedAddresses(CopyPlan plan) {
        Map<KvMemory, Long> addresses = new java.util.IdentityHashMap<>();
        for (CopyPlan.Launch l : plan.launches()) {
            for (CopyPlan.Pair p : l.pairs()) {
                for (SlicePlan.Slice s : List.of(p.source(), p.destination())) {
                    for (SlicePlan.Part part : s.v() == null ? List.of(s.k()) : List.of(s.k(), s.v())) {
                        addresses.computeIfAbsent(part.memory(), this::mappedAddress);
                    }
                }
            }
        }
        return addresses::get;
    }

    /** The device address of a region's memory for a copy kernel, or the refusal naming why it has none. */
    private long mappedAddress(KvMemory m) {
        if (m instanceof KvMemory.Device d) {
            return d.address();
        }
        KvMemory.Host h = (KvMemory.Host) m;
        MemorySegment s = h.segment();
        if (!h.pinned()) {
            throw new InvalidLayoutException("backend 'cuda' cannot copy into or out of pageable host memory (" + h
                    + "): its kernels reach host memory only where it is pinned and mapped" + LIMITS.hint());
        }
        if (!s.scope().isAlive()) {
            throw new InvalidLayoutException("backend 'cuda': the pinned host memory " + h + " is no longer alive (freed,"
                    + " or its arena closed); a copy may reach only memory that stays pinned until the copy completes");
        }
        Map.Entry<Long, PinnedHostMemory> e = pinned.floorEntry(s.address());
        if (e == null || !e.getValue().holds(s.address(), s.byteSize())) {
            throw new InvalidLayoutException("backend 'cuda' does not hold " + h + " pinned: it lies in no memory this "
                    + "backend pinned, or that memory was unpinned or freed (closed); pin it with CudaBackend.pin(segment)"
                    + " or allocate it with CudaBackend.allocatePinned(bytes), and close that only after the copies using it"
                    + " have completed");
        }
        PinnedHostMemory p = e.getValue();
        return p.deviceAddress() + (s.address() - p.hostAddress());
    }

    /** The copy kernel of a launch (before the mode's suffix), by its cell kind and both sides' alignment. */
    static String copyKernel(CopyPlan.Launch l) {
        return copyKernel(l, CudaBackend::deviceAddress);
    }

    /** As {@link #copyKernel(CopyPlan.Launch)} with each memory's device address from {@code address}. */
    static String copyKernel(CopyPlan.Launch l, ToLongFunction<KvMemory> address) {
        if (l.cellKind() == CompiledPlan.CellKind.BYTE_CELLS) {
            return COPY_BYTE_CELLS;
        }
        int alignment = 16;
        for (CopyPlan.Pair p : l.pairs()) {
            for (SlicePlan.Slice s : List.of(p.source(), p.destination())) {
                for (SlicePlan.Part part : s.v() == null ? List.of(s.k()) : List.of(s.k(), s.v())) {
                    // The whole-piece copy kernels walk 16-byte units: both parts' piece counts even.
                    alignment = Math.min(alignment, part.pieces() % 2 != 0 ? 1 : part.alignmentAt(address.applyAsLong(part.memory())));
                }
            }
        }
        return byAlignment(alignment, COPY_16B, COPY_8B, COPY_BYTE_CELLS);
    }

    /**
     * One job: the upload of every launch's descriptors and both tables, the zeroed output, a launch per launch; each
     * memory's device address from {@code address}.
     */
    private CudaPending copy(ContextResources resources, long stream, CopyPlan plan, ToLongFunction<KvMemory> address,
            boolean deviceOnly) {
        List<CopyPlan.Launch> launches = plan.launches();
        int n = launches.size();
        long[] srcOff = new long[n];
        long[] dstOff = new long[n];
        String[] names = new String[n];
        boolean staged = plan.staged();
        // staged: the plan's staging units (each layer's pairs of a launch) together, a kernel launch per unit
        CopyPlan.Staging[] staging = new CopyPlan.Staging[n];
        List<List<CopyPlan.Pair>> ordered = new ArrayList<>(n);
        long at = 0;
        for (int k = 0; k < n; k++) {
            CopyPlan.Launch l = launches.get(k);
            staging[k] = staged ? l.staging() : null;
            ordered.add(staged ? staging[k].pairs() : l.pairs());
            srcOff[k] = at;
            at += (long) l.pairs().size() * KernelAbi.SLICE_BYTES;
            dstOff[k] = at;
            at += (long) l.pairs().size() * KernelAbi.SLICE_BYTES;
            names[k] = (staged ? COPY_STAGED : copyKernel(l, address)) + (l.mode() == ChecksumMode.MIXED ? MIXED_SUFFIX : "");
        }
        CopyPlan.Launch first = launches.get(0);
        int[] srcTable = first.sourceTable();
        int[] dstTable = first.destinationTable();
        long srcTableOff = at;
        long dstTableOff = srcTableOff + 8 * Math.ceilDiv(4L * srcTable.length, 8);
        long upload = dstTableOff + 4L * dstTable.length;
        int nb = plan.numBlocks();
        List<List<LaunchPlanner.BlockLaunch>> grids = launches.stream()
                .map(l -> resources.planner.sliceSums(l.pairs().size(), nb, 1)).toList();   // a warp per (block, pair)
        // Device plans hold fixed addresses: the plan serializes to the same bytes every time, so it keys the upload. A
        // plan with pinned host memory does not: its mapped addresses follow the pinning, which may change between calls.
        return job(resources, stream, upload, nb, deviceOnly ? plan : null, (host, dUpload, dOut, cached) -> {
            if (!cached) {
                for (int k = 0; k < n; k++) {
                    CopyPlan.Launch l = launches.get(k);
                    boolean bytes = staged || names[k].startsWith(COPY_BYTE_CELLS);
                    for (int i = 0; i < l.pairs().size(); i++) {
                        CopyPlan.Pair p = ordered.get(k).get(i);
                        KernelAbi.slice(host, srcOff[k] + (long) i * KernelAbi.SLICE_BYTES, p.source(), address, bytes);
                        KernelAbi.slice(host, dstOff[k] + (long) i * KernelAbi.SLICE_BYTES, p.destination(), address, bytes);
                    }
                }
                MemorySegment.copy(srcTable, 0, host, KernelAbi.U32, srcTableOff, srcTable.length);
                MemorySegment.copy(dstTable, 0, host, KernelAbi.U32, dstTableOff, dstTable.length);
            }
            long params = paramsOffset(upload);
            return () -> {
                // Every launch's warps add into the block values atomically: zero them first, on the same stream.
                check(driver, driver.cuMemsetD8Async(dOut, 0, 8L * nb, stream), "cuMemsetD8Async(results)");
                for (int k = 0; k < n; k++) {
                    CopyPlan.Launch l = launches.get(k);
                    if (staged) {
                        CopyPlan.Staging units = staging[k];
                        int pages = (int) Math.ceilDiv(l.numTokens() - l.startToken(), (long) l.destinationPageSize());
                        int[] starts = units.starts();
                        for (int u = 0; u < units.units(); u++) {
                            int g0 = starts[u];
                            int g1 = starts[u + 1];
                            KernelAbi.copyParams(host, params, dUpload + srcOff[k] + (long) g0 * KernelAbi.SLICE_BYTES,
                                    dUpload + dstOff[k] + (long) g0 * KernelAbi.SLICE_BYTES, dUpload + srcTableOff,
                                    dUpload + dstTableOff, dOut, l.startToken(), l.firstBlock(), l.numTokens(),
                                    l.blockSize(), l.sourcePageSize(), l.destinationPageSize(), g1 - g0, pages);
                            // the unit (at most limits().maxStagedUnitBytes(): checked) and the warps' partial sums in
                            // dynamic shared memory
                            int shared = Math.toIntExact(units.bytes(u) + COPY_STAGE_PARTIALS);
                            launch(names[k], pages, 1, stream, host, upload, shared);
                        }
                        continue;
                    }
                    for (LaunchPlanner.BlockLaunch g : grids.get(k)) {
                        int b0 = g.blockOffset();
                        KernelAbi.copyParams(host, params, dUpload + srcOff[k], dUpload + dstOff[k], dUpload + srcTableOff,
                                dUpload + dstTableOff, dOut + 8L * b0, l.startToken(), l.firstBlock() + b0, l.numTokens(),
                                l.blockSize(), l.sourcePageSize(), l.destinationPageSize(), l.pairs().size(), g.numBlocks());
                        launch(names[k], g.numBlocks(), g.numParts(), stream, host, upload);
                    }
                }
            };
        });
    }

    /**
     * A plan reading host memory, on the own stream: each distinct host segment of all its launches copied to the device
     * once (a step's requests over one cache share its memory), every launch computed, waited for, the copies freed.
     */
    private PendingChecksums fromHost(ContextResources resources, CompiledPlan plan, CompiledPlan.Output output, boolean slices) {
        List<KvMemory> memories = plan.launches().stream().flatMap(l -> l.slices().slices().stream())
                .flatMap(s -> s.v() == null ? Stream.of(s.k().memory()) : Stream.of(s.k().memory(), s.v().memory())).toList();
        try (Placed placed = new Placed(memories, resources);
             PendingChecksums p = plan.startBatches(output,
                     b -> launch(resources, resources.ownStream, b, placed::address, slices))) {
            return PendingChecksums.completed(p.get());
        }
    }

    /**
     * SGLang's page digest: the Adler-32 of every piece of the stream (at most 8 KiB, a warp each, in
     * {@code kvc_page_digest}) on the backend's own stream, joined in order on the host ({@link CudaPageDigest}).
     * Host memory is copied to the device first, as for runs on the own stream; blocks until done.
     */
    @Override
    public long pageDigest(PageDigestPlan plan) {
        ensureOpen();
        return inPrimaryContext(resources -> {
            try (Placed placed = new Placed(plan.runs().stream().map(PageDigestPlan.Run::memory).toList(), resources)) {
                return CudaPageDigest.digest(this, resources, plan, placed::address);
            }
        });
    }

    /**
     * SGLang's page digest on an engine's stream ({@code stream} a {@code CUstream}, as for {@link #run}): the stream's
     * context made current for the call and the caller's restored after it, a stream capturing a CUDA graph refused
     * before anything is enqueued, then the piece table's upload, {@code kvc_page_digest} and the result copy enqueued
     * exactly as a checksum's are, nothing waited for; the pieces are joined when the digest is read. Device memory
     * only.
     *
     * @throws InvalidLayoutException when a run of the plan is in host memory, before anything is enqueued
     * @throws IllegalStateException when {@code stream} is capturing a CUDA graph, or the backend is closed
     * @throws CudaException when a driver call fails
     */
    @Override
    public Pending<Long> submitPageDigest(PageDigestPlan plan, long stream) {
        ensureOpen();
        for (PageDigestPlan.Run r : plan.runs()) {
            if (!(r.memory() instanceof KvMemory.Device)) {
                throw new InvalidLayoutException("backend 'cuda' reads device memory only on an engine's stream, but a "
                        + "page-digest run is " + r.memory() + "; use pageDigest (the backend's own stream) for host memory");
            }
        }
        return onStream(stream, resources -> CudaPageDigest.start(this, resources, stream, plan, CudaBackend::deviceAddress));
    }

    /**
     * Copies host bytes to new device memory in the primary context of this backend's device and returns when they are
     * there: for benchmarks, tests and tools that hold the KV in host memory but want the checksums
     * ({@link KvChecksum#submit(CompiledPlan)}, {@link KvChecksum#submit(CompiledPlan, long)}) to read device memory (so
     * that what is timed is the kernel, not a copy over PCIe). Describe
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
        return inPrimaryContext(resources -> upload(bytes, size, resources));
    }

    private DeviceBuffer upload(MemorySegment bytes, long size, ContextResources resources) {
        long[] p = new long[1];
        check(driver, driver.cuMemAlloc(p, Math.max(16, size)), "cuMemAlloc(" + size + " bytes for upload)");
        boolean done = false;
        try {
            copyToDevice(p[0], bytes, resources.ownStream, "upload");
            if (size > 0) {
                check(driver, driver.cuStreamSynchronize(resources.ownStream), "cuStreamSynchronize(upload)");
            }
            DeviceBuffer b = new DeviceBuffer(this, p[0], size);
            uploads.add(b);
            done = true;
            return b;
        } finally {
            if (!done) {
                driver.cuStreamSynchronize(resources.ownStream);
                driver.cuMemFree(p[0]);
            }
        }
    }

    /**
     * Enqueues the copy of host {@code bytes} to {@code dst} on {@code stream} (a heap segment staged through native
     * memory; from pageable memory the driver stages the bytes before returning, so the source may go away after).
     */
    private void copyToDevice(long dst, MemorySegment bytes, long stream, String what) {
        if (bytes.byteSize() > 0) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment src = bytes.isNative() ? bytes : arena.allocate(bytes.byteSize(), 16).copyFrom(bytes);
                check(driver, driver.cuMemcpyHtoDAsync(dst, src.address(), bytes.byteSize(), stream), "cuMemcpyHtoDAsync(" + what + ")");
            }
        }
    }

    /**
     * Allocates host memory page-locked and mapped into the device's address space ({@code cuMemHostAlloc} with
     * {@code CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP}, then {@code cuMemHostGetDevicePointer}): a staging
     * buffer the verifying copy reads from or writes to in place ({@link PinnedHostMemory}). Pinning is expensive (it
     * locks pages and may serialize the device's streams): allocate once, at set-up, and reuse the buffer; never in an
     * engine's step. The bytes are uninitialized.
     *
     * @param bytes the size, positive
     * @return the memory; close it (after the copies using it have completed) to free it, or close the backend
     * @throws IllegalArgumentException when {@code bytes} is not positive
     * @throws IllegalStateException when the backend is closed
     * @throws CudaException when the allocation or the mapping fails (nothing is left allocated then)
     */
    // reinterpret: the segment covers exactly the bytes cuMemHostAlloc returned, and dies with them (its arena).
    @SuppressWarnings("restricted")
    public PinnedHostMemory allocatePinned(long bytes) {
        ensureOpen();
        if (bytes <= 0) {
            throw new IllegalArgumentException("pinned host memory must have a positive size, got " + bytes);
        }
        long previous = enter(primaryContext);
        try {
            long[] p = new long[1];
            check(driver, driver.cuMemHostAlloc(p, bytes, Cuda.MEMHOST_PORTABLE | Cuda.MEMHOST_DEVICEMAP),
                    "cuMemHostAlloc(" + bytes + " bytes, PORTABLE | DEVICEMAP)");
            boolean done = false;
            Arena arena = Arena.ofShared();
            try {
                long[] d = new long[1];
                check(driver, driver.cuMemHostGetDevicePointer(d, p[0], 0), "cuMemHostGetDevicePointer(0x" + Long.toHexString(p[0]) + ")");
                PinnedHostMemory m = new PinnedHostMemory(this, MemorySegment.ofAddress(p[0]).reinterpret(bytes, arena, null),
                        d[0], arena);
                pinned.put(p[0], m);
                done = true;
                return m;
            } finally {
                if (!done) {
                    arena.close();
                    driver.cuMemFreeHost(p[0]);
                }
            }
        } finally {
            leave(previous, primaryContext);
        }
    }

    /**
     * Page-locks a caller's native segment and maps it into the device's address space ({@code cuMemHostRegister} with
     * {@code CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP}, then {@code cuMemHostGetDevicePointer}), for
     * the verifying copy to read from or write to it in place ({@link PinnedHostMemory}). The segment stays the caller's:
     * keep it alive until the returned memory is closed. Registering is expensive (it locks every page): do it once, at
     * set-up. Memory already page-locked elsewhere (e.g. by {@code cudaHostAlloc}) cannot be registered again
     * ({@code CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED}); allocate with {@link #allocatePinned} instead.
     *
     * @param segment native memory, not empty, not overlapping memory this backend holds pinned
     * @return the pinning; close it (after the copies using it have completed) to unregister, or close the backend
     * @throws IllegalArgumentException when {@code segment} is a heap segment, empty, not alive, or overlaps memory this
     *     backend holds pinned
     * @throws IllegalStateException when the backend is closed
     * @throws CudaException when registering or mapping fails (nothing is left registered then)
     */
    public PinnedHostMemory pin(MemorySegment segment) {
        ensureOpen();
        if (segment == null) {
            throw new NullPointerException("segment");
        }
        if (!segment.isNative() || segment.byteSize() == 0 || !segment.scope().isAlive()) {
            throw new IllegalArgumentException("only a live, non-empty native segment can be pinned, got " + segment
                    + (segment.isNative() ? "" : " (a heap segment: copy it into allocatePinned(bytes) memory instead)"));
        }
        long at = segment.address();
        synchronized (pinned) {
            Map.Entry<Long, PinnedHostMemory> below = pinned.floorEntry(at + segment.byteSize() - 1);
            if (below != null && below.getKey() + below.getValue().byteSize() > at) {
                throw new IllegalArgumentException(segment + " overlaps " + below.getValue() + ", which this backend holds"
                        + " pinned already: describe the regions on that one's memory()");
            }
            long previous = enter(primaryContext);
            try {
                check(driver, driver.cuMemHostRegister(at, segment.byteSize(), Cuda.MEMHOST_PORTABLE | Cuda.MEMHOST_DEVICEMAP),
                        "cuMemHostRegister(0x" + Long.toHexString(at) + ", " + segment.byteSize() + " bytes, PORTABLE | DEVICEMAP)");
                boolean done = false;
                try {
                    long[] d = new long[1];
                    check(driver, driver.cuMemHostGetDevicePointer(d, at, 0), "cuMemHostGetDevicePointer(0x" + Long.toHexString(at) + ")");
                    PinnedHostMemory m = new PinnedHostMemory(this, segment, d[0], null);
                    pinned.put(at, m);
                    done = true;
                    return m;
                } finally {
                    if (!done) {
                        driver.cuMemHostUnregister(at);
                    }
                }
            } finally {
                leave(previous, primaryContext);
            }
        }
    }

    /** Unpins or frees {@code m} (closed by its owner); the backend's close does it for those still open. */
    void unpin(PinnedHostMemory m) {
        if (!pinned.remove(m.hostAddress(), m)) {
            return;   // whoever takes it out of the map releases it: here the backend's close did
        }
        long previous = enter(primaryContext);
        try {
            release(m, true);
        } finally {
            leave(previous, primaryContext);
        }
    }

    /** {@code cuMemFreeHost} (with the allocation's segment closed first) or {@code cuMemHostUnregister}. */
    private void release(PinnedHostMemory m, boolean checked) {
        int rc;
        String call;
        if (m.allocation() != null) {
            m.allocation().close();
            rc = driver.cuMemFreeHost(m.hostAddress());
            call = "cuMemFreeHost(" + m + ")";
        } else {
            rc = driver.cuMemHostUnregister(m.hostAddress());
            call = "cuMemHostUnregister(" + m + ")";
        }
        if (checked) {
            check(driver, rc, call);
        }
    }

    /** Frees an upload unless the backend's close already did. */
    void free(DeviceBuffer b) {
        if (uploads.remove(b)) {
            long previous = enter(primaryContext);
            try {
                check(driver, driver.cuMemFree(b.address()), "cuMemFree(" + b + ")");
            } finally {
                leave(previous, primaryContext);
            }
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (!pinned.isEmpty()) {
            driver.cuCtxSetCurrent(primaryContext);
            for (PinnedHostMemory m : List.copyOf(pinned.values())) {
                if (pinned.remove(m.hostAddress(), m)) {
                    m.detach();
                    release(m, false);
                }
            }
        }
        if (!uploads.isEmpty()) {
            driver.cuCtxSetCurrent(primaryContext);
            for (DeviceBuffer b : List.copyOf(uploads)) {
                if (uploads.remove(b)) {
                    b.detach();
                    driver.cuMemFree(b.address());
                }
            }
        }
        for (ContextResources resources : contexts.values()) {
            driver.cuCtxSetCurrent(resources.context);
            resources.close();
        }
        contexts.clear();
        driver.cuLibraryUnload(library);
        driver.cuDevicePrimaryCtxRelease(device);
    }

    // ---- internals ------------------------------------------------------------------------------------------------

    CudaDriver driver() {
        return driver;
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
        enter(primaryContext);
        return resources(primaryContext);
    }

    private ContextResources resources(long ctx) {
        return contexts.computeIfAbsent(ctx, c -> {
            ContextResources resources = new ContextResources(driver, c, maxBlocksPerLaunch);
            // Load every kernel into this context now, so lazy module loading never happens inside an enqueue.
            long[] f = new long[1];
            for (Map.Entry<String, Long> k : kernels.entrySet()) {
                check(driver, driver.cuKernelGetFunction(f, k.getValue()), "cuKernelGetFunction(" + k.getKey() + ")");
            }
            return resources;
        });
    }

    /** Makes {@code ctx} current on this thread and returns the context that was current before, for {@link #leave}. */
    private long enter(long ctx) {
        long[] cur = new long[1];
        check(driver, driver.cuCtxGetCurrent(cur), "cuCtxGetCurrent");
        if (cur[0] != ctx) {
            check(driver, driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
        }
        return cur[0];
    }

    /** Gives the calling thread back the context it had before {@link #enter}: an engine's thread keeps its own. */
    private void leave(long previous, long ctx) {
        if (previous != ctx) {
            check(driver, driver.cuCtxSetCurrent(previous), "cuCtxSetCurrent(restoring the caller's context)");
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
        /** {@code uploadCached}: the slot's device buffer already holds this job's upload; write nothing into it. */
        Runnable prepare(MemorySegment host, long dUpload, long dOut, boolean uploadCached);
    }

    private static long align(long n, long a) {
        return (n + a - 1) / a * a;
    }

    static long paramsOffset(long uploadBytes) {
        return align(uploadBytes, 256);
    }

    /**
     * One asynchronous computation on {@code stream}: upload {@code uploadBytes} from pinned memory, run the
     * launches, record an event, and copy {@code results} values back on a side stream that waits on it.
     * Pinned layout: [upload | kernel params (256) | results]; device layout: [upload | results].
     */
    // reinterpret: the pinned buffer comes from cuMemAllocHost, whose size the slot records.
    @SuppressWarnings("restricted")
    CudaPending job(ContextResources resources, long stream, long uploadBytes, int results, Object uploadKey, JobBody body) {
        long paramsOff = paramsOffset(uploadBytes);
        long resultOff = align(paramsOff + PARAMS_BYTES, 256);
        long outOff = align(Math.max(uploadBytes, 1), 256);
        ContextResources.Slot slot = resources.acquire(resultOff + 8L * results, outOff + 8L * results);
        boolean enqueued = false;
        long side = 0;
        try {
            MemorySegment host = MemorySegment.ofAddress(slot.pinned).reinterpret(slot.pinnedBytes);
            host.set(KernelAbi.U64, paramsOff + ARGV_OFFSET, slot.pinned + paramsOff);
            // The same immutable plan as this slot's last job (an engine reusing its plan): its descriptors and table are
            // still in the slot's device buffer, so the steady state uploads nothing.
            boolean cached = uploadKey != null && slot.uploadKey == uploadKey;
            if (!cached) {
                slot.uploadKey = null;
            }
            Runnable launches = body.prepare(host, slot.device, slot.device + outOff, cached);
            if (uploadBytes > 0 && !cached) {
                check(driver, driver.cuMemcpyHtoDAsync(slot.device, slot.pinned, uploadBytes, stream), "cuMemcpyHtoDAsync(descriptor)");
                slot.uploadKey = uploadKey;
            }
            launches.run();
            check(driver, driver.cuEventRecord(slot.launched, stream), "cuEventRecord(after kernels)");
            long sideStream = resources.sideStream();
            check(driver, driver.cuStreamWaitEvent(sideStream, slot.launched, 0), "cuStreamWaitEvent");
            side = sideStream;
            check(driver, driver.cuMemcpyDtoHAsync(slot.pinned + resultOff, slot.device + outOff, 8L * results, sideStream),
                    "cuMemcpyDtoHAsync(results)");
            check(driver, driver.cuEventRecord(slot.copied, sideStream), "cuEventRecord(after result copy)");
            enqueued = true;
            return new CudaPending(driver, resources, slot, resultOff, results);
        } finally {
            if (!enqueued) {
                // Whatever was enqueued may still read or write the slot: mark its end on every stream that may hold
                // work for it (the side stream once it waits on the kernels) and reuse it only after. If that mark
                // cannot be made, nothing says when the slot is free: it is never reused, only freed by close().
                long last = side != 0 ? side : stream;
                if (driver.cuEventRecord(slot.copied, last) == Cuda.SUCCESS) {
                    resources.retire(slot);
                } else {
                    resources.quarantine(slot);
                }
            }
        }
    }

    /** Launches {@code name} with the parameter struct already written at the params offset of {@code host}. */
    void launch(String name, int gridX, int gridY, long stream, MemorySegment host, long uploadBytes) {
        launch(name, gridX, gridY, stream, host, uploadBytes, 0);
    }

    /** As above with {@code shared} bytes of dynamic shared memory per block. */
    void launch(String name, int gridX, int gridY, long stream, MemorySegment host, long uploadBytes, int shared) {
        long argv = host.address() + paramsOffset(uploadBytes) + ARGV_OFFSET;
        check(driver, driver.cuLaunchKernel(kernel(name), gridX, gridY, 1, LaunchPlanner.THREADS, 1, 1, shared, stream,
                argv, 0), "cuLaunchKernel(" + name + ", grid " + gridX + "x" + gridY + ")");
    }

    /**
     * Serializes one batch of the plan ({@link CompiledPlan#batches()}: one launch, or a step's requests over one group)
     * into the kernel ABI and enqueues it on {@code stream} as one kernel launch (cut only where a grid would exceed
     * {@link LaunchPlanner#maxBlocksPerLaunch()}): the slices once ({@code KvcSlice}s, or for byte cells
     * {@code KvcByteCellSlice}s: the same layout with byte counts), the launches' page tables one after the other and,
     * for several, one {@code KvcRequest} each, from which every CTA takes its request's fields
     * ({@code kvc_request_params}). Whole pieces go through the fused {@code kvc_block_checksums} kernel or
     * {@code kvc_slice_sums} (16-, 8- or 1-byte loads by the parts' alignment), byte cells through the kernels of
     * {@code kvchecksum_byte_cells_kernels.cuh}, each warp walking several slices; {@code address} gives the device address of each
     * region's memory. The values come back in the batch's layout ({@link CompiledPlan.Batch#numValues}).
     */
    private CudaPending launch(ContextResources resources, long stream, CompiledPlan.Batch batch,
            ToLongFunction<KvMemory> address, boolean slices) {
        List<CompiledPlan.Launch> launches = batch.launches();
        SlicePlan plan = batch.first().slices();
        boolean byteCells = batch.first().cellKind() == CompiledPlan.CellKind.BYTE_CELLS;
        boolean fused = !slices && !byteCells;
        boolean batched = launches.size() > 1;
        int ns = plan.numSlices();
        int nb = batch.numBlocks();
        int pages = KernelAbi.tableEntries(launches.stream().mapToLong(l -> l.slices().numPages()).sum());
        RequestBlocks r = plan.request();
        long tableOff = (long) ns * KernelAbi.SLICE_BYTES;
        long requestsOff = tableOff + 8 * Math.ceilDiv(4L * pages, 8);
        long upload = batched ? requestsOff + (long) launches.size() * KernelAbi.REQUEST_BYTES : tableOff + 4L * pages;
        int alignment = byteCells ? 1 : alignmentOf(plan, address);
        // The fused kernel's grid is (blocks x parts, parts large enough that each warp's walk fills a lane's batch of
        // loads); the slices kernels' (blocks x groups of 8 warps' slices, several per warp where one slice would not
        // fill a lane's batch); the byte-cell kernels' the same, from their cells' pieces and batch.
        List<LaunchPlanner.BlockLaunch> grids = fused ? fusedGrids(resources.planner, plan, nb, alignment)
                : byteCells ? resources.planner.sliceSums(ns, nb, byteCellSlicesPerWarp(resources.planner, plan, nb))
                : resources.planner.sliceSums(ns, nb, sliceSumsSlicesPerWarp(resources.planner, plan, nb, alignment));
        String blockKernel = byteCells ? BYTE_CELL_BLOCK_CHECKSUMS
                : byAlignment(alignment, BLOCK_CHECKSUMS_16B, BLOCK_CHECKSUMS_8B, BLOCK_CHECKSUMS_1B);
        String name = (slices ? sliceSums(blockKernel) : blockKernel) + (plan.mode() == ChecksumMode.MIXED ? MIXED_SUFFIX : "");
        // Device plans hold fixed addresses, so a plan (a batch of a reused compiled plan) always serializes to the same
        // bytes: it keys the upload, which serves both outputs.
        Object uploadKey = plan.residency() != SlicePlan.Residency.DEVICE ? null : batched ? batch : plan;
        int results = batch.numValues(slices ? CompiledPlan.Output.SLICE_SUMS : CompiledPlan.Output.BLOCK_CHECKSUMS);
        return job(resources, stream, upload, results, uploadKey, (host, dUpload, dOut, cached) -> {
            if (!cached) {
                KernelAbi.slices(host, plan, address, byteCells);
                long entry = 0;
                long begin = 0;
                for (int k = 0; k < launches.size(); k++) {
                    SlicePlan p = launches.get(k).slices();
                    if (batched) {
                        RequestBlocks q = p.request();
                        KernelAbi.request(host, requestsOff + (long) k * KernelAbi.REQUEST_BYTES, q.startToken(),
                                q.firstBlock(), q.numTokens(), begin, (int) entry, p.numBlocks());
                    }
                    for (int i = 0; i < p.numPages(); i++) {
                        host.set(KernelAbi.U32, tableOff + 4L * entry++, p.page(i));
                    }
                    begin += p.numBlocks();
                }
            }
            long params = paramsOffset(upload);
            return () -> {
                if (!slices) {
                    // The parts (warps) of a block add into its output word atomically: zero it first, on the same stream.
                    check(driver, driver.cuMemsetD8Async(dOut, 0, 8L * nb, stream), "cuMemsetD8Async(results)");
                }
                for (LaunchPlanner.BlockLaunch g : grids) {
                    // One request: its fields, column 0 at its block. Several: column 0 is batch block blockOffset,
                    // out_stride the values per block of the batch's output, and each CTA takes its request's fields
                    // from the descriptors (which serve both outputs: a cached upload may have been written for the other).
                    int b0 = g.blockOffset();
                    KernelAbi.checksumParams(host, params, dUpload, dUpload + tableOff, batched ? dOut : dOut + 8L * b0,
                            batched ? 0 : r.startToken(), batched ? b0 : r.firstBlock() + b0, batched ? 0 : r.numTokens(),
                            r.blockSize(), plan.pageSize(), g.numBlocks(), ns, g.slicesPerPart(), fused ? g.numParts() : 0,
                            batched ? (slices ? ns : 1) : fused ? 0 : nb, batched ? dUpload + requestsOff : 0,
                            batched ? launches.size() : 0);
                    launch(name, g.numBlocks(), g.numParts(), stream, host, upload);
                }
            };
        });
    }

    /**
     * Slices per warp of the whole-piece slices kernel that {@code alignment} selects for {@code plan} over
     * {@code numBlocks} blocks ({@link LaunchPlanner#sliceSumsSlicesPerWarp}): from a full block of its smallest slice,
     * in that kernel's load units (16 bytes, or 8-byte pieces), and that kernel's batch.
     */
    static int sliceSumsSlicesPerWarp(LaunchPlanner planner, SlicePlan plan, int numBlocks, int alignment) {
        return planner.sliceSumsSlicesPerWarp(plan.numSlices(), numBlocks, sliceItems(plan, alignment), batchSlots(alignment));
    }

    /**
     * Slices per warp of the byte-cell kernels for {@code plan} (byte-cell slices) over {@code numBlocks} blocks
     * ({@link LaunchPlanner#sliceSumsSlicesPerWarp}): from a full block of its smallest cell, in 8-byte pieces, and the
     * larger batch of the two walks (K-only cells, cells with V), so that either fills.
     */
    static int byteCellSlicesPerWarp(LaunchPlanner planner, SlicePlan plan, int numBlocks) {
        long pieces = Long.MAX_VALUE;
        boolean kOnly = false;
        for (SlicePlan.Slice s : plan.slices()) {
            int vBytes = s.v() == null ? 0 : s.v().bytes();
            pieces = Math.min(pieces, Math.ceilDiv(s.k().bytes() + vBytes, 8));
            kOnly |= vBytes == 0;
        }
        int slots = kOnly ? LaunchPlanner.BYTE_CELL_BATCH_K : LaunchPlanner.BYTE_CELL_BATCH_KV;
        return planner.sliceSumsSlicesPerWarp(plan.numSlices(), numBlocks, Math.max(1, pieces) * plan.request().blockSize(), slots);
    }

    /**
     * The launches of the fused kernel that {@code alignment} selects for {@code plan} over {@code numBlocks} blocks
     * ({@link LaunchPlanner#blocks}): parts sized from a full block of its smallest slice and that kernel's batch.
     */
    static List<LaunchPlanner.BlockLaunch> fusedGrids(LaunchPlanner planner, SlicePlan plan, int numBlocks, int alignment) {
        return planner.blocks(plan.numSlices(), numBlocks, sliceItems(plan, alignment), batchSlots(alignment));
    }

    /** Items of a full block of the plan's smallest slice, in the load units (16 bytes, or 8-byte pieces) of {@code alignment}. */
    private static long sliceItems(SlicePlan plan, int alignment) {
        long units = Long.MAX_VALUE;
        for (SlicePlan.Slice s : plan.slices()) {
            int pieces = s.k().pieces() + (s.v() == null ? 0 : s.v().pieces());
            units = Math.min(units, alignment >= 16 ? pieces / 2 : pieces);
        }
        return Math.max(1, units) * plan.request().blockSize();
    }

    private static int batchSlots(int alignment) {
        return byAlignment(alignment, LaunchPlanner.BATCH_SLOTS_16B, LaunchPlanner.BATCH_SLOTS_8B, LaunchPlanner.BATCH_SLOTS_1B);
    }

    static <T> T byAlignment(int alignment, T k16, T k8, T k1) {
        return alignment >= 16 ? k16 : alignment >= 8 ? k8 : k1;
    }

    /** The smallest alignment class of the plan's parts at their absolute addresses. */
    static int alignmentOf(SlicePlan plan, ToLongFunction<KvMemory> address) {
        int alignment = 16;
        for (SlicePlan.Slice s : plan.slices()) {
            alignment = Math.min(alignment, s.k().alignmentAt(address.applyAsLong(s.k().memory())));
            if (s.v() != null) {
                alignment = Math.min(alignment, s.v().alignmentAt(address.applyAsLong(s.v().memory())));
            }
        }
        return alignment;
    }

    private static long deviceAddress(KvMemory m) {
        return ((KvMemory.Device) m).address();
    }

    /** The host memory of a plan copied to temporary device buffers, one per distinct segment; closing frees them. */
    private final class Placed implements AutoCloseable {
        final Map<MemorySegment, Long> moved = new LinkedHashMap<>();

        /** The host memories among {@code memories} (a plan's regions, a page digest's runs), each segment copied once. */
        Placed(List<KvMemory> memories, ContextResources resources) {
            try {
                for (KvMemory m : memories) {
                    upload(m, resources);
                }
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        long address(KvMemory m) {
            return m instanceof KvMemory.Host h ? moved.get(h.segment()) : deviceAddress(m);
        }

        private void upload(KvMemory m, ContextResources resources) {
            if (!(m instanceof KvMemory.Host h) || moved.containsKey(h.segment())) {
                return;
            }
            MemorySegment s = h.segment();
            long[] p = new long[1];
            check(driver, driver.cuMemAlloc(p, Math.max(16, s.byteSize())), "cuMemAlloc(" + s.byteSize() + " bytes for host KV)");
            moved.put(s, p[0]);
            copyToDevice(p[0], s, resources.ownStream, "host KV");
        }

        @Override
        public void close() {
            // The computation that read these has completed (its result copy was waited for) or failed.
            for (long b : moved.values()) {
                driver.cuMemFree(b);
            }
            moved.clear();
        }
    }
}
