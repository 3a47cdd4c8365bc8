package io.kvchecksum.bench;

import io.kvchecksum.spi.CpuWorkSplit;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;

/**
 * The two bounds a checksum is judged against, over a list of segments: a plain read of every byte and a copy of
 * every byte.
 *
 * <p>The read bound is the <em>fastest</em> of several readers of the same bytes with the same threads
 * ({@link Reader}): a Vector API sum, an unrolled scalar sum and, where the C library is reachable through the FFM API,
 * a native reader ({@code memcmp(p, p, n)}, which reads every byte with the C library's own vector code). A checksum
 * can be no faster than the fastest of them; one measured faster is a failed measurement ({@link #plausible}), not a
 * result. Which reader won is reported with the bound, so a change of definition is visible.
 *
 * <p>They split work like the CPU backend does, so that "the same threads" holds: requests under
 * {@link #PARALLEL_BYTES} run on the calling thread, larger ones in tasks of about {@code max(1 MiB, total/(4T))}
 * bytes on a pool of {@code T} threads.
 *
 * <p>The one implementation of the bounds: the JMH suite and the command line's {@code bench} both measure against
 * it. Not part of the checksum API: a measuring tool.
 */
public final class MemoryBound implements AutoCloseable {
    /** The CPU backend's threshold: a hand-off to another thread costs more than a small read. */
    public static final long PARALLEL_BYTES = CpuWorkSplit.PARALLEL_BYTES;
    /** The CPU backend's smallest task. */
    static final long TASK_BYTES = CpuWorkSplit.TASK_BYTES;
    /** The copy destination is at most this large; beyond, copies wrap around it (still far beyond the LLC). */
    static final long MAX_DESTINATION = 1L << 30;

    /** The version of the read bound's definition, written next to results so that comparisons can tell. */
    public static final String DEFINITION = "fastest of vector, vector256, scalar, native readers; same threads; v5, "
            + "vector loops as the C reader's (8 sums, 2 parts in lockstep, or 4 streams at 256 bits, int steps, sums "
            + "carried across parts; parts under 8 KiB on average one at a time, 4 sums; on Intel at 512 bits "
            + "4 streams of 2 loads, a long offset)";

    private static final boolean HAS_VECTOR = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    /**
     * Whether the {@code vector} reader runs the loop measured fastest on Intel (Emerald Rapids, docs/bench-cpu.md, "On
     * Intel (Emerald Rapids): the in-cache bound"): where the preferred width is 512 bits, four streams of two loads
     * with a {@code long} offset stepped by the loop ({@link VectorRead#read4}; at 256 bits the two-stream loop read
     * faster there). Elsewhere (AMD Zen 4 and 5, where the loop before it was measured faster than four streams) the
     * loop stays as it was. By the vendor ({@code io.kvchecksum.spi.CpuModel}, as the CPU backend's choices); the
     * system property {@code kvchecksum.bound.loops} ({@code intel} or {@code amd}) overrides it, for A/B runs.
     */
    static final boolean INTEL_LOOPS = intelLoops();

    private static boolean intelLoops() {
        String forced = System.getProperty("kvchecksum.bound.loops", "");
        if (!forced.isEmpty()) {
            return forced.equals("intel");
        }
        return io.kvchecksum.spi.CpuModel.intel();
    }

    /** One way of reading every byte. Each returns a value depending on every word read, so nothing is skipped. */
    public enum Reader {
        /**
         * Eight independent {@code LongVector} sums of the little-endian words, two parts read in lockstep, the sums
         * carried across a task's parts, as the C reader's two-stream loop (needs {@code jdk.incubator.vector}).
         */
        VECTOR,
        /**
         * The same sums in 256-bit vectors whatever the JVM's preferred width, four streams of a task in lockstep
         * (where the preferred width is 256, the faster of this and {@link #VECTOR} is the bound): on AMD Zen 4 a
         * 512-bit loop reads memory at about half the rate of a 256-bit one (docs/bench-cpu.md), so the preferred
         * width alone is no bound.
         */
        VECTOR256,
        /** Eight independent scalar sums of the words, unrolled. */
        SCALAR,
        /** The C library's {@code memcmp(p, p, n)} through the FFM API: its vector loop loads every byte. */
        NATIVE;

