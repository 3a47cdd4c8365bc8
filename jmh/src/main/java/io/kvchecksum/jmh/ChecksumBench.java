package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.Rechunked;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;
import io.kvchecksum.bench.MemoryBound;
import java.util.List;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The checksum operations of one backend on one model shape and request size: the fused single pass
 * ({@code blockChecksums}) and the three separate steps ({@code sliceSums}, {@code combine}, {@code rechunk}).
 *
 * <p>The score is nanoseconds per operation; GB/s of KV is {@code kvBytes / score}, where {@code kvBytes} is the KV
 * the request covers (for {@code combine} and {@code rechunk}, which read only the small sums, that is the KV rate
 * they keep up with, not bytes they read). Compare with {@link BoundsBench} on the same shape and size.
 *
 * <p>Every operation's result is checked in set-up before anything is timed (see {@link Oracle}); all four are checked
 * whichever one is timed, so a run of one method still proves the backend right.
 *
 * <p>The passes over the KV ({@code blockChecksums}, {@code sliceSums}) also sample the read bound of the same bytes
 * and the pass itself in turn, in their own fork, before every iteration ({@link Interleaved}): one statistic (the best)
 * over the same number of samples on both sides, taken alternately, on a machine whose memory bandwidth drifts by tens
 * of percent between minutes. The passes run for half a second in set-up before the bound's readers first do
 * ({@link #warmPasses}). Set-up prints the backend and the loop it runs.
 */
@State(Scope.Benchmark)
public class ChecksumBench extends Bench {
    /** A backend name for {@link io.kvchecksum.KvChecksums#byName}; an unavailable one fails set-up with the reason. */
    @Param({"reference", "cpu", "opencl", "cuda"})
    public String backend;

    /** A {@link ModelShape#id()}. */
    @Param({"llama3-8b-tp1", "llama3-70b-tp8", "deepseek-mla-bf16", "deepseek-mla-fp8"})
    public String shape;

    /** Tokens, or a KV size ({@code 1MiB}) rounded to whole 16-token blocks; see {@link ModelShape#tokens}. */
    @Param({"1MiB", "256MiB"})
    public String size;

    /**
     * The read bound and the pass, sampled alternately in this fork before each iteration, as JMH secondary results
     * with one statistic on both sides: {@code boundBestNanos}, the best of {@value #SAMPLES} reads of the fastest
     * reader ({@link MemoryBound.Reader}: every reader of this JVM, each read once per round, the same threads as the
     * backend), and {@code passBestNanos}, the best of {@value #SAMPLES} calls of the timed pass, the two taken in turn
     * (round {@code i}: the pass then every reader, or every reader then the pass, alternating), so that the
     * machine's drift hits both alike. Their quotient is the ratio to the bound; the suite pools it over iterations
     * and forks (best over all samples on each side). {@code loopBits} names the loop the backend ran (the vector
     * width in bits, 0 for the scalar loop, -1 for a backend that names none: {@link Backends#loopBits}).
     * JMH's own score (the mean time per call) is printed beside it, but no ratio mixes it with the best.
     */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Interleaved {
        /** This iteration's bound: the fastest reader's best read, in nanoseconds. */
        public long boundBestNanos;
        /** This iteration's pass: the best call of the pass, in nanoseconds. */
        public long passBestNanos;
        /** The samples on each side behind them. */
        public long samples;
        /** The loop the backend ran: {@link Backends#loopBits}. */
        public long loopBits;
        private MemoryBound bound;
        private long bestBound;
        private long bestPass;
        private long loop;
        private long sink;

        /** Samples bound and pass in turn on the benchmark's fixture; JMH calls it before each iteration, untimed. */
        @Setup(Level.Iteration)
        public void measure(ChecksumBench b, org.openjdk.jmh.infra.BenchmarkParams params) {
            boolean slices = params.getBenchmark().endsWith(".sliceSums");
            java.util.function.LongSupplier pass = slices ? () -> b.kc.sliceSums(b.plan).values().length
                    : () -> b.kc.blockChecksums(b.plan)[0];
            List<MemoryBound.Reader> readers = MemoryBound.readers();
            if (bound == null) {
                bound = new MemoryBound(b.fx.segments(), Runtime.getRuntime().availableProcessors());
                // each reader runs for a while so that the JIT compiles it, as JMH's warm-up does for the pass
                for (MemoryBound.Reader r : readers) {
                    long until = System.nanoTime() + BOUND_WARMUP_NANOS;
                    do {
                        sink ^= bound.read(r);
                    } while (System.nanoTime() < until);
                }
            }
            long boundBest = Long.MAX_VALUE;
            long passBest = Long.MAX_VALUE;
            for (int i = 0; i < SAMPLES; i++) {
                if (i % 2 == 0) {
                    passBest = Math.min(passBest, time(pass));
                }
                for (MemoryBound.Reader r : readers) {
                    boundBest = Math.min(boundBest, time(() -> bound.read(r)));
                }
                if (i % 2 == 1) {
                    passBest = Math.min(passBest, time(pass));
                }
            }
            bestBound = boundBest;
            bestPass = passBest;
            loop = Backends.loopBits(b.kc.description());
        }

        private long time(java.util.function.LongSupplier work) {
            long t = System.nanoTime();
            sink ^= work.getAsLong();
            return System.nanoTime() - t;
        }

        /**
         * Publishes this iteration's samples; called by the timed methods (four stores), since JMH clears the counters
         * after iteration set-up.
         */
        void publish() {
            boundBestNanos = bestBound;
            passBestNanos = bestPass;
            samples = SAMPLES;
            loopBits = loop;
        }

        @TearDown(Level.Trial)
        public void close() {
            if (bound != null) {
                bound.close();
            }
        }
    }

    /** Samples per side and iteration for {@link Interleaved}: the best of them is each side's time. */
    static final int SAMPLES = 10;
    /** How long each reader runs before the first measurement of {@link Interleaved}, for the JIT. */
    static final long BOUND_WARMUP_NANOS = 300_000_000L;

    private KvChecksum kc;
    private KvFixture fx;
    private SliceSums sums;
    private SlicePlan plan;
    private long[] blocks;

    @Setup(Level.Trial)
    public void setUp() {
        check(!backend.equals("reference") || ModelShape.of(shape).kvBytes(size) <= Oracle.REFERENCE_BYTES,
                "backend reference skipped at " + size + ": it is given only requests up to "
                        + (Oracle.REFERENCE_BYTES >> 20) + " MiB");
        kc = Backends.open(backend);
        fx = closing(KvFixture.of(shape, size));
        closing(kc); // the backend closes before the fixture's memory
        Oracle oracle = Oracle.of(fx);
        oracle.verify(kc, fx);
        sums = oracle.slices();
        plan = SlicePlan.of(fx.group(), fx.request());
        oracle.verifyPlan(kc, plan);
        blocks = oracle.blocks();
        ModelShape.Case c = ModelShape.of(shape).at(size);
        System.out.println("# " + kc.description() + ": loop " + Backends.loop(kc.description()) + "; case "
                + shape + " " + c.label(size) + ", " + fx.kvBytes() + " bytes");
        warmPasses();
    }

    /**
     * Runs both passes for {@value #PASS_WARMUP_NANOS} ns (at least once each) before {@link Interleaved}'s readers
     * first run, so that the passes are compiled the way they are in a JVM without the bound's readers. Measured: with
     * the readers warmed first, 5 of 14 JVMs ran Llama-3-70B TP8 at 1 MiB 1.3x slower (3 of 8 Llama-3-8B, 1.4x) and
     * JFR had their samples in bounds and session checks inside the loop; with the passes first, 0 of 14 and 0 of 8, the
     * bound unchanged (docs/bench-cpu.md, "Warm-up order").
     */
    private void warmPasses() {
        long until = System.nanoTime() + PASS_WARMUP_NANOS;
        long sink = 0;
        do {
            sink += kc.blockChecksums(plan)[0];
            sink += kc.sliceSums(plan).values().length;
        } while (System.nanoTime() < until);
        warmSink = sink;
    }

    /** How long {@link #warmPasses} runs the passes. */
    static final long PASS_WARMUP_NANOS = 500_000_000L;
    /** Keeps {@link #warmPasses}' results live. */
    static volatile long warmSink;

    /**
     * The fused pass over a plan built in set-up: every KV byte read once, one checksum per block. A plan is
     * immutable and reusable (an engine builds it once per request layout); building it is {@link #plan()}.
     */
    @Benchmark
    public long[] blockChecksums(Interleaved bound) {
        bound.publish();
        return kc.blockChecksums(plan);
    }

    /** The per-slice sums, the first of the separate steps; reads the same KV as the fused pass. */
    @Benchmark
    public SliceSums sliceSums(Interleaved bound) {
        bound.publish();
        return kc.sliceSums(plan);
    }

    /**
     * Building the plan: validating the page table and resolving every slice, what a call with a group and a request
     * adds to the pass. Reads no KV; its GB/s is the KV rate it keeps up with.
     */
    @Benchmark
    public SlicePlan plan() {
        return SlicePlan.of(fx.group(), fx.request());
    }

    /** Combining the (precomputed) slice sums into block checksums: a pure function, the same for every backend. */
    @Benchmark
    public long[] combine() {
        return sums.combine();
    }

    /** Summing the (precomputed) 16-token block checksums into 64-token chunks: a pure function, as combine. */
    @Benchmark
    public Rechunked rechunk() {
        return Rechunked.of(blocks, 0, Oracle.RECHUNK_FACTOR);
    }
}
