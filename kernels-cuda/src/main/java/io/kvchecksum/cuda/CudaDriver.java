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
    /**
     * {@code cuInit}: initializes the driver API; must precede every other call of this process.
     *
     * @param flags must be 0
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuInit(int flags);

    /**
     * {@code cuDriverGetVersion}: the CUDA version the installed driver supports.
     *
     * @param version receives it in {@code version[0]}, as {@code 1000*major + 10*minor} (13000 for CUDA 13.0)
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuDriverGetVersion(int[] version);

    /**
     * {@code cuDeviceGetCount}: the number of CUDA devices visible to this process.
     *
     * @param count receives it in {@code count[0]}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuDeviceGetCount(int[] count);

    /**
     * {@code cuDeviceGet}: the device handle of an ordinal.
     *
     * @param device receives the {@code CUdevice} in {@code device[0]}
     * @param ordinal the device's ordinal, {@code 0 .. count-1} of {@link #cuDeviceGetCount}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuDeviceGet(int[] device, int ordinal);

    /**
     * {@code cuDeviceGetName}: the device's product name.
     *
     * @param name receives the name as a NUL-terminated ASCII string
     * @param len the most bytes to write, at most {@code name.length}
     * @param device the {@code CUdevice}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuDeviceGetName(byte[] name, int len, int device);

    /**
     * {@code cuDeviceGetAttribute}: one integer property of a device.
     *
     * @param value receives the property in {@code value[0]}
     * @param attribute the {@code CUdevice_attribute} number (e.g. 75 and 76, compute capability major and minor)
     * @param device the {@code CUdevice}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuDeviceGetAttribute(int[] value, int attribute, int device);

    /**
     * {@code cuDevicePrimaryCtxRetain}: the device's primary context (the one the CUDA runtime and so the engine use),
     * with its reference count raised; pair with {@link #cuDevicePrimaryCtxRelease}.
     *
     * @param ctx receives the {@code CUcontext} in {@code ctx[0]}
     * @param device the {@code CUdevice}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuDevicePrimaryCtxRetain(long[] ctx, int device);

    /**
     * {@code cuDevicePrimaryCtxRelease_v2}.
     *
     * @param device the {@code CUdevice} whose primary context was retained
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuDevicePrimaryCtxRelease(int device);

    /**
     * {@code cuCtxGetCurrent}: the context bound to the calling thread.
     *
     * @param ctx receives the {@code CUcontext} in {@code ctx[0]}, 0 when none is bound
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuCtxGetCurrent(long[] ctx);

    /**
     * {@code cuCtxSetCurrent}: binds a context to the calling thread (every later call on it uses that context).
     *
     * @param ctx the {@code CUcontext}, or 0 to unbind
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuCtxSetCurrent(long ctx);

    /**
     * {@code cuCtxGetDevice}: the device of the calling thread's current context.
     *
     * @param device receives the {@code CUdevice} in {@code device[0]}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuCtxGetDevice(int[] device);

    /**
     * {@code cuStreamGetCtx}: the context a stream belongs to (how an engine's stream is checked against this backend's
     * device).
     *
     * @param stream the {@code CUstream}; 0 is the legacy default stream of the current context
     * @param ctx receives the {@code CUcontext} in {@code ctx[0]}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuStreamGetCtx(long stream, long[] ctx);

    /**
     * {@code cuLibraryLoadData}: loads a fatbin (or cubin, or PTX) image from host memory as a context-independent
     * library.
     *
     * @param library receives the {@code CUlibrary} in {@code library[0]}
     * @param code the image's bytes; keep them alive as long as the library, since the driver may read them lazily
     * @param jitOptions the {@code CUjit_option} array, or null
     * @param jitOptionValues their values, or null
     * @param numJitOptions the number of JIT options
     * @param libraryOptions the {@code CUlibraryOption} array, or null
     * @param libraryOptionValues their values, or null
     * @param numLibraryOptions the number of library options
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuLibraryLoadData(long[] library, Pointer code, Pointer jitOptions, Pointer jitOptionValues, int numJitOptions,
            Pointer libraryOptions, Pointer libraryOptionValues, int numLibraryOptions);

    /**
     * {@code cuLibraryUnload}: unloads a library; its kernels must no longer run.
     *
     * @param library the {@code CUlibrary}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuLibraryUnload(long library);

    /**
     * {@code cuLibraryGetKernel}: a kernel of a library by its (unmangled, {@code extern "C"}) name.
     *
     * @param kernel receives the {@code CUkernel} in {@code kernel[0]}
     * @param library the {@code CUlibrary}
     * @param name the kernel's symbol name
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuLibraryGetKernel(long[] kernel, long library, String name);

    /**
     * {@code cuKernelGetFunction}: the kernel's function in the current context (for attribute queries).
     *
     * @param function receives the {@code CUfunction} in {@code function[0]}
     * @param kernel the {@code CUkernel}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuKernelGetFunction(long[] function, long kernel);

    /**
     * A {@code CUkernel} may be passed as {@code f}: it then runs in the context of {@code stream}.
     *
     * @param f the {@code CUfunction} or {@code CUkernel} to launch
     * @param gridX blocks in x, positive
     * @param gridY blocks in y, positive
     * @param gridZ blocks in z, positive
     * @param blockX threads per block in x, positive
     * @param blockY threads per block in y, positive
     * @param blockZ threads per block in z, positive
     * @param sharedMemBytes dynamic shared memory per block, in bytes
     * @param stream the {@code CUstream} to enqueue on; 0 is the legacy default stream
     * @param kernelParams host address of an array of pointers, one to each kernel argument; read during the call
     * @param extra host address of the {@code extra} option array, or 0
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS} (launch errors of the kernel itself surface at a later
     *     synchronizing call)
     */
    int cuLaunchKernel(long f, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemBytes,
            long stream, long kernelParams, long extra);

    /**
     * {@code cuKernelSetAttribute}: sets one attribute of a library kernel on a device (here
     * {@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}, the staged copy's opt-in to more than 48 KiB of dynamic
     * shared memory).
     *
     * @param attrib the {@code CUfunction_attribute}
     * @param val its value
     * @param kernel the {@code CUkernel}
     * @param dev the {@code CUdevice}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuKernelSetAttribute(int attrib, int val, long kernel, int dev);

    /**
     * {@code cuMemAlloc_v2}.
     *
     * @param dptr receives the {@code CUdeviceptr} in {@code dptr[0]}
     * @param bytes the size, positive
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemAlloc(long[] dptr, long bytes);

    /**
     * {@code cuMemFree_v2}; may synchronize the device, so it never runs in an enqueue.
     *
     * @param dptr a {@code CUdeviceptr} from {@link #cuMemAlloc}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemFree(long dptr);

    /**
     * {@code cuMemAllocHost_v2}: pinned host memory.
     *
     * @param pointer receives the host address in {@code pointer[0]}
     * @param bytes the size, positive
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemAllocHost(long[] pointer, long bytes);

    /**
     * {@code cuMemFreeHost}: frees pinned host memory; no copy may still be reading or writing it.
     *
     * @param pointer a host address from {@link #cuMemAllocHost} or {@link #cuMemHostAlloc}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemFreeHost(long pointer);

    /**
     * {@code cuMemHostAlloc}: page-locked host memory, with {@code CU_MEMHOSTALLOC_DEVICEMAP} also mapped into the
     * device's address space (its device address from {@link #cuMemHostGetDevicePointer}); free with
     * {@link #cuMemFreeHost}.
     *
     * @param pointer receives the host address in {@code pointer[0]}
     * @param bytes the size, positive
     * @param flags {@code CU_MEMHOSTALLOC_*}: 1 {@code PORTABLE} (pinned for every context), 2 {@code DEVICEMAP}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemHostAlloc(long[] pointer, long bytes, int flags);

    /**
     * {@code cuMemHostRegister_v2}: page-locks an existing host range (and with {@code CU_MEMHOSTREGISTER_DEVICEMAP}
     * maps it into the device's address space); undo with {@link #cuMemHostUnregister}.
     *
     * @param pointer the range's first host address
     * @param bytes the range's size, positive
     * @param flags {@code CU_MEMHOSTREGISTER_*}: 1 {@code PORTABLE}, 2 {@code DEVICEMAP}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS} (712, {@code CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED},
     *     when part of the range is registered already)
     */
    int cuMemHostRegister(long pointer, long bytes, int flags);

    /**
     * {@code cuMemHostUnregister}: unpins a range registered by {@link #cuMemHostRegister}; no copy may still read or
     * write it.
     *
     * @param pointer the first host address passed to {@link #cuMemHostRegister}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS} (713, {@code CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED}, when
     *     it is not registered)
     */
    int cuMemHostUnregister(long pointer);

    /**
     * {@code cuMemHostGetDevicePointer_v2}: the device address through which kernels read and write mapped pinned host
     * memory (zero-copy; under unified addressing often the host address itself).
     *
     * @param dptr receives the {@code CUdeviceptr} in {@code dptr[0]}
     * @param pointer a host address of memory from {@link #cuMemHostAlloc} or {@link #cuMemHostRegister} with the
     *     device-map flag
     * @param flags must be 0
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemHostGetDevicePointer(long[] dptr, long pointer, int flags);

    /**
     * {@code cuMemGetInfo_v2}.
     *
     * @param free receives the current context's device's free memory in bytes, in {@code free[0]}
     * @param total receives its total memory in bytes, in {@code total[0]}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemGetInfo(long[] free, long[] total);

    /**
     * {@code cuMemcpyHtoDAsync_v2}.
     *
     * @param dst the destination {@code CUdeviceptr}
     * @param srcHost the source host address; pinned for the copy to be asynchronous, and unchanged until it completes
     * @param bytes bytes to copy
     * @param stream the {@code CUstream} the copy is ordered on
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemcpyHtoDAsync(long dst, long srcHost, long bytes, long stream);

    /**
     * {@code cuMemcpyDtoHAsync_v2}.
     *
     * @param dstHost the destination host address; pinned for the copy to be asynchronous, and not read before it
     *     completes
     * @param src the source {@code CUdeviceptr}
     * @param bytes bytes to copy
     * @param stream the {@code CUstream} the copy is ordered on
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemcpyDtoHAsync(long dstHost, long src, long bytes, long stream);

    /**
     * {@code cuMemsetD8Async}: {@code n} bytes at {@code dst} set to {@code value} (an unsigned char in C), on
     * {@code stream}.
     *
     * @param dst the first {@code CUdeviceptr} to set
     * @param value the byte value; only the low 8 bits are used
     * @param n bytes to set
     * @param stream the {@code CUstream} the write is ordered on
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemsetD8Async(long dst, int value, long n, long stream);

    /**
     * {@code cuMemcpyDtoDAsync_v2}.
     *
     * @param dst the destination {@code CUdeviceptr}
     * @param src the source {@code CUdeviceptr}
     * @param bytes bytes to copy
     * @param stream the {@code CUstream} the copy is ordered on
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuMemcpyDtoDAsync(long dst, long src, long bytes, long stream);

    /**
     * {@code cuStreamCreate}: a new stream in the current context.
     *
     * @param stream receives the {@code CUstream} in {@code stream[0]}
     * @param flags {@code CU_STREAM_DEFAULT} (0) or {@code CU_STREAM_NON_BLOCKING} (1)
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuStreamCreate(long[] stream, int flags);

    /**
     * {@code cuStreamDestroy_v2}.
     *
     * @param stream the {@code CUstream}; work already enqueued on it still completes
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuStreamDestroy(long stream);

    /**
     * {@code cuStreamWaitEvent}: makes later work on {@code stream} wait for {@code event}, without blocking the host
     * (how a checksum is ordered after an engine's stream).
     *
     * @param stream the {@code CUstream} that waits
     * @param event the {@code CUevent}, as last recorded
     * @param flags 0 ({@code CU_EVENT_WAIT_DEFAULT})
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuStreamWaitEvent(long stream, long event, int flags);

    /**
     * {@code cuStreamSynchronize}: blocks the calling thread until everything enqueued on the stream is done.
     *
     * @param stream the {@code CUstream}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}, including an error of earlier asynchronous work
     */
    int cuStreamSynchronize(long stream);

    /**
     * {@code cuStreamIsCapturing}: whether {@code stream} is being captured into a CUDA graph (where a synchronous
     * call would be illegal). Does not synchronize.
     *
     * @param stream the {@code CUstream}
     * @param status receives a {@code CUstreamCaptureStatus} in {@code status[0]}: 0 none, 1 active, 2 invalidated
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuStreamIsCapturing(long stream, int[] status);

    /**
     * {@code cuEventCreate}: a new event in the current context.
     *
     * @param event receives the {@code CUevent} in {@code event[0]}
     * @param flags {@code CU_EVENT_*} flags (e.g. 2, {@code CU_EVENT_DISABLE_TIMING})
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuEventCreate(long[] event, int flags);

    /**
     * {@code cuEventDestroy_v2}.
     *
     * @param event the {@code CUevent}; it may still be pending
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuEventDestroy(long event);

    /**
     * {@code cuEventRecord}: records the event at the current end of the stream's work.
     *
     * @param event the {@code CUevent}
     * @param stream the {@code CUstream}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuEventRecord(long event, long stream);

    /**
     * {@code cuEventQuery}: polls an event without blocking.
     *
     * @param event the {@code CUevent}
     * @return 0 when the recorded work is done, 600 ({@code CUDA_ERROR_NOT_READY}) while it is not, else an error
     */
    int cuEventQuery(long event);

    /**
     * {@code cuEventSynchronize}: blocks the calling thread until the event's recorded work is done.
     *
     * @param event the {@code CUevent}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}, including an error of that work
     */
    int cuEventSynchronize(long event);

    /**
     * {@code cuEventElapsedTime}: the device time between two completed events (created with timing).
     *
     * @param milliseconds receives the time in {@code milliseconds[0]}, resolution about half a microsecond
     * @param start the earlier {@code CUevent}
     * @param end the later {@code CUevent}
     * @return the {@code CUresult}; 0 is {@code CUDA_SUCCESS}
     */
    int cuEventElapsedTime(float[] milliseconds, long start, long end);

    /**
     * Sets {@code str[0]} to the address of a static C string such as {@code CUDA_ERROR_NO_DEVICE}.
     *
     * @param error a {@code CUresult}
     * @param str receives the string's address in {@code str[0]}; never freed
     * @return 0, or {@code CUDA_ERROR_INVALID_VALUE} (1) for an unknown code
     */
    int cuGetErrorName(int error, long[] str);
}
