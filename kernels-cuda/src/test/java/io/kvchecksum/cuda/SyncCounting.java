package io.kvchecksum.cuda;

import com.sun.jna.Pointer;
import io.kvchecksum.KvChecksum;

import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A {@link CudaBackend} whose driver calls are counted, for benchmarks and diagnostics: every call named in
 * {@link #COUNTED} (those that block the host on the device, or may, and those that serialize streams) adds one to a
 * {@link LongAdder} the caller owns, from whatever thread makes it. A benchmark reads the adder before and after an
 * operation to report synchronizing calls per operation ({@code kvchecksum-jmh}'s {@code SubmitBench}); a steady-state
 * {@link KvChecksum#submit(io.kvchecksum.CompiledPlan, long) submit on an engine's stream} or device-memory
 * {@link KvChecksum#submit(io.kvchecksum.CompiledPlan) submit on the own stream} must add 0, {@code get()} adds 1 (its
 * {@code cuEventSynchronize}).
 *
 * <p>Not for production: engines use {@link CudaBackend#open(int)}. The counting wrapper is a plain delegating
 * class (no reflection), so it adds a few nanoseconds per driver call to the host time being measured.
 */
public final class SyncCounting {
    /**
     * Driver calls that block the host until the device (or a stream, or an event) has done something, or may:
     * {@code cuMemFree} can synchronize the device, synchronous copies do. The {@link CudaDriver} binding exposes only
     * some of them (the synchronous copies and {@code cuCtxSynchronize} are not bound at all); the others are listed
     * so that the set stays right if they are ever added. No enqueue may make any of them.
     */
    public static final Set<String> SYNCHRONIZING = Set.of("cuCtxSynchronize", "cuStreamSynchronize",
            "cuEventSynchronize", "cuMemFree", "cuMemFreeHost", "cuMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH",
            "cuMemcpyDtoD", "cuStreamQuery", "cuMemHostUnregister");

    /**
     * Allocations: they do not wait for the device, but the CUDA programming guide lists them among the operations
     * that keep commands of different streams from overlapping. The first enqueue in a context (or one larger than any
     * before it) makes them; a steady-state enqueue does not.
     */
    public static final Set<String> SERIALIZING = Set.of("cuMemAlloc", "cuMemAllocHost", "cuMemHostAlloc",
            "cuMemHostRegister");

    /** What the counter counts: {@link #SYNCHRONIZING} and {@link #SERIALIZING}. */
    public static final Set<String> COUNTED = Stream.concat(SYNCHRONIZING.stream(), SERIALIZING.stream())
            .collect(Collectors.toUnmodifiableSet());

    private SyncCounting() {
    }

    /**
     * The front over the backend on the device of that ordinal, as {@code KvChecksum.of(CudaBackend.open(ordinal))},
     * with every driver call in {@link #COUNTED} counted in {@code syncCalls} (set-up included: read the adder before
     * and after what you measure). {@code (CudaBackend) front.backend()} gives the backend for its extras
     * ({@link CudaBackend#upload}).
     *
     * @throws io.kvchecksum.BackendUnavailableException with the reason when CUDA cannot run here
     */
    public static KvChecksum open(int deviceOrdinal, LongAdder syncCalls) {
        return KvChecksum.of(open(Cuda.driver(), deviceOrdinal, syncCalls));
    }

    /** The backend of {@link #open(int, LongAdder)} on another driver (tests: the CPU-simulated one). */
    static CudaBackend open(CudaDriver driver, int deviceOrdinal, LongAdder syncCalls) {
        return new CudaBackend(counting(driver, syncCalls), deviceOrdinal, Cuda.fatbin(),
                LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
    }

    /** {@code next} with every call in {@link #COUNTED} counted in {@code syncCalls}. */
    static CudaDriver counting(CudaDriver next, LongAdder syncCalls) {
        if (next == null || syncCalls == null) {
            throw new NullPointerException(next == null ? "driver" : "syncCalls");
        }
        return new Counting(next, syncCalls);
    }

    /**
     * Delegates every call; the methods whose names are in {@link #COUNTED} count first ({@code SyncCountingTest}
     * checks, by reflection, that exactly those do).
     */
    private static final class Counting implements CudaDriver {
        private final CudaDriver next;
        private final LongAdder syncCalls;

        Counting(CudaDriver next, LongAdder syncCalls) {
            this.next = next;
            this.syncCalls = syncCalls;
        }

        @Override
        public int cuInit(int flags) {
            return next.cuInit(flags);
        }

        @Override
        public int cuDriverGetVersion(int[] version) {
            return next.cuDriverGetVersion(version);
        }

        @Override
        public int cuDeviceGetCount(int[] count) {
            return next.cuDeviceGetCount(count);
        }

        @Override
        public int cuDeviceGet(int[] device, int ordinal) {
            return next.cuDeviceGet(device, ordinal);
        }

        @Override
        public int cuDeviceGetName(byte[] name, int len, int device) {
            return next.cuDeviceGetName(name, len, device);
        }

        @Override
        public int cuDeviceGetAttribute(int[] value, int attribute, int device) {
            return next.cuDeviceGetAttribute(value, attribute, device);
        }

        @Override
        public int cuDevicePrimaryCtxRetain(long[] ctx, int device) {
            return next.cuDevicePrimaryCtxRetain(ctx, device);
        }

        @Override
        public int cuDevicePrimaryCtxRelease(int device) {
            return next.cuDevicePrimaryCtxRelease(device);
        }

        @Override
        public int cuCtxGetCurrent(long[] ctx) {
            return next.cuCtxGetCurrent(ctx);
        }

        @Override
        public int cuCtxSetCurrent(long ctx) {
            return next.cuCtxSetCurrent(ctx);
        }

        @Override
        public int cuCtxGetDevice(int[] device) {
            return next.cuCtxGetDevice(device);
        }

        @Override
        public int cuStreamGetCtx(long stream, long[] ctx) {
            return next.cuStreamGetCtx(stream, ctx);
        }

        @Override
        public int cuLibraryLoadData(long[] library, Pointer code, Pointer jitOptions, Pointer jitOptionValues, int numJitOptions, Pointer libraryOptions, Pointer libraryOptionValues, int numLibraryOptions) {
            return next.cuLibraryLoadData(library, code, jitOptions, jitOptionValues, numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions);
        }

        @Override
        public int cuLibraryUnload(long library) {
            return next.cuLibraryUnload(library);
        }

        @Override
        public int cuLibraryGetKernel(long[] kernel, long library, String name) {
            return next.cuLibraryGetKernel(kernel, library, name);
        }

        @Override
        public int cuKernelGetFunction(long[] function, long kernel) {
            return next.cuKernelGetFunction(function, kernel);
        }

        @Override
        public int cuLaunchKernel(long f, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemBytes, long stream, long kernelParams, long extra) {
            return next.cuLaunchKernel(f, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes, stream, kernelParams, extra);
        }

        @Override
        public int cuKernelSetAttribute(int attrib, int val, long kernel, int dev) {
            return next.cuKernelSetAttribute(attrib, val, kernel, dev);
        }

        @Override
        public int cuMemAlloc(long[] dptr, long bytes) {
            syncCalls.increment();
            return next.cuMemAlloc(dptr, bytes);
        }

        @Override
        public int cuMemFree(long dptr) {
            syncCalls.increment();
            return next.cuMemFree(dptr);
        }

        @Override
        public int cuMemAllocHost(long[] pointer, long bytes) {
            syncCalls.increment();
            return next.cuMemAllocHost(pointer, bytes);
        }

        @Override
        public int cuMemFreeHost(long pointer) {
            syncCalls.increment();
            return next.cuMemFreeHost(pointer);
        }

        @Override
        public int cuMemHostAlloc(long[] pointer, long bytes, int flags) {
            syncCalls.increment();
            return next.cuMemHostAlloc(pointer, bytes, flags);
        }

        @Override
        public int cuMemHostRegister(long pointer, long bytes, int flags) {
            syncCalls.increment();
            return next.cuMemHostRegister(pointer, bytes, flags);
        }

        @Override
        public int cuMemHostUnregister(long pointer) {
            syncCalls.increment();
            return next.cuMemHostUnregister(pointer);
        }

        @Override
        public int cuMemHostGetDevicePointer(long[] dptr, long pointer, int flags) {
            return next.cuMemHostGetDevicePointer(dptr, pointer, flags);
        }

        @Override
        public int cuMemGetInfo(long[] free, long[] total) {
            return next.cuMemGetInfo(free, total);
        }

        @Override
        public int cuMemcpyHtoDAsync(long dst, long srcHost, long bytes, long stream) {
            return next.cuMemcpyHtoDAsync(dst, srcHost, bytes, stream);
        }

        @Override
        public int cuMemcpyDtoHAsync(long dstHost, long src, long bytes, long stream) {
            return next.cuMemcpyDtoHAsync(dstHost, src, bytes, stream);
        }

        @Override
        public int cuMemcpyDtoDAsync(long dst, long src, long bytes, long stream) {
            return next.cuMemcpyDtoDAsync(dst, src, bytes, stream);
        }

        @Override
        public int cuStreamCreate(long[] stream, int flags) {
            return next.cuStreamCreate(stream, flags);
        }

        @Override
        public int cuStreamDestroy(long stream) {
            return next.cuStreamDestroy(stream);
        }

        @Override
        public int cuStreamWaitEvent(long stream, long event, int flags) {
            return next.cuStreamWaitEvent(stream, event, flags);
        }

        @Override
        public int cuStreamSynchronize(long stream) {
            syncCalls.increment();
            return next.cuStreamSynchronize(stream);
        }

        @Override
        public int cuMemsetD8Async(long dst, int value, long n, long stream) {
            return next.cuMemsetD8Async(dst, value, n, stream);
        }

        @Override
        public int cuStreamIsCapturing(long stream, int[] status) {
            return next.cuStreamIsCapturing(stream, status);
        }

        @Override
        public int cuEventCreate(long[] event, int flags) {
            return next.cuEventCreate(event, flags);
        }

        @Override
        public int cuEventDestroy(long event) {
            return next.cuEventDestroy(event);
        }

        @Override
        public int cuEventRecord(long event, long stream) {
            return next.cuEventRecord(event, stream);
        }

        @Override
        public int cuEventQuery(long event) {
            return next.cuEventQuery(event);
        }

        @Override
        public int cuEventSynchronize(long event) {
            syncCalls.increment();
            return next.cuEventSynchronize(event);
        }

        @Override
        public int cuEventElapsedTime(float[] milliseconds, long start, long end) {
            return next.cuEventElapsedTime(milliseconds, start, end);
        }

        @Override
        public int cuGetErrorName(int error, long[] str) {
            return next.cuGetErrorName(error, str);
        }
    }
}
