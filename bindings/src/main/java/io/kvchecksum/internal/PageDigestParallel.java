package io.kvchecksum.internal;

import io.kvchecksum.Adler32Parts;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.zip.Adler32;

/**
 * SGLang's page digest on several threads: the stream cut into chunks of about {@code chunkBytes} (a chunk may span
 * several runs, a run several chunks), each chunk's Adler-32 computed on its own thread, the values joined in stream
 * order with {@link Adler32Parts#combine}.
 *
 * <p>The per-chunk loop is {@code java.util.zip.Adler32}: HotSpot compiles its {@code update} to an AVX2/AVX-512 stub
 * on x86-64, which ran at 22 GB/s on one core of the development machine with the data in cache (1 MiB chunks), above
 * the 12 GB/s of a plain 8-byte read loop over the same memory; a Vector API prototype (bytes zero-extended to int
 * lanes of prefix sums) reached 20 GB/s in one JVM and under 1 GB/s in others (when the JIT does not vectorize it),
 * so the stub stays (docs/bench-cpu.md).
 */
public final class PageDigestParallel {
    private PageDigestParallel() {
    }

    /** One contiguous piece of a chunk. */
    private record Piece(MemorySegment segment, long offset, long length) {
    }

    /** Adler-32 of the plan's stream, using {@code pool} for chunks when {@code parallel}. */
    public static long digest(PageDigestPlan plan, String backend, ExecutorService pool, boolean parallel, long chunkBytes) {
        if (!plan.isHostResident()) {
            throw new InvalidLayoutException("backend " + backend + " cannot read device memory for the page digest");
        }
        List<List<Piece>> chunks = chunks(plan, parallel ? chunkBytes : Long.MAX_VALUE);
        if (chunks.size() <= 1) {
            return chunks.isEmpty() ? Adler32Parts.EMPTY : adler(chunks.get(0));
        }
        List<Callable<Long>> calls = new ArrayList<>(chunks.size());
        for (List<Piece> c : chunks) {
            calls.add(() -> adler(c));
        }
        long acc = Adler32Parts.EMPTY;
        try {
            List<Future<Long>> done = pool.invokeAll(calls);
            for (int i = 0; i < done.size(); i++) {
                acc = Adler32Parts.combine(acc, done.get(i).get(), length(chunks.get(i)));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while computing the page digest", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        }
        return acc;
    }

    /** Whether every run's memory can be read by a thread other than its owner (not a confined arena's). */
    public static boolean sharable(PageDigestPlan plan, Thread other) {
        for (PageDigestPlan.Run r : plan.runs()) {
            if (r.memory() instanceof KvMemory.Host h && !h.segment().isAccessibleBy(other)) {
                return false;
            }
        }
        return true;
    }

    private static List<List<Piece>> chunks(PageDigestPlan plan, long chunkBytes) {
        List<List<Piece>> out = new ArrayList<>();
        List<Piece> cur = new ArrayList<>();
        long room = chunkBytes;
        for (PageDigestPlan.Run r : plan.runs()) {
            MemorySegment s = ((KvMemory.Host) r.memory()).segment();
            long at = r.offset();
            long left = r.length();
            while (left > 0) {
                long take = Math.min(left, room);
                Piece last = cur.isEmpty() ? null : cur.getLast();
                if (last != null && last.segment() == s && last.offset() + last.length() == at) {
                    // the run continues the previous one in memory (pages in address order): one longer piece
                    cur.set(cur.size() - 1, new Piece(s, last.offset(), last.length() + take));
                } else {
                    cur.add(new Piece(s, at, take));
                }
                at += take;
                left -= take;
                room -= take;
                if (room == 0) {
                    out.add(cur);
                    cur = new ArrayList<>();
                    room = chunkBytes;
                }
            }
        }
        if (!cur.isEmpty()) {
            out.add(cur);
        }
        return out;
    }

    private static long length(List<Piece> chunk) {
        long n = 0;
        for (Piece p : chunk) {
            n += p.length();
        }
        return n;
    }

    private static final long BUFFER = 1L << 30;

    /** Pieces up to this size get their next piece's cache lines touched first (see {@link #adler}). */
    private static final long TOUCH_BELOW = 8 << 10;
    private static volatile long blackhole;

    private static long adler(List<Piece> chunk) {
        Adler32 a = new Adler32();
        long touched = 0;
        for (int i = 0; i < chunk.size(); i++) {
            Piece p = chunk.get(i);
            // Pages in page-table order jump around memory, and a small page ends before the hardware prefetchers
            // have caught on: reading one byte per cache line of the next piece first keeps its loads in flight
            // while this one is summed (as the checksum loop does for its next block).
            if (p.length() <= TOUCH_BELOW && i + 1 < chunk.size()) {
                Piece next = chunk.get(i + 1);
                long end = next.offset() + Math.min(next.length(), TOUCH_BELOW);
                for (long o = next.offset(); o < end; o += 64) {
                    touched += next.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, o);
                }
            }
            // a ByteBuffer holds at most 2^31-1 bytes
            for (long at = 0; at < p.length(); at += BUFFER) {
                a.update(p.segment().asSlice(p.offset() + at, Math.min(BUFFER, p.length() - at)).asByteBuffer());
            }
        }
        if (touched == 42) {
            blackhole = touched;   // the touched bytes must look used, or the JIT drops the loads
        }
        return a.getValue();
    }
}
