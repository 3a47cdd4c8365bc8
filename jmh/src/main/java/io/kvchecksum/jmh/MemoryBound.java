package io.kvchecksum.jmh;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

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
 */
public final class MemoryBound implements AutoCloseable {
    /** As {@code FastCpuBackend.PARALLEL_BYTES}: a hand-off to another thread costs more than a small read. */
    public static final long PARALLEL_BYTES = 4L << 20;
    /** As {@code FastCpuBackend.TASK_BYTES}. */
    static final long TASK_BYTES = 1L << 20;
    /** The copy destination is at most this large; beyond, copies wrap around it (still far beyond the LLC). */
    static final long MAX_DESTINATION = 1L << 30;

    private static final VectorSpecies<Long> SPECIES = LongVector.SPECIES_PREFERRED;

    /** A byte range of a source segment and where its copy goes in the destination. */
    private record Part(MemorySegment src, long offset, long length, long dstOffset) {
    }

    private final List<List<Part>> tasks;
    private final boolean parallel;
    private final ForkJoinPool pool;
    private final Arena arena;
    private final MemorySegment dst;

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
        this.arena = Arena.ofShared();
        this.dst = arena.allocate(Math.max(8, ring), 64);
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

    /** Copies every byte of the segments into the destination; returns a word of it so the copy is observable. */
    public long copy() {
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
        arena.close();
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

    /**
     * Four independent vector accumulators, so the loop is limited by loads, not by the latency of one add chain:
     * the fastest plain read this JVM can express, which is what makes it a bound.
     */
    static long readPart(MemorySegment s, long offset, long length) {
        int lanes = SPECIES.length();
        long step = 4L * lanes * 8;
        long end = offset + length;
        long o = offset;
        LongVector a0 = LongVector.zero(SPECIES);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (; o + step <= end; o += step) {
            a0 = a0.add(LongVector.fromMemorySegment(SPECIES, s, o, le));
            a1 = a1.add(LongVector.fromMemorySegment(SPECIES, s, o + lanes * 8L, le));
            a2 = a2.add(LongVector.fromMemorySegment(SPECIES, s, o + lanes * 16L, le));
            a3 = a3.add(LongVector.fromMemorySegment(SPECIES, s, o + lanes * 24L, le));
        }
        long sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (; o + 8 <= end; o += 8) {
            sum += s.get(WORD, o);
        }
        return sum;
    }
}
