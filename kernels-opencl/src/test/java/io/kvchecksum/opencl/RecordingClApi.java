package io.kvchecksum.opencl;

import org.jocl.Pointer;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Passes every call on and records its name, per thread, between {@link #start()} and {@link #stop()}, and the names
 * of the kernels it launches ({@link #launched()}).
 */
final class RecordingClApi implements ClApi {
    private final ClApi next;
    private final ThreadLocal<List<String>> calls = new ThreadLocal<>();
    private final ThreadLocal<List<String>> launched = new ThreadLocal<>();
    private final Map<cl_kernel, String> kernelNames = Collections.synchronizedMap(new IdentityHashMap<>());

    RecordingClApi(ClApi next) {
        this.next = next;
    }

    void start() {
        calls.set(new ArrayList<>());
        launched.set(new ArrayList<>());
    }

    List<String> stop() {
        List<String> c = calls.get();
        calls.remove();
        launched.remove();
        return c;
    }

    /** {@return the names of the kernels enqueued on this thread since {@link #start()}, in order} */
    List<String> launched() {
        return List.copyOf(launched.get());
    }

    private void record(String name) {
        List<String> c = calls.get();
        if (c != null) {
            c.add(name);
        }
    }

    @Override
    public cl_mem createBuffer(cl_context context, long flags, long size) {
        record("createBuffer");
        return next.createBuffer(context, flags, size);
    }

    @Override
    public cl_mem createHostBuffer(cl_context context, long flags, long size, Pointer host) {
        record("createHostBuffer");
        return next.createHostBuffer(context, flags, size, host);
    }

    @Override
    public void enqueueWrite(cl_command_queue queue, cl_mem buffer, long offset, ByteBuffer source) {
        record("enqueueWrite");
        next.enqueueWrite(queue, buffer, offset, source);
    }

    @Override
    public cl_kernel createKernel(cl_program program, String name) {
        record("createKernel");
        cl_kernel k = next.createKernel(program, name);
        kernelNames.put(k, name);
        return k;
    }

    @Override
    public void setKernelArg(cl_kernel kernel, int index, long size, Pointer value) {
        record("setKernelArg");
        next.setKernelArg(kernel, index, size, value);
    }

    @Override
    public void enqueueKernel(cl_command_queue queue, cl_kernel kernel, long[] global, long[] local) {
        record("enqueueKernel");
        List<String> l = launched.get();
        if (l != null) {
            l.add(kernelNames.get(kernel));
        }
        next.enqueueKernel(queue, kernel, global, local);
    }

    @Override
    public cl_event enqueueRead(cl_command_queue queue, cl_mem buffer, ByteBuffer target) {
        record("enqueueRead");
        return next.enqueueRead(queue, buffer, target);
    }

    @Override
    public void enqueueMapUnmap(cl_command_queue queue, cl_mem buffer, long offset, long size) {
        record("enqueueMapUnmap");
        next.enqueueMapUnmap(queue, buffer, offset, size);
    }

    @Override
    public void flush(cl_command_queue queue) {
        record("flush");
        next.flush(queue);
    }

    @Override
    public int eventStatus(cl_event event) {
        record("eventStatus");
        return next.eventStatus(event);
    }

    @Override
    public void waitForEvent(cl_event event) {
        record("waitForEvent");
        next.waitForEvent(event);
    }

    @Override
    public void finish(cl_command_queue queue) {
        record("finish");
        next.finish(queue);
    }

    @Override
    public void releaseKernel(cl_kernel kernel) {
        record("releaseKernel");
        kernelNames.remove(kernel);
        next.releaseKernel(kernel);
    }

    @Override
    public void releaseBuffer(cl_mem buffer) {
        record("releaseBuffer");
        next.releaseBuffer(buffer);
    }

    @Override
    public void releaseEvent(cl_event event) {
        record("releaseEvent");
        next.releaseEvent(event);
    }
}
