package io.kvchecksum.opencl;

import io.kvchecksum.KvChecksum;
import org.jocl.Pointer;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.LongAdder;

/**
 * An {@link OpenClBackend} whose synchronizing OpenCL calls are counted, for benchmarks and diagnostics: every call
 * named in {@link ClApi#SYNCHRONIZING} ({@code clWaitForEvents}, {@code clFinish}; {@link ClApi} has no blocking
 * transfer) adds one to a {@link LongAdder} the caller owns, from whatever thread makes it. A benchmark reads the
 * adder before and after an operation to report synchronizing calls per operation ({@code kvchecksum-jmh}'s
 * {@code SubmitBench}): a successful {@link KvChecksum#submit} (which enqueues through {@link OpenClBackend#run}) adds
 * 0, {@code get()} adds at least 1.
 *
 * <p>Not for production: use {@link OpenClBackend#open()} or {@code KvChecksums.byName("opencl")}. The wrapper is a
 * plain delegating {@link ClApi} (no reflection), so it adds next to nothing to the host time being measured.
 */
public final class SyncCounting {
    private SyncCounting() {
    }

    /**
     * The backend on the device {@code deviceSpec} names, as {@link OpenClBackend#open(String)}, with every call in
     * {@link ClApi#SYNCHRONIZING} counted in {@code syncCalls}, behind its front (as {@code KvChecksums.byName}
     * returns it; {@code kvchecksum-jmh}'s {@code SyncRecorder} takes it as a {@link KvChecksum}); closing the front
     * closes the backend.
     *
     * @param deviceSpec {@code "platformIndex:deviceIndex"} or a substring of {@code "platform / device"} names;
     *     {@code null} for the configured device ({@value OpenClDevices#DEVICE_PROPERTY} or
     *     {@value OpenClDevices#DEVICE_ENV}), else the default choice, as {@code KvChecksums.byName("opencl")}
     * @throws OpenClException when there is no OpenCL, no such device, or the kernels do not build
     */
    public static KvChecksum open(String deviceSpec, LongAdder syncCalls) {
        return KvChecksum.of(OpenClBackend.open(deviceSpec == null ? OpenClDevices.configuredSpec() : deviceSpec,
                counting(ClApi.jocl(), syncCalls)));
    }

    /** {@code next} with every call in {@link ClApi#SYNCHRONIZING} counted in {@code syncCalls}. */
    public static ClApi counting(ClApi next, LongAdder syncCalls) {
        if (next == null || syncCalls == null) {
            throw new NullPointerException(next == null ? "next" : "syncCalls");
        }
        return new Counting(next, syncCalls);
    }

    /**
     * Delegates every call; {@code waitForEvent} and {@code finish} (the names in {@link ClApi#SYNCHRONIZING}) count
     * first. {@code SyncCountingTest} checks, by reflection, that exactly those do.
     */
    private record Counting(ClApi next, LongAdder syncCalls) implements ClApi {
        @Override
        public cl_mem createBuffer(cl_context context, long flags, long size) {
            return next.createBuffer(context, flags, size);
        }

        @Override
        public cl_mem createHostBuffer(cl_context context, long flags, long size, Pointer host) {
            return next.createHostBuffer(context, flags, size, host);
        }

        @Override
        public void enqueueWrite(cl_command_queue queue, cl_mem buffer, long offset, ByteBuffer source) {
            next.enqueueWrite(queue, buffer, offset, source);
        }

        @Override
        public cl_kernel createKernel(cl_program program, String name) {
            return next.createKernel(program, name);
        }

        @Override
        public void setKernelArg(cl_kernel kernel, int index, long size, Pointer value) {
            next.setKernelArg(kernel, index, size, value);
        }

        @Override
        public void enqueueKernel(cl_command_queue queue, cl_kernel kernel, long[] global, long[] local) {
            next.enqueueKernel(queue, kernel, global, local);
        }

        @Override
        public cl_event enqueueRead(cl_command_queue queue, cl_mem buffer, ByteBuffer target) {
            return next.enqueueRead(queue, buffer, target);
        }

        @Override
        public void enqueueMapUnmap(cl_command_queue queue, cl_mem buffer, long offset, long size) {
            next.enqueueMapUnmap(queue, buffer, offset, size);
        }

        @Override
        public void flush(cl_command_queue queue) {
            next.flush(queue);
        }

        @Override
        public int eventStatus(cl_event event) {
            return next.eventStatus(event);
        }

        @Override
        public void waitForEvent(cl_event event) {
            syncCalls.increment();
            next.waitForEvent(event);
        }

        @Override
        public void finish(cl_command_queue queue) {
            syncCalls.increment();
            next.finish(queue);
        }

        @Override
        public void releaseKernel(cl_kernel kernel) {
            next.releaseKernel(kernel);
        }

        @Override
        public void releaseBuffer(cl_mem buffer) {
            next.releaseBuffer(buffer);
        }

        @Override
        public void releaseEvent(cl_event event) {
            next.releaseEvent(event);
        }
    }
}