        /**
         * {@return the name used as the JMH parameter and in reports: {@code vector}, {@code scalar}, {@code native}}
         */
        public String id() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        /**
         * {@return the reader of that {@link #id()}}
         *
         * @param id the reader's {@link #id()}, any case, surrounding blanks ignored
         * @throws IllegalArgumentException for an unknown id
         */
        public static Reader of(String id) {
            return valueOf(id.trim().toUpperCase(java.util.Locale.ROOT));
        }

        /** {@return {@code null} when this reader runs in this JVM, else why not} */
        public String unavailable() {
            return switch (this) {
                case VECTOR, VECTOR256 -> HAS_VECTOR ? null : "the JVM lacks --add-modules jdk.incubator.vector";
                case SCALAR -> null;
                case NATIVE -> NativeRead.UNAVAILABLE;
            };
        }
    }

    /**
     * The bound as measured: the fastest reader, its best time, and every reader's time.
     *
     * @param reader the reader that was fastest
     * @param nanos its best time of one whole read, in nanoseconds
     * @param bytes the bytes read
     * @param nanosByReader every available reader's best time
     */
    public record Measurement(Reader reader, double nanos, long bytes, java.util.Map<Reader, Double> nanosByReader) {
        /** {@return bytes per nanosecond, i.e. GB/s} */
        public double gbps() {
            return bytes / nanos;
        }
    }

    /** {@return the readers that run in this JVM, in the order of {@link Reader}} */
    public static List<Reader> readers() {
        return Arrays.stream(Reader.values()).filter(r -> r.unavailable() == null).toList();
    }

    /**
     * {@return whether a measured rate can be a result: a checksum reads every byte, so it cannot be faster than the
     * fastest plain read of them} {@code ratio} is the checksum's GB/s over the bound's; a ratio above 1 (beyond
     * {@code tolerance}, the timing noise the caller accepts) is a failed measurement.
     *
     * @param ratio the checksum's GB/s over the bound's
     * @param tolerance the timing noise accepted, as a fraction (0.05 allows a ratio up to 1.05)
     */
    public static boolean plausible(double ratio, double tolerance) {
        return ratio <= 1 + tolerance;
    }

    /** A byte range of a source segment and where its copy goes in the destination. */
    private record Part(MemorySegment src, long offset, long length, long dstOffset) {
    }

    /**
     * A task's bytes as arrays for the vector readers' one loop, which reads entries {@code 2k} and {@code 2k+1} in
     * lockstep: the parts cut so that those two have the same length (where one part is longer than its partner, its
     * rest pairs with the next part; a last part without a partner is paired with itself, its two halves), and into
     * pieces of at most {@code maxPart} bytes.
     * Every byte of the task once, the parts' bytes each in order.
     */
    private record Flat(MemorySegment[] src, long[] offset, long[] length, boolean paired) {
        /**
         * Parts shorter than this on average are read one at a time ({@link VectorRead#readEach}): for SGLang's
         * 2 KiB pages the lockstep loop's entry and exit per pair cost about a fifth of the read (docs/bench-cpu.md,
         * "SGLang's page digest"); a layer of the 1 MiB cases (18-64 KiB) stays in lockstep.
         */
        static final long SHORT_PART = 8 << 10;

