package io.kvchecksum.opencl;

import io.kvchecksum.Adler32Parts;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.Pending;
import io.kvchecksum.PendingChecksums;
import org.jocl.CL;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
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
 * <p>Memory as for the checksums ({@link MemoryPlacement#hostBuffer}): host memory in place on a CPU device that
 * shares it (one {@code USE_HOST_PTR} window over the runs' native segments), otherwise the stream packed into one
 * device buffer; device memory must be {@code cl_mem}s registered with {@link OpenClBackend#buffer}. Enqueued as the
 * checksums are ({@link Enqueuer}); {@link #digest} waits for its one read, {@link #start} returns without waiting.
 */
final class OpenClPageDigest {
    static final String RESOURCE = "/io/kvchecksum/opencl/page_digest.cl";
    /** Bytes per piece: the kernel's sums fit 32 bits up to 4096 (page_digest.cl). */
    static final int PIECE = 4096;

    private final cl_program program;
    private final Enqueuer enqueuer;
    private final MemoryPlacement memory;
    private final RegisteredBuffers registered;
    private final int local;
    private final boolean serialByDefault;

    /** {@code serial}: {@code page_digest_serial} by default, else {@code page_digest_parts} ({@link Tuning#serialDigest}). */
    OpenClPageDigest(ClApi cl, cl_context context, cl_command_queue queue, cl_device_id device, OpenClDevice info,
            MemoryPlacement memory, RegisteredBuffers registered, boolean serial) {
        program = ClPrograms.build(context, device, info, ClPrograms.resourceText(RESOURCE), "");
        enqueuer = new Enqueuer(cl, context, queue, program, info);
        this.memory = memory;
        this.registered = registered;
        serialByDefault = serial;
        local = Integer.highestOneBit((int) Math.max(1, Math.min(64,
                ClPrograms.workGroupSize(program, device, "page_digest_parts"))));
    }

    void release() {
        CL.clReleaseProgram(program);
    }

    /**
     * One buffer the kernel reads ({@code null}: the host spans' buffer, {@code bytes} long, a window or a packed copy)
     * and the {offset, length} of its pieces in it, in stream order.
     */
    private record Target(cl_mem mem, List<Descriptors.Span> spans, long bytes, boolean window, List<long[]> pieces) {
    }

    long digest(PageDigestPlan plan) {
        return digest(plan, serialByDefault);
    }

    /** With the kernel chosen: {@code serial} a work-item per piece, else a work-group per piece. */
    long digest(PageDigestPlan plan, boolean serial) {
        try (Pending<Long> p = start(plan, serial)) {
            return p.get();
        }
    }

    /** Enqueues the digest's pieces on the backend's queue without waiting; they are joined when the digest is read. */
    Pending<Long> start(PageDigestPlan plan) {
        return start(plan, serialByDefault);
    }

    private Pending<Long> start(PageDigestPlan plan, boolean serial) {
        List<Target> targets = targets(plan);
        int total = 0;
        for (Target t : targets) {
            total += t.pieces().size();
        }
        if (total == 0) {
            return Pending.completed(Adler32Parts.EMPTY);
        }
        // The kernels write a uint per piece; the results are read two to a ulong (little-endian: piece 2i low).
        int words = Math.ceilDiv(total, 2);
        PendingChecksums pending = enqueuer.enqueue(words, op -> {
            cl_mem out = op.buffer(8L * words);
            int base = 0;
            for (Target t : targets) {
                cl_mem data = t.mem() != null ? t.mem()
                        : memory.hostBuffer(op, t.spans(), t.bytes(), t.window(), "the page digest's stream");
                launch(op, serial, data, t.pieces(), base, out);
                base += t.pieces().size();
            }
            return out;
        });
        return Pending.of(pending, parts -> {
            long acc = Adler32Parts.EMPTY;
            int i = 0;
            for (PageDigestPlan.Run r : plan.runs()) {
                for (long o = 0; o < r.length(); o += PIECE, i++) {
                    acc = Adler32Parts.combine(acc, parts[i >> 1] >>> ((i & 1) * 32) & 0xFFFF_FFFFL, Math.min(PIECE, r.length() - o));
                }
            }
            return acc;
        });
    }

    private void launch(Enqueuer.Op op, boolean serial, cl_mem data, List<long[]> pieces, int base, cl_mem out) {
        int n = pieces.size();
        long[] off = new long[n];
        int[] len = new int[n];
        for (int i = 0; i < n; i++) {
            off[i] = pieces.get(i)[0];
            len[i] = (int) pieces.get(i)[1];
        }
        cl_kernel k = op.kernel(serial ? "page_digest_serial" : "page_digest_parts");
        op.arg(k, 0, data);
        op.arg(k, 1, op.upload(off));
        op.arg(k, 2, op.upload(len));
        op.arg(k, 3, base);
        if (serial) {
            op.arg(k, 4, n);
            op.arg(k, 5, out);
            op.launch(k, new long[] {n}, null);
        } else {
            op.arg(k, 4, out);
            op.local(k, 5, 4L * local);
            op.local(k, 6, 4L * local);
            op.launch(k, new long[] {(long) local * n}, new long[] {local});
        }
    }

    private static void cut(List<long[]> pieces, long at, long length) {
        for (long o = 0; o < length; o += PIECE) {
            pieces.add(new long[] {at + o, Math.min(PIECE, length - o)});
        }
    }

    /**
     * Where the kernel reads the runs that have bytes: one target per registered cl_mem (a new one each time the
     * stream moves to another), or one over the host runs.
     */
    private List<Target> targets(PageDigestPlan plan) {
        List<PageDigestPlan.Run> runs = plan.runs();
        long device = runs.stream().filter(r -> r.memory() instanceof KvMemory.Device).count();
        if (device > 0 && device < runs.size()) {
            throw new InvalidLayoutException("the page digest's runs mix host and device memory; opencl reads one kind");
        }
        List<Target> out = new ArrayList<>();
        if (device > 0) {
            Map<Long, cl_mem> seen = new HashMap<>();
            for (PageDigestPlan.Run r : runs) {
                KvMemory.Device d = (KvMemory.Device) r.memory();
                cl_mem m = seen.computeIfAbsent(d.address(), a -> registered.lookup(d, "a page-digest run's " + d));
                if (r.length() == 0) {
                    continue;
                }
                if (out.isEmpty() || out.getLast().mem() != m) {
                    out.add(new Target(m, null, 0, false, new ArrayList<>()));
                }
                cut(out.getLast().pieces(), r.offset(), r.length());
            }
            return out;
        }
        // In place where every run is native and one window spans them all, else packed one after another.
        boolean isNative = true;
        long lo = Long.MAX_VALUE;
        long hi = 0;
        for (PageDigestPlan.Run r : runs) {
            MemorySegment s = ((KvMemory.Host) r.memory()).segment();
            isNative &= s.isNative();
            if (r.length() > 0) {
                lo = Math.min(lo, s.address() + r.offset());
                hi = Math.max(hi, s.address() + r.offset() + r.length());
            }
        }
        long start = isNative && lo < hi ? memory.windowStart(lo, hi) : -1;
        List<Descriptors.Span> spans = new ArrayList<>();
        List<long[]> pieces = new ArrayList<>();
        long at = 0;
        for (PageDigestPlan.Run r : runs) {
            MemorySegment s = ((KvMemory.Host) r.memory()).segment();
            long offset = start >= 0 ? s.address() + r.offset() - start : at;
            if (r.length() > 0) {
                spans.add(new Descriptors.Span(s, r.offset(), r.offset() + r.length(), offset));
                cut(pieces, offset, r.length());
                at += r.length();
            }
        }
        return List.of(new Target(null, spans, start >= 0 ? hi - start : at, start >= 0, pieces));
    }
}
