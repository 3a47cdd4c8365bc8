package io.kvchecksum.internal;

import io.kvchecksum.Adler32Parts;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.zip.Adler32;

/**
 * SGLang's page digest on several threads: the stream cut into chunks of about {@code chunkBytes} (a chunk may span
 * several runs, a run several chunks), each chunk's Adler-32 computed on its own thread, the values joined in stream
 * order with {@link Adler32Parts#combine}.
 *
 * <p>The per-chunk loop: {@link VectorAdler32} where the JVM has the Vector API module (at every size and width),
 * otherwise {@code java.util.zip.Adler32}, one call per piece (HotSpot's AVX2/AVX-512 stub). The vector loop keeps its
 * running sums in registers from one page to the next, where the stub pays a call per page, spends five vector
 * operations per vector and reads two pages of whole blocks in lockstep. At SGLang's default page size 1 (2 KiB
 * pages), against the faster plain read of the same pages in the same order (read bound v5), interleaved on a quiet
 * machine: in cache, one thread, 0.66 at 512 bits (the stub 0.19) and 0.37 at 256 bits; at 256 MiB on both cores
 * 0.66 at 512 bits with two pages at a time (the stub 0.40) and 0.50 at 256 bits, where under load the stub had read
 * 0.39-0.46 against the vector loop's 0.58-0.59: why the stub no longer takes the large streams below 512 bits
 * (docs/bench-cpu.md, "SGLang's page digest"). From {@link #FOUR_STREAMS_BYTES} up (from memory) at 512 bits the vector
 * loop reads small pages four at a time and long pieces as four stretches, more lines in flight: 5-20 % faster than two
 * at a time at 256 MiB, slower in cache and L3 (docs/bench-cpu.md, "From memory"); quiet, 0.67-0.74 of the bound
 * (medians 0.73-0.76) against two at a time's 0.60-0.69 in the same runs. The vector loop is slow until C2 compiles it (its
 * first second in a fresh JVM at megabytes per second), a cost an engine pays once.
 *
 * <p>A chunk is a position in the plan's run list and a byte count, not a list of its pieces: at SGLang's default page
 * size 1 a stream of 256 MiB is 131072 runs of 2 KiB, and building a piece object for each on every call took a large
 * share of the digest's time (docs/bench-cpu.md, "SGLang's page digest").
 */
public final class PageDigestParallel {
    private PageDigestParallel() {
    }

    /** Whether {@link VectorAdler32} runs in this JVM: the module is there and the width is one it was sized for. */
    static final boolean VECTOR = vectorUsable();

