package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.Rechunked;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;
import io.kvchecksum.bench.MemoryBound;
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
 * <p>The passes over the KV ({@code blockChecksums}, {@code sliceSums}) also measure the read bound of the same bytes
 * in their own fork, before every iteration ({@link SameForkBound}): the bound and the pass a second apart, not minutes
 * apart in other forks, on a machine whose memory bandwidth drifts by tens of percent between minutes. The passes run
 * for half a second in set-up before the bound's readers first do ({@link #warmPasses}).
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
     * The read bound measured in this fork before each iteration, as JMH secondary results: {@code boundNanos}, the
     * fastest reader's best time of one whole read ({@link MemoryBound#measure}: every reader, best of
     * {@value #BOUND_READS} reads, the same threads as the backend), summed over iterations, and
     * {@code boundIterations}, how many were summed. Their quotient over the primary score is the ratio to the bound.
     */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class SameForkBound {
        /** Sum over iterations of the bound's best time of one read, in nanoseconds. */
        public long boundNanos;
        /** Iterations summed in {@link #boundNanos}. */
        public long boundIterations;
        private MemoryBound bound;
        private long measured;
        private long sink;

        /** Times every reader on the benchmark's fixture; JMH calls it before each iteration, outside the timing. */
        @Setup(Level.Iteration)
        public void measure(ChecksumBench b) {
            boolean first = bound == null;
            if (first) {
                bound = new MemoryBound(b.fx.segments(), Runtime.getRuntime().availableProcessors());
            }
            MemoryBound.Measurement m = bound.measure(work -> {
                // the first time, each reader runs for a while so that the JIT compiles it, as JMH's warm-up does
                long until = System.nanoTime() + (first ? BOUND_WARMUP_NANOS : 0);
                long best = Long.MAX_VALUE;
                for (int i = 0; i < BOUND_READS || System.nanoTime() < until; i++) {
                    long t = System.nanoTime();
                    sink ^= work.getAsLong();
                    best = Math.min(best, System.nanoTime() - t);
                }
                return best;
            });
            measured = Math.round(m.nanos());
        }

        /**
         * Publishes this iteration's bound; called by the timed methods (two stores), since JMH clears the counters
         * after iteration set-up.
         */
        void publish() {
            boundNanos = measured;
            boundIterations = 1;
        }

        @TearDown(Level.Trial)
        public void close() {
            if (bound != null) {
                bound.close();
            }
        }
    }

    /** Reads per reader and iteration for {@link SameForkBound}: the best of them is the bound's time. */
    static final int BOUND_READS = 10;
    /** How long each reader runs before the first measurement of {@link SameForkBound}, for the JIT. */
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
        warmPasses();
    }

    /**
     * Runs both passes for {@value #PASS_WARMUP_NANOS} ns (at least once each) before {@link SameForkBound}'s readers
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
    public long[] blockChecksums(SameForkBound bound) {
        bound.publish();
        return kc.blockChecksums(plan);
    }

    /** The per-slice sums, the first of the separate steps; reads the same KV as the fused pass. */
    @Benchmark
    public SliceSums sliceSums(SameForkBound bound) {
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
