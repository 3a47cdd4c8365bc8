package io.kvchecksum.opencl;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;
import io.kvchecksum.spi.ByteCellRoute;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_context_properties;
import org.jocl.cl_device_id;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The KV checksum on an OpenCL device: the kernels of {@code kvchecksum.cl} (OpenCL C 1.2, no extensions) driven
 * through JOCL.
 *
 * <p><b>Memory.</b> OpenCL 1.2 kernels read one OpenCL buffer per operation. {@link KvMemory.Host} regions are read in
 * place on a CPU device that shares host memory, where every segment is native ({@code CL_MEM_USE_HOST_PTR} over a
 * window of the address space); otherwise the bytes of each distinct host segment that the request's pages can reach
 * are copied, per operation, into one device buffer (the reason is given by {@code memoryPath}).
 * {@link KvMemory.Device} regions must lie in one {@code cl_mem} registered with {@link #buffer(cl_mem)}, read in
 * place; anything else is rejected with {@link InvalidLayoutException} before anything is enqueued.
 *
 * <p><b>Work split.</b> On GPUs neighbouring work items read neighbouring 64-byte units of a block (coalesced loads).
 * On CPU devices ({@code KVC_CONTIGUOUS_UNITS}) each work item takes a run of units in every block, visits the blocks
 * in address order ({@code addressOrder}) and reads its units row by row; see the module's README for why and what
 * it measured.
 *
 * <p><b>Asynchrony.</b> {@link #submit} enqueues the copies, the kernels and the read of the results without waiting
 * (no {@code clFinish}, no blocking transfer, no {@code clWaitForEvents}; see {@link ClApi}) and returns; the
 * returned handle's {@code get()} waits on the read's event. The host segments must stay alive and unchanged until
 * {@code get()} or {@code close()} of the handle returns. The other methods are {@code submit} plus {@code get}.
 *
 * <p>One context, one in-order queue and one program (built once, when the backend is opened) per instance; every
 * operation creates its own kernel objects, so threads may share an instance. {@link #close()} releases the context;
 * finish or close every pending operation first.
 */
public final class OpenClBackend implements KvChecksum {
    /** The kernel source inside the jar. */
    public static final String KERNEL_RESOURCE = "/io/kvchecksum/opencl/kvchecksum.cl";
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Largest single host-to-device write: {@code ByteBuffer} views of a segment stop at 2 GiB. */
    private static final long MAX_WRITE = 1L << 30;
    private static final int MAX_LOCAL = 256;
    /** PoCL runs a work-group's items as a loop on one core; small work-groups measured faster there (16 vs 256: ~1.7x). */
    private static final int MAX_LOCAL_CPU = 16;
    private static final int MAX_PARTS_PER_COLUMN = 1024;
    /** Work items per compute unit of the CPU build of {@code block_checksums} (see {@link #cpuItems}). */
    private static final long CPU_ITEMS_PER_COMPUTE_UNIT = 4;
    /** System property: work items per compute unit of the CPU build of {@code block_checksums} (for measuring). */
    public static final String CPU_ITEMS_PROPERTY = "kvchecksum.opencl.cpuItems";
    /**
     * System property, for measuring: {@code table} makes the CPU build visit blocks in the order of the block table
     * instead of by address ({@code address}, the default).
     */
    public static final String BLOCK_ORDER_PROPERTY = "kvchecksum.opencl.blockOrder";
    /** System property: {@code false} makes a CPU device copy host memory too (to measure what zero copy saves). */
    public static final String ZERO_COPY_PROPERTY = "kvchecksum.opencl.zeroCopy";
    /**
     * System property: how {@code block_checksums} hands units to work items, {@code contiguous} (a run per work item,
     * the default on CPU devices) or {@code strided} (neighbouring items take neighbouring units, the GPU default).
     */
    public static final String UNIT_ORDER_PROPERTY = "kvchecksum.opencl.unitOrder";
    /** System property: pieces per unit of {@code block_checksums}, 8, 16 or 32 (see {@link #unitPieces}). */
    public static final String UNIT_PIECES_PROPERTY = "kvchecksum.opencl.unitPieces";

    private final ClApi cl;
    private final OpenClDevice info;
    private final cl_context context;
    private final cl_command_queue queue;
    private final cl_program program;
    private final long maxAlloc;
    private final int computeUnits;
    private final int localSize;
    /** Host memory used in place (CPU devices sharing the host's memory), unless the property turns it off. */
    private final boolean zeroCopy;
    /** Pieces per unit the program was built with ({@code KVC_UNIT16}: 16, {@code KVC_UNIT32}: 32, else 8). */
    private final int unitPieces;
    /** The CPU build of {@code block_checksums} ({@code KVC_CONTIGUOUS_UNITS}): unit runs per work item, blocks in address order. */
    private final boolean contiguous;
    /** Diagnostic: the CPU build visits blocks in table order ({@value #BLOCK_ORDER_PROPERTY}{@code =table}). */
    private final boolean tableOrder = "table".equals(System.getProperty(BLOCK_ORDER_PROPERTY, "address"));
    /** Work items per compute unit of the CPU build ({@value #CPU_ITEMS_PROPERTY}, read when the backend is opened). */
    private final long itemsPerComputeUnit = Math.max(1, Long.getLong(CPU_ITEMS_PROPERTY, CPU_ITEMS_PER_COMPUTE_UNIT));
    /** Alignment of a zero-copy window's start: the device's {@code CL_DEVICE_MEM_BASE_ADDR_ALIGN}, at least 64 bytes. */
    private final long windowAlign;
    private volatile boolean closed;
    /** The engine buffers registered with {@link #buffer(cl_mem)}, by handle. */
    private final java.util.Map<Long, cl_mem> registered = new java.util.concurrent.ConcurrentHashMap<>();

    private OpenClBackend(ClApi cl, OpenClDevices.Found found, String source) {
        this(cl, found, source, null);
    }

    /** {@code engineContext}: an engine's context to share (retained here, released by close), or null for an own one. */
    private OpenClBackend(ClApi cl, OpenClDevices.Found found, String source, cl_context engineContext) {
        this.cl = cl;
        this.info = found.info();
        cl_device_id device = found.device();
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
            unitPieces = unitPieces(info);
            contiguous = contiguousUnits(info);
            p = build(context, device, info, source, (contiguous ? " -D KVC_CONTIGUOUS_UNITS" : "")
                    + (unitPieces == 8 ? "" : " -D KVC_UNIT" + unitPieces));
            maxAlloc = OpenClDevices.deviceLong(device, CL.CL_DEVICE_MAX_MEM_ALLOC_SIZE);
            computeUnits = Math.max(1, OpenClDevices.deviceInt(device, CL.CL_DEVICE_MAX_COMPUTE_UNITS));
            long local = Math.min(info.type().equals("CPU") ? MAX_LOCAL_CPU : MAX_LOCAL,
                    OpenClDevices.deviceSize(device, CL.CL_DEVICE_MAX_WORK_GROUP_SIZE));
            local = Math.min(local, OpenClDevices.deviceLong(device, CL.CL_DEVICE_LOCAL_MEM_SIZE) / 2 / Sizeof.cl_ulong);
            for (String k : new String[] {"slice_sums", "block_checksums", "slice_sums_mixed", "block_checksums_mixed"}) {
                cl_kernel kernel = JoclApi.INSTANCE.createKernel(p, k);
                long[] v = new long[1];
                JoclApi.check(CL.clGetKernelWorkGroupInfo(kernel, device, CL.CL_KERNEL_WORK_GROUP_SIZE, Sizeof.size_t,
                        Pointer.to(v), null), "clGetKernelWorkGroupInfo");
                JoclApi.INSTANCE.releaseKernel(kernel);
                local = Math.min(local, v[0]);
            }
            // The kernels' tree reduction needs a power of two.
            localSize = Integer.highestOneBit((int) Math.max(1, local));
            zeroCopy = info.type().equals("CPU")
                    && OpenClDevices.deviceInt(device, CL.CL_DEVICE_HOST_UNIFIED_MEMORY) != 0
                    && !"false".equalsIgnoreCase(System.getProperty(ZERO_COPY_PROPERTY, "true"));
            windowAlign = Math.max(64L, Long.highestOneBit(
                    Math.max(1, OpenClDevices.deviceInt(device, CL.CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8L)));
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
        return new OpenClBackend(JoclApi.INSTANCE, OpenClDevices.select(spec), kernelSource());
    }

    /**
     * As {@link #open(String)}, with every OpenCL call after set-up going through {@code calls}: wrap
     * {@link ClApi#jocl()} to record or count calls (tests prove {@code submit} never waits; benchmarks count
     * synchronizing calls per operation).
     *
     * @param spec the device, as {@link #open(String)} takes it
     * @param calls the OpenCL calls to make after set-up, usually a wrapper of {@link ClApi#jocl()}
     * @return the backend on that device, its kernels built
     * @throws OpenClException when there is no OpenCL, no such device, or the kernels do not build
     */
    public static OpenClBackend open(String spec, ClApi calls) {
        return new OpenClBackend(calls, OpenClDevices.select(spec), kernelSource());
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
        java.util.Objects.requireNonNull(engineContext, "engineContext");
        return new OpenClBackend(JoclApi.INSTANCE, OpenClDevices.of(java.util.Objects.requireNonNull(device, "device")),
                kernelSource(), engineContext);
    }

    /** As {@link #open(String)} with other kernel source: for testing how build failures are reported. */
    static OpenClBackend openWithSource(String spec, String source) {
        return new OpenClBackend(JoclApi.INSTANCE, OpenClDevices.select(spec), source);
    }

    /** {@return the kernel source shipped in the jar: {@value #KERNEL_RESOURCE}, then {@value #BYTE_CELL_RESOURCE}} */
    public static String kernelSource() {
        return resourceText(KERNEL_RESOURCE) + "\n" + resourceText(BYTE_CELL_RESOURCE);
    }

    /** The byte-cell kernels' source, appended to the main source (they use its descriptor words and mixer). */
    public static final String BYTE_CELL_RESOURCE = "/io/kvchecksum/opencl/kvchecksum_byte_cells.cl";

    private static String resourceText(String name) {
        try (InputStream in = OpenClBackend.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("kernel source " + name + " is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + name, e);
        }
    }

    static cl_program build(cl_context context, cl_device_id device, OpenClDevice info, String source,
                                    String defines) {
        int[] err = new int[1];
        cl_program p = CL.clCreateProgramWithSource(context, 1, new String[] {source}, new long[] {source.length()}, err);
        JoclApi.check(err[0], "clCreateProgramWithSource");
        int rc = CL.clBuildProgram(p, 1, new cl_device_id[] {device}, (buildOptions(device) + defines).strip(), null, null);
        if (rc != CL.CL_SUCCESS) {
            String log;
            try {
                log = buildLog(p, device);
            } catch (RuntimeException e) {
                log = "(the build log could not be read: " + e.getMessage() + ")";
            }
            CL.clReleaseProgram(p);
            throw new OpenClBuildException(info.toString(), rc, log);
        }
        return p;
    }

    /**
     * Pieces per unit of {@code block_checksums}: 32 on CPU devices (four adjacent cache lines per row visit: a
     * whole 128-dim bf16 head), 8 elsewhere; the system property {@value #UNIT_PIECES_PROPERTY} overrides (8, 16, 32).
     */
    static int unitPieces(OpenClDevice info) {
        String v = System.getProperty(UNIT_PIECES_PROPERTY, info.type().equals("CPU") ? "32" : "8");
        return switch (v) {
            case "8" -> 8;
            case "16" -> 16;
            case "32" -> 32;
            default -> throw new IllegalArgumentException(UNIT_PIECES_PROPERTY + " is '" + v + "': use 8, 16 or 32");
        };
    }

    private static boolean contiguousUnits(OpenClDevice info) {
        String order = System.getProperty(UNIT_ORDER_PROPERTY, info.type().equals("CPU") ? "contiguous" : "strided");
        return switch (order) {
            case "contiguous" -> true;
            case "strided" -> false;
            default -> throw new IllegalArgumentException(UNIT_ORDER_PROPERTY + " is '" + order
                    + "': use 'contiguous' or 'strided'");
        };
    }

    /** {@code -cl-std=CL1.2} where the device compiles OpenCL C 1.2 or later, so no later feature slips in. */
    private static String buildOptions(cl_device_id device) {
        Matcher m = Pattern.compile("OpenCL C (\\d+)\\.(\\d+)")
                .matcher(OpenClDevices.deviceString(device, CL.CL_DEVICE_OPENCL_C_VERSION));
        if (m.find() && Integer.parseInt(m.group(1)) * 10 + Integer.parseInt(m.group(2)) >= 12) {
            return "-cl-std=CL1.2";
        }
        return "";
    }

    private static String buildLog(cl_program p, cl_device_id device) {
        long[] size = new long[1];
        JoclApi.check(CL.clGetProgramBuildInfo(p, device, CL.CL_PROGRAM_BUILD_LOG, 0, null, size), "clGetProgramBuildInfo");
        byte[] b = new byte[(int) size[0]];
        JoclApi.check(CL.clGetProgramBuildInfo(p, device, CL.CL_PROGRAM_BUILD_LOG, b.length, Pointer.to(b), null),
                "clGetProgramBuildInfo");
        int n = 0;
        while (n < b.length && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n, StandardCharsets.UTF_8).strip();
    }

    /**
     * {@return device-resident KV: describes an engine's {@code cl_mem} (of this backend's context) as {@link KvMemory}
     * whose byte offsets are offsets into the buffer, so nothing is copied: a {@link io.kvchecksum.KvRegion} over it
     * reads the buffer in place} Its size is the buffer's {@code CL_MEM_SIZE}, so regions reaching past the buffer are
     * refused when the plan is built. The buffer must stay alive while operations that read it run; every region of one
     * operation must lie in the same buffer (the kernels read one).
     *
     * @param mem the engine's buffer, of this backend's context; not null
     * @throws InvalidLayoutException when the buffer belongs to another context
     * @throws IllegalStateException when the backend is closed
     * @throws NullPointerException when {@code mem} is null
     */
    public KvMemory buffer(cl_mem mem) {
        java.util.Objects.requireNonNull(mem, "mem");
        requireOpen();
        requireOwnContext(mem);
        registered.put(mem.getNativePointer(), mem);
        return KvMemory.device(mem.getNativePointer(), memSize(mem));
    }

    /**
     * Ends a registration made by {@link #buffer(cl_mem)}: call it before the engine releases the buffer, so that a
     * later buffer given the same handle is not taken for it.
     *
     * @param mem a buffer given to {@link #buffer(cl_mem)}; one never registered is ignored
     */
    public void forget(cl_mem mem) {
        registered.remove(mem.getNativePointer(), mem);
    }

    private void requireOwnContext(cl_mem mem) {
        long[] ctx = new long[1];
        JoclApi.check(CL.clGetMemObjectInfo(mem, CL.CL_MEM_CONTEXT, Sizeof.cl_context, Pointer.to(ctx), null),
                "clGetMemObjectInfo(CL_MEM_CONTEXT)");
        if (ctx[0] != context.getNativePointer()) {
            throw new InvalidLayoutException("the cl_mem 0x" + Long.toHexString(mem.getNativePointer()) + " belongs to "
                    + "another OpenCL context (0x" + Long.toHexString(ctx[0]) + ") than this backend's (0x"
                    + Long.toHexString(context.getNativePointer()) + "): open the backend with open(engineContext, device)");
        }
    }

    /** {@return this backend's context, for creating buffers to pass to {@link #buffer(cl_mem)}} */
    public cl_context context() {
        return context;
    }

    private static long memSize(cl_mem mem) {
        long[] size = new long[1];
        JoclApi.check(CL.clGetMemObjectInfo(mem, CL.CL_MEM_SIZE, Sizeof.size_t, Pointer.to(size), null),
                "clGetMemObjectInfo(CL_MEM_SIZE)");
        return size[0];
    }

    /**
     * The one registered buffer every region of a device plan lies in, its described size checked against its
     * {@code CL_MEM_SIZE} now; throws {@link InvalidLayoutException} before anything is enqueued otherwise.
     */
    private cl_mem deviceBuffer(SlicePlan plan) {
        cl_mem mem = null;
        for (io.kvchecksum.CacheLayer l : plan.group().layers()) {
            for (io.kvchecksum.KvRegion r : l.v() == null ? List.of(l.k()) : List.of(l.k(), l.v())) {
                KvMemory.Device dm = (KvMemory.Device) r.memory();
                cl_mem m = registered.get(dm.address());
                String where = "layer " + l.layer() + " " + (r == l.k() ? "K" : "V") + " region's " + dm;
                if (m == null) {
                    throw new InvalidLayoutException(where + " is not a cl_mem registered with buffer(cl_mem) of this "
                            + "backend (opencl reads OpenCL buffers of its own context, not CUDA pointers)");
                }
                requireOwnContext(m);
                long size = memSize(m);
                if (dm.byteSize() > size) {
                    throw new InvalidLayoutException(where + " claims " + dm.byteSize() + " bytes, but the cl_mem's "
                            + "CL_MEM_SIZE is " + size);
                }
                if (mem != null && m != mem) {
                    throw new InvalidLayoutException(where + " is another cl_mem than the first region's (0x"
                            + Long.toHexString(mem.getNativePointer()) + "): the kernels read one buffer per operation");
                }
                mem = m;
            }
        }
        return mem;
    }

    /** {@return the device this instance runs on} */
    public OpenClDevice device() {
        return info;
    }

    /** Work items per work-group used by the checksum kernels (a power of two). */
    int localSize() {
        return localSize;
    }

    @Override
    public String name() {
        return "opencl";
    }

    @Override
    public String description() {
        return "opencl on " + info.type() + " '" + info.deviceName() + "' (platform '" + info.platformName() + "', "
                + info.version() + ", device " + info.index() + ", " + computeUnits + " compute units, work-group "
                + localSize + ")";
    }

    @Override
    public String toString() {
        return description();
    }

    @Override
    public long[] blockChecksums(SlicePlan plan) {
        try (PendingChecksums p = submit(plan)) {
            return p.get();
        }
    }

    /**
     * Enqueues the fused pass and returns without waiting for the device. The host segments of the plan's group
     * must stay alive and unchanged until the handle's {@code get()} or {@code close()} returns; call one of them.
     */
    @Override
    public PendingChecksums submit(SlicePlan plan) {
        requireReadable(plan);
        if (plan.hasByteCells()) {
            return plan.wholePieceSlices() == null ? submitByteCells(plan) : ByteCellRoute.submit(plan, this::submit, this::submit);
        }
        int nb = plan.numBlocks();
        if (nb == 0) {
            return PendingChecksums.completed(new long[0]);
        }
        Descriptors d = layout(plan).d;
        if (contiguous) {
            int items = cpuItems(d);
            int[] order = tableOrder ? java.util.stream.IntStream.range(0, nb).toArray() : addressOrder(plan);
            return enqueue(nb, op -> {
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
        int parts = unitParts((long) nb, d);
        return enqueue(nb, op -> {
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

    /**
     * {@link #submit(KvCacheGroup, RequestBlocks)} on this backend's in-order queue, whose handle is
     * {@link #commandQueue()}: its buffers and program belong to its own context, so it runs on no other queue.
     *
     * @param queue 0 or {@link #commandQueue()}
     * @throws IllegalArgumentException for any other queue handle, before anything is enqueued
     */
    @Override
    public PendingChecksums submit(SlicePlan plan, long queue) {
        if (queue != 0 && queue != commandQueue()) {
            throw new IllegalArgumentException("opencl runs on its own command queue (0x" + Long.toHexString(commandQueue())
                    + "), not 0x" + Long.toHexString(queue) + ": pass 0 or commandQueue()");
        }
        return submit(plan);
    }

    /** {@return the native {@code cl_command_queue} handle of this backend's in-order queue} */
    public long commandQueue() {
        return queue.getNativePointer();
    }

    @Override
    public SliceSums sliceSums(SlicePlan plan) {
        requireReadable(plan);
        if (plan.hasByteCells()) {
            return plan.wholePieceSlices() == null ? byteCellSliceSums(plan) : ByteCellRoute.sliceSums(plan, this::sliceSums, this::sliceSums);
        }
        int nb = plan.numBlocks();
        if (nb == 0) {
            return plan.sliceSums(new long[0]);
        }
        Descriptors d = layout(plan).d;
        int n = Math.multiplyExact(d.numSlices, nb);
        if (contiguous) {
            // CPU build: a work item per slice (those of a slice group but the first return at once), every block in
            // address order; the output is the slice sums.
            int[] order = tableOrder ? java.util.stream.IntStream.range(0, nb).toArray() : addressOrder(plan);
            try (PendingChecksums p = enqueue(n, op -> {
                cl_mem sums = op.buffer((long) n * Sizeof.cl_ulong);
                cl_kernel k = op.kernel("slice_sums" + modeSuffix(plan));
                int a = setLayoutArgs(op, k, d, plan, order);
                op.arg(k, a++, nb);
                op.arg(k, a++, 1);
                op.arg(k, a++, sums);
                op.local(k, a, Sizeof.cl_ulong);
                op.launch(k, new long[] {1, 1, d.numSlices}, new long[] {1, 1, 1});
                return sums;
            })) {
                return plan.sliceSums(p.get());
            }
        }
        int parts = partsPerColumn((long) n, d, plan.request().blockSize());
        try (PendingChecksums p = enqueue(n, op -> {
            cl_mem partials = op.buffer((long) n * parts * Sizeof.cl_ulong);
            cl_kernel k = op.kernel("slice_sums" + modeSuffix(plan));
            int a = setLayoutArgs(op, k, d, plan, null);
            op.arg(k, a++, nb);
            op.arg(k, a++, parts);
            op.arg(k, a++, partials);
            op.local(k, a, (long) localSize * Sizeof.cl_ulong);
            op.launch(k, new long[] {(long) localSize * parts, nb, d.numSlices}, new long[] {localSize, 1, 1});
            return sumParts(op, partials, parts, n);
        })) {
            return plan.sliceSums(p.get());
        }
    }

    /**
     * Adler-32 of the stream on the device ({@link OpenClPageDigest}: per-piece parts in a kernel of its own program,
     * built on first use, joined on the host); blocks until done.
     */
    @Override
    public long pageDigest(io.kvchecksum.PageDigestPlan plan) {
        return digester().digest(plan);
    }

    /** The page digest with the kernel chosen (tests run both on one device). */
    long pageDigest(io.kvchecksum.PageDigestPlan plan, boolean serial) {
        return digester().digest(plan, serial);
    }

    private OpenClPageDigest digester() {
        requireOpen();
        OpenClPageDigest d = pageDigest;
        if (d == null) {
            synchronized (this) {
                d = pageDigest;
                if (d == null) {
                    d = new OpenClPageDigest(this, cl);
                    pageDigest = d;
                }
            }
        }
        return d;
    }

    private volatile OpenClPageDigest pageDigest;

    // For OpenClPageDigest: the same queue, context, buffers and memory rules as the checksums.
    cl_command_queue queueHandle() {
        return queue;
    }

    cl_device_id deviceId() {
        cl_device_id dev = new cl_device_id();
        JoclApi.check(CL.clGetCommandQueueInfo(queue, CL.CL_QUEUE_DEVICE, Sizeof.cl_device_id, Pointer.to(dev), null),
                "clGetCommandQueueInfo(CL_QUEUE_DEVICE)");
        return dev;
    }

    boolean zeroCopyEnabled() {
        return zeroCopy;
    }

    long windowAlignment() {
        return windowAlign;
    }

    long maxAllocBytes() {
        return maxAlloc;
    }

    /** The registered cl_mem behind {@code dm}, its size checked; throws {@link InvalidLayoutException} otherwise. */
    cl_mem registeredBuffer(KvMemory.Device dm, String what) {
        cl_mem m = registered.get(dm.address());
        if (m == null) {
            throw new InvalidLayoutException(what + " lies in " + dm + ", not a cl_mem registered with buffer(cl_mem) "
                    + "of this backend (opencl reads OpenCL buffers of its own context, not CUDA pointers)");
        }
        requireOwnContext(m);
        long size = memSize(m);
        if (dm.byteSize() > size) {
            throw new InvalidLayoutException(what + ": " + dm + " claims " + dm.byteSize() + " bytes, but the cl_mem's "
                    + "CL_MEM_SIZE is " + size);
        }
        return m;
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

    /** Both modes: the mixed one runs the {@code *_mixed} kernels, every piece through the mixer. */
    @Override
    public boolean supports(ChecksumMode mode) {
        return true;
    }

    private static String modeSuffix(SlicePlan plan) {
        return plan.mode() == ChecksumMode.MIXED ? "_mixed" : "";
    }

    /** The plan was validated when it was built; here only its memory kind and this backend's state are checked. */
    private void requireReadable(SlicePlan plan) {
        if (plan.residency() != SlicePlan.Residency.DEVICE) {
            plan.requireHost(name(), ", or every region a cl_mem registered with buffer(cl_mem) (device memory); use "
                    + "the 'cuda' backend for CUDA pointers");
        }
        plan.requireMode(this);
        requireOpen();
    }

    /**
     * How many work-groups share one output column (a block, or a slice's block): enough for a few work-groups per
     * compute unit overall, never more than the column has work items for.
     */
    private int partsPerColumn(long columns, Descriptors d, int blockSize) {
        long target = 4L * computeUnits;
        long wanted = Math.ceilDiv(target, columns);
        long useful = Math.ceilDiv((long) blockSize * d.maxPieces, localSize);
        return (int) Math.max(1, Math.min(MAX_PARTS_PER_COLUMN, Math.min(wanted, useful)));
    }

    /**
     * Work-groups per block for {@code block_checksums}, whose work items each take whole 64-byte units of the block's
     * (slice, unit) sequence: a few work-groups per compute unit overall, never more than there are units to take.
     */
    private int unitParts(long columns, Descriptors d) {
        long units = 0;
        for (int i = 0; i < d.numSlices; i++) {
            long pk = d.desc[i * Descriptors.WORDS + Descriptors.K_PIECES];
            long pv = d.desc[i * Descriptors.WORDS + Descriptors.PIECES] - pk;
            units += Math.ceilDiv(pk, unitPieces) + Math.ceilDiv(pv, unitPieces);
        }
        long target = 4L * computeUnits;
        long wanted = Math.ceilDiv(target, columns);
        long useful = Math.ceilDiv(units, localSize);
        return (int) Math.max(1, Math.min(MAX_PARTS_PER_COLUMN, Math.min(wanted, useful)));
    }

    /**
     * Work items of the CPU build of {@code block_checksums}: each takes one contiguous run of every block's units, so
     * a few per compute unit (the pthread driver hands work-groups of one item to its threads), never more than a
     * block has units. {@value #CPU_ITEMS_PROPERTY} overrides the number per compute unit (for measuring).
     */
    private int cpuItems(Descriptors d) {
        long units = 0;
        for (int i = 0; i < d.numSlices; i++) {
            long pk = d.desc[i * Descriptors.WORDS + Descriptors.K_PIECES];
            long pv = d.desc[i * Descriptors.WORDS + Descriptors.PIECES] - pk;
            units += Math.ceilDiv(pk, unitPieces) + Math.ceilDiv(pv, unitPieces);
        }
        return (int) Math.max(1, Math.min(units, Math.min(MAX_PARTS_PER_COLUMN, itemsPerComputeUnit * computeUnits)));
    }

    /**
     * The plan's blocks sorted by the page id of their first token (ties in block order): the order in which the CPU
     * build visits them, so that every layer's pages are read in address order (a layer's page {@code p} lies at
     * {@code base + p * pageStride}), whatever the order of the block table.
     */
    static int[] addressOrder(SlicePlan plan) {
        RequestBlocks r = plan.request();
        int nb = plan.numBlocks();
        int[] table = plan.pageTable();
        long[] keys = new long[nb];
        for (int b = 0; b < nb; b++) {
            long t0 = Math.max(r.startToken(), (r.firstBlock() + (long) b) * r.blockSize());
            long page = table[(int) ((t0 - r.startToken()) / plan.pageSize())];
            keys[b] = page << 32 | b;
        }
        java.util.Arrays.sort(keys);
        int[] order = new int[nb];
        for (int k = 0; k < nb; k++) {
            order[k] = (int) keys[k];
        }
        return order;
    }

    /**
     * How the plan's host memory reaches the kernels: {@code "zero-copy"} (a window over the host segments, used in
     * place) or {@code "copy: "} and the reason a copy is made. The plan must have pages in use.
     */
    String memoryPath(SlicePlan plan) {
        return layout(plan).path;
    }

    private record Layout(Descriptors d, String path) {
    }

    /** Zero copy where the device shares host memory and the segments allow it; else the packed copy, with the reason. */
    private Layout layout(SlicePlan plan) {
        if (plan.residency() == SlicePlan.Residency.DEVICE) {
            cl_mem mem = deviceBuffer(plan);
            return new Layout(Descriptors.device(plan, memSize(mem)), "device: cl_mem 0x"
                    + Long.toHexString(mem.getNativePointer()));
        }
        if (!zeroCopy) {
            return new Layout(Descriptors.of(plan), info.type().equals("CPU")
                    ? "copy: " + ZERO_COPY_PROPERTY + "=false or the device does not share host memory"
                    : "copy: a " + info.type() + " device reads its own memory");
        }
        Descriptors w = Descriptors.window(plan, windowAlign);
        if (w == null) {
            return new Layout(Descriptors.of(plan), "copy: a segment is on the Java heap (no stable address)");
        }
        if (w.packedBytes > maxAlloc) {
            return new Layout(Descriptors.of(plan), "copy: the segments lie " + w.packedBytes + " bytes apart, more "
                    + "than one buffer of the device may span (" + maxAlloc + ")");
        }
        return new Layout(w, "zero-copy");
    }

    /**
     * Makes the KV buffer (in place or a copy), uploads the descriptors and the page table (followed by {@code after},
     * if not null: the CPU build's block order) and sets the eight layout arguments every checksum kernel starts with;
     * returns the next index.
     */
    private int setLayoutArgs(Op op, cl_kernel k, Descriptors d, SlicePlan plan, int[] after) {
        RequestBlocks request = plan.request();
        cl_mem kv;
        if (plan.residency() == SlicePlan.Residency.DEVICE) {
            kv = deviceBuffer(plan);
        } else if (d.windowStart != 0) {
            // The window starts up to windowAlign-1 bytes before the lowest span: an address, never read.
            Descriptors.Span low = d.spans.getFirst();
            for (Descriptors.Span s : d.spans) {
                low = s.packedOffset() < low.packedOffset() ? s : low;
            }
            Pointer host = Pointer.to(low.segment().asSlice(low.from(), Math.min(low.length(), MAX_WRITE)).asByteBuffer())
                    .withByteOffset(-low.packedOffset());
            kv = op.hostBuffer(d.packedBytes, host);
        } else {
            if (d.packedBytes > maxAlloc) {
                throw new InvalidLayoutException("the request's KV spans " + d.packedBytes + " bytes of host memory, more "
                        + "than one buffer of " + info + " may hold (" + maxAlloc + " bytes): split the request");
            }
            kv = op.buffer(d.packedBytes);
            for (Descriptors.Span s : d.spans) {
                MemorySegment src = s.segment().asSlice(s.from(), s.length());
                if (!src.isNative()) {
                    // JOCL writes non-blocking only from direct buffers; heap memory is staged.
                    MemorySegment staged = op.arena.allocate(src.byteSize(), 64);
                    MemorySegment.copy(src, 0, staged, 0, src.byteSize());
                    src = staged;
                }
                for (long off = 0; off < src.byteSize(); off += MAX_WRITE) {
                    long len = Math.min(MAX_WRITE, src.byteSize() - off);
                    cl.enqueueWrite(queue, kv, s.packedOffset() + off, src.asSlice(off, len).asByteBuffer());
                }
            }
        }
        op.arg(k, 0, kv);
        op.arg(k, 1, op.upload(longs(op.arena, d.desc)));
        int[] table = d.table;
        if (after != null) {
            table = java.util.Arrays.copyOf(d.table, d.table.length + after.length);
            System.arraycopy(after, 0, table, d.table.length, after.length);
        }
        op.arg(k, 2, op.upload(ints(op.arena, table)));
        op.arg(k, 3, request.startToken());
        op.arg(k, 4, (long) plan.pageSize());
        op.arg(k, 5, request.firstBlock());
        op.arg(k, 6, (long) request.blockSize());
        op.arg(k, 7, request.numTokens());
        return 8;
    }

    private cl_mem sumParts(Op op, cl_mem partials, int parts, int n) {
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

    private static MemorySegment longs(Arena arena, long[] values) {
        MemorySegment s = arena.allocate(Math.max(8, 8L * values.length), 64);
        for (int i = 0; i < values.length; i++) {
            s.setAtIndex(U64, i, values[i]);
        }
        return s;
    }

    private static MemorySegment ints(Arena arena, int[] values) {
        MemorySegment s = arena.allocate(Math.max(8, 4L * values.length), 64);
        for (int i = 0; i < values.length; i++) {
            s.setAtIndex(I32, i, values[i]);
        }
        return s;
    }

    /** Builds the commands of one operation and returns the buffer holding its {@code n} results. */
    private interface Body {
        cl_mem enqueue(Op op);
    }

    /**
     * Runs {@code body}, enqueues the non-blocking read of its {@code n} results and a flush, and returns the handle.
     * On failure the queue is drained (the one place outside {@code get()} that waits: staged host memory may still be
     * read by enqueued writes) and everything is released.
     */
    private PendingChecksums enqueue(int n, Body body) {
        Op op = new Op();
        try {
            cl_mem out = body.enqueue(op);
            MemorySegment result = op.arena.allocate(8L * n, 64);
            cl_event done = cl.enqueueRead(queue, out, result.asByteBuffer());
            op.releaseKernels();
            cl.flush(queue);
            return new Pending(op, done, result, n);
        } catch (RuntimeException e) {
            try {
                cl.finish(queue);
            } finally {
                op.releaseAll();
            }
            throw e;
        }
    }

    /** The buffers, kernels and staged host memory of one operation. */
    private final class Op {
        final Arena arena = Arena.ofShared();
        final List<cl_mem> buffers = new ArrayList<>();
        final List<cl_kernel> kernels = new ArrayList<>();

        cl_mem buffer(long bytes) {
            cl_mem m = cl.createBuffer(context, CL.CL_MEM_READ_WRITE, Math.max(8, bytes));
            buffers.add(m);
            return m;
        }

        cl_mem hostBuffer(long bytes, Pointer host) {
            cl_mem m = cl.createHostBuffer(context, CL.CL_MEM_READ_ONLY | CL.CL_MEM_USE_HOST_PTR, bytes, host);
            buffers.add(m);
            return m;
        }

        cl_mem upload(MemorySegment host) {
            cl_mem m = buffer(host.byteSize());
            cl.enqueueWrite(queue, m, 0, host.asByteBuffer());
            return m;
        }

        cl_kernel kernel(String name) {
            cl_kernel k = cl.createKernel(program, name);
            kernels.add(k);
            return k;
        }

        void arg(cl_kernel k, int index, cl_mem m) {
            cl.setKernelArg(k, index, Sizeof.cl_mem, Pointer.to(m));
        }

        void arg(cl_kernel k, int index, long v) {
            cl.setKernelArg(k, index, Sizeof.cl_ulong, Pointer.to(new long[] {v}));
        }

        void arg(cl_kernel k, int index, int v) {
            cl.setKernelArg(k, index, Sizeof.cl_uint, Pointer.to(new int[] {v}));
        }

        void local(cl_kernel k, int index, long bytes) {
            cl.setKernelArg(k, index, bytes, null);
        }

        void launch(cl_kernel k, long[] global, long[] local) {
            cl.enqueueKernel(queue, k, global, local);
        }

        void releaseKernels() {
            for (cl_kernel k : kernels) {
                cl.releaseKernel(k);
            }
            kernels.clear();
        }

        void releaseAll() {
            RuntimeException first = null;
            try {
                releaseKernels();
            } catch (RuntimeException e) {
                first = e;
            }
            for (cl_mem m : buffers) {
                try {
                    cl.releaseBuffer(m);
                } catch (RuntimeException e) {
                    first = first == null ? e : first;
                }
            }
            buffers.clear();
            arena.close();
            if (first != null) {
                throw first;
            }
        }
    }

    // ---- Cells that are not whole pieces (SlicePlan.Slice.byteCells()): the kernels of kvchecksum_byte_cells.cl, over
    // the same memory paths (device buffer, zero-copy window, packed copy) and descriptors as the whole-piece kernels.

    /** Block checksums of a plan whose slices all have byte cells: m*s per (block, slice), then each block's row summed. */
    private PendingChecksums submitByteCells(SlicePlan plan) {
        int nb = plan.numBlocks();
        if (nb == 0) {
            return PendingChecksums.completed(new long[0]);
        }
        Descriptors d = layout(plan).d;
        int ns = d.numSlices;
        long n = (long) nb * ns;
        return enqueue(nb, op -> {
            cl_mem weighted = op.buffer(n * Sizeof.cl_ulong);
            launchByteCells(op, plan, d, weighted, true);
            return sumParts(op, weighted, ns, nb);
        });
    }

    /** Slice sums of a plan whose slices all have byte cells. */
    private SliceSums byteCellSliceSums(SlicePlan plan) {
        int nb = plan.numBlocks();
        if (nb == 0) {
            return plan.sliceSums(new long[0]);
        }
        Descriptors d = layout(plan).d;
        int n = Math.multiplyExact(d.numSlices, nb);
        try (PendingChecksums p = enqueue(n, op -> {
            cl_mem out = op.buffer((long) n * Sizeof.cl_ulong);
            launchByteCells(op, plan, d, out, false);
            return out;
        })) {
            return plan.sliceSums(p.get());
        }
    }

    private void launchByteCells(Op op, SlicePlan plan, Descriptors d, cl_mem out, boolean weighted) {
        int ns = d.numSlices;
        int[] bytes = new int[2 * ns];
        for (int i = 0; i < ns; i++) {
            SlicePlan.Slice s = plan.slice(i);
            bytes[2 * i] = s.k().bytes();
            bytes[2 * i + 1] = s.v() == null ? 0 : s.v().bytes();
        }
        cl_kernel k = op.kernel("byte_cell_sums" + modeSuffix(plan));
        int a = setLayoutArgs(op, k, d, plan, null);
        op.arg(k, a++, op.upload(ints(op.arena, bytes)));
        op.arg(k, a++, ns);
        op.arg(k, a++, plan.numBlocks());
        op.arg(k, a++, weighted ? 1 : 0);
        op.arg(k, a, out);
        op.launch(k, new long[] {plan.numBlocks(), ns}, null);
    }

    /** An enqueued operation; waits only in {@link #get()} and in {@link #close()} of an unfinished one. */
    private final class Pending implements PendingChecksums {
        private final Op op;
        private final cl_event done;
        private final MemorySegment result;
        private final int n;
        private long[] values;
        private boolean released;

        Pending(Op op, cl_event done, MemorySegment result, int n) {
            this.op = op;
            this.done = done;
            this.result = result;
            this.n = n;
        }

        @Override
        public long[] get() {
            if (values == null) {
                if (released) {
                    throw new IllegalStateException("the pending OpenCL checksums were closed before get()");
                }
                try {
                    cl.waitForEvent(done);
                    int status = cl.eventStatus(done);
                    if (status != CL.CL_COMPLETE) {
                        throw new OpenClException("the OpenCL commands of the checksum on " + info + " ended with "
                                + CL.stringFor_errorCode(status) + " (" + status + ")", status, true);
                    }
                    long[] v = new long[n];
                    for (int i = 0; i < n; i++) {
                        v[i] = result.getAtIndex(U64, i);
                    }
                    values = v;
                } finally {
                    release();
                }
            }
            return values.clone();
        }

        @Override
        public boolean isDone() {
            return values != null || released || cl.eventStatus(done) <= CL.CL_COMPLETE;
        }

        @Override
        public void close() {
            if (!released) {
                try {
                    cl.waitForEvent(done);
                } catch (OpenClException ignored) {
                    // The failure would have been reported by get(); here only the memory matters.
                } finally {
                    release();
                }
            }
        }

        private void release() {
            if (!released) {
                released = true;
                try {
                    cl.releaseEvent(done);
                } finally {
                    op.releaseAll();
                }
            }
        }
    }
}