    private static boolean vectorUsable() {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            return false;
        }
        try {
            return VectorAdler32.usable();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** Where a chunk starts: run {@code run} of the plan, {@code offset} bytes into it. */
    private record Start(int run, long offset) {
    }

    /** Adler-32 of the plan's stream, using {@code pool} for chunks when {@code parallel}. */
    public static long digest(PageDigestPlan plan, String backend, ExecutorService pool, boolean parallel, long chunkBytes) {
        return digest(plan, backend, pool, parallel, chunkBytes, VECTOR);
    }

    /** {@link #digest(PageDigestPlan, String, ExecutorService, boolean, long)} with the loop chosen: tests run both. */
    static long digest(PageDigestPlan plan, String backend, ExecutorService pool, boolean parallel, long chunkBytes,
            boolean vector) {
        return digest(plan, backend, pool, parallel, chunkBytes, vector,
                FOUR_STREAMS && plan.totalBytes() >= FOUR_STREAMS_BYTES);
    }

    /**
     * Whether the vector loop reads large streams four at a time: at 512 bits, where it was 5-12 % ahead of two at a
     * time at 256 MiB in every round; at 256 bits (16 AVX2 registers for its sixteen sums) ahead only under load and
     * level at load 2 (docs/bench-cpu.md, "From memory").
     */
    static final boolean FOUR_STREAMS = VECTOR && VectorAdler32.vectorBytes() >= 64;

    /**
     * From this many bytes of stream the vector loop reads as from memory (four streams in lockstep): twice the 32 MiB
     * L3 of the machine it was measured on, where at 16 MiB (L3) the four streams read 16 % slower than two, at 32 MiB
     * alike and at 64 and 256 MiB 5-12 % faster (docs/bench-cpu.md, "From memory").
     */
    static final long FOUR_STREAMS_BYTES = 64L << 20;

    /**
     * {@link #digest(PageDigestPlan, String, ExecutorService, boolean, long, boolean)} with the vector loop's reading
     * chosen: {@code fromMemory}, small pages four at a time (the backend: streams of {@link #FOUR_STREAMS_BYTES}
     * and more where {@link #FOUR_STREAMS}); tests run both.
     */
    static long digest(PageDigestPlan plan, String backend, ExecutorService pool, boolean parallel, long chunkBytes,
            boolean vector, boolean fromMemory) {
        if (!plan.isHostResident()) {
            throw new InvalidLayoutException("backend " + backend + " cannot read device memory for the page digest");
        }
        List<PageDigestPlan.Run> runs = plan.runs();
        long total = plan.totalBytes();
        if (!parallel || total <= chunkBytes) {
            return total == 0 ? Adler32Parts.EMPTY : adler(runs, new Start(0, 0), total, vector, fromMemory);
        }
        List<Start> starts = starts(runs, chunkBytes);
        List<Callable<Long>> calls = new ArrayList<>(starts.size());
        for (int i = 0; i < starts.size(); i++) {
            Start s = starts.get(i);
            long length = Math.min(chunkBytes, total - i * chunkBytes);
            calls.add(() -> adler(runs, s, length, vector, fromMemory));
        }
        long acc = Adler32Parts.EMPTY;
        List<Long> parts = PoolCalls.invokeAll(pool, calls, "computing the page digest");
        for (int i = 0; i < parts.size(); i++) {
            acc = Adler32Parts.combine(acc, parts.get(i), Math.min(chunkBytes, total - i * chunkBytes));
        }
        return acc;
    }

    /** Whether every run's memory can be read by a thread other than its owner (not a confined arena's). */
    public static boolean sharable(PageDigestPlan plan, Thread other) {
        KvMemory last = null;   // pages of one buffer follow each other: its segment is asked once per change
        for (PageDigestPlan.Run r : plan.runs()) {
            if (r.memory() != last && r.memory() instanceof KvMemory.Host h && !h.segment().isAccessibleBy(other)) {
                return false;
            }
            last = r.memory();
        }
        return true;
    }

    /** Where each chunk of {@code chunkBytes} of the stream starts (the last chunk may be shorter). */
    private static List<Start> starts(List<PageDigestPlan.Run> runs, long chunkBytes) {
        List<Start> out = new ArrayList<>();
        long next = 0;   // stream position of the next chunk's start
        long at = 0;     // stream position of run i's first byte
        for (int i = 0; i < runs.size(); i++) {
            long len = runs.get(i).length();
            while (next < at + len) {
                out.add(new Start(i, next - at));
                next += chunkBytes;
            }
            at += len;
        }
        return out;
    }

    /** A ByteBuffer holds at most 2^31-1 bytes: longer pieces are summed in slices of this size. */
    private static final long BUFFER = 1L << 30;

    /**
     * Adler-32 of {@code length} bytes of the stream from {@code start}. Runs that continue each other in memory
     * (pages in address order) are summed as one piece: one {@code update} call instead of one per page.
     */
    private static long adler(List<PageDigestPlan.Run> runs, Start start, long length, boolean vector,
            boolean fromMemory) {
        if (vector) {
            return VectorAdler32.digest(runs, start.run(), start.offset(), length, fromMemory);
        }
        Adler32 a = new Adler32();
        int i = start.run();
        long skip = start.offset();
        long left = length;
        MemorySegment seg = null;
        long pieceAt = 0;
        long pieceLen = 0;
        while (left > 0) {
            PageDigestPlan.Run r = runs.get(i++);
            MemorySegment s = ((KvMemory.Host) r.memory()).segment();
            long at = r.offset() + skip;
            long take = Math.min(r.length() - skip, left);
            skip = 0;
            left -= take;
            if (s == seg && pieceAt + pieceLen == at) {
                pieceLen += take;
                continue;
            }
            if (seg != null) {
                update(a, seg, pieceAt, pieceLen);
            }
            seg = s;
            pieceAt = at;
            pieceLen = take;
        }
        if (seg != null) {
            update(a, seg, pieceAt, pieceLen);
        }
        return a.getValue();
    }

    private static void update(Adler32 a, MemorySegment s, long offset, long length) {
        for (long at = 0; at < length; at += BUFFER) {
            a.update(s.asSlice(offset + at, Math.min(BUFFER, length - at)).asByteBuffer());
        }
    }
}
