package io.kvchecksum.opencl;

import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.Pending;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SlicePlan.Residency;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import org.jocl.CL;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_context_properties;
import org.jocl.cl_device_id;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;

/**
 * The KV checksum on an OpenCL device: the kernels of {@code kvchecksum.cl} (OpenCL C 1.2, no extensions) driven
 * through JOCL. A {@link Backend}: wrap it with {@link io.kvchecksum.KvChecksum#of} (or get it from
 * {@code KvChecksums.byName("opencl")}), which compiles every request, checks it against {@link #limits()} and places
 * the launches' values; this class runs the launches and owns the OpenCL objects.
 *
 * <p><b>Memory.</b> OpenCL 1.2 kernels read one OpenCL buffer per operation. {@link KvMemory.Host} regions are read in
 * place on a CPU device that shares host memory, where every segment is native ({@code CL_MEM_USE_HOST_PTR} over a
 * window of the address space); otherwise the bytes of each distinct host segment that the request's pages can reach
 * are copied, per operation, into one device buffer (the reason is given by {@code memoryPath}).
 * {@link KvMemory.Device} regions must lie in one {@code cl_mem} registered with {@link #buffer(cl_mem)}, read in
 * place; anything else is rejected with {@link InvalidLayoutException} before anything is enqueued. Host and device
 * memory are not mixed in one plan ({@link #limits()}). The verifying copy ({@link #runCopy}) reads one buffer and
 * writes one: registered cl_mems in place, source host memory as above, destination host memory only in place (on a
 * device sharing host memory; on GPUs its limits do not declare host memory as a copy's destination).
 *
 * <p><b>Work split.</b> Chosen by the device's type ({@code Tuning}), never by a setting: on GPUs neighbouring work
 * items read neighbouring 64-byte units of a block (coalesced loads); on CPU devices ({@code KVC_CONTIGUOUS_UNITS})
 * each work item takes a run of units in every block, visits the blocks in address order ({@code addressOrder}) and
 * reads its units row by row; see the module's README for why and what it measured.
 *
 * <p><b>Asynchrony.</b> {@link #run} enqueues the copies, the kernels and the read of the results of every batch
 * without waiting (no {@code clFinish}, no blocking transfer, no {@code clWaitForEvents}; see {@link ClApi}) and
 * returns; the returned handle's {@code get()} waits on the reads' events. The host segments must stay alive and
 * unchanged until {@code get()} or {@code close()} of the handle returns.
 *
 * <p>One context, one in-order queue and one program (built once, when the backend is opened) per instance; every
 * operation creates its own kernel objects, so threads may share an instance. {@link #close()} releases the context;
 * finish or close every pending operation first.
 */
public final class OpenClBackend implements Backend {
    /** The kernel source inside the jar. */
    public static final String KERNEL_RESOURCE = "/io/kvchecksum/opencl/kvchecksum.cl";
    /** The byte-cell kernels' source, appended to the main source (they use its descriptor words and mixer). */
    public static final String BYTE_CELL_RESOURCE = "/io/kvchecksum/opencl/kvchecksum_byte_cells.cl";
    /** The verifying copy's kernels, appended after the byte-cell source (they use the main source's helpers). */
    public static final String COPY_RESOURCE = "/io/kvchecksum/opencl/kvchecksum_copy.cl";
    /**
     * Host memory or device memory (registered {@code cl_mem}s), not both among the layers of one launch, on this backend's own queue
     * and on the "engine's" (which must be that same queue: {@link #run}). Whether device memory is a registered
     * buffer is checked when a launch runs: registrations change at runtime. Byte-cell launches take any number of
     * slices (OpenCL's global sizes are {@code size_t}; CUDA's grid is what limits its backend).
     */
    private static final BackendLimits LIMITS = new BackendLimits(Set.of(Residency.HOST, Residency.DEVICE),
            Set.of(Residency.HOST, Residency.DEVICE), Integer.MAX_VALUE, ", or every region a cl_mem registered with buffer(cl_mem) (device "
            + "memory); use the 'cuda' backend for CUDA pointers");
    /**
     * The verifying copy where the device shares host memory (a CPU device, the CPU tuning): host memory is read and
     * written in place, so every route between host memory and registered cl_mems.
     */
    private static final Set<BackendLimits.CopyRoute> SHARED_MEMORY_COPIES = Set.of(BackendLimits.CopyRoute.HOST_TO_HOST,
            BackendLimits.CopyRoute.HOST_TO_DEVICE, BackendLimits.CopyRoute.DEVICE_TO_HOST,
            BackendLimits.CopyRoute.DEVICE_TO_DEVICE);
    /**
     * The verifying copy on other devices (GPUs): cl_mem to cl_mem, and host memory (a staging buffer) into a cl_mem,
     * uploaded as the checksums upload it. Writing host memory would need the destination's spans uploaded and read
     * back around the kernel, so it is not declared (compileCopy refuses it naming the route).
     */
    private static final Set<BackendLimits.CopyRoute> DEVICE_MEMORY_COPIES = Set.of(BackendLimits.CopyRoute.DEVICE_TO_DEVICE,
            BackendLimits.CopyRoute.HOST_TO_DEVICE);