        /** The form {@link #read(Reader)} takes for {@code task}: one part at a time when its parts are short. */
        static Flat forTask(List<Part> task, long maxPart) {
            long total = 0;
            for (Part p : task) {
                total += p.length;
            }
            if (total >= SHORT_PART * task.size()) {
                return of(task, maxPart);
            }
            List<MemorySegment> s = new ArrayList<>();
            List<Long> o = new ArrayList<>();
            List<Long> l = new ArrayList<>();
            for (Part p : task) {
                for (long at = 0; at < p.length; at += maxPart) {
                    s.add(p.src);
                    o.add(p.offset + at);
                    l.add(Math.min(maxPart, p.length - at));
                }
            }
            return new Flat(s.toArray(MemorySegment[]::new), o.stream().mapToLong(Long::longValue).toArray(),
                    l.stream().mapToLong(Long::longValue).toArray(), false);
        }

        static Flat of(List<Part> task, long maxPart) {
            List<MemorySegment> s = new ArrayList<>();
            List<Long> o = new ArrayList<>();
            List<Long> l = new ArrayList<>();
            MemorySegment pendingSeg = null;
            long pendingOff = 0;
            long pendingLen = 0;
            for (Part p : task) {
                for (long at = 0; at < p.length; at += maxPart) {
                    long off = p.offset + at;
                    long len = Math.min(maxPart, p.length - at);
                    while (len > 0) {
                        if (pendingLen == 0) {
                            pendingSeg = p.src;
                            pendingOff = off;
                            pendingLen = len;
                            break;
                        }
                        long m = Math.min(pendingLen, len);
                        s.add(pendingSeg);
                        o.add(pendingOff);
                        l.add(m);
                        s.add(p.src);
                        o.add(off);
                        l.add(m);
                        pendingOff += m;
                        pendingLen -= m;
                        off += m;
                        len -= m;
                    }
                }
            }
            if (pendingLen > 0) {
                // no partner left: its two halves are the pair (the second up to 8 bytes longer)
                long h = pendingLen / 16 * 8;
                s.add(pendingSeg);
                o.add(pendingOff);
                l.add(h);
                s.add(pendingSeg);
                o.add(pendingOff + h);
                l.add(pendingLen - h);
            }
            return new Flat(s.toArray(MemorySegment[]::new), o.stream().mapToLong(Long::longValue).toArray(),
                    l.stream().mapToLong(Long::longValue).toArray(), true);
        }
    }

    /**
     * A task's bytes for {@link VectorRead#read256} (and on Intel {@link VectorRead#read4}), which read entries {@code
     * 4k .. 4k+3} in lockstep: each entry a slice of a part, the four of a group of the same length, so that the loop
     * indexes the four from 0 with one counter (an offset of each added to it read the MLA case 2-4 % slower). First,
     * while at least four parts are left, groups of four consecutive parts, each group cut at the shortest one's end,
     * an emptied part's place taken by the next part (a layer of DeepSeek MLA read beside its three neighbours: 2-3 %
     * faster in cache than four streams a quarter of the task apart); then the rest as the C reader reads a range, its
     * words cut into four streams of (within a word) equal length, read in lockstep, the few words one stream has
     * beyond the others in groups of their own with empty partners. Every whole word of the task once, in pieces of at
     * most {@code maxPart} bytes; cuts fall on whole words of a part, so a part's words are the same words as read one
     * by one (a byte tail under a word is not read).
     */
    private record Streams(MemorySegment[] src) {
        static Streams of(List<Part> task, long maxPart) {
            final int streams = VectorRead.STREAMS;
            java.util.ArrayDeque<Part> queue = new java.util.ArrayDeque<>();
            for (Part p : task) {
                for (long at = 0; at < p.length / 8 * 8; at += maxPart) {
                    queue.add(new Part(p.src, p.offset + at, Math.min(maxPart, p.length / 8 * 8 - at), 0));
                }
            }
            List<MemorySegment> s = new ArrayList<>();
            Part[] cur = new Part[streams];
            int filled = 0;
            while (filled < streams && !queue.isEmpty()) {
                cur[filled++] = queue.poll();
            }
            while (filled == streams) {
                long m = Long.MAX_VALUE;
                for (Part p : cur) {
                    m = Math.min(m, p.length);
                }
                for (int j = 0; j < streams; j++) {
                    Part p = cur[j];
                    s.add(p.src.asSlice(p.offset, m));
                    cur[j] = new Part(p.src, p.offset + m, p.length - m, 0);
                }
                for (int j = 0; j < streams; j++) {
                    if (cur[j].length == 0) {
                        if (queue.isEmpty()) {
                            filled--;
                            cur[j] = null;
                        } else {
                            cur[j] = queue.poll();
                        }
                    }
                }
            }
            List<Part> rest = new ArrayList<>();
            for (Part p : cur) {
                if (p != null && p.length > 0) {
                    rest.add(p);
                }
            }
            rest.addAll(queue);
            quarters(rest, s);
            return new Streams(s.toArray(MemorySegment[]::new));
        }

