package io.kvchecksum.jmh;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageProbe;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.Caches;
import io.kvchecksum.bench.ProbeWindowBound;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.BenchmarkParams;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

/**
 * The head/tail page probe ({@link PageProbe}) against the full checksum of the same request, in one run on the same
 * fixture ({@code docs/bench-cpu.md}, "Page probe cost"). Issue 28's target: probe time at most 1.5 x (the probe's
 * bytes read / the full pass's bytes) x the full pass's time, plus a fixed per-call cost.
 *
 * <p>Each iteration samples in turn ({@link Interleaved}: best of {@value #SAMPLES} each, order rotating) the full
 * pass, the probe, the probe of the request's first page alone (the fixed per-call cost: resolving every slice's
 * windows and the result arrays, whatever the request's length) and {@link ProbeWindowBound} (a plain read of exactly
 * the probe's windows in its order, chunks and pool: the honest bound of a reader of those bytes), each sample after
 * an untimed read of {@link #evictBytes()} of another buffer (twice the last-level cache, at least
 * {@value #EVICT_MIN_MIB} MiB), so that none finds its lines in the caches (the probe's 8 MiB of vLLM windows fit any
 * L3, and a 260 MiB L3 holds most of the 256 MiB case itself), and prints
 * <pre>{@code ratio = probe / (fraction x full)},   {@code ratio less fixed = (probe - onePage) / (fraction x full)},
 * {@code bound ratio = bound / (fraction x full)}   and   {@code probe / bound}</pre>
 * where {@code fraction} is the bytes the probe reads (every window once, two per cell of each page's first and last
 * token, one where they are one token and overlap) over the full pass's bytes. The target holds when the second is at
 * most 1.5; the third says what a plain read of the same lines costs (the adjacent line fetched with each window, a
 * TLB miss per run of windows: several times the byte fraction), the fourth how far the probe is from it. JMH's own
 * scores of {@code full}, {@code probe}, {@code onePage} and {@code windowBound} (the mean, caches not evicted) are
 * printed beside them. The secondary results ({@link Interleaved}'s counters) are the mean over the measurement
 * iterations of the printed per-iteration values: JMH adds such counters up over the iterations, so each is published
 * divided by their count. All run with all processors: the full pass on the CPU backend's threads, the probe and the
 * bound on the common pool.
 *
 * <p>Layouts, both Llama-3-8B TP1 bf16 (32 layers x 8 KV heads x 128, 256-byte K and V cells), seeded shuffled page
 * tables: {@code vllm-flash-16} (vLLM's flash layout, pages of 16 tokens: the probe reads 1/32 of the bytes) and
 * {@code sglang-1} (SGLang's {@code k_buffer}/{@code v_buffer} of {@code [slots, 8, 128]}, SGLang's default page size
 * of one token: it reads half of every cell).
 */
@State(Scope.Benchmark)
public class PageProbeBench extends Bench {
    /** {@code vllm-flash-16} or {@code sglang-1}. */
    @Param({"vllm-flash-16", "sglang-1"})
    public String layout;

    /** A KV size as {@link ModelShape#at} reads it (Llama-3-8B TP1 every layer; rounded to whole 16-token blocks). */
    @Param({"256MiB"})
    public String size;

    /** Bytes probed at each end of each cell. */
    @Param({"64"})
    public int probeBytes;

    /** Samples per side and iteration of {@link Interleaved}. */
    static final int SAMPLES = 10;
    /** The least MiB read before each sample of {@link Interleaved} (four times a 32 MiB L3). */
    static final int EVICT_MIN_MIB = 128;

    private KvChecksum cpu;
    private SlicePlan plan;
    private SlicePlan onePage;
    private double fraction;
    private ProbeWindowBound bound;
    private MemorySegment evict;

