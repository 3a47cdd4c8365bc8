package io.kvchecksum.opencl;

import io.kvchecksum.Adler32Parts;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_device_id;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * SGLang's page digest on an OpenCL device: the stream cut into pieces of at most {@value #PIECE} bytes, each
 * piece's Adler-32 computed on the device ({@code page_digest.cl}, a program of its own, built on first use), the
 * pieces joined on the host in stream order ({@link Adler32Parts#combine}). GPUs run {@code page_digest_parts} (a
 * work-group per piece, adjacent items on adjacent bytes, a local-memory reduction); CPU devices run
 * {@code page_digest_serial} (a work-item per piece on 16-byte vectors, no barriers: on PoCL the work-group form
 * ran at 0.06 of the read bound at 256 MiB). The choice is the backend's {@link Tuning#serialDigest}.
 *
 * <p>Memory as for the checksums: host memory in place on a CPU device that shares it (one {@code USE_HOST_PTR}
 * window over the runs' native segments), otherwise the stream packed into one device buffer; device memory must be
 * {@code cl_mem}s registered with {@link OpenClBackend#buffer}. Blocking: waits for its one read.
 */
final class OpenClPageDigest {
    static final String RESOURCE = "/io/kvchecksum/opencl/page_digest.cl";
    /** Bytes per piece: the kernel's sums fit 32 bits up to 4096 (page_digest.cl). */
    static final int PIECE = 4096;
    private static final long MAX_WRITE = 1L << 30;

    private final OpenClBackend backend;
    private final ClApi cl;
    private final cl_program program;
    private final int local;
    private final boolean serialByDefault;

    /** {@code serial}: {@code page_digest_serial} by default, else {@code page_digest_parts} ({@link Tuning#serialDigest}). */
    OpenClPageDigest(OpenClBackend backend, ClApi cl, boolean serial) {
        this.backend = backend;
        this.cl = cl;
        cl_device_id device = backend.deviceId();
        program = ClPrograms.build(backend.context(), device, backend.device(), source(), "");
        serialByDefault = serial;
        cl_kernel k = JoclApi.INSTANCE.createKernel(program, "page_digest_parts");
        try {
            long[] v = new long[1];
            JoclApi.check(CL.clGetKernelWorkGroupInfo(k, device, CL.CL_KERNEL_WORK_GROUP_SIZE, Sizeof.size_t,
                    Pointer.to(v), null), "clGetKernelWorkGroupInfo");
            local = Integer.highestOneBit((int) Math.max(1, Math.min(64, v[0])));
        } finally {
            JoclApi.INSTANCE.releaseKernel(k);
        }
    }

    static String source() {
        return ClPrograms.resourceText(RESOURCE);
    }

    void release() {
        CL.clReleaseProgram(program);
    }

    /** One buffer the kernel reads and the pieces in it, in stream order from global piece {@code base}. */
    private record Target(cl_mem mem, int base, List<long[]> pieces) {
    }

    long digest(PageDigestPlan plan) {
        return digest(plan, serialByDefault);
    }

    /** With the kernel chosen: {@code serial} a work-item per piece, else a work-group per piece. */
    long digest(PageDigestPlan plan, boolean serial) {
        List<Long> lengths = new ArrayList<>();
        List<cl_mem> created = new ArrayList<>();
        List<cl_kernel> kernels = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            List<Target> targets = targets(plan, arena, created);
            int total = 0;
            for (Target t : targets) {
                total += t.pieces.size();
                for (long[] p : t.pieces) {
                    lengths.add(p[1]);
                }
            }
            if (total == 0) {
                return Adler32Parts.EMPTY;
            }
            cl_mem out = cl.createBuffer(backend.context(), CL.CL_MEM_READ_WRITE, 4L * total);
            created.add(out);
            for (Target t : targets) {
                int n = t.pieces.size();
                MemorySegment off = arena.allocate(8L * n, 64);
                MemorySegment len = arena.allocate(4L * n, 64);
                for (int i = 0; i < n; i++) {
                    off.setAtIndex(Enqueuer.U64, i, t.pieces.get(i)[0]);
                    len.setAtIndex(Enqueuer.I32, i, (int) t.pieces.get(i)[1]);
                }
                cl_mem offBuf = upload(off, created);
                cl_mem lenBuf = upload(len, created);
                cl_kernel k = cl.createKernel(program, serial ? "page_digest_serial" : "page_digest_parts");
                kernels.add(k);
                cl.setKernelArg(k, 0, Sizeof.cl_mem, Pointer.to(t.mem));
                cl.setKernelArg(k, 1, Sizeof.cl_mem, Pointer.to(offBuf));
                cl.setKernelArg(k, 2, Sizeof.cl_mem, Pointer.to(lenBuf));
                cl.setKernelArg(k, 3, Sizeof.cl_uint, Pointer.to(new int[] {t.base}));
                if (serial) {
                    cl.setKernelArg(k, 4, Sizeof.cl_uint, Pointer.to(new int[] {n}));
                    cl.setKernelArg(k, 5, Sizeof.cl_mem, Pointer.to(out));
                    cl.enqueueKernel(backend.queueHandle(), k, new long[] {n}, null);
                } else {
                    cl.setKernelArg(k, 4, Sizeof.cl_mem, Pointer.to(out));
                    cl.setKernelArg(k, 5, 4L * local, null);
                    cl.setKernelArg(k, 6, 4L * local, null);
                    cl.enqueueKernel(backend.queueHandle(), k, new long[] {(long) local * n}, new long[] {local});
                }
            }
            MemorySegment result = arena.allocate(4L * total, 64);
            cl_event done = cl.enqueueRead(backend.queueHandle(), out, result.asByteBuffer());
            try {
                cl.flush(backend.queueHandle());
                cl.waitForEvent(done);
                int status = cl.eventStatus(done);
                if (status != CL.CL_COMPLETE) {
                    throw new OpenClException("the page digest on " + backend.device() + " ended with "
                            + CL.stringFor_errorCode(status) + " (" + status + ")", status, true);
                }
            } finally {
                cl.releaseEvent(done);
            }
            long acc = Adler32Parts.EMPTY;
            for (int i = 0; i < total; i++) {
                acc = Adler32Parts.combine(acc, Integer.toUnsignedLong(result.getAtIndex(Enqueuer.I32, i)), lengths.get(i));
            }
            return acc;
        } catch (RuntimeException e) {
            cl.finish(backend.queueHandle());
            throw e;
        } finally {
            for (cl_kernel k : kernels) {
                cl.releaseKernel(k);
            }
            for (cl_mem m : created) {
                cl.releaseBuffer(m);
            }
        }
    }

    private cl_mem upload(MemorySegment host, List<cl_mem> created) {
        cl_mem m = cl.createBuffer(backend.context(), CL.CL_MEM_READ_ONLY, Math.max(8, host.byteSize()));
        created.add(m);
        cl.enqueueWrite(backend.queueHandle(), m, 0, host.asByteBuffer());
        return m;
    }

    private static void cut(List<long[]> pieces, long at, long length) {
        for (long o = 0; o < length; o += PIECE) {
            pieces.add(new long[] {at + o, Math.min(PIECE, length - o)});
        }
    }

    /** Where the kernel reads each run: a registered cl_mem, a window over host memory, or a packed copy. */
    private List<Target> targets(PageDigestPlan plan, Arena arena, List<cl_mem> created) {
        List<PageDigestPlan.Run> runs = plan.runs();
        boolean device = false;
        boolean host = false;
        for (PageDigestPlan.Run r : runs) {
            device |= r.memory() instanceof KvMemory.Device;
            host |= r.memory() instanceof KvMemory.Host;
        }
        if (device && host) {
            throw new InvalidLayoutException("the page digest's runs mix host and device memory; opencl reads one kind");
        }
        if (device) {
            // one launch per registered cl_mem, each over its runs' pieces, keeping global stream order
            List<Target> out = new ArrayList<>();
            Map<Long, cl_mem> seen = new LinkedHashMap<>();
            int base = 0;
            cl_mem cur = null;
            List<long[]> pieces = null;
            for (PageDigestPlan.Run r : runs) {
                KvMemory.Device d = (KvMemory.Device) r.memory();
                cl_mem m = seen.computeIfAbsent(d.address(), a -> backend.registered().lookup(d, "a page-digest run"));
                if (m != cur) {
                    if (pieces != null && !pieces.isEmpty()) {
                        out.add(new Target(cur, base, pieces));
                        base += pieces.size();
                    }
                    cur = m;
                    pieces = new ArrayList<>();
                }
                cut(pieces, r.offset(), r.length());
            }
            if (pieces != null && !pieces.isEmpty()) {
                out.add(new Target(cur, base, pieces));
            }
            return out;
        }
        if (plan.totalBytes() == 0) {
            return List.of();
        }
        Target window = backend.memory().zeroCopy() ? window(runs, created) : null;
        if (window != null) {
            return List.of(window);
        }
        if (plan.totalBytes() > backend.memory().maxAllocBytes()) {
            throw new InvalidLayoutException("the page digest's stream of " + plan.totalBytes() + " bytes is more than one "
                    + "buffer of " + backend.device() + " may hold (" + backend.memory().maxAllocBytes() + " bytes)");
        }
        MemorySegment staged = arena.allocate(plan.totalBytes(), 64);
        List<long[]> pieces = new ArrayList<>();
        long at = 0;
        for (PageDigestPlan.Run r : runs) {
            MemorySegment.copy(((KvMemory.Host) r.memory()).segment(), r.offset(), staged, at, r.length());
            cut(pieces, at, r.length());
            at += r.length();
        }
        cl_mem packed = cl.createBuffer(backend.context(), CL.CL_MEM_READ_ONLY, plan.totalBytes());
        created.add(packed);
        for (long off = 0; off < staged.byteSize(); off += MAX_WRITE) {
            cl.enqueueWrite(backend.queueHandle(), packed, off,
                    staged.asSlice(off, Math.min(MAX_WRITE, staged.byteSize() - off)).asByteBuffer());
        }
        return List.of(new Target(packed, 0, pieces));
    }

    /**
     * A {@code USE_HOST_PTR} buffer from the lowest run's address (rounded down to the device's alignment: an
     * address, never read) to the end of the highest, if every run is native memory and the span fits one buffer.
     */
    private Target window(List<PageDigestPlan.Run> runs, List<cl_mem> created) {
        long lo = Long.MAX_VALUE;
        long hi = 0;
        PageDigestPlan.Run low = null;
        for (PageDigestPlan.Run r : runs) {
            MemorySegment s = ((KvMemory.Host) r.memory()).segment();
            if (!s.isNative()) {
                return null;
            }
            if (r.length() == 0) {
                continue;
            }
            long a = s.address() + r.offset();
            if (a < lo) {
                lo = a;
                low = r;
            }
            hi = Math.max(hi, a + r.length());
        }
        if (low == null) {
            return null;
        }
        long start = lo & -backend.memory().windowAlignment();
        if (hi - start > backend.memory().maxAllocBytes()) {
            return null;
        }
        List<long[]> pieces = new ArrayList<>();
        for (PageDigestPlan.Run r : runs) {
            cut(pieces, ((KvMemory.Host) r.memory()).segment().address() + r.offset() - start, r.length());
        }
        MemorySegment ls = ((KvMemory.Host) low.memory()).segment();
        Pointer host = Pointer.to(ls.asSlice(low.offset(), Math.min(low.length(), MAX_WRITE)).asByteBuffer())
                .withByteOffset(-(lo - start));
        cl_mem m = cl.createHostBuffer(backend.context(), CL.CL_MEM_READ_ONLY | CL.CL_MEM_USE_HOST_PTR, hi - start, host);
        created.add(m);
        return new Target(m, 0, pieces);
    }
}