        /** Appends the groups of {@code rest} (word-long parts) read as four streams of a range, in lockstep. */
        private static void quarters(List<Part> rest, List<MemorySegment> s) {
            final int streams = VectorRead.STREAMS;
            long words = 0;
            for (Part p : rest) {
                words += p.length / 8;
            }
            List<List<Part>> stream = new ArrayList<>();
            for (int k = 0; k < streams; k++) {
                stream.add(new ArrayList<>());
            }
            int k = 0;
            long at = 0;
            for (Part p : rest) {
                long w0 = 0;
                long n = p.length / 8;
                while (w0 < n) {
                    while (k < streams - 1 && at >= words * (k + 1) / streams) {
                        k++;
                    }
                    long end = k < streams - 1 ? words * (k + 1) / streams : words;
                    long take = Math.min(n - w0, end - at);
                    stream.get(k).add(new Part(p.src, p.offset + 8 * w0, 8 * take, 0));
                    w0 += take;
                    at += take;
                }
            }
            int[] idx = new int[streams];
            long[] used = new long[streams];
            while (true) {
                long m = Long.MAX_VALUE;
                for (int j = 0; j < streams; j++) {
                    m = idx[j] < stream.get(j).size() ? Math.min(m, stream.get(j).get(idx[j]).length - used[j]) : 0;
                }
                if (m == 0) {
                    break;
                }
                for (int j = 0; j < streams; j++) {
                    Part p = stream.get(j).get(idx[j]);
                    s.add(p.src.asSlice(p.offset + used[j], m));
                    used[j] += m;
                    if (used[j] == p.length) {
                        idx[j]++;
                        used[j] = 0;
                    }
                }
            }
            for (int j = 0; j < streams; j++) {
                for (; idx[j] < stream.get(j).size(); idx[j]++, used[j] = 0) {
                    // a stream's last words beyond a shorter one: a group of its own, its partners empty
                    Part p = stream.get(j).get(idx[j]);
                    for (int g = 0; g < streams; g++) {
                        s.add(p.src.asSlice(p.offset + used[j], g == 0 ? p.length - used[j] : 0L));
                    }
                }
            }
        }
    }

    private final List<List<Part>> tasks;
    private final java.util.Map<List<Part>, Flat> flat = new java.util.IdentityHashMap<>();
    private final java.util.Map<List<Part>, Streams> streams = new java.util.IdentityHashMap<>();
    private final boolean intelLoops;
    private final boolean parallel;
    private final ForkJoinPool pool;
    private final long ring;
    private final long bytes;
    private Arena arena;
    private MemorySegment dst;

    /**
     * Bounds over {@code segments} read whole, with at most {@code threads} threads.
     *
     * @param segments the memory to read, each segment whole; it must stay alive while this bound is used
     * @param threads the most threads a read or copy uses; 1 or less reads on the calling thread
     */
    public MemoryBound(List<MemorySegment> segments, int threads) {
        this(threads, segments.stream().map(s -> new Range(s, 0, s.byteSize())).toList());
    }

