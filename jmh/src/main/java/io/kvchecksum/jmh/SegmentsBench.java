package io.kvchecksum.jmh;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
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
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * A segmented cache as Jlama keeps a session against one plan of the same total bytes (issue 28: "Jlama with segmented
 * caches at least 0.5 of the fused throughput of one plan of the same total bytes"). Both hold the same KV of a model
 * shape, in Jlama's layout (per layer a K and a V of {@code [positions, kvHeads * headDim]}, token-major):
 * <ul>
 *   <li><b>segmented</b>: Jlama's pages of {@link #positionsPerPage} positions, each page its own allocation
 *       ({@code [layers, 2, positions, kvHeads * headDim]}, as {@code JlamaKv} describes it), one {@link KvSegments}
 *       segment per page, the whole session compiled once into one {@link CompiledPlan} (hundreds to thousands of
 *       launches) and run by one call;</li>
 *   <li><b>onePlan</b>: the same bytes in one allocation per layer, one group, one launch: the fused pass at its best;</li>
 *   <li><b>perLaunch</b>: the segmented plan's launches each run as its own call (what an engine calling once per
 *       segment would pay), for scale.</li>
 * </ul>
 * All three on the CPU backend with all processors. Set-up checks that the three give the same block checksums.
 *
 * <p>Besides JMH's mean per call, each iteration samples the segmented pass and the one-plan pass in turn
 * ({@link Interleaved}: best of {@value #SAMPLES} each, alternating), so that a loaded or drifting machine hits both
 * alike; {@code segmentedBestNanos / onePlanBestNanos} is the number to track (its inverse is the throughput ratio),
 * and set-up prints it for each iteration as {@code segmented/onePlan throughput}.
 */
@State(Scope.Benchmark)
public class SegmentsBench extends Bench {
    /** A {@link ModelShape#id()} (not MLA: Jlama has K and V). */
    @Param({"llama3-8b-tp1"})
    public String shape;

    /** A KV size as {@link ModelShape#at} reads it. */
    @Param({"1MiB", "256MiB"})
    public String size;

    /**
     * Positions per Jlama page. Jlama sizes pages to a byte budget (1 MiB for ephemeral sessions): Llama-3-8B keeps 8
     * bf16 positions of its 32 layers per page; tiny models fall back to one position per page.
     */
    @Param({"1", "8"})
    public int positionsPerPage;

    /** Samples per side and iteration of {@link Interleaved}. */
    static final int SAMPLES = 10;

    private KvChecksum cpu;
    private CompiledPlan segmented;
    private CompiledPlan one;
    private List<SlicePlan> launches;
    private int numBlocks;

    /** The two passes sampled in turn before each iteration: JMH secondary results, one statistic on both sides. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Interleaved {
        /** This iteration's best segmented pass, in nanoseconds. */
        public long segmentedBestNanos;
        /** This iteration's best one-plan pass, in nanoseconds. */
        public long onePlanBestNanos;
        private long seg;
        private long one;
        private int iterations = 1;
        private long sink;

        /** Samples both passes in turn (order alternating); JMH calls it before each iteration, untimed. */
        @Setup(Level.Iteration)
        public void measure(SegmentsBench b, BenchmarkParams params) {
            iterations = Math.max(1, params.getMeasurement().getCount());
            LongSupplier s = () -> b.cpu.blockChecksums(b.segmented).get(0)[0];
            LongSupplier o = () -> b.cpu.blockChecksums(b.one).get(0)[0];
            long bs = Long.MAX_VALUE;
            long bo = Long.MAX_VALUE;
            for (int i = 0; i < SAMPLES; i++) {
                if (i % 2 == 0) {
                    bs = Math.min(bs, time(s));
                    bo = Math.min(bo, time(o));
                } else {
                    bo = Math.min(bo, time(o));
                    bs = Math.min(bs, time(s));
                }
            }
            seg = bs;
            one = bo;
            System.out.printf("# interleaved best of %d: segmented %.1f us, one plan %.1f us: segmented/onePlan"
                    + " throughput %.3f%n", SAMPLES, bs / 1e3, bo / 1e3, (double) bo / bs);
        }

        private long time(LongSupplier work) {
            long t = System.nanoTime();
            sink ^= work.getAsLong();
            return System.nanoTime() - t;
        }

        /**
         * Publishes this iteration's samples (JMH clears the counters after iteration set-up) divided by the
         * measurement iterations: JMH adds an {@code EVENTS} counter up over the iterations, so the table's score is
         * then the mean of the printed per-iteration values (as in {@code PageProbeBench}).
         */
        void publish() {
            segmentedBestNanos = Math.round((double) seg / iterations);
            onePlanBestNanos = Math.round((double) one / iterations);
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        ModelShape.Case c = ModelShape.of(shape).at(size);
        ModelShape m = c.shape();
        check(!m.mla(), "Jlama keeps K and V: a shape with K and V, not " + shape);
        int tokens = Math.toIntExact(c.tokens());
        int block = ModelShape.BLOCK_SIZE;
        int elem = m.elemBytes();
        long rowBytes = (long) m.heads() * m.headDim() * elem;
        int cell = m.headDim() * elem;
        Arena arena = closing(Arena.ofShared());
        cpu = closing(Backends.open("cpu"));

        // One allocation per layer and kind, filled from the fixture's seed.
        List<CacheLayer> wholeLayers = new ArrayList<>();
        MemorySegment[][] whole = new MemorySegment[m.layers()][2];
        for (int l = 0; l < m.layers(); l++) {
            for (int kind = 0; kind < 2; kind++) {
                MemorySegment s = arena.allocate(rowBytes * tokens, 64);
                SplittableRandom rnd = new SplittableRandom(KvFixture.SEED + 2L * l + kind);
                for (long i = 0; i < s.byteSize() / 8; i++) {
                    s.setAtIndex(ValueLayout.JAVA_LONG, i, rnd.nextLong());
                }
                whole[l][kind] = s;
            }
            wholeLayers.add(CacheLayer.of(l, 0, m.heads(), region(whole[l][0], block * rowBytes, rowBytes, cell),
                    region(whole[l][1], block * rowBytes, rowBytes, cell)));
        }
        KvCacheGroup oneGroup = KvCacheGroup.of(block, tokens / block, wholeLayers);
        int[] table = java.util.stream.IntStream.range(0, tokens / block).toArray();
        one = cpu.compile(oneGroup, List.of(RequestBlocks.of(table, tokens, block)), io.kvchecksum.ChecksumSpec.STANDARD);

        // Jlama's pages: [layers, 2, positionsPerPage, row], each its own allocation, the same bytes copied in.
        int per = positionsPerPage;
        int checksumPage = BigInteger.valueOf(per).gcd(BigInteger.valueOf(block)).intValueExact();
        List<KvCacheGroup> pages = new ArrayList<>();
        for (int at = 0; at < tokens; at += per) {
            MemorySegment page = arena.allocate(2L * m.layers() * per * rowBytes, 64);
            int n = Math.min(per, tokens - at);
            List<CacheLayer> layers = new ArrayList<>();
            for (int l = 0; l < m.layers(); l++) {
                KvRegion[] kv = new KvRegion[2];
                for (int kind = 0; kind < 2; kind++) {
                    MemorySegment slice = page.asSlice((2L * l + kind) * per * rowBytes, per * rowBytes);
                    MemorySegment.copy(whole[l][kind], at * rowBytes, slice, 0, n * rowBytes);
                    kv[kind] = region(slice, checksumPage * rowBytes, rowBytes, cell);
                }
                layers.add(CacheLayer.of(l, 0, m.heads(), kv[0], kv[1]));
            }
            pages.add(KvCacheGroup.of(checksumPage, per / checksumPage, layers));
        }
        KvSegments session = KvSegments.of(pages);
        segmented = cpu.compile(session, List.of(KvSegments.request(tokens, 0, block)), io.kvchecksum.ChecksumSpec.STANDARD);
        launches = segmented.launches().stream().map(CompiledPlan.Launch::slices).toList();
        numBlocks = one.numBlocks(0);

        long[] expected = cpu.blockChecksums(one).get(0);
        check(Arrays.equals(expected, cpu.blockChecksums(segmented).get(0)), "segmented pass differs from the one plan");
        check(Arrays.equals(expected, perLaunch()), "per-launch calls differ from the one plan");
        System.out.println("# " + cpu.description() + "; " + shape + " " + c.label(size) + ", " + tokens + " tokens, "
                + session.segments().size() + " Jlama pages of " + per + " positions: " + segmented.launches().size()
                + " launches in " + segmented.batches().size() + " batches, one plan " + one.launches().size()
                + " launch; " + c.kvBytes() + " bytes");
    }

    private static KvRegion region(MemorySegment s, long pageStride, long rowBytes, int cell) {
        return new KvRegion(KvMemory.host(s), 0, pageStride, rowBytes, cell, cell);
    }

    /** The session: one plan, one call, every segment's launches in one pass. */
    @Benchmark
    public long[] segmented(Interleaved in) {
        in.publish();
        return cpu.blockChecksums(segmented).get(0);
    }

    /** The same bytes in one allocation per layer: one launch, the fused pass at its best. */
    @Benchmark
    public long[] onePlan(Interleaved in) {
        in.publish();
        return cpu.blockChecksums(one).get(0);
    }

    /** The segmented plan's launches each as its own call, their block checksums added: for scale. */
    @Benchmark
    public long[] perLaunch() {
        long[] out = new long[numBlocks];
        for (SlicePlan p : launches) {
            long[] v = cpu.blockChecksums(p);
            // launch block k is block firstBlock + k of its own (smaller) size, inside one of the request's blocks
            for (int k = 0; k < v.length; k++) {
                out[(int) ((p.request().firstBlock() + k) * p.request().blockSize() / ModelShape.BLOCK_SIZE)] += v[k];
            }
        }
        return out;
    }
}