    /** The three sampled in turn before each iteration: JMH secondary results, one statistic for all. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Interleaved {
        /** This iteration's best full pass, in nanoseconds. */
        public long fullBestNanos;
        /** This iteration's best probe, in nanoseconds. */
        public long probeBestNanos;
        /** This iteration's best one-page probe (the fixed per-call cost), in nanoseconds. */
        public long fixedBestNanos;
        /** This iteration's best plain read of the probe's windows ({@link ProbeWindowBound}), in nanoseconds. */
        public long boundBestNanos;
        /** {@code probe / (fraction x full)}, in thousandths. */
        public long ratioMilli;
        /** {@code (probe - fixed) / (fraction x full)}, in thousandths: the target is at most 1500. */
        public long ratioLessFixedMilli;
        /** {@code probe / bound}, in thousandths: the probe against a plain read of its windows. */
        public long probeOverBoundMilli;
        private long[] best = new long[4];
        private int iterations = 1;
        private long sink;

        /** Samples the three in turn (order rotating); JMH calls it before each iteration, untimed. */
        @Setup(Level.Iteration)
        public void measure(PageProbeBench b, BenchmarkParams params) {
            iterations = Math.max(1, params.getMeasurement().getCount());
            LongSupplier[] work = {
                () -> b.cpu.blockChecksums(b.plan)[0],
                () -> PageProbe.compute(b.cpu, b.plan, b.probeBytes).head()[0],
                () -> PageProbe.compute(b.cpu, b.onePage, b.probeBytes).head()[0],
                () -> b.bound.read()};
            long[] m = {Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE};
            for (int i = 0; i < SAMPLES; i++) {
                for (int k = 0; k < work.length; k++) {
                    // rotating, and a different side before each one from sample to sample
                    int x = (i % 2 == 0 ? i + k : i + work.length - 1 - k) % work.length;
                    sink ^= evict(b.evict);
                    m[x] = Math.min(m[x], time(work[x]));
                }
            }
            best = m;
            double scaled = b.fraction * m[0];
            System.out.printf("# interleaved best of %d, caches evicted: full %.1f us, probe %.1f us, one page %.1f us,"
                    + " bound %.1f us; fraction %.4f: ratio %.3f, ratio less fixed %.3f (target <= 1.5), bound ratio %.3f,"
                    + " probe / bound %.3f%n", SAMPLES, m[0] / 1e3, m[1] / 1e3, m[2] / 1e3, m[3] / 1e3, b.fraction,
                    m[1] / scaled, (m[1] - m[2]) / scaled, m[3] / scaled, (double) m[1] / m[3]);
        }

        /** One read of every line of {@code m}. */
        private static long evict(MemorySegment m) {
            long s = 0;
            for (long o = 0; o < m.byteSize(); o += 64) {
                s += m.get(ValueLayout.JAVA_LONG, o);
            }
            return s;
        }

        private long time(LongSupplier w) {
            long t = System.nanoTime();
            sink ^= w.getAsLong();
            return System.nanoTime() - t;
        }

