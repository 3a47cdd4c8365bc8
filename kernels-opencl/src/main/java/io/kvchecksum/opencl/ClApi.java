package io.kvchecksum.opencl;

import org.jocl.Pointer;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.nio.ByteBuffer;
import java.util.Set;

/**
 * Every OpenCL call the backend makes after set-up, one method each, so that a test (or a benchmark) can wrap it and
 * record what an operation does.
 *
 * <p>The interface has no blocking transfer: writes and reads are enqueued non-blocking, and the only calls that wait
 * for the device are the {@link #SYNCHRONIZING} ones. A successful {@link OpenClBackend#submit} makes none of them;
 * only {@link io.kvchecksum.PendingChecksums#get()} (and {@code close()} of an unfinished computation) waits, on the
 * one event of the final read. {@link #finish} is called only to clean up after an enqueue that failed half-way. Failures throw {@link OpenClException} naming
 * the call and the OpenCL error.
 */
public interface ClApi {

    /** The names of the calls that block the host until the device has done something. */
    Set<String> SYNCHRONIZING = Set.of("waitForEvent", "finish");

    /** {@return the implementation on JOCL that the backend uses by default; wrap it to observe the calls} */
    static ClApi jocl() {
        return JoclApi.INSTANCE;
    }

    /** {@code clCreateBuffer} without a host pointer. */
    cl_mem createBuffer(cl_context context, long flags, long size);

    /**
     * {@code clCreateBuffer} over host memory ({@code flags} with {@code CL_MEM_USE_HOST_PTR}): on a CPU device the
     * kernels read that memory in place, so it must stay alive and unchanged while they run.
     */
    cl_mem createHostBuffer(cl_context context, long flags, long size, Pointer host);

    /** Non-blocking {@code clEnqueueWriteBuffer} from a direct buffer that must stay valid until the queue has run it. */
    void enqueueWrite(cl_command_queue queue, cl_mem buffer, long offset, ByteBuffer source);

    /** {@code clCreateKernel}. */
    cl_kernel createKernel(cl_program program, String name);

    /** {@code clSetKernelArg}; a {@code null} value reserves {@code size} bytes of local memory. */
    void setKernelArg(cl_kernel kernel, int index, long size, Pointer value);

    /** {@code clEnqueueNDRangeKernel}; {@code local} may be {@code null} to let the implementation choose. */
    void enqueueKernel(cl_command_queue queue, cl_kernel kernel, long[] global, long[] local);

    /**
     * Non-blocking {@code clEnqueueReadBuffer} into a direct buffer.
     *
     * @return the read's event; {@code target} holds the bytes only once it is complete (released by the caller)
     */
    cl_event enqueueRead(cl_command_queue queue, cl_mem buffer, ByteBuffer target);

    /** {@code clFlush}: hands the queued commands to the device; does not wait. */
    void flush(cl_command_queue queue);

    /** {@code clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)}: {@code CL_COMPLETE} (0), a positive state, or an error. */
    int eventStatus(cl_event event);

    /** {@code clWaitForEvents} on one event: blocks until that event completes. */
    void waitForEvent(cl_event event);

    /**
     * {@code clFinish}: blocks until the queue is empty. Used only when an enqueue fails half-way, so that host memory
     * staged for writes already enqueued is not freed under them.
     */
    void finish(cl_command_queue queue);

    /** {@code clReleaseKernel}; enqueued launches keep their own reference. */
    void releaseKernel(cl_kernel kernel);

    /** {@code clReleaseMemObject}; enqueued commands keep their own reference. */
    void releaseBuffer(cl_mem buffer);

    /** {@code clReleaseEvent}. */
    void releaseEvent(cl_event event);
}