    private final ClApi cl;
    private final OpenClDevice info;
    private final cl_device_id device;
    private final Tuning tuning;
    private final cl_context context;
    private final cl_command_queue queue;
    private final cl_program program;
    private final LaunchGeometry geometry;
    private final RegisteredBuffers registered;
    private final MemoryPlacement memory;
    private final ChecksumKernels kernels;
    private final CopyKernels copies;
    private final BackendLimits limits;
    private volatile boolean closed;
    private volatile OpenClPageDigest pageDigest;

    /**
     * {@code engineContext}: an engine's context to share (retained here, released by close), or null for an own one;
     * {@code tuning}: {@link Tuning#of} the device, or for tests another.
     */
    private OpenClBackend(ClApi cl, OpenClDevices.Found found, String source, cl_context engineContext, Tuning tuning) {
        this.cl = cl;
        this.info = found.info();
        this.tuning = tuning == null ? Tuning.of(info) : tuning;
        this.device = found.device();
        int[] err = new int[1];
        if (engineContext != null) {
            JoclApi.check(CL.clRetainContext(engineContext), "clRetainContext");
            context = engineContext;
        } else {
            cl_context_properties props = new cl_context_properties();
            props.addProperty(CL.CL_CONTEXT_PLATFORM, found.platform());
            context = CL.clCreateContext(props, 1, new cl_device_id[] {device}, null, null, err);
            JoclApi.check(err[0], "clCreateContext");
        }
        cl_command_queue q = null;
        cl_program p = null;
        try {
            q = CL.clCreateCommandQueue(context, device, 0, err);
            JoclApi.check(err[0], "clCreateCommandQueue");
            p = ClPrograms.build(context, device, info, source, this.tuning.defines());
            long maxAlloc = OpenClDevices.deviceLong(device, CL.CL_DEVICE_MAX_MEM_ALLOC_SIZE);
            geometry = new LaunchGeometry(device, p, this.tuning);
            boolean zeroCopy = this.tuning.hostInPlace()
                    && OpenClDevices.deviceInt(device, CL.CL_DEVICE_HOST_UNIFIED_MEMORY) != 0;
            long windowAlign = Math.max(64L, Long.highestOneBit(
                    Math.max(1, OpenClDevices.deviceInt(device, CL.CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8L)));
            registered = new RegisteredBuffers(context);
            String noZeroCopy = this.tuning.hostInPlace() ? "the device does not share host memory"
                    : "the " + this.tuning.name() + " reads device memory (a " + info.type() + " device)";
            memory = new MemoryPlacement(info, registered, zeroCopy, noZeroCopy, windowAlign, maxAlloc);
        } catch (RuntimeException e) {
            if (p != null) {
                CL.clReleaseProgram(p);
            }
            if (q != null) {
                CL.clReleaseCommandQueue(q);
            }
            CL.clReleaseContext(context);
            throw e;
        }
        queue = q;
        program = p;
        Enqueuer enqueuer = new Enqueuer(cl, context, queue, program, info);
        kernels = new ChecksumKernels(enqueuer, memory, geometry);
        copies = new CopyKernels(enqueuer, memory, geometry, kernel -> ClPrograms.workGroupSize(program, device, kernel));
        Set<BackendLimits.CopyRoute> routes = memory.zeroCopy() ? SHARED_MEMORY_COPIES : DEVICE_MEMORY_COPIES;
        limits = LIMITS.withCopies(routes, routes).withStagedUnits(
                CopyKernels.stagedUnitLimit(OpenClDevices.deviceLong(device, CL.CL_DEVICE_LOCAL_MEM_SIZE)));
    }

    /**
     * {@return the backend on the device named by {@value OpenClDevices#DEVICE_PROPERTY} or
     * {@value OpenClDevices#DEVICE_ENV}, else the first GPU, else the first CPU device; builds the kernels}
     *
     * @throws OpenClException when there is no OpenCL, no such device, or the kernels do not build
     */
    public static OpenClBackend open() {
        return open(OpenClDevices.configuredSpec());
    }

    /**
     * {@return the backend on the device {@code spec} names ({@code "platformIndex:deviceIndex"} or a substring of
     * {@code "platform / device"} names; {@code null} for the default choice)}
     *
     * @param spec the device: {@code "platformIndex:deviceIndex"}, a name substring, or {@code null} for the default
     * @throws OpenClException when there is no OpenCL, no such device, or the kernels do not build
     */
    public static OpenClBackend open(String spec) {
        return new OpenClBackend(JoclApi.INSTANCE, OpenClDevices.select(spec), kernelSource(), null, null);
    }

    /**
     * As {@link #open(String, ClApi)} with {@code tuning} instead of the one the device's type chooses: for tests, which
     * run the golden suite through every {@link Tuning} on whatever device they have (on PoCL, the GPU tuning too).
     */
    static OpenClBackend open(String spec, Tuning tuning, ClApi calls) {
        return new OpenClBackend(calls, OpenClDevices.select(spec), kernelSource(), null,
                java.util.Objects.requireNonNull(tuning, "tuning"));
    }

    /**
     * As {@link #open(String)}, with every OpenCL call after set-up going through {@code calls}: wrap
     * {@link ClApi#jocl()} to record or count calls (tests prove {@link #run} never waits; benchmarks count
     * synchronizing calls per operation).
     *
     * @param spec the device, as {@link #open(String)} takes it
     * @param calls the OpenCL calls to make after set-up, usually a wrapper of {@link ClApi#jocl()}
     * @return the backend on that device, its kernels built
     * @throws OpenClException when there is no OpenCL, no such device, or the kernels do not build
     */
    public static OpenClBackend open(String spec, ClApi calls) {
        return new OpenClBackend(calls, OpenClDevices.select(spec), kernelSource(), null, null);
    }

    /**
     * {@return the backend on an engine's own OpenCL context and device, so that it reads the engine's buffers in place
     * (registered with {@link #buffer(cl_mem)}); it makes its own in-order queue and program in that context and holds
     * a reference to the context until {@link #close()}}
     *
     * @param engineContext the engine's context, which must contain {@code device}; not null
     * @param device the engine's device; not null
     * @throws OpenClException when the device is unknown or unusable, or the kernels do not build
     * @throws NullPointerException when an argument is null
     */
    public static OpenClBackend open(cl_context engineContext, cl_device_id device) {
        Objects.requireNonNull(engineContext, "engineContext");
        return new OpenClBackend(JoclApi.INSTANCE, OpenClDevices.of(Objects.requireNonNull(device, "device")),
                kernelSource(), engineContext, null);
    }

    /** As {@link #open(String)} with other kernel source: for testing how build failures are reported. */
    static OpenClBackend openWithSource(String spec, String source) {
        return new OpenClBackend(JoclApi.INSTANCE, OpenClDevices.select(spec), source, null, null);
    }

    /**
     * {@return the kernel source shipped in the jar: {@value #KERNEL_RESOURCE}, then {@value #BYTE_CELL_RESOURCE}, then
     * {@value #COPY_RESOURCE}}
     */
    public static String kernelSource() {
        return ClPrograms.resourceText(KERNEL_RESOURCE) + "\n" + ClPrograms.resourceText(BYTE_CELL_RESOURCE) + "\n"
                + ClPrograms.resourceText(COPY_RESOURCE);
    }

    /**
     * {@return device-resident KV: describes an engine's {@code cl_mem} (of this backend's context) as {@link KvMemory}
     * whose byte offsets are offsets into the buffer, so nothing is copied: a {@link io.kvchecksum.KvRegion} over it
     * reads the buffer in place} Its size is the buffer's {@code CL_MEM_SIZE}, so regions reaching past the buffer are
     * refused when the plan is built. The buffer must stay alive while operations that read it run; every region of one
     * operation must lie in the same buffer (the kernels read one; a verifying copy's source in one and its destination
     * in one, the same or another, where sub-buffers of one buffer count as that buffer). Its
     * {@link KvMemory.Device#address()} is not the handle but an address of this backend's own (the same while the
     * buffer stays registered; a sub-buffer's lies at its origin within its parent's), so that the library's comparison
     * of device addresses (a verifying copy's source and destination must not overlap) sees exactly the bytes shared.
     *
     * @param mem the engine's buffer, of this backend's context; not null
     * @throws InvalidLayoutException when the buffer belongs to another context
     * @throws IllegalStateException when the backend is closed
     * @throws NullPointerException when {@code mem} is null
     */
    public KvMemory buffer(cl_mem mem) {
        Objects.requireNonNull(mem, "mem");
        requireOpen();
        return registered.register(mem);
    }

    /**
     * Ends a registration made by {@link #buffer(cl_mem)}: call it before the engine releases the buffer, so that a
     * later buffer given the same handle is not taken for it.
     *
     * @param mem a buffer given to {@link #buffer(cl_mem)}; one never registered is ignored
     */
    public void forget(cl_mem mem) {
        registered.forget(mem);
    }

    /** {@return this backend's context, for creating buffers to pass to {@link #buffer(cl_mem)}} */
    public cl_context context() {
        return context;
    }

    /** {@return the native {@code cl_command_queue} handle of this backend's in-order queue} */
    public long commandQueue() {
        return queue.getNativePointer();
    }

    /** {@return how this instance runs on its device: {@link Tuning#of} its type, unless a test chose another} */
    Tuning tuning() {
        return tuning;
    }

    /** {@return the device this instance runs on} */
    public OpenClDevice device() {
        return info;
    }

    @Override
    public String name() {
        return "opencl";
    }

    @Override
    public String description() {
        return "opencl on " + info.type() + " '" + info.deviceName() + "' (platform '" + info.platformName() + "', "
                + info.version() + ", device " + info.index() + ", " + geometry.computeUnits() + " compute units, "
                + "work-group " + geometry.localSize() + ", " + tuning.name() + ")";
    }

    @Override
    public String toString() {
        return description();
    }

    /**
     * {@inheritDoc} Host memory or registered device memory ({@link #buffer(cl_mem)}), not both among the layers of one launch, whether
     * the plan runs on this backend's queue or is handed this queue's handle as the engine's. The verifying copy: on a
     * device that shares host memory (the CPU tuning on a CPU device) every route between host memory and registered
     * cl_mems; on other devices cl_mem to cl_mem and host memory into a cl_mem (never into host memory). Source and
     * destination must not overlap (no in-place staging).
     */
    @Override
    public BackendLimits limits() {
        return limits;
    }

    /**
     * Enqueues every batch of the plan ({@link CompiledPlan#batches()}: a step's requests over one group are one kernel
     * launch for all of them; whole pieces through {@code block_checksums} or {@code slice_sums}, byte cells through
     * {@code byte_cell_sums}) on this backend's in-order queue and returns without waiting. The host
     * segments of the plan must stay alive and unchanged until the handle's {@code get()} or {@code close()} returns.
     *
     * @param stream empty, 0 or {@link #commandQueue()}: this backend's buffers and program belong to its own context,
     *     so it runs on no other queue
     * @throws IllegalArgumentException for any other queue handle, before anything is enqueued
     * @throws InvalidLayoutException when device memory is not one registered {@code cl_mem} of this context, or no
     *     larger than described, before anything is enqueued
     * @throws IllegalStateException when the backend is closed
     */
    @Override
    public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
        if (stream.isPresent()) {
            requireOwnQueue(stream.getAsLong());
        }
        requireOpen();
        return plan.startBatches(output, batch -> kernels.start(batch, output));
    }

