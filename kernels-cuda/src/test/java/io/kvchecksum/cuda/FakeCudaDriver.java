package io.kvchecksum.cuda;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

import io.kvchecksum.KvMemory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * A CUDA driver simulated on the CPU, for machines without a GPU. "Device memory" is host memory addressed by its
 * native address; streams execute each operation when it is enqueued (a valid order for in-order streams);
 * cuLaunchKernel runs the kernel's arithmetic through the host test library. Copies into or out of device memory
 * are checked against the live allocations, so a copy out of bounds fails as it would on a GPU (or worse).
 *
 * <p>With {@link #deferCompletion}, events stay "not ready" until synchronized, to observe what waits on what.
 */
final class FakeCudaDriver implements CudaDriver {
    static final long CONTEXT = 0xC0C0;
    static final int INVALID_VALUE = 1;
    static final int NO_DEVICE = 100;
    static final int INVALID_CONTEXT = 201;
    static final int INVALID_HANDLE = 400;
    static final int NOT_FOUND = 500;
    static final int HOST_MEMORY_ALREADY_REGISTERED = 712;
    static final int HOST_MEMORY_NOT_REGISTERED = 713;

    private static final Map<Integer, String> NAMES = Map.ofEntries(Map.entry(0, "CUDA_SUCCESS"),
            Map.entry(1, "CUDA_ERROR_INVALID_VALUE"), Map.entry(2, "CUDA_ERROR_OUT_OF_MEMORY"),
            Map.entry(100, "CUDA_ERROR_NO_DEVICE"), Map.entry(201, "CUDA_ERROR_INVALID_CONTEXT"),
            Map.entry(400, "CUDA_ERROR_INVALID_HANDLE"), Map.entry(500, "CUDA_ERROR_NOT_FOUND"),
            Map.entry(600, "CUDA_ERROR_NOT_READY"),
            Map.entry(712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"),
            Map.entry(713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"),
            Map.entry(716, "CUDA_ERROR_MISALIGNED_ADDRESS"), Map.entry(999, "CUDA_ERROR_UNKNOWN"));
    private static final Map<Integer, Memory> NAME_STRINGS = new HashMap<>();

    private final HostLibrary lib;
    int smCount = 4;
    int initResult = 0;
    int deviceCount = 1;
    int driverVersion = 13000;
    boolean deferCompletion;
    /** Streams reported as capturing a CUDA graph (status 1, CU_STREAM_CAPTURE_STATUS_ACTIVE). */
    final java.util.Set<Long> capturing = new java.util.HashSet<>();

    private final TreeMap<Long, Long> device = new TreeMap<>();
    private final Map<Long, Long> pinned = new HashMap<>();
    private final Map<Long, String> kernels = new HashMap<>();
    private final Map<Long, Integer> events = new HashMap<>();
    private final Map<Long, Long> recordedAt = new HashMap<>();
    private long nextHandle = 0x1000;
    private long current;
    int launches;

    FakeCudaDriver(HostLibrary lib) {
        this.lib = lib;
    }

    /** A device allocation holding a copy of {@code src}, for placing test caches in "device memory". */
    synchronized long upload(MemorySegment src) {
        long[] p = new long[1];
        if (cuMemAlloc(p, Math.max(16, src.byteSize())) != 0) {
            throw new IllegalStateException("fake cuMemAlloc failed");
        }
        MemorySegment.copy(src, 0, seg(p[0], src.byteSize()), 0, src.byteSize());
        return p[0];
    }

    /** The uploads made by {@link #onDevice}, freed by {@link #freeUploads}. */
    private final java.util.List<Long> uploads = new java.util.ArrayList<>();

    /** {@code host}'s bytes copied into a new device allocation: a test cache's region placed in "device memory". */
    synchronized KvMemory onDevice(KvMemory host) {
        MemorySegment s = ((KvMemory.Host) host).segment();
        long p = upload(s);
        uploads.add(p);
        return KvMemory.device(p, s.byteSize());
    }

    /** Frees every allocation {@link #onDevice} made. */
    synchronized void freeUploads() {
        uploads.forEach(this::cuMemFree);
        uploads.clear();
    }

    synchronized int liveDeviceAllocations() {
        return device.size();
    }

    synchronized int livePinnedAllocations() {
        return pinned.size();
    }

    @SuppressWarnings("restricted") // simulated device memory is native memory this class allocated
    private static MemorySegment seg(long address, long bytes) {
        return MemorySegment.ofAddress(address).reinterpret(bytes);
    }

    private boolean inDevice(long address, long bytes) {
        Map.Entry<Long, Long> e = device.floorEntry(address);
        return e != null && address + bytes <= e.getKey() + e.getValue();
    }

    private long handle() {
        return nextHandle++;
    }

    @Override public int cuInit(int flags) { return initResult; }

    @Override public int cuDriverGetVersion(int[] version) { version[0] = driverVersion; return 0; }

    @Override public int cuDeviceGetCount(int[] count) { count[0] = deviceCount; return 0; }

    @Override public int cuDeviceGet(int[] dev, int ordinal) {
        if (ordinal < 0 || ordinal >= deviceCount) {
            return INVALID_VALUE;
        }
        dev[0] = ordinal;
        return 0;
    }

    @Override public int cuDeviceGetName(byte[] name, int len, int dev) {
        byte[] n = "Fake CPU-simulated GPU\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        System.arraycopy(n, 0, name, 0, Math.min(len, n.length));
        return 0;
    }

    @Override public int cuDeviceGetAttribute(int[] value, int attribute, int dev) {
        value[0] = switch (attribute) {
            case Cuda.ATTR_MULTIPROCESSOR_COUNT -> smCount;
            case Cuda.ATTR_COMPUTE_CAPABILITY_MAJOR -> 9;
            case Cuda.ATTR_COMPUTE_CAPABILITY_MINOR -> 0;
            case Cuda.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN -> SHARED_OPTIN;
            default -> 0;
        };
        return 0;
    }

    @Override public int cuDevicePrimaryCtxRetain(long[] ctx, int dev) { ctx[0] = CONTEXT; return 0; }

    @Override public int cuDevicePrimaryCtxRelease(int dev) { return 0; }

    @Override public synchronized int cuCtxGetCurrent(long[] ctx) { ctx[0] = current; return 0; }

    @Override public synchronized int cuCtxSetCurrent(long ctx) { current = ctx; return 0; }

    @Override public synchronized int cuCtxGetDevice(int[] dev) {
        if (current == 0) {
            return INVALID_CONTEXT;
        }
        dev[0] = 0;
        return 0;
    }

    @Override public synchronized int cuStreamGetCtx(long stream, long[] ctx) {
        if (stream == 0 && current == 0) {
            return INVALID_CONTEXT;
        }
        ctx[0] = CONTEXT;
        return 0;
    }

    @Override public synchronized int cuLibraryLoadData(long[] library, Pointer code, Pointer a, Pointer b, int c, Pointer e,
            Pointer f, int g) {
        if (code == null || code.getInt(0) != 0xBA55ED50) {
            return INVALID_VALUE;  // not a fatbin
        }
        library[0] = handle();
        return 0;
    }

    @Override public int cuLibraryUnload(long library) { return 0; }

    @Override public synchronized int cuLibraryGetKernel(long[] kernel, long library, String name) {
        boolean variant = name.endsWith("_occ3") && CudaBackend.VARIANT_KERNELS.contains(name.substring(0, name.length() - 5));
        if (!CudaBackend.KERNELS.contains(name) && !variant && !DeviceCheck.BENCH_KERNELS.contains(name)) {  // the device check's own too
            return NOT_FOUND;
        }
        kernel[0] = handle();
        kernels.put(kernel[0], name);
        return 0;
    }

    @Override public synchronized int cuKernelGetFunction(long[] function, long kernel) {
        if (current == 0) {
            return INVALID_CONTEXT;
        }
        function[0] = kernel;
        return kernels.containsKey(kernel) ? 0 : INVALID_HANDLE;
    }

    /** The name of every kernel launched, in order. */
    final java.util.List<String> launchedNames = new java.util.ArrayList<>();

    /** A launch as the fake saw it: the kernel, its grid and, for the checksum kernels, the parameters' slices_per_part. */
    record Launch(String name, int gridX, int gridY, int slicesPerPart) {
    }

    /** Every launch, in order (cleared by the tests that read it). */
    final java.util.List<Launch> launchLog = new java.util.ArrayList<>();

    /** The opt-in maximum of dynamic shared memory per block the fake reports: an H100's 227 KiB. */
    static final int SHARED_OPTIN = 227 << 10;
    /** Dynamic shared memory a kernel may use without opting in. */
    private static final int SHARED_DEFAULT = 48 << 10;
    /** Per kernel handle, the dynamic shared memory it opted in to ({@code cuKernelSetAttribute}). */
    private final java.util.Map<Long, Integer> sharedOptIn = new java.util.HashMap<>();

    @Override public synchronized int cuKernelSetAttribute(int attrib, int val, long kernel, int dev) {
        if (!kernels.containsKey(kernel)) {
            return INVALID_HANDLE;
        }
        if (attrib != Cuda.FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || val < 0 || val > SHARED_OPTIN) {
            return INVALID_VALUE;
        }
        sharedOptIn.put(kernel, val);
        return 0;
    }

    @Override public synchronized int cuLaunchKernel(long f, int gx, int gy, int gz, int bx, int by, int bz, int shared,
            long stream, long kernelParams, long extra) {
        String name = kernels.get(f);
        if (name == null) {
            return INVALID_HANDLE;
        }
        if (shared < 0 || shared > Math.max(SHARED_DEFAULT, sharedOptIn.getOrDefault(f, 0))) {
            return INVALID_VALUE;   // as the GPU refuses more dynamic shared memory than the kernel opted in to
        }
        launches++;
        launchedNames.add(name);
        long params = seg(kernelParams, 8).get(ValueLayout.JAVA_LONG, 0);
        launchLog.add(new Launch(name, gx, gy, name.startsWith("kvc_block_checksums") || name.startsWith("kvc_slice_sums")
                || name.startsWith("kvc_byte_cells") ? seg(params, KernelAbi.CHECKSUM_PARAMS_BYTES)
                        .get(ValueLayout.JAVA_INT, KernelAbi.PARAMS_SLICES_PER_PART) : 0));
        return lib.kvc_emulate(name, gx, gy, gz, bx, by, bz, params);
    }

    @Override public synchronized int cuMemAlloc(long[] dptr, long bytes) {
        if (bytes <= 0) {
            return INVALID_VALUE;
        }
        dptr[0] = Native.malloc(bytes);
        device.put(dptr[0], bytes);
        return 0;
    }

    @Override public synchronized int cuMemFree(long dptr) {
        if (device.remove(dptr) == null) {
            return INVALID_VALUE;
        }
        Native.free(dptr);
        return 0;
    }

    @Override public synchronized int cuMemAllocHost(long[] p, long bytes) {
        p[0] = Native.malloc(bytes);
        pinned.put(p[0], bytes);
        return 0;
    }

    @Override public synchronized int cuMemFreeHost(long p) {
        if (pinned.remove(p) == null) {
            return INVALID_VALUE;
        }
        mapped.remove(p);
        Native.free(p);
        return 0;
    }

    /** Host ranges page-locked by cuMemHostRegister: address to bytes. */
    private final TreeMap<Long, Long> registered = new TreeMap<>();
    /** Pinned host ranges mapped into the "device" (DEVICEMAP): address to bytes. */
    private final TreeMap<Long, Long> mapped = new TreeMap<>();

    synchronized int livePinnedMappings() {
        return mapped.size();
    }

    private static boolean within(TreeMap<Long, Long> ranges, long address, long bytes) {
        Map.Entry<Long, Long> e = ranges.floorEntry(address);
        return e != null && address + bytes <= e.getKey() + e.getValue();
    }

    @Override public synchronized int cuMemHostAlloc(long[] p, long bytes, int flags) {
        if (bytes <= 0) {
            return INVALID_VALUE;
        }
        p[0] = Native.malloc(bytes);
        pinned.put(p[0], bytes);
        if ((flags & Cuda.MEMHOST_DEVICEMAP) != 0) {
            mapped.put(p[0], bytes);
        }
        return 0;
    }

    @Override public synchronized int cuMemHostRegister(long p, long bytes, int flags) {
        if (p == 0 || bytes <= 0) {
            return INVALID_VALUE;
        }
        Map.Entry<Long, Long> below = registered.floorEntry(p + bytes - 1);
        if (below != null && below.getKey() + below.getValue() > p) {
            return HOST_MEMORY_ALREADY_REGISTERED;
        }
        registered.put(p, bytes);
        if ((flags & Cuda.MEMHOST_DEVICEMAP) != 0) {
            mapped.put(p, bytes);
        }
        return 0;
    }

    @Override public synchronized int cuMemHostUnregister(long p) {
        if (registered.remove(p) == null) {
            return HOST_MEMORY_NOT_REGISTERED;
        }
        mapped.remove(p);
        return 0;
    }

    /** Unified addressing, as for cuMemHostAlloc memory on a 64-bit host: the device address is the host address. */
    @Override public synchronized int cuMemHostGetDevicePointer(long[] dptr, long p, int flags) {
        if (flags != 0 || !within(mapped, p, 1)) {
            return INVALID_VALUE;
        }
        dptr[0] = p;
        return 0;
    }

    @Override public int cuMemGetInfo(long[] free, long[] total) {
        free[0] = 1L << 30;
        total[0] = 1L << 30;
        return 0;
    }

    @Override public synchronized int cuMemcpyHtoDAsync(long dst, long src, long bytes, long stream) {
        if (!inDevice(dst, bytes)) {
            return INVALID_VALUE;
        }
        MemorySegment.copy(seg(src, bytes), 0, seg(dst, bytes), 0, bytes);
        return 0;
    }

    @Override public synchronized int cuMemcpyDtoHAsync(long dst, long src, long bytes, long stream) {
        if (!inDevice(src, bytes)) {
            return INVALID_VALUE;
        }
        MemorySegment.copy(seg(src, bytes), 0, seg(dst, bytes), 0, bytes);
        return 0;
    }

    @Override public synchronized int cuMemsetD8Async(long dst, int value, long n, long stream) {
        if (!inDevice(dst, n)) {
            return INVALID_VALUE;
        }
        seg(dst, n).fill((byte) value);
        return 0;
    }

    @Override public synchronized int cuMemcpyDtoDAsync(long dst, long src, long bytes, long stream) {
        if (!inDevice(src, bytes) || !inDevice(dst, bytes)) {
            return INVALID_VALUE;
        }
        MemorySegment.copy(seg(src, bytes), 0, seg(dst, bytes), 0, bytes);
        return 0;
    }

    @Override public synchronized int cuStreamCreate(long[] stream, int flags) { stream[0] = handle(); return 0; }

    @Override public int cuStreamDestroy(long stream) { return 0; }

    @Override public int cuStreamWaitEvent(long stream, long event, int flags) { return 0; }

    @Override public int cuStreamSynchronize(long stream) { return 0; }

    @Override public synchronized int cuStreamIsCapturing(long stream, int[] status) {
        status[0] = capturing.contains(stream) ? 1 : 0;
        return 0;
    }

    @Override public synchronized int cuEventCreate(long[] event, int flags) {
        event[0] = handle();
        events.put(event[0], 0);
        return 0;
    }

    @Override public synchronized int cuEventDestroy(long event) {
        recordedAt.remove(event);
        return events.remove(event) == null ? INVALID_HANDLE : 0;
    }

    @Override public synchronized int cuEventRecord(long event, long stream) {
        if (!events.containsKey(event)) {
            return INVALID_HANDLE;
        }
        events.put(event, deferCompletion ? 1 : 2);
        recordedAt.put(event, System.nanoTime());
        return 0;
    }

    @Override public synchronized int cuEventQuery(long event) {
        Integer s = events.get(event);
        return s == null ? INVALID_HANDLE : s == 1 ? Cuda.ERROR_NOT_READY : 0;
    }

    @Override public synchronized int cuEventSynchronize(long event) {
        if (!events.containsKey(event)) {
            return INVALID_HANDLE;
        }
        if (events.get(event) == 1) {
            events.put(event, 2);
        }
        return 0;
    }

    /** The host's time between the two records (work runs at enqueue here): meaningless as GPU time, but positive. */
    @Override public synchronized int cuEventElapsedTime(float[] ms, long start, long end) {
        Long a = recordedAt.get(start);
        Long b = recordedAt.get(end);
        if (a == null || b == null) {
            return INVALID_HANDLE;
        }
        ms[0] = Math.max(1e-6f, (b - a) / 1e6f);
        return 0;
    }

    @Override public int cuGetErrorName(int error, long[] str) {
        String n = NAMES.get(error);
        if (n == null) {
            return INVALID_VALUE;
        }
        synchronized (NAME_STRINGS) {
            Memory m = NAME_STRINGS.computeIfAbsent(error, e -> {
                Memory s = new Memory(n.length() + 1);
                s.setString(0, n, "US-ASCII");
                return s;
            });
            str[0] = Pointer.nativeValue(m);
        }
        return 0;
    }
}