    /**
     * A byte range of a segment: where a benchmark reads pieces of larger buffers (SGLang's pages), its bound reads
     * them through their buffers as the checksum does, not through a slice per piece (slices read 2 KiB pages about a
     * fifth slower).
     *
     * @param segment the buffer
     * @param offset the range's first byte in {@code segment}
     * @param length the range's bytes
     */
    public record Range(MemorySegment segment, long offset, long length) {
        /** Checks the range lies in its segment. */
        public Range {
            java.util.Objects.checkFromIndexSize(offset, length, segment.byteSize());
        }
    }

    /**
     * Bounds over {@code ranges}, read in their order, with at most {@code threads} threads.
     *
     * @param ranges the memory to read; the segments must stay alive while this bound is used
     * @param threads the most threads a read or copy uses; 1 or less reads on the calling thread
     * @return the bound
     */
    public static MemoryBound ofRanges(List<Range> ranges, int threads) {
        return new MemoryBound(threads, List.copyOf(ranges));
    }

    private MemoryBound(int threads, List<Range> ranges) {
        this(threads, ranges, INTEL_LOOPS);
    }

    /**
     * Bounds over {@code ranges} with the {@code vector} loop of Intel ({@code intelLoops}: {@link VectorRead#read4}
     * where the preferred width is 512 bits) or of AMD ({@link VectorRead#read}); tests read with both on any CPU.
     */
    MemoryBound(int threads, List<Range> ranges, boolean intelLoops) {
        this.intelLoops = intelLoops;
        long total = 0;
        for (Range r : ranges) {
            total += r.length();
        }
        this.parallel = threads > 1 && total >= PARALLEL_BYTES;
        long target = parallel ? Math.max(TASK_BYTES, total / (4L * threads)) : Long.MAX_VALUE;
        long ring = Math.min(total, MAX_DESTINATION);
        List<List<Part>> ts = new ArrayList<>();
        List<Part> current = new ArrayList<>();
        long inTask = 0;
        long written = 0;
        for (Range r : ranges) {
            MemorySegment s = r.segment();
            long end = r.offset() + r.length();
            for (long off = r.offset(); off < end; ) {
                long len = Math.min(end - off, target - inTask);
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
        for (List<Part> t : tasks) {
            flat.put(t, Flat.forTask(t, VectorRead.MAX_PART));
            streams.put(t, Streams.of(t, VectorRead.MAX_PART));
        }
        this.pool = parallel ? new ForkJoinPool(threads) : null;
        this.ring = ring;
        this.bytes = total;
    }

    /** {@return whether reads and copies of this size are split over threads} */
    public boolean parallel() {
        return parallel;
    }

    /**
     * {@return the wrapping sum of every little-endian 64-bit word of the segments, with the Vector API where it runs}
     */
    public long read() {
        return read(HAS_VECTOR ? Reader.VECTOR : Reader.SCALAR);
    }

    /**
     * Reads every byte of the segments with {@code reader}.
     *
     * @param reader how to read; it must run in this JVM ({@link Reader#unavailable()} is {@code null})
     * @return what the reads add up to, so they are not dead code: {@link Reader#VECTOR} and {@link Reader#SCALAR}
     *     return the wrapping sum of the little-endian words (equal to {@link #readScalar()}); {@link Reader#NATIVE}
     *     returns the sum of {@code memcmp}'s results, 0
     *
     * @throws IllegalStateException when the reader does not run in this JVM (with the reason)
     */
    public long read(Reader reader) {
        String why = reader.unavailable();
        if (why != null) {
            throw new IllegalStateException("reader " + reader.id() + " unavailable: " + why);
        }
        TaskBody body = switch (reader) {
            case VECTOR -> t -> readTask(t, Reader.VECTOR);
            case VECTOR256 -> t -> readTask(t, Reader.VECTOR256);
            case SCALAR -> t -> readTask(t, Reader.SCALAR);
            case NATIVE -> t -> readTask(t, Reader.NATIVE);
        };
        return runAll(body);
    }

    /**
     * Measures the read bound: times every available reader with {@code timer} (which runs the work it is given,
     * warmed up, and returns its best time in nanoseconds) and returns the fastest. The command line's {@code bench}
     * uses this; the JMH suite times each reader as its own benchmark and takes the fastest the same way.
     *
     * @param timer runs the work it is given, warmed up, and returns its best time in nanoseconds
     * @return the fastest reader with its time, and every reader's time
     */
    public Measurement measure(java.util.function.ToDoubleFunction<java.util.function.LongSupplier> timer) {
        java.util.Map<Reader, Double> times = new java.util.EnumMap<>(Reader.class);
        Reader best = null;
        for (Reader r : readers()) {
            double t = timer.applyAsDouble(() -> read(r));
            times.put(r, t);
            if (best == null || t < times.get(best)) {
                best = r;
            }
        }
        return new Measurement(best, times.get(best), bytes, java.util.Map.copyOf(times));
    }

    /**
     * Copies every byte of the segments into the destination. The destination (up to {@value #MAX_DESTINATION}
     * bytes) is allocated on the first call.
     *
     * @return a word of the destination, so the copy is observable (not dead code)
     */
    public long copy() {
        destination();
        runAll(this::copyTask);
        return dst.get(ValueLayout.JAVA_LONG, 0);
    }

    /** {@return the read bound computed one word at a time, for checking {@link #read()}} */
    public long readScalar() {
        long s = 0;
        for (List<Part> t : tasks) {
            for (Part p : t) {
                for (long o = 0; o + 8 <= p.length; o += 8) {   // a byte tail under a word is not read, as by the readers
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

    /** {@return the sum of {@code body} over the tasks: on the calling thread, or one pool task each when parallel} */
    private long runAll(TaskBody body) {
        long s = 0;
        if (!parallel) {
            for (List<Part> t : tasks) {
                s += body.run(t);
            }
            return s;
        }
        List<Callable<Long>> calls = new ArrayList<>(tasks.size());
        for (List<Part> t : tasks) {
            calls.add(() -> body.run(t));
        }
        try {
            for (Future<Long> f : pool.invokeAll(calls)) {
                s += f.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        return s;
    }

    private long copyTask(List<Part> task) {
        for (Part p : task) {
            MemorySegment.copy(p.src, p.offset, dst, p.dstOffset, p.length);
        }
        return 0;
    }

    private long readTask(List<Part> task, Reader reader) {
        if (reader == Reader.VECTOR) {
            Flat f = flat.get(task);
            if (!f.paired) {
                return VectorRead.readEach(f.src, f.offset, f.length);
            }
            return intelLoops && VectorRead.WIDE ? VectorRead.read4(streams.get(task).src)
                    : VectorRead.read(f.src, f.offset, f.length);
        }
        if (reader == Reader.VECTOR256) {
            return VectorRead.read256(streams.get(task).src);
        }
        long s = 0;
        for (Part p : task) {
            s += reader == Reader.NATIVE ? NativeRead.readPart(p.src, p.offset, p.length)
                    : scalarPart(p.src, p.offset, p.length);
        }
        return s;
    }

    /** Eight independent sums, so the loop waits on loads, not on one chain of adds. */
    static long scalarPart(MemorySegment s, long offset, long length) {
        long a = 0;
        long b = 0;
        long c = 0;
        long d = 0;
        long e = 0;
        long f = 0;
        long g = 0;
        long h = 0;
        long end = offset + length;
        long o = offset;
        for (; o + 64 <= end; o += 64) {
            a += s.get(WORD, o);
            b += s.get(WORD, o + 8);
            c += s.get(WORD, o + 16);
            d += s.get(WORD, o + 24);
            e += s.get(WORD, o + 32);
            f += s.get(WORD, o + 40);
            g += s.get(WORD, o + 48);
            h += s.get(WORD, o + 56);
        }
        for (; o + 8 <= end; o += 8) {
            a += s.get(WORD, o);
        }
        return a + b + c + d + e + f + g + h;
    }
}
