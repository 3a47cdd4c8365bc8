package io.kvchecksum.cuda;

import com.sun.jna.Pointer;

/**
 * The CUDA driver API calls this backend makes, one Java method per C function of {@code cuda.h}, with the same
 * names and argument order. Handles ({@code CUcontext}, {@code CUstream}, {@code CUevent}, {@code CUlibrary},
 * {@code CUkernel}) and device pointers are {@code long}; host pointers are {@code long} addresses; an
 * out-parameter is an array of length one. Every method returns the {@code CUresult} (0 is {@code CUDA_SUCCESS}).
 *
 * <p>{@link Cuda#loadDriver()} binds it to {@code libcuda.so.1} through JNA, using the {@code _v2} symbols where the
 * driver exports them. Keeping the binding behind this interface lets tests wrap it (recording every call made
 * during an enqueue) or replace it with a simulation that runs on the CPU.
 */
public interface CudaDriver {
    int cuInit(int flags);

    int cuDriverGetVersion(int[] version);

    int cuDeviceGetCount(int[] count);

    int cuDeviceGet(int[] device, int ordinal);

    int cuDeviceGetName(byte[] name, int len, int device);

    int cuDeviceGetAttribute(int[] value, int attribute, int device);

    int cuDevicePrimaryCtxRetain(long[] ctx, int device);

    /** {@code cuDevicePrimaryCtxRelease_v2}. */
    int cuDevicePrimaryCtxRelease(int device);

    int cuCtxGetCurrent(long[] ctx);

    int cuCtxSetCurrent(long ctx);

    int cuCtxGetDevice(int[] device);

    int cuStreamGetCtx(long stream, long[] ctx);

    int cuLibraryLoadData(long[] library, Pointer code, Pointer jitOptions, Pointer jitOptionValues, int numJitOptions,
            Pointer libraryOptions, Pointer libraryOptionValues, int numLibraryOptions);

    int cuLibraryUnload(long library);

    int cuLibraryGetKernel(long[] kernel, long library, String name);

    int cuKernelGetFunction(long[] function, long kernel);

    /** {@return a {@code CUkernel} may be passed as {@code f}: it then runs in the context of {@code stream}} */
    int cuLaunchKernel(long f, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemBytes,
            long stream, long kernelParams, long extra);

    /** {@code cuMemAlloc_v2}. */
    int cuMemAlloc(long[] dptr, long bytes);

    /** {@code cuMemFree_v2}; may synchronize the device, so it never runs in an enqueue. */
    int cuMemFree(long dptr);

    /** {@code cuMemAllocHost_v2}: pinned host memory. */
    int cuMemAllocHost(long[] pointer, long bytes);

    int cuMemFreeHost(long pointer);

    /** {@code cuMemGetInfo_v2}. */
    int cuMemGetInfo(long[] free, long[] total);

    /** {@code cuMemcpyHtoDAsync_v2}. */
    int cuMemcpyHtoDAsync(long dst, long srcHost, long bytes, long stream);

    /** {@code cuMemcpyDtoHAsync_v2}. */
    int cuMemcpyDtoHAsync(long dstHost, long src, long bytes, long stream);

    /** {@code cuMemsetD8Async}: {@code n} bytes at {@code dst} set to {@code value} (an unsigned char in C), on {@code stream}. */
    int cuMemsetD8Async(long dst, int value, long n, long stream);

    /** {@code cuMemcpyDtoDAsync_v2}. */
    int cuMemcpyDtoDAsync(long dst, long src, long bytes, long stream);

    int cuStreamCreate(long[] stream, int flags);

    /** {@code cuStreamDestroy_v2}. */
    int cuStreamDestroy(long stream);

    int cuStreamWaitEvent(long stream, long event, int flags);

    int cuStreamSynchronize(long stream);

    /**
     * {@return {@code status[0]}: a {@code CUstreamCaptureStatus} (0 none, 1 active, 2 invalidated)} Does not
     * synchronize.
     */
    int cuStreamIsCapturing(long stream, int[] status);

    int cuEventCreate(long[] event, int flags);

    /** {@code cuEventDestroy_v2}. */
    int cuEventDestroy(long event);

    int cuEventRecord(long event, long stream);

    int cuEventQuery(long event);

    int cuEventSynchronize(long event);

    int cuEventElapsedTime(float[] milliseconds, long start, long end);

    /** Sets {@code str[0]} to the address of a static C string such as {@code CUDA_ERROR_NO_DEVICE}. */
    int cuGetErrorName(int error, long[] str);
}