        /**
         * Sets the counters to this iteration's values divided by the measurement iterations: JMH sums an
         * {@code EVENTS} counter over the iterations (the table showed three iterations' sum, read as a ratio 3x too
         * high), so its score is the mean of the printed per-iteration values.
         */
        void publish(PageProbeBench b) {
            double n = iterations;
            fullBestNanos = Math.round(best[0] / n);
            probeBestNanos = Math.round(best[1] / n);
            fixedBestNanos = Math.round(best[2] / n);
            double scaled = b.fraction * best[0];
            ratioMilli = Math.round(1000 * best[1] / scaled / n);
            ratioLessFixedMilli = Math.round(1000 * (best[1] - best[2]) / scaled / n);
            boundBestNanos = Math.round(best[3] / n);
            probeOverBoundMilli = Math.round(1000.0 * best[1] / best[3] / n);
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        cpu = closing(Backends.open("cpu"));
        RequestBlocks request;
        KvCacheGroup group;
        if (layout.equals("vllm-flash-16")) {
            KvFixture fx = closing(KvFixture.of("llama3-8b-tp1", size));
            group = fx.group();
            request = fx.request();
        } else if (layout.equals("sglang-1")) {
            ModelShape s = ModelShape.LLAMA3_8B_TP1;
            int slots = Math.toIntExact(s.tokens(size));
            long bufferBytes = (long) slots * s.heads() * s.headDim() * s.elemBytes();
            Arena arena = closing(Arena.ofShared());
            List<KvMemory> ks = new ArrayList<>();
            List<KvMemory> vs = new ArrayList<>();
            List<MemorySegment> all = IntStream.range(0, 2 * s.layers()).mapToObj(i -> arena.allocate(bufferBytes, 64)).toList();
            IntStream.range(0, all.size()).parallel().forEach(i -> {
                SplittableRandom rnd = new SplittableRandom(KvFixture.SEED + i);
                MemorySegment m = all.get(i);
                for (long w = 0; w < m.byteSize() / 8; w++) {
                    m.setAtIndex(ValueLayout.JAVA_LONG, w, rnd.nextLong());
                }
            });
            for (int i = 0; i < all.size(); i++) {
                (i % 2 == 0 ? ks : vs).add(KvMemory.host(all.get(i)));
            }
            group = KvLayouts.sglang(new KvLayouts.PagedShape(slots, 1, s.heads(), s.headDim(), s.elemBytes()), 0,
                    IntStream.range(0, s.layers()).toArray(), ks, vs);
            request = RequestBlocks.of(KvFixture.shuffledPages(slots, new java.util.Random(KvFixture.SEED)), slots,
                    ModelShape.BLOCK_SIZE);
        } else {
            throw new IllegalArgumentException("layout " + layout + ": use vllm-flash-16 or sglang-1");
        }
        plan = SlicePlan.of(group, request);
        int ps = group.pageSize();
        onePage = SlicePlan.of(group, RequestBlocks.of(new int[] {request.page(0)}, ps, ModelShape.BLOCK_SIZE));
        long fullBytes = group.bytesPerToken() * request.numTokens();
        long read = 0;
        for (var l : group.layers()) {
            for (var r : new io.kvchecksum.KvRegion[] {l.k(), l.v()}) {
                if (r != null) {
                    int n = Math.min(probeBytes, r.cellBytes());
                    // per page and head: the first token's head window and the last token's tail window
                    read += (long) l.numHeads() * (ps == 1 ? Math.min(2 * n, r.cellBytes()) : 2L * n);
                }
            }
        }
        fraction = (double) read * plan.numPages() / fullBytes;
        evict = closing(Arena.ofShared()).allocate(evictBytes(), 64);
        if (probeBytes == 64) {
            bound = ProbeWindowBound.of(plan);
        } else {
            throw new IllegalArgumentException("probeBytes " + probeBytes + ": the window bound reads 64-byte windows");
        }
        // Checked before timing: the probe is deterministic, covers every page, and is not all zeros.
        PageProbe.Probes p = PageProbe.compute(cpu, plan, probeBytes);
        check(p.equals(PageProbe.compute(cpu, plan, probeBytes)) && p.head().length == plan.numPages()
                && !Arrays.stream(p.tail()).allMatch(x -> x == 0),
                "page probe not deterministic or empty: " + p);
        System.out.printf("# %s; %s %s: %d bytes, %d pages of %d tokens; the probe reads %d bytes, fraction %.4f%n",
                cpu.description(), layout, size, fullBytes, plan.numPages(), ps, read * plan.numPages(), fraction);
    }

    /**
     * {@return the bytes read before each sample to push the fixture out of the caches: twice the last-level cache
     * ({@link Caches#machine()}: Linux's {@code /sys}), at least {@value #EVICT_MIN_MIB} MiB}
     */
    public static long evictBytes() {
        return Math.max((long) EVICT_MIN_MIB << 20, 2 * Caches.machine().llc());
    }

    /** The full checksum: every KV byte once. */
    @Benchmark
    public long[] full(Interleaved in) {
        in.publish(this);
        return cpu.blockChecksums(plan);
    }

    /** The probe: the first and last {@code probeBytes} of each cell end of every page. */
    @Benchmark
    public PageProbe.Probes probe(Interleaved in) {
        in.publish(this);
        return PageProbe.compute(cpu, plan, probeBytes);
    }

    /** A plain read of exactly the probe's windows in its order ({@link ProbeWindowBound}). */
    @Benchmark
    public long windowBound(Interleaved in) {
        in.publish(this);
        return bound.read();
    }

    /** The probe of the request's first page alone: the fixed per-call cost. */
    @Benchmark
    public PageProbe.Probes onePage() {
        return PageProbe.compute(cpu, onePage, probeBytes);
    }
}
