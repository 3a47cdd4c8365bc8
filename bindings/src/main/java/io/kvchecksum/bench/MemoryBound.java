package io.kvchecksum.bench;

import io.kvchecksum.internal.FastCpuBackend;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;

/**
 * The two bounds a checksum is judged against, over a list of segments: a plain read of every byte (the wrapping sum
 * of its 64-bit words) and a copy of every byte.
 *
 * <p>They split work like the CPU backend does, so that "the same threads" holds: requests under
 * {@link #PARALLEL_BYTES} run on the calling thread, larger ones in tasks of about {@code max(1 MiB, total/(4T))}
 * bytes on a pool of {@code T} threads. A checksum cannot beat the read bound on the same bytes; a ratio near 1 means
 * the checksum costs no more than reading the KV once.
 *
 * <p>The one implementation of the bounds: the JMH suite and the command line's {@code bench} both measure against
 * it. It reads with the Vector API where the JVM has {@code jdk.incubator.vector} (as the CPU backend does), else with
 * a scalar loop of four independent sums. Not part of the checksum API: a measuring tool.
 */
public final class MemoryBound implements AutoCloseable {
    /** The CPU backend's threshold: a hand-off to another thread costs more than a small read. */
    public static final long PARALLEL_BYTES = FastCpuBackend.PARALLEL_BYTES;
    /** The CPU backend's smallest task. */
    static final long TASK_BYTES = FastCpuBackend.TASK_BYTES;
    /** The copy destination is at most this large; beyond, copies wrap around it (still far beyond the LLC). */
    static final long MAX_DESTINATION = 1L << 30;

    private static final boolean VECTOR = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    /** A byte range of a source segment and where its copy goes in the destination. */
    private record Part(MemorySegment src, long offset, long length, long dstOffset) {
    }

    private final List<List<Part>> tasks;
    private final boolean parallel;
    private final ForkJoinPool pool;
    private final long ring;
    private Arena arena;
    private MemorySegment dst;

    /** Bounds over {@code segments} read whole, with at most {@code threads} threads. */
    public MemoryBound(List<MemorySegment> segments, int threads) {
        long total = 0;
        for (MemorySegment s : segments) {
            total += s.byteSize();
        }
        this.parallel = threads > 1 && total >= PARALLEL_BYTES;
        long target = parallel ? Math.max(TASK_BYTES, total / (4L * threads)) : Long.MAX_VALUE;
        long ring = Math.min(total, MAX_DESTINATION);
        List<List<Part>> ts = new ArrayList<>();
        List<Part> current = new ArrayList<>();
        long inTask = 0;
        long written = 0;
        for (MemorySegment s : segments) {
            for (long off = 0; off < s.byteSize(); ) {
                long len = Math.min(s.byteSize() - off, target - inTask);
                long d = written % ring;
                if (d + len > ring) {
                    d = 0;
                }
                current.add(new Part(s, off, len, d));
                off += len;
                inTask += len;
                written += len;
                if (inTask == target) {
                    ts.add(current);
                    current = new ArrayList<>();
                    inTask = 0;
                }
            }
        }
        if (!current.isEmpty()) {
            ts.add(current);
        }
        this.tasks = List.copyOf(ts);
        this.pool = parallel ? new ForkJoinPool(threads) : null;
        this.ring = ring;
    }

    /** Whether reads and copies of this size are split over threads. */
    public boolean parallel() {
        return parallel;
    }

    /** The wrapping sum of every little-endian 64-bit word of the segments. */
    public long read() {
        if (!parallel) {
            long s = 0;
            for (List<Part> t : tasks) {
                s += readTask(t);
            }
            return s;
        }
        long s = 0;
        for (long v : runAll(MemoryBound::readTask)) {
            s += v;
        }
        return s;
    }

    /**
     * Copies every byte of the segments into the destination; returns a word of it so the copy is observable. The
     * destination (up to {@value #MAX_DESTINATION} bytes) is allocated on the first call.
     */
    public long copy() {
        destination();
        if (!parallel) {
            for (List<Part> t : tasks) {
                copyTask(t);
            }
        } else {
            runAll(this::copyTask);
        }
        return dst.get(ValueLayout.JAVA_LONG, 0);
    }

    /** The read bound computed one word at a time, for checking {@link #read()}. */
    public long readScalar() {
        long s = 0;
        for (List<Part> t : tasks) {
            for (Part p : t) {
                for (long o = 0; o < p.length; o += 8) {
                    s += p.src.get(WORD, p.offset + o);
                }
            }
        }
        return s;
    }

    /** Copies part by part, checking each part right after copying it (later parts may overwrite it). */
    public void verifyCopy() {
        destination();
        for (List<Part> t : tasks) {
            for (Part p : t) {
                MemorySegment.copy(p.src, p.offset, dst, p.dstOffset, p.length);
                long m = p.src.asSlice(p.offset, p.length).mismatch(dst.asSlice(p.dstOffset, p.length));
                if (m >= 0) {
                    throw new IllegalStateException("copy bound: byte " + m + " of a part differs after copying");
                }
            }
        }
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdown();
        }
        if (arena != null) {
            arena.close();
        }
    }

    private synchronized void destination() {
        if (dst == null) {
            arena = Arena.ofShared();
            dst = arena.allocate(Math.max(8, ring), 64);
        }
    }

    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private interface TaskBody {
        long run(List<Part> task);
    }

    private long[] runAll(TaskBody body) {
        List<Callable<Long>> calls = new ArrayList<>(tasks.size());
        for (List<Part> t : tasks) {
            calls.add(() -> body.run(t));
        }
        long[] out = new long[tasks.size()];
        try {
            int i = 0;
            for (Future<Long> f : pool.invokeAll(calls)) {
                out[i++] = f.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        return out;
    }

    private long copyTask(List<Part> task) {
        for (Part p : task) {
            MemorySegment.copy(p.src, p.offset, dst, p.dstOffset, p.length);
        }
        return 0;
    }

    private static long readTask(List<Part> task) {
        long s = 0;
        for (Part p : task) {
            s += readPart(p.src, p.offset, p.length);
        }
        return s;
    }

    /** The wrapping sum of the little-endian words of {@code s[offset, offset+length)}; a tail of under 8 bytes is not read. */
    public static long readPart(MemorySegment s, long offset, long length) {
        return VECTOR ? VectorRead.readPart(s, offset, length) : scalarPart(s, offset, length);
    }

    /** Four independent sums, so the loop waits on loads, not on one chain of adds. */
    static long scalarPart(MemorySegment s, long offset, long length) {
        long a = 0;
        long b = 0;
        long c = 0;
        long d = 0;
        long end = offset + length;
        long o = offset;
        for (; o + 32 <= end; o += 32) {
            a += s.get(WORD, o);
            b += s.get(WORD, o + 8);
            c += s.get(WORD, o + 16);
            d += s.get(WORD, o + 24);
        }
        for (; o + 8 <= end; o += 8) {
            a += s.get(WORD, o);
        }
        return a + b + c + d;
    }
}