    /**
     * Enqueues the verifying copy ({@link CopyPlan}: {@code copy_pieces} and {@code copy_byte_cells} of
     * {@code kvchecksum_copy.cl}, one pass over the bytes: each piece loaded from the source, stored to the destination
     * and weighted by its destination coordinates) on this backend's in-order queue and returns without waiting; the
     * handle's values are the destination's block checksums. Host memory is read in place or copied as for
     * {@link #run}; destination host memory is written in place (a CPU device sharing host memory) and made current
     * for the host before the values are ready ({@code clEnqueueMapBuffer}/{@code clEnqueueUnmapMemObject}). Host
     * segments and cl_mems must stay alive, and the source unchanged, until the handle's {@code get()} or
     * {@code close()} returns; the destination holds the copy once {@code get()} has returned.
     *
     * @param stream empty, 0 or {@link #commandQueue()}, as for {@link #run}
     * @throws IllegalArgumentException for any other queue handle, before anything is enqueued
     * @throws InvalidLayoutException when device memory of a side is not one registered {@code cl_mem} of this context,
     *     or host destination memory cannot be written in place (a segment on the Java heap, segments further apart
     *     than one buffer may span), before anything is enqueued
     * @throws IllegalStateException when the backend is closed
     */
    @Override
    public PendingChecksums runCopy(CopyPlan plan, OptionalLong stream) {
        if (stream.isPresent()) {
            requireOwnQueue(stream.getAsLong());
        }
        requireOpen();
        return copies.start(plan);
    }

