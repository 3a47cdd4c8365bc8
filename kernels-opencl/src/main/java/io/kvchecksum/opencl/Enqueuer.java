package io.kvchecksum.opencl;

import io.kvchecksum.PendingChecksums;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The commands of one operation on the backend's in-order queue, through {@link ClApi} (which offers no blocking
 * transfer): its buffers, kernels, arguments and staged host memory ({@link Op}), the non-blocking read of its results
 * and a flush ({@link #enqueue}), and the handle that waits on that read ({@link Pending}). Nothing here waits for the
 * device but {@code get()}, {@code close()} of an unfinished handle, and the clean-up of an enqueue that failed
 * half-way.
 */
final class Enqueuer {
    /** How the kernels' {@code ulong} and {@code int} arrays lie in host memory. */
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ClApi cl;
    private final cl_context context;
    private final cl_command_queue queue;
    private final cl_program program;
    private final OpenClDevice info;

    Enqueuer(ClApi cl, cl_context context, cl_command_queue queue, cl_program program, OpenClDevice info) {
        this.cl = cl;
        this.context = context;
        this.queue = queue;
        this.program = program;
        this.info = info;
    }

    /** Builds the commands of one operation and returns the buffer holding its {@code n} results. */
    interface Body {
        cl_mem enqueue(Op op);
    }

    /**
     * Runs {@code body}, enqueues the non-blocking read of its {@code n} results and a flush, and returns the handle.
     * On failure the queue is drained (the one place outside {@code get()} that waits: staged host memory may still be
     * read by enqueued writes) and everything is released.
     */
    PendingChecksums enqueue(int n, Body body) {
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
    final class Op {
        final Arena arena = Arena.ofShared();
        private final List<cl_mem> buffers = new ArrayList<>();
        private final List<cl_kernel> kernels = new ArrayList<>();

        cl_mem buffer(long bytes) {
            cl_mem m = cl.createBuffer(context, CL.CL_MEM_READ_WRITE, Math.max(8, bytes));
            buffers.add(m);
            return m;
        }

        cl_mem hostBuffer(long bytes, Pointer host) {
            return hostBuffer(bytes, host, CL.CL_MEM_READ_ONLY);
        }

        /** A buffer over host memory ({@code CL_MEM_USE_HOST_PTR} added to {@code flags}). */
        cl_mem hostBuffer(long bytes, Pointer host, long flags) {
            cl_mem m = cl.createHostBuffer(context, flags | CL.CL_MEM_USE_HOST_PTR, bytes, host);
            buffers.add(m);
            return m;
        }

        /**
         * Makes bytes {@code [offset, offset + size)} of the host memory under {@code m} (a {@link #hostBuffer}) current
         * with what the kernels enqueued before wrote ({@link ClApi#enqueueMapUnmap}, in pieces a Java buffer can span).
         */
        void syncToHost(cl_mem m, long offset, long size) {
            for (long at = 0; at < size; at += 1L << 30) {
                cl.enqueueMapUnmap(queue, m, offset + at, Math.min(1L << 30, size - at));
            }
        }

        /** A non-blocking write of {@code source} at {@code offset} of {@code m}. */
        void write(cl_mem m, long offset, ByteBuffer source) {
            cl.enqueueWrite(queue, m, offset, source);
        }

        cl_mem upload(MemorySegment host) {
            cl_mem m = buffer(host.byteSize());
            write(m, 0, host.asByteBuffer());
            return m;
        }

        /** A new buffer holding {@code values} as little-endian 64-bit words. */
        cl_mem upload(long[] values) {
            MemorySegment s = arena.allocate(Math.max(8, 8L * values.length), 64);
            MemorySegment.copy(values, 0, s, U64, 0, values.length);
            return upload(s);
        }

        /** A new buffer holding {@code values} as little-endian 32-bit words. */
        cl_mem upload(int[] values) {
            MemorySegment s = arena.allocate(Math.max(8, 4L * values.length), 64);
            MemorySegment.copy(values, 0, s, I32, 0, values.length);
            return upload(s);
        }

        cl_kernel kernel(String name) {
            cl_kernel k = cl.createKernel(program, name);
            kernels.add(k);
            return k;
        }

        /** A buffer argument; {@code null}: a NULL {@code __global} pointer. */
        void arg(cl_kernel k, int index, cl_mem m) {
            cl.setKernelArg(k, index, Sizeof.cl_mem, m == null ? null : Pointer.to(m));
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
                    MemorySegment.copy(result, U64, 0, v, 0, n);
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
