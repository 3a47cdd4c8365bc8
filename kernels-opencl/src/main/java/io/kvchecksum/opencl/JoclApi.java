package io.kvchecksum.opencl;

import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.nio.ByteBuffer;

/** {@link ClApi} on JOCL, checking every return code itself (JOCL's global exception switch is left alone). */
final class JoclApi implements ClApi {
    static final JoclApi INSTANCE = new JoclApi();

    private JoclApi() {
    }

    static void check(int err, String call) {
        if (err != CL.CL_SUCCESS) {
            throw new OpenClException(call, err);
        }
    }

    @Override
    public cl_mem createBuffer(cl_context context, long flags, long size) {
        return buffer(context, flags, size, null, " bytes)");
    }

    @Override
    public cl_mem createHostBuffer(cl_context context, long flags, long size, Pointer host) {
        return buffer(context, flags, size, host, " bytes of host memory)");
    }

    private static cl_mem buffer(cl_context context, long flags, long size, Pointer host, String what) {
        int[] err = new int[1];
        cl_mem m = CL.clCreateBuffer(context, flags, size, host, err);
        check(err[0], "clCreateBuffer(" + size + what);
        return m;
    }

    @Override
    public void enqueueWrite(cl_command_queue queue, cl_mem buffer, long offset, ByteBuffer source) {
        check(CL.clEnqueueWriteBuffer(queue, buffer, CL.CL_FALSE, offset, source.remaining(), Pointer.to(source), 0, null,
                null), "clEnqueueWriteBuffer");
    }

    @Override
    public cl_kernel createKernel(cl_program program, String name) {
        int[] err = new int[1];
        cl_kernel k = CL.clCreateKernel(program, name, err);
        check(err[0], "clCreateKernel(" + name + ")");
        return k;
    }

    @Override
    public void setKernelArg(cl_kernel kernel, int index, long size, Pointer value) {
        check(CL.clSetKernelArg(kernel, index, size, value), "clSetKernelArg(" + index + ")");
    }

    @Override
    public void enqueueKernel(cl_command_queue queue, cl_kernel kernel, long[] global, long[] local) {
        check(CL.clEnqueueNDRangeKernel(queue, kernel, global.length, null, global, local, 0, null, null),
                "clEnqueueNDRangeKernel");
    }

    @Override
    public cl_event enqueueRead(cl_command_queue queue, cl_mem buffer, ByteBuffer target) {
        cl_event e = new cl_event();
        check(CL.clEnqueueReadBuffer(queue, buffer, CL.CL_FALSE, 0, target.remaining(), Pointer.to(target), 0, null, e),
                "clEnqueueReadBuffer");
        return e;
    }

    @Override
    public void enqueueMapUnmap(cl_command_queue queue, cl_mem buffer, long offset, long size) {
        int[] err = new int[1];
        ByteBuffer mapped = CL.clEnqueueMapBuffer(queue, buffer, false, CL.CL_MAP_READ, offset, size, 0, null, null, err);
        check(err[0], "clEnqueueMapBuffer");
        check(CL.clEnqueueUnmapMemObject(queue, buffer, mapped, 0, null, null), "clEnqueueUnmapMemObject");
    }

    @Override
    public void flush(cl_command_queue queue) {
        check(CL.clFlush(queue), "clFlush");
    }

    @Override
    public int eventStatus(cl_event event) {
        int[] status = new int[1];
        check(CL.clGetEventInfo(event, CL.CL_EVENT_COMMAND_EXECUTION_STATUS, Sizeof.cl_int, Pointer.to(status), null),
                "clGetEventInfo");
        return status[0];
    }

    @Override
    public void waitForEvent(cl_event event) {
        check(CL.clWaitForEvents(1, new cl_event[] {event}), "clWaitForEvents");
    }

    @Override
    public void finish(cl_command_queue queue) {
        check(CL.clFinish(queue), "clFinish");
    }

    @Override
    public void releaseKernel(cl_kernel kernel) {
        check(CL.clReleaseKernel(kernel), "clReleaseKernel");
    }

    @Override
    public void releaseBuffer(cl_mem buffer) {
        check(CL.clReleaseMemObject(buffer), "clReleaseMemObject");
    }

    @Override
    public void releaseEvent(cl_event event) {
        check(CL.clReleaseEvent(event), "clReleaseEvent");
    }
}