    /**
     * How the plan's host memory reaches the kernels: {@code "zero-copy"} (a window over the host segments, used in
     * place) or {@code "copy: "} and the reason a copy is made. The plan must have pages in use.
     */
    String memoryPath(SlicePlan plan) {
        return memory.memoryPath(plan);
    }

    /**
     * Adler-32 of the stream on the device ({@link OpenClPageDigest}: per-piece parts in a kernel of its own program,
     * built on first use, joined on the host); blocks until done.
     */
    @Override
    public long pageDigest(PageDigestPlan plan) {
        return digester().digest(plan);
    }

    /**
     * The page digest enqueued on this backend's in-order queue, after everything enqueued on it before, returned
     * without waiting; the pieces are joined when the digest is read. The host segments of the plan must stay alive
     * and unchanged until the handle's {@code get()} or {@code close()} returns.
     *
     * @param stream 0 or {@link #commandQueue()}, as for {@link #run}
     * @throws IllegalArgumentException for any other queue handle, before anything is enqueued
     * @throws InvalidLayoutException when device memory is not registered, or the runs mix host and device memory
     * @throws IllegalStateException when the backend is closed
     */
    @Override
    public Pending<Long> submitPageDigest(PageDigestPlan plan, long stream) {
        requireOwnQueue(stream);
        return digester().start(plan);
    }

    private void requireOwnQueue(long stream) {
        if (stream != 0 && stream != commandQueue()) {
            throw new IllegalArgumentException("opencl runs on its own command queue (0x" + Long.toHexString(commandQueue())
                    + "), not 0x" + Long.toHexString(stream) + ": pass 0 or commandQueue()");
        }
    }

    /** The page digest with the kernel chosen (tests run both on one device). */
    long pageDigest(PageDigestPlan plan, boolean serial) {
        return digester().digest(plan, serial);
    }

    private synchronized OpenClPageDigest digester() {
        requireOpen();
        if (pageDigest == null) {
            pageDigest = new OpenClPageDigest(cl, context, queue, device, info, memory, registered, tuning.serialDigest());
        }
        return pageDigest;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (pageDigest != null) {
                pageDigest.release();
            }
            CL.clReleaseProgram(program);
            CL.clReleaseCommandQueue(queue);
            CL.clReleaseContext(context);
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the OpenCL backend on " + info + " is closed");
        }
    }
}
