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
 * for the device are the {@link #SYNCHRONIZING} ones. A successful {@link OpenClBackend#run} (what {@code submit}
 * calls) makes none of them; only {@link io.kvchecksum.PendingChecksums#get()} (and {@code close()} of an unfinished
 * computation) waits, on the event of each launch's final read. {@link #finish} is called only to clean up after an enqueue that failed half-way. Failures throw {@link OpenClException} naming
 * the call and the OpenCL error.
 */
public interface ClApi {

    /** The names of the calls that block the host until the device has done something. */
    Set<String> SYNCHRONIZING = Set.of("waitForEvent", "finish");

    /** {@return the implementation on JOCL that the backend uses by default; wrap it to observe the calls} */
    static ClApi jocl() {
        return JoclApi.INSTANCE;
    }

    /**
     * {@code clCreateBuffer} without a host pointer.
     *
     * @param context the backend's context
     * @param flags {@code CL_MEM_*} flags (e.g. {@code CL_MEM_READ_ONLY})
     * @param size the buffer's size in bytes, positive
     * @return the new buffer; the caller releases it with {@link #releaseBuffer}
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    cl_mem createBuffer(cl_context context, long flags, long size);

    /**
     * {@code clCreateBuffer} over host memory ({@code flags} with {@code CL_MEM_USE_HOST_PTR}): on a CPU device the
     * kernels read that memory in place, so it must stay alive and unchanged while they run.
     *
     * @param context the backend's context
     * @param flags {@code CL_MEM_*} flags, including {@code CL_MEM_USE_HOST_PTR}
     * @param size the buffer's size in bytes, positive
     * @param host the host memory the buffer is over, at least {@code size} bytes
     * @return the new buffer; the caller releases it with {@link #releaseBuffer}
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    cl_mem createHostBuffer(cl_context context, long flags, long size, Pointer host);

    /**
     * Non-blocking {@code clEnqueueWriteBuffer} from a direct buffer that must stay valid until the queue has run it.
     *
     * @param queue the backend's in-order queue
     * @param buffer the destination buffer
     * @param offset the first byte written within {@code buffer}
     * @param source a direct buffer; its remaining bytes are written
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    void enqueueWrite(cl_command_queue queue, cl_mem buffer, long offset, ByteBuffer source);

    /**
     * {@code clCreateKernel}.
     *
     * @param program the built program
     * @param name the kernel function's name in the source
     * @return the kernel; the caller releases it with {@link #releaseKernel}
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    cl_kernel createKernel(cl_program program, String name);

    /**
     * {@code clSetKernelArg}; a {@code null} value reserves {@code size} bytes of local memory (for a {@code __local}
     * argument) or passes a NULL pointer (for a {@code __global} one, {@code size} that of a {@code cl_mem}).
     *
     * @param kernel the kernel
     * @param index the argument's position, from 0
     * @param size the argument's size in bytes
     * @param value the argument's bytes (copied by the call), or {@code null} (local memory, or a NULL buffer)
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    void setKernelArg(cl_kernel kernel, int index, long size, Pointer value);

    /**
     * {@code clEnqueueNDRangeKernel}; {@code local} may be {@code null} to let the implementation choose.
     *
     * @param queue the backend's in-order queue
     * @param kernel the kernel, its arguments set
     * @param global the global work size per dimension (1 to 3 dimensions)
     * @param local the work-group size per dimension, or {@code null}
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    void enqueueKernel(cl_command_queue queue, cl_kernel kernel, long[] global, long[] local);

    /**
     * Non-blocking {@code clEnqueueReadBuffer} into a direct buffer.
     *
     * @param queue the backend's in-order queue
     * @param buffer the source buffer, read from byte 0
     * @param target a direct buffer; its remaining bytes are filled
     * @return the read's event; {@code target} holds the bytes only once it is complete (released by the caller)
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    cl_event enqueueRead(cl_command_queue queue, cl_mem buffer, ByteBuffer target);

    /**
     * Non-blocking {@code clEnqueueMapBuffer} ({@code CL_MAP_READ}) of bytes {@code [offset, offset + size)} of a buffer
     * over host memory ({@code CL_MEM_USE_HOST_PTR}), then {@code clEnqueueUnmapMemObject} of the mapping: once the
     * queue has run them, that host memory holds what the kernels enqueued before wrote to the buffer, as OpenCL
     * requires of such buffers (on a CPU device sharing host memory both are nearly free). Waits for nothing.
     *
     * @param queue the backend's in-order queue
     * @param buffer a buffer created over host memory
     * @param offset the first byte to make current, within {@code buffer}
     * @param size how many bytes, positive and below 2^31 (a Java buffer's limit)
     * @throws OpenClException when a call fails, naming it and the OpenCL error
     */
    void enqueueMapUnmap(cl_command_queue queue, cl_mem buffer, long offset, long size);

    /**
     * {@code clFlush}: hands the queued commands to the device; does not wait.
     *
     * @param queue the queue to flush
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    void flush(cl_command_queue queue);

    /**
     * {@code clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)}: {@code CL_COMPLETE} (0), a positive state, or an
     * error.
     *
     * @param event the event to poll; not waited for
     * @return the execution status: {@code CL_COMPLETE} (0) when done, {@code CL_RUNNING}, {@code CL_SUBMITTED} or
     *     {@code CL_QUEUED} (positive) before, a negative error code when the command failed
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    int eventStatus(cl_event event);

    /**
     * {@code clWaitForEvents} on one event: blocks until that event completes.
     *
     * @param event the event to wait for
     * @throws OpenClException when the wait fails or the event's command failed
     */
    void waitForEvent(cl_event event);

    /**
     * {@code clFinish}: blocks until the queue is empty. Used only when an enqueue fails half-way, so that host memory
     * staged for writes already enqueued is not freed under them.
     *
     * @param queue the queue to drain
     * @throws OpenClException when the call fails, naming it and the OpenCL error
     */
    void finish(cl_command_queue queue);

    /**
     * {@code clReleaseKernel}; enqueued launches keep their own reference.
     *
     * @param kernel the kernel to release
     */
    void releaseKernel(cl_kernel kernel);

    /**
     * {@code clReleaseMemObject}; enqueued commands keep their own reference.
     *
     * @param buffer the buffer to release
     */
    void releaseBuffer(cl_mem buffer);

    /**
     * {@code clReleaseEvent}.
     *
     * @param event the event to release
     */
    void releaseEvent(cl_event event);
}
