package io.kvchecksum.internal;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import io.kvchecksum.spi.CpuWorkSplit;

import java.lang.foreign.MemorySegment;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.WeakHashMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;

/**
 * The fast CPU backend: the multiply-free Vector API loop ({@link VectorSliceKernel}) where the JVM has
 * {@code jdk.incubator.vector}, else a scalar loop, split over the machine's cores for requests of a few MiB or more
 * (handing work to another thread costs tens of microseconds, more than a small request takes). Memory of a
 * confined {@link java.lang.foreign.Arena} can only be read by its owner, so such requests run on the calling thread.
 *
 * <p>Blocks are visited in the order of their cells' addresses, not of the block table, and a block that lies within
 * one page is read at a constant token stride, so the JIT checks bounds once per loop; MLA rows (the whole cell, back
 * to back) are one stream per block, and from memory the 512-bit loops read side-by-side heads (Llama-3-8B's 2 KiB
 * rows) a whole row per pass ({@link SliceKernel#rowsAffine}). What each of these is worth was measured:
 * {@code docs/bench-cpu.md}.
 */
public final class FastCpuBackend implements Backend {
    /** Below this many KV bytes a request runs on the calling thread (the read bound splits work the same way). */
    public static final long PARALLEL_BYTES = CpuWorkSplit.PARALLEL_BYTES;
    /** The smallest piece of work handed to another thread. */
    public static final long TASK_BYTES = CpuWorkSplit.TASK_BYTES;

    private static final SliceKernel KERNEL = loadKernel(false);
    /** The mixed mode's loops: the same structure as {@link #KERNEL}'s, each piece through the mixer as it is read. */
    private static final SliceKernel MIXED_KERNEL = loadKernel(true);
    private static volatile ForkJoinPool pool;
    /** Never started: only asked whether a segment is readable by a thread other than its owner. */
    private static final Thread NOT_THE_CALLER = Thread.ofPlatform().unstarted(() -> { });

    private final int threads;
    /** The standard mode's loops: {@link #KERNEL}, or in tests the vector loops with another choice of widths. */
    private final SliceKernel kernel;
    /** From this many KV bytes a request on the calling thread is read as from memory: {@link #PARALLEL_BYTES}. */
    private final long streamingBytes;
    /** Whether plans in cache on the calling thread run in their {@link Prepared} form; false only in tests and A/B. */
    private final boolean prepare;
    /** Whether a plan takes its {@link Prepared} form on its first call rather than its second; true only in tests. */
    private final boolean prepareFirst;
    /** The verifying copy's choices: {@link CpuCopy#SHIPPED}, or in tests and A/B measurements another. */
    private final CpuCopy copy;
    /** The mixed mode's loops: {@link #MIXED_KERNEL}, or in tests the vector loops with another choice of row pass. */
    private final SliceKernel mixedKernel;

    public FastCpuBackend() {
        this(Runtime.getRuntime().availableProcessors());
    }

    /** A backend using at most {@code threads} threads per call (1: the calling thread only). */
    public FastCpuBackend(int threads) {
        this(threads, KERNEL, PARALLEL_BYTES);
    }

    private FastCpuBackend(int threads, SliceKernel kernel, long streamingBytes) {
        this(threads, kernel, streamingBytes, true, false);
    }

    /**
     * The backend with {@code prepare} false runs plans in cache through {@link #compute} on every call instead of their
     * {@link Prepared} form (the previous path, kept so tests and the A/B measurement can run both); with
     * {@code prepareFirst} a plan takes its prepared form on its first call instead of its second (tests: the golden
     * suites run each plan once).
     */
    private FastCpuBackend(int threads, SliceKernel kernel, long streamingBytes, boolean prepare, boolean prepareFirst) {
        this(threads, kernel, streamingBytes, prepare, prepareFirst, CpuCopy.SHIPPED);
    }

    private FastCpuBackend(int threads, SliceKernel kernel, long streamingBytes, boolean prepare, boolean prepareFirst,
            CpuCopy copy) {
        this(threads, kernel, streamingBytes, prepare, prepareFirst, copy, MIXED_KERNEL);
    }

    private FastCpuBackend(int threads, SliceKernel kernel, long streamingBytes, boolean prepare, boolean prepareFirst,
            CpuCopy copy, SliceKernel mixedKernel) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        this.threads = threads;
        this.kernel = kernel;
        this.streamingBytes = streamingBytes;
        this.prepare = prepare;
        this.prepareFirst = prepareFirst;
        this.copy = java.util.Objects.requireNonNull(copy);
        this.mixedKernel = java.util.Objects.requireNonNull(mixedKernel);
    }

    /**
     * For tests and same-JVM A/B measurements only: the shipped backend whose verifying copy makes the choices of
     * {@code copy} (how a large launch is split over the pool, from how many bytes the loops for memory run).
     */
    static FastCpuBackend withCopy(int threads, CpuCopy copy) {
        return new FastCpuBackend(threads, KERNEL, PARALLEL_BYTES, true, false, copy);
    }

    /**
     * For same-JVM A/B measurements ({@code CopyTurns -Dcopy.variant=io.kvchecksum.internal.FastCpuBackend#runRangeCopy}):
     * the shipped backend with the verifying copy's split over the pool before the split by layers
     * ({@link CpuCopy.Split#RUN_RANGES}).
     */
    static FastCpuBackend runRangeCopy(int threads) {
        return withCopy(threads, new CpuCopy(CpuCopy.Split.RUN_RANGES, PARALLEL_BYTES));
    }

    /**
     * For tests only: the backend on the Vector API loops with {@code streams} instead of the choice the selector
     * made for this JVM and CPU ({@link KernelSpecies#CHOSEN}), so that every choice it can make runs the golden suite
     * on any machine; from {@code streamingBytes} KV bytes on (0: every request) a request on the calling thread takes
     * the loops for memory, where the choices differ. Needs {@code jdk.incubator.vector}.
     */
    static FastCpuBackend withStreams(int threads, KernelSpecies.Streams streams, long streamingBytes) {
        return new FastCpuBackend(threads, new VectorSliceKernel(streams), streamingBytes);
    }

    /**
     * For tests only: the shipped backend whose mixed mode reads 2 KiB rows at 512 bits from memory in {@code streams}
     * streams of the block (1, 2 or 4) instead of the choice made for this CPU ({@link KernelSpecies#MIXED_STREAMS});
     * from {@code streamingBytes} KV bytes on (0: every request) a request on the calling thread takes the loops for
     * memory. Needs {@code jdk.incubator.vector}.
     */
    static FastCpuBackend withMixedStreams(int threads, int streams, long streamingBytes) {
        return new FastCpuBackend(threads, KERNEL, streamingBytes, true, false, CpuCopy.SHIPPED,
                new MixedVectorSliceKernel(true, true, streams));
    }

    /**
     * For tests only: the shipped loops with every plan in cache prepared from its first call ({@code prepared}; the
     * golden suites run each plan once), or the in-cache loops before issue 28's in-cache work (every call through
     * {@link #compute}, K's and V's eight-vector cells in one loop). Needs {@code jdk.incubator.vector}.
     */
    static FastCpuBackend inCache(int threads, boolean prepared) {
        return prepared
                ? new FastCpuBackend(threads, new VectorSliceKernel(KernelSpecies.CHOSEN), PARALLEL_BYTES, true, true)
                : new FastCpuBackend(threads, new VectorSliceKernel(KernelSpecies.CHOSEN, true, false), PARALLEL_BYTES, false,
                        false);
    }

    @Override
    public String name() {
        return "cpu";
    }

    @Override
    public String description() {
        return "cpu (" + kernel.describe() + ", " + threads + " thread" + (threads == 1 ? "" : "s")
                + (copy == CpuCopy.SHIPPED ? "" : "; copy " + copy.choice()) + ")";
    }

    @Override
    public BackendLimits limits() {
        return BackendLimits.CPU;
    }

    /**
     * The whole plan in one pass: its whole-piece launches through the vector or scalar loops (one launch split over
     * the pool when large; several launches, a step's segments and requests, as one piece of work whose size decides
     * the threads and the loops, see {@link #runTogether}), the byte-cell ones through {@link ByteCellSums}; both modes
     * through the same paths, only the kernel differs.
     */
    @Override
    public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
        List<CompiledPlan.Launch> launches = plan.launches();
        long[][] values = new long[launches.size()][];
        boolean blocks = output == CompiledPlan.Output.BLOCK_CHECKSUMS;
        if (launches.size() == 1 && launches.get(0).cellKind() == CompiledPlan.CellKind.WHOLE_PIECES) {
            SlicePlan p = launches.get(0).slices();
            values[0] = blocks ? blockChecksums(p) : sliceValues(p);
            return PendingChecksums.completed(plan.gather(output, values));
        }
        Together together = together(plan);
        for (int i : together.byteCells) {
            SlicePlan p = launches.get(i).slices();
            values[i] = blocks ? p.sliceSums(ByteCellSums.values(p)).combine() : ByteCellSums.values(p);
        }
        int[] at = together.at;
        if (at.length == 1) {
            SlicePlan p = launches.get(at[0]).slices();
            values[at[0]] = blocks ? blockChecksums(p) : sliceValues(p);
        } else if (at.length > 1) {
            SlicePlan[] plans = new SlicePlan[at.length];
            for (int k = 0; k < at.length; k++) {
                plans[k] = launches.get(at[k]).slices();
            }
            long[][] out = runTogether(together, plans, blocks);
            for (int k = 0; k < out.length; k++) {
                values[at[k]] = out[k];
            }
        }
        return PendingChecksums.completed(plan.gather(output, values));
    }

    /**
     * The verifying copy in one pass ({@link CpuCopy}): each piece loaded once, stored to the destination and summed,
     * split over the pool like the checksums from {@link #PARALLEL_BYTES} on.
     */
    @Override
    public PendingChecksums runCopy(CopyPlan plan, OptionalLong stream) {
        return PendingChecksums.completed(copy.run(plan, threads, FastCpuBackend::pool, NOT_THE_CALLER));
    }

    /**
     * What {@link #run} needs of a plan besides its bytes, made on the plan's first run and kept while the plan lives
     * (an engine runs one plan step after step, and a segmented cache's plan is thousands of launches): which launches
     * are whole-piece ones, each one's block order, bytes and slice factors, their total, whether all of them may be
     * read by the pool's threads, and the last packing of their work into tasks. Nothing of it is resolved per launch
     * in a run. Keys are plans by identity, held weakly; nothing here refers back to the plan or its slice plans (a
     * slice plan keeps its compiled plan), so a plan no longer used is collected with its entry.
     */
    private static final class Together {
        /** The byte-cell launches' indices among the plan's launches. */
        final int[] byteCells;
        /** The whole-piece launches' indices among the plan's launches; the arrays below are in this order. */
        final int[] at;
        final Blocks[] blocks;
        /** KV bytes of each launch. */
        final long[] bytes;
        /** Each launch's slices' factors (the factor of its slice {@code i}'s plan row). */
        final long[][] factors;
        final long total;
        /** Whether every launch's memory may be read by another thread (not a confined arena's). */
        final boolean sharable;
        /** The work cut into tasks for the last thread count it was asked for. */
        volatile Packing packing;

        Together(CompiledPlan plan) {
            List<CompiledPlan.Launch> launches = plan.launches();
            List<Integer> whole = new ArrayList<>();
            List<Integer> bytesCells = new ArrayList<>();
            for (int i = 0; i < launches.size(); i++) {
                (launches.get(i).cellKind() == CompiledPlan.CellKind.WHOLE_PIECES ? whole : bytesCells).add(i);
            }
            byteCells = bytesCells.stream().mapToInt(Integer::intValue).toArray();
            at = whole.stream().mapToInt(Integer::intValue).toArray();
            int n = at.length;
            blocks = new Blocks[n];
            bytes = new long[n];
            factors = new long[n][];
            long[] rowFactors = new long[plan.numRows()];
            boolean[] known = new boolean[plan.numRows()];
            long sum = 0;
            boolean shared = true;
            for (int k = 0; k < n; k++) {
                CompiledPlan.Launch l = launches.get(at[k]);
                SlicePlan p = l.slices();
                // the block order only where the launch runs with others: a plan of one launch takes run(SlicePlan)
                blocks[k] = n == 1 ? null : Blocks.of(p);
                bytes[k] = kvBytes(p);
                sum += bytes[k];
                int[] rows = l.rows();
                // a slice's factor is its (layer, head)'s: launches over the same rows share one array
                boolean all = rows.length == rowFactors.length;
                for (int i = 0; i < rows.length; i++) {
                    if (!known[rows[i]]) {
                        rowFactors[rows[i]] = p.slice(i).factor();
                        known[rows[i]] = true;
                    }
                    all &= rows[i] == i;
                }
                if (all) {
                    factors[k] = rowFactors;
                } else {
                    factors[k] = new long[rows.length];
                    for (int i = 0; i < rows.length; i++) {
                        factors[k][i] = rowFactors[rows[i]];
                    }
                }
                shared = shared && (n == 1 || sharable(p));
            }
            total = sum;
            sharable = shared;
        }
    }

    /**
     * A plan's whole-piece work cut into tasks for {@code threads} threads: each task a list of units; a unit is one
     * launch's blocks {@code order[p0] .. order[p1-1]} of one layer, or (a small launch) all its layers and blocks.
     */
    private record Packing(int threads, List<Unit[]> tasks) {
    }

    private static final Map<CompiledPlan, Together> TOGETHER =
            Collections.synchronizedMap(new WeakHashMap<>());

    private static Together together(CompiledPlan plan) {
        Together t = TOGETHER.get(plan);
        if (t == null) {
            t = new Together(plan);
            TOGETHER.put(plan, t);
        }
        return t;
    }

    /**
     * Several whole-piece launches (a segmented cache's shares, a step's requests) as one piece of work: their bytes
     * together decide, as one request's do, whether it runs on the calling thread or on the pool and whether its loops
     * read from memory. On the pool every launch's layers are cut into block ranges of about
     * {@code max(TASK_BYTES, total/4T)} bytes (a launch smaller than that is one range of all its layers) and
     * consecutive small ranges (a Jlama page of a few positions is a launch of tens of KiB per layer) are packed into
     * one task, so a session of hundreds of small segments is a few tasks, handed over in one {@code invokeAll}. Each
     * launch keeps its own values, in its own layout. Everything but the values is the plan's {@link Together}, made
     * once: a run allocates per task, not per launch.
     *
     * @return for each whole-piece launch, in order, its block checksums ({@code blocks}) or slice sums
     */
    private long[][] runTogether(Together g, SlicePlan[] plans, boolean blocks) {
        int n = g.at.length;
        long[][] values = new long[n][];
        for (int k = 0; k < n; k++) {
            SlicePlan p = plans[k];
            values[k] = new long[blocks ? p.numBlocks() : p.numSlices() * p.numBlocks()];
        }
        long total = g.total;
        if (threads == 1 || !g.sharable || total < PARALLEL_BYTES) {
            boolean streaming = total >= streamingBytes;
            Scratch scratch = new Scratch();
            Sink sink = new Sink();
            for (int k = 0; k < n; k++) {
                SlicePlan p = plans[k];
                int nb = p.numBlocks();
                if (blocks) {
                    sink.toBlocks(values[k], g.factors[k]);
                } else {
                    sink.toSlices(values[k], nb);
                }
                for (SlicePlan.LayerRun layer : p.layerRuns()) {
                    compute(p, layer, g.blocks[k], 0, nb, streaming, sink, scratch);
                }
            }
            return values;
        }
        Packing packing = g.packing;
        if (packing == null || packing.threads != threads) {
            packing = pack(g, plans, threads);
            g.packing = packing;
        }
        List<Callable<Runnable>> calls = new ArrayList<>(packing.tasks.size());
        for (Unit[] units : packing.tasks) {
            calls.add(() -> runUnits(g, plans, units, blocks, values));
        }
        if (calls.size() == 1) {
            try {
                calls.get(0).call().run();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return values;
        }
        for (Runnable r : PoolCalls.invokeAll(pool(threads), calls, "checksumming")) {
            r.run();
        }
        return values;
    }

    /** Cuts a plan's launches into units and packs them into tasks of about {@code max(TASK_BYTES, total/4T)} bytes. */
    private static Packing pack(Together g, SlicePlan[] plans, int threads) {
        long target = Math.max(TASK_BYTES, g.total / (4L * threads));
        List<Unit[]> tasks = new ArrayList<>();
        List<Unit> current = new ArrayList<>();
        long currentBytes = 0;
        for (int k = 0; k < g.at.length; k++) {
            SlicePlan p = plans[k];
            int nb = p.numBlocks();
            long tokens = p.request().numTokens() - p.request().startToken();
            long bytes = g.bytes[k];
            if (bytes < target) {
                // a small launch: all its layers, all its blocks, one range
                current.add(new Unit(k, null, 0, nb));
                currentBytes += bytes;
                if (currentBytes >= target) {
                    tasks.add(current.toArray(Unit[]::new));
                    current.clear();
                    currentBytes = 0;
                }
                continue;
            }
            for (SlicePlan.LayerRun run : p.layerRuns()) {
                long layerBytes = run.numHeads() * 8L * p.slice(run.firstSlice()).pieces() * tokens;
                long perBlock = Math.max(1, Math.ceilDiv(layerBytes, (long) nb));
                int step = (int) Math.max(1, Math.min(nb, target / perBlock));
                for (int p0 = 0; p0 < nb; p0 += step) {
                    int p1 = Math.min(nb, p0 + step);
                    current.add(new Unit(k, run, p0, p1));
                    currentBytes += perBlock * (p1 - p0);
                    if (currentBytes >= target) {
                        tasks.add(current.toArray(Unit[]::new));
                        current.clear();
                        currentBytes = 0;
                    }
                }
            }
        }
        if (!current.isEmpty()) {
            tasks.add(current.toArray(Unit[]::new));
        }
        return new Packing(threads, List.copyOf(tasks));
    }

    /**
     * One task of {@link #runTogether}: its units into {@code values}. A whole launch's unit is its launch's only one,
     * so it writes the launch's values in place through the task's one sink; a unit of one layer's block range adds
     * into its own part, published on the calling thread, since the launch's other layers run in other tasks.
     */
    private Runnable runUnits(Together g, SlicePlan[] plans, Unit[] units, boolean blocks, long[][] values) {
        Scratch scratch = new Scratch();
        Sink sink = new Sink();
        List<Runnable> publish = null;
        long touched = 0;
        for (Unit u : units) {
            int k = u.launch;
            SlicePlan p = plans[k];
            Blocks order = g.blocks[k];
            if (!blocks || u.run == null) {
                // disjoint cells of the launch's values (slice sums), or all of them (a whole launch): in place
                if (blocks) {
                    sink.toBlocks(values[k], g.factors[k]);
                } else {
                    sink.toSlices(values[k], p.numBlocks());
                }
                if (u.run == null) {
                    List<SlicePlan.LayerRun> runs = p.layerRuns();
                    for (int r = 0; r < runs.size(); r++) {
                        // a launch of one block: its next layer is what the head-by-head reads need next
                        if (u.p1 - u.p0 == 1 && r + 1 < runs.size()) {
                            touched += touchLayer(p, runs.get(r + 1), order, u.p0);
                        }
                        compute(p, runs.get(r), order, u.p0, u.p1, true, sink, scratch);
                    }
                } else {
                    compute(p, u.run, order, u.p0, u.p1, true, sink, scratch);
                }
                continue;
            }
            long[] part = new long[u.p1 - u.p0];
            compute(p, u.run, order, u.p0, u.p1, true, Sink.part(part, g.factors[k], u.p0), scratch);
            long[] out = values[k];
            if (publish == null) {
                publish = new ArrayList<>();
            }
            publish.add(() -> {
                for (int i = 0; i < part.length; i++) {
                    out[order.order[u.p0 + i]] += part[i];
                }
            });
        }
        if (touched == 42) {
            blackhole = touched;   // the touched bytes must look used, or the JIT drops the loads
        }
        if (publish == null) {
            return NOTHING;
        }
        List<Runnable> all = publish;
        return () -> all.forEach(Runnable::run);
    }

    /**
     * One launch's blocks {@code order[p0] .. order[p1-1]} of one layer ({@code run}) or of all its layers
     * ({@code run} null), within a task of {@link #runTogether}; {@code launch} indexes the plan's {@link Together}.
     */
    private record Unit(int launch, SlicePlan.LayerRun run, int p0, int p1) {
    }

    private long[] blockChecksums(SlicePlan plan) {
        if (prepare) {
            Prepared pr = prepared(plan);
            if (pr != null) {
                return pr.run(kernel);
            }
        }
        long[] out = new long[plan.numBlocks()];
        long[] factors = new long[plan.numSlices()];
        for (int i = 0; i < factors.length; i++) {
            factors[i] = plan.slice(i).factor();
        }
        // on the calling thread: straight into the result, nothing to allocate or publish
        run(plan, Sink.blocks(out, factors), (task) -> {
            long[] part = new long[task.p1 - task.p0];
            compute(plan, task, Sink.part(part, factors, task.p0));
            return () -> {
                for (int i = 0; i < part.length; i++) {
                    out[task.blocks.order[task.p0 + i]] += part[i];
                }
            };
        });
        return out;
    }

    private long[] sliceValues(SlicePlan plan) {
        int nb = plan.numBlocks();
        long[] values = new long[plan.numSlices() * nb];
        Sink into = Sink.slices(values, nb);
        run(plan, into, (task) -> {
            compute(plan, task, into);
            return NOTHING;
        });
        return values;
    }

    @Override
    public void close() {
    }

    /**
     * Adler-32 of the stream in chunks of at least {@value #DIGEST_CHUNK_BYTES} bytes on this backend's threads, joined
     * in order ({@link PageDigestParallel}); streams under {@value #PARALLEL_BYTES} bytes, or in a confined arena, on
     * the calling thread.
     */
    @Override
    public long pageDigest(PageDigestPlan plan) {
        boolean parallel = threads > 1 && plan.totalBytes() >= PARALLEL_BYTES && PageDigestParallel.sharable(plan, NOT_THE_CALLER);
        long chunk = Math.max(DIGEST_CHUNK_BYTES, plan.totalBytes() / (4L * threads));
        return PageDigestParallel.digest(plan, name(), parallel ? pool(threads) : null, parallel, chunk);
    }

    /** The smallest chunk of the page digest handed to a thread. */
    public static final long DIGEST_CHUNK_BYTES = 1L << 20;

    @Override
    public String toString() {
        return description();
    }

    /** A layer and the blocks {@code order[p0] .. order[p1-1]}: one piece of a request split over threads. */
    private record Task(SlicePlan.LayerRun run, Blocks blocks, int p0, int p1) {
    }

    private static final Runnable NOTHING = () -> { };

    /**
     * Where slice sums go: weighted by their slice's factor into block checksums (by block column, or by position in a
     * task's part), or into the slice-sum matrix. One final class, not a lambda per operation: the call in the inner
     * loop stays monomorphic whichever operations ran before.
     */
    private static final class Sink {
        private long[] into;
        private long[] factors;
        private int p0;
        private boolean byPosition;
        private int numBlocks;

        /** A sink to be pointed somewhere ({@link #toBlocks}, {@link #toSlices}) before use: one per task, reused. */
        Sink() {
        }

        private Sink(long[] into, long[] factors, int p0, boolean byPosition, int numBlocks) {
            this.into = into;
            this.factors = factors;
            this.p0 = p0;
            this.byPosition = byPosition;
            this.numBlocks = numBlocks;
        }

        static Sink blocks(long[] out, long[] factors) {
            return new Sink(out, factors, 0, false, 0);
        }

        static Sink part(long[] part, long[] factors, int p0) {
            return new Sink(part, factors, p0, true, 0);
        }

        static Sink slices(long[] values, int numBlocks) {
            return new Sink(values, null, 0, false, numBlocks);
        }

        /** This sink as {@link #blocks}. */
        void toBlocks(long[] out, long[] factors) {
            this.into = out;
            this.factors = factors;
            this.p0 = 0;
            this.byPosition = false;
            this.numBlocks = 0;
        }

        /** This sink as {@link #slices}. */
        void toSlices(long[] values, int numBlocks) {
            this.into = values;
            this.factors = null;
            this.p0 = 0;
            this.byPosition = false;
            this.numBlocks = numBlocks;
        }

        /** Takes slice {@code slice}'s sum over the block at position {@code position}, block column {@code blockColumn}. */
        void accept(int slice, int position, int blockColumn, long sliceSum) {
            if (factors == null) {
                into[slice * numBlocks + blockColumn] = sliceSum;
            } else {
                into[byPosition ? position - p0 : blockColumn] += factors[slice] * sliceSum;
            }
        }
    }

    /** Arrays a computation reuses from layer to layer, grown when a layer needs more. */
    private static final class Scratch {
        long[] headSums = new long[0];
        long[] kOff = new long[0];
        long[] vOff = new long[0];
        long[] a = new long[0];
        long[] t = new long[0];

        /** {@link #headSums} of at least {@code heads} entries. */
        long[] headSums(int heads) {
            if (headSums.length < heads) {
                headSums = new long[heads];
            }
            return headSums;
        }

        /** Grows the offset-table path's arrays: offsets of {@code tokens} cells, per-piece sums of {@code rowPieces}. */
        void fitTable(int tokens, int rowPieces) {
            if (kOff.length < tokens) {
                kOff = new long[tokens];
                vOff = new long[tokens];
            }
            if (a.length < rowPieces) {
                a = new long[rowPieces];
                t = new long[rowPieces];
            }
        }
    }

    /**
     * Computes a task of a parallel request and returns the step that publishes its result; publishing runs on the
     * calling thread.
     */
    @FunctionalInterface
    private interface TaskBody {
        Runnable run(Task task);
    }

    /**
     * Runs the request: on the calling thread layer by layer into {@code sequential} (a small request: nothing is
     * allocated per layer, which shows in cache), else as tasks on the pool through {@code body}.
     */
    private void run(SlicePlan plan, Sink sequential, TaskBody body) {
        int nb = plan.numBlocks();
        Blocks blocks = Blocks.of(plan);
        if (!parallel(plan)) {
            boolean streaming = kvBytes(plan) >= streamingBytes;
            Scratch scratch = new Scratch();
            for (SlicePlan.LayerRun layer : plan.layerRuns()) {
                compute(plan, layer, blocks, 0, nb, streaming, sequential, scratch);
            }
            return;
        }
        List<Task> tasks = tasks(plan, nb, blocks);
        if (tasks.size() == 1) {
            body.run(tasks.get(0)).run();
            return;
        }
        List<Callable<Runnable>> calls = new ArrayList<>(tasks.size());
        for (Task t : tasks) {
            calls.add(() -> body.run(t));
        }
        for (Runnable r : PoolCalls.invokeAll(pool(threads), calls, "checksumming")) {
            r.run();
        }
    }

    private boolean parallel(SlicePlan plan) {
        return threads > 1 && kvBytes(plan) >= PARALLEL_BYTES && sharable(plan);
    }

    /** Segments of a confined arena may only be read by their owner thread: such requests stay on the caller. */
    private static boolean sharable(SlicePlan plan) {
        for (SlicePlan.Slice s : plan.slices()) {
            if (!((KvMemory.Host) s.k().memory()).segment().isAccessibleBy(NOT_THE_CALLER)
                    || (s.v() != null && !((KvMemory.Host) s.v().memory()).segment().isAccessibleBy(NOT_THE_CALLER))) {
                return false;
            }
        }
        return true;
    }

    private static long kvBytes(SlicePlan plan) {
        RequestBlocks request = plan.request();
        return plan.group().bytesPerToken() * (request.numTokens() - request.startToken());
    }

    /**
     * Every block of the request, resolved once per call for all layers: in the order of their first cell's address
     * (page, then slot), with the first token, token count, page and slot of each. Blocks are independent, and reading
     * a layer's pages in address order lets the hardware prefetchers run across page boundaries instead of restarting
     * at every page of a churned block table (the read bound reads the same bytes in address order); resolving once
     * saves two 64-bit divisions per block and layer.
     */
    record Blocks(int[] order, long[] t0, int[] n, long[] page, int[] slot) {
        static Blocks of(SlicePlan plan) {
            RequestBlocks request = plan.request();
            int nb = plan.numBlocks();
            int pageSize = plan.pageSize();
            long start = request.startToken();
            long[] keys = new long[nb];
            boolean sorted = true;
            for (int b = 0; b < nb; b++) {
                long index = request.blockStart(request.firstBlock() + b) - start;
                long key = (long) plan.page((int) (index / pageSize)) * pageSize + index % pageSize;
                keys[b] = key << 24 | b;
                sorted &= b == 0 || keys[b] > keys[b - 1];
            }
            int[] order = new int[nb];
            if (sorted || nb >= 1 << 24) {
                for (int b = 0; b < nb; b++) {
                    order[b] = b;
                }
            } else {
                Arrays.sort(keys);
                for (int p = 0; p < nb; p++) {
                    order[p] = (int) (keys[p] & ((1 << 24) - 1));
                }
            }
            long[] t0 = new long[nb];
            int[] n = new int[nb];
            long[] page = new long[nb];
            int[] slot = new int[nb];
            for (int p = 0; p < nb; p++) {
                long block = request.firstBlock() + order[p];
                t0[p] = request.blockStart(block);
                n[p] = (int) (request.blockEnd(block) - t0[p]);
                long index = t0[p] - start;
                page[p] = plan.page((int) (index / pageSize));
                slot[p] = (int) (index % pageSize);
            }
            return new Blocks(order, t0, n, page, slot);
        }

        /** Whether block position {@code p} lies within one page, so its tokens are at a constant stride. */
        boolean inOnePage(int p, int pageSize) {
            return slot[p] + n[p] <= pageSize;
        }
    }

    /** The layers cut into block ranges of about {@code max(TASK_BYTES, total/4T)} bytes. */
    private List<Task> tasks(SlicePlan plan, int nb, Blocks order) {
        List<Task> tasks = new ArrayList<>();
        long target = Math.max(TASK_BYTES, kvBytes(plan) / (4L * threads));
        for (SlicePlan.LayerRun run : plan.layerRuns()) {
            long cellBytes = 8L * plan.slice(run.firstSlice()).pieces();
            long perBlock = Math.max(1, run.numHeads() * cellBytes * plan.request().blockSize());
            int step = (int) Math.max(1, Math.min(nb, target / perBlock));
            for (int p0 = 0; p0 < nb; p0 += step) {
                tasks.add(new Task(run, order, p0, Math.min(nb, p0 + step)));
            }
        }
        return tasks;
    }

    /**
     * A task of a parallel request into {@code sink}: streaming, since a request runs in parallel only from
     * {@link #PARALLEL_BYTES} on, the size from which {@link #run} treats a request's bytes as coming from memory.
     */
    private void compute(SlicePlan plan, Task task, Sink sink) {
        compute(plan, task.run, task.blocks, task.p0, task.p1, true, sink, new Scratch());
    }

    /**
     * One layer's slice sums over the blocks at positions {@code p0 .. p1-1} of {@code blocks}, each into {@code sink};
     * {@code streaming} when the request is far larger than the caches, so its bytes come from memory.
     */
    private void compute(SlicePlan plan, SlicePlan.LayerRun run, Blocks blocks, int p0, int p1, boolean streaming,
            Sink sink, Scratch scratch) {
        SliceKernel kernel = plan.mode() == ChecksumMode.MIXED ? mixedKernel : this.kernel;
        RequestBlocks request = plan.request();
        int heads = run.numHeads();
        int firstSlice = run.firstSlice();
        SlicePlan.Slice first = plan.slice(firstSlice);
        SlicePlan.Part k = first.k();
        SlicePlan.Part v = first.v();
        MemorySegment kSeg = ((KvMemory.Host) k.memory()).segment();
        MemorySegment vSeg = v == null ? null : ((KvMemory.Host) v.memory()).segment();
        int pieces = first.pieces();
        int kPieces = k.pieces();
        int pageSize = plan.pageSize();
        long start = request.startToken();
        int maxTokens = (int) Math.min(request.blockSize(), request.numTokens() - start);
        int rowPieces = streaming ? heads * Math.max(kPieces, first.vPieces()) : 0;
        int vPieces = first.vPieces();
        boolean kAffine = kernel.affine(kPieces, k.tokenStride(), pieces);
        boolean vAffine = v == null || kernel.affine(vPieces, v.tokenStride(), pieces);
        boolean rows = streaming && heads > 1 && (run.kHeadStride() == 8L * kPieces
                || (v != null && run.vHeadStride() == 8L * vPieces));
        // Streaming side-by-side heads head by head reads each block in strided passes; reading the next block's rows
        // front to back first (one byte per cache line) lets the prefetchers stream it while this block is summed. Not
        // where the kernel reads the rows themselves front to back.
        boolean touchAhead = streaming && heads > 1
                && !kernel.rowsAffine(heads, kPieces, run.kHeadStride(), v == null ? 0 : vPieces, run.vHeadStride());
        // a block of one position from memory (Jlama's pages of one position): the kernel's one call for the row
        boolean oneRow = streaming && oneRow(kernel, run, first);
        long touched = 0;
        long[] headSums = scratch.headSums(heads);
        for (int p = p0; p < p1; p++) {
            int b = blocks.order[p];
            long t0 = blocks.t0[p];
            int n = blocks.n[p];
            int slot = blocks.slot[p];
            long page = blocks.page[p];
            if (slot + n <= pageSize && kAffine && vAffine && !(rows && kernel.streamRows())) {
                // the block within one page: token i's cell at a constant stride, no offset table
                long kBase = k.cellOffset(page, slot);
                long vBase = v == null ? 0 : v.cellOffset(page, slot);
                if (touchAhead && p + 1 < p1) {
                    touched += touchNext(blocks, p + 1, pageSize, k, kSeg, v, vSeg, heads, run);
                }
                if (oneRow && n == 1) {
                    kernel.oneRowAffine(kSeg, kBase, run.kHeadStride(), kPieces, vSeg, vBase, run.vHeadStride(), vPieces, heads,
                            t0, headSums);
                } else {
                    kernel.headsAffine(kSeg, kBase, k.tokenStride(), run.kHeadStride(), kPieces, vSeg, vBase,
                            v == null ? 0 : v.tokenStride(), run.vHeadStride(), vPieces, heads, n, t0, streaming, headSums);
                }
                for (int h = 0; h < heads; h++) {
                    sink.accept(firstSlice + h, p, b, headSums[h]);
                }
                continue;
            }
            // The offset-table path: one division per block, then step slot by slot.
            int tableIndex = (int) ((t0 - start) / pageSize);
            // its scratch, grown only when a block needs it
            scratch.fitTable(maxTokens, rowPieces);
            long[] kOff = scratch.kOff;
            long[] vOff = scratch.vOff;
            for (int i = 0; i < n; i++) {
                kOff[i] = k.cellOffset(page, slot);
                if (v != null) {
                    vOff[i] = v.cellOffset(page, slot);
                }
                if (++slot == pageSize && i + 1 < n) {
                    slot = 0;
                    page = plan.page(++tableIndex);
                }
            }
            Arrays.fill(headSums, 0, heads, 0);
            addRegion(kernel, kSeg, k.pieces(), run.kHeadStride(), kOff, n, t0, pieces, 0, heads, scratch.a, scratch.t, headSums,
                    streaming);
            if (v != null) {
                addRegion(kernel, vSeg, v.pieces(), run.vHeadStride(), vOff, n, t0, pieces, kPieces, heads, scratch.a, scratch.t,
                        headSums, streaming);
            }
            for (int h = 0; h < heads; h++) {
                sink.accept(firstSlice + h, p, b, headSums[h]);
            }
        }
        if (touched == 42) {
            blackhole = touched;   // the touched bytes must look used, or the JIT drops the loads
        }
    }

    private static volatile long blackhole;

    /**
     * Plans this backend ran in cache on the calling thread, each with its {@link Prepared} form or {@link #UNPREPARED};
     * weak keys, as {@link #TOGETHER}'s. {@link #lastPrepared} answers an engine that checks the same plan again
     * without the map's lock.
     */
    private final Map<SlicePlan, Object> preparedPlans =
            Collections.synchronizedMap(new WeakHashMap<>());
    private static final Object UNPREPARED = new Object();
    /** A plan run once so far. */
    private static final Object SEEN = new Object();
    private volatile LastPrepared lastPrepared;

    /** The plan last run and its form; weakly, so a backend kept for the process does not keep the plan. */
    private record LastPrepared(WeakReference<SlicePlan> plan, Object prepared) {
    }

    /**
     * {@return the plan's {@link Prepared} form, made on its second call (a plan run once, as a call that builds its
     * own, pays nothing for it; with {@code prepareFirst}, in tests, on its first); null where the plan does not take
     * one or has not earned it yet}
     */
    private Prepared prepared(SlicePlan plan) {
        LastPrepared last = lastPrepared;
        if (last != null && last.plan.get() == plan) {
            return last.prepared instanceof Prepared p ? p : null;
        }
        Object o = preparedPlans.get(plan);
        if (o == null && !prepareFirst) {
            preparedPlans.put(plan, SEEN);
            return null;
        }
        if (o == null || o == SEEN) {
            Prepared p = plan.mode() == ChecksumMode.STANDARD && !parallel(plan) && kvBytes(plan) < streamingBytes
                    ? Prepared.of(plan, kernel) : null;
            o = p == null ? UNPREPARED : p;
            preparedPlans.put(plan, o);
        }
        lastPrepared = new LastPrepared(new WeakReference<>(plan), o);
        return o instanceof Prepared p ? p : null;
    }

    /**
     * A plan read in cache on the calling thread, flattened once (issue 28): every layer's segments, strides and shape
     * and every (layer, block)'s cell offsets in a few arrays, walked front to back. {@link FastCpuBackend#compute}
     * finds the same arguments through the plan's objects (layer run, slice, part, memory, segment) on every call, and
     * in cache those lookups and the dispatch around them cost 20-35 ns a layer, 5-10% of a 1 MiB pass
     * (docs/bench-cpu.md, "What limits the ratios"). Only where every block lies within one page and every region takes
     * the kernel's constant-stride loops ({@link SliceKernel#affine}); a plan that does not runs through
     * {@link FastCpuBackend#compute}.
     */
    private static final class Prepared {
        /**
         * At most this many (layer, block) pairs, 256 KiB of cell offsets: a plan in cache of many tiny blocks would
         * otherwise hold more offsets than it has KV bytes.
         */
        static final long MAX_PREPARED_SLICES = 16_384;

        final int nb;
        final int layers;
        final MemorySegment[] kSeg;
        final MemorySegment[] vSeg;
        /** per layer: kStride, kHeadStride, vStride, vHeadStride */
        final long[] strides;
        /** per layer: kPieces, vPieces, heads, firstSlice */
        final int[] shape;
        /** per layer and block position: kBase, vBase */
        final long[] bases;
        final long[] t0;
        final int[] n;
        final int[] column;
        final long[] factors;
        final int maxHeads;
        /**
         * per layer: whether it is read with the next one in one loop ({@link SliceKernel#streamPair}: both one head of
         * one stream without V, MLA's latent rows, of the same cell, where the kernel {@link SliceKernel#pairsStreams});
         * the next layer is then skipped
         */
        final boolean[] pairNext;

        Prepared(int nb, int layers, MemorySegment[] kSeg, MemorySegment[] vSeg, long[] strides, int[] shape, long[] bases,
                long[] t0, int[] n, int[] column, long[] factors, int maxHeads, boolean[] pairNext) {
            this.nb = nb;
            this.layers = layers;
            this.kSeg = kSeg;
            this.vSeg = vSeg;
            this.strides = strides;
            this.shape = shape;
            this.bases = bases;
            this.t0 = t0;
            this.n = n;
            this.column = column;
            this.factors = factors;
            this.maxHeads = maxHeads;
            this.pairNext = pairNext;
        }

        static Prepared of(SlicePlan plan, SliceKernel kernel) {
            int nb = plan.numBlocks();
            List<SlicePlan.LayerRun> runs = plan.layerRuns();
            if ((long) nb * runs.size() > MAX_PREPARED_SLICES) {
                return null;
            }
            Blocks blocks = Blocks.of(plan);
            int pageSize = plan.pageSize();
            for (int p = 0; p < nb; p++) {
                if (!blocks.inOnePage(p, pageSize)) {
                    return null;
                }
            }
            int layers = runs.size();
            MemorySegment[] kSeg = new MemorySegment[layers];
            MemorySegment[] vSeg = new MemorySegment[layers];
            long[] strides = new long[4 * layers];
            int[] shape = new int[4 * layers];
            long[] bases = new long[2 * layers * nb];
            int maxHeads = 1;
            for (int r = 0; r < layers; r++) {
                SlicePlan.LayerRun run = runs.get(r);
                SlicePlan.Slice first = plan.slice(run.firstSlice());
                SlicePlan.Part k = first.k();
                SlicePlan.Part v = first.v();
                int pieces = first.pieces();
                if (!kernel.affine(k.pieces(), k.tokenStride(), pieces)
                        || (v != null && !kernel.affine(first.vPieces(), v.tokenStride(), pieces))) {
                    return null;
                }
                kSeg[r] = ((KvMemory.Host) k.memory()).segment();
                vSeg[r] = v == null ? null : ((KvMemory.Host) v.memory()).segment();
                strides[4 * r] = k.tokenStride();
                strides[4 * r + 1] = run.kHeadStride();
                strides[4 * r + 2] = v == null ? 0 : v.tokenStride();
                strides[4 * r + 3] = run.vHeadStride();
                shape[4 * r] = k.pieces();
                shape[4 * r + 1] = first.vPieces();
                shape[4 * r + 2] = run.numHeads();
                shape[4 * r + 3] = run.firstSlice();
                maxHeads = Math.max(maxHeads, run.numHeads());
                for (int p = 0; p < nb; p++) {
                    bases[2 * (r * nb + p)] = k.cellOffset(blocks.page[p], blocks.slot[p]);
                    bases[2 * (r * nb + p) + 1] = v == null ? 0 : v.cellOffset(blocks.page[p], blocks.slot[p]);
                }
            }
            long[] factors = new long[plan.numSlices()];
            for (int i = 0; i < factors.length; i++) {
                factors[i] = plan.slice(i).factor();
            }
            boolean[] pairNext = new boolean[layers];
            for (int r = 0; kernel.pairsStreams() && r + 1 < layers; r++) {
                if (oneStream(vSeg, strides, shape, r) && oneStream(vSeg, strides, shape, r + 1)
                        && shape[4 * r] == shape[4 * (r + 1)]) {
                    pairNext[r++] = true;
                }
            }
            return new Prepared(nb, layers, kSeg, vSeg, strides, shape, bases, blocks.t0, blocks.n,
                    blocks.order, factors, maxHeads, pairNext);
        }

        /** Whether layer {@code r} is one head without V whose cells lie back to back: one stream per block (MLA). */
        private static boolean oneStream(MemorySegment[] vSeg, long[] strides, int[] shape, int r) {
            return vSeg[r] == null && shape[4 * r + 2] == 1 && strides[4 * r] == 8L * shape[4 * r];
        }

        /**
         * {@return the plan's block checksums, as {@link FastCpuBackend#blockChecksums} computes them through
         * {@link FastCpuBackend#compute}}
         */
        long[] run(SliceKernel kernel) {
            long[] out = new long[nb];
            long[] sums = new long[maxHeads];
            for (int r = 0; r < layers; r++) {
                MemorySegment k = kSeg[r];
                MemorySegment v = vSeg[r];
                long kStride = strides[4 * r];
                long kHeadStride = strides[4 * r + 1];
                long vStride = strides[4 * r + 2];
                long vHeadStride = strides[4 * r + 3];
                int kPieces = shape[4 * r];
                int vPieces = shape[4 * r + 1];
                int heads = shape[4 * r + 2];
                int first = shape[4 * r + 3];
                if (pairNext[r]) {
                    MemorySegment k2 = kSeg[r + 1];
                    long f2 = factors[shape[4 * (r + 1) + 3]];
                    for (int p = 0; p < nb; p++) {
                        out[column[p]] += kernel.streamPair(k, bases[2 * (r * nb + p)], factors[first], k2,
                                bases[2 * ((r + 1) * nb + p)], f2, n[p], t0[p], kPieces);
                    }
                    r++;
                    continue;
                }
                for (int p = 0; p < nb; p++) {
                    int at = 2 * (r * nb + p);
                    long sum = 0;
                    if (v == null && heads == 1) {
                        // one head without V (MLA's latent row): the kernel's loop itself, not its per-head dispatch
                        sum = factors[first] * kernel.sumAffine(k, bases[at], kStride, n[p], t0[p], kPieces, 0, kPieces);
                    } else {
                        kernel.headsInCache(k, bases[at], kStride, kHeadStride, kPieces, v, bases[at + 1], vStride,
                                vHeadStride, vPieces, heads, n[p], t0[p], sums);
                        for (int h = 0; h < heads; h++) {
                            sum += factors[first + h] * sums[h];
                        }
                    }
                    out[column[p]] += sum;
                }
            }
            return out;
        }
    }

    /**
     * Touches layer {@code run}'s rows of block position {@code p} ahead (one byte per cache line), where the loops for
     * memory read that layer head by head: what {@link #compute} does for the next block within a layer, here for the
     * next layer of a launch of one block (a Jlama page of one position), whose layers follow one another.
     */
    private long touchLayer(SlicePlan plan, SlicePlan.LayerRun run, Blocks blocks, int p) {
        SliceKernel kernel = plan.mode() == ChecksumMode.MIXED ? mixedKernel : this.kernel;
        SlicePlan.Slice first = plan.slice(run.firstSlice());
        SlicePlan.Part k = first.k();
        SlicePlan.Part v = first.v();
        if (run.numHeads() < 2 || kernel.rowsAffine(run.numHeads(), k.pieces(), run.kHeadStride(),
                v == null ? 0 : first.vPieces(), run.vHeadStride()) || (blocks.n[p] == 1 && oneRow(kernel, run, first))) {
            // nor where a block of one position is one call's row (oneRowAffine): touched ahead, the next layer's
            // row measured slower (SegmentsBench at -XX:UseAVX=2: 0.36-0.47 of one plan's throughput, without it 0.56-0.86)
            return 0;
        }
        return touchNext(blocks, p, plan.pageSize(), k, ((KvMemory.Host) k.memory()).segment(), v,
                v == null ? null : ((KvMemory.Host) v.memory()).segment(), run.numHeads(), run);
    }

    /**
     * Whether {@code kernel} reads a block of one position of layer {@code run} from memory in one call for its row of
     * heads ({@link SliceKernel#oneRowAffine}): asked here only, for {@link #compute} and {@link #touchLayer} alike.
     */
    private static boolean oneRow(SliceKernel kernel, SlicePlan.LayerRun run, SlicePlan.Slice first) {
        return kernel.oneRow(run.numHeads(), first.k().pieces(), run.kHeadStride(), first.v() == null ? 0 : first.vPieces(),
                run.vHeadStride());
    }

    /** Reads one byte per cache line of the rows of block position {@code p} if it lies in one page; their sum. */
    private static long touchNext(Blocks blocks, int p, int pageSize, SlicePlan.Part k, MemorySegment kSeg, SlicePlan.Part v,
            MemorySegment vSeg, int heads, SlicePlan.LayerRun run) {
        if (!blocks.inOnePage(p, pageSize)) {
            return 0;
        }
        int n = blocks.n[p];
        int slot = blocks.slot[p];
        long page = blocks.page[p];
        long s = touchRows(kSeg, k.cellOffset(page, slot), k.tokenStride(), n, (heads - 1) * run.kHeadStride() + 8L * k.pieces());
        if (v != null) {
            s += touchRows(vSeg, v.cellOffset(page, slot), v.tokenStride(), n, (heads - 1) * run.vHeadStride() + 8L * v.pieces());
        }
        return s;
    }

    private static long touchRows(MemorySegment seg, long base, long stride, int n, long rowBytes) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            long a = base + i * stride;
            for (long o = 0; o < rowBytes; o += 64) {
                s += seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, a + o);
            }
        }
        return s;
    }

    /**
     * Adds one region's part of every head's slice sum to {@code perHead}. Streaming from memory, where several heads'
     * cells lie side by side (token-major layouts: vLLM flash, FlashInfer NHD, SGLang), each token's row is read front
     * to back so the hardware prefetchers see sequential streams (measured: Llama-3-8B at 256 MiB, 0.49 to 0.66 of the
     * read bound). Otherwise head by head, with the running sums in registers: the faster loop when the data is in
     * cache, and already sequential for one head (MLA, GQA at high TP) or head-major layouts.
     */
    private static void addRegion(SliceKernel kernel, MemorySegment seg, int regionPieces, long headStride, long[] off, int n, long t0, int pieces,
            int pieceBase, int heads, long[] a, long[] t, long[] perHead, boolean streaming) {
        if (streaming && heads > 1 && headStride == 8L * regionPieces) {
            kernel.sumRows(seg, off, n, t0, pieces, pieceBase, regionPieces, heads, a, t, perHead);
            return;
        }
        for (int h = 0; h < heads; h++) {
            perHead[h] += kernel.sum(seg, off, h * headStride, n, t0, pieces, pieceBase, regionPieces);
        }
    }

    /** The pool shared by this class's computations, of at least {@code threads} threads. */
    static ForkJoinPool pool(int threads) {
        ForkJoinPool p = pool;
        if (p == null || p.getParallelism() < threads) {
            synchronized (FastCpuBackend.class) {
                p = pool;
                if (p == null || p.getParallelism() < threads) {
                    p = new ForkJoinPool(threads);
                    pool = p;
                }
            }
        }
        return p;
    }

    private static SliceKernel loadKernel(boolean mixed) {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            try {
                return mixed ? new MixedVectorSliceKernel() : new VectorSliceKernel();
            } catch (LinkageError e) {
                // fall through to the scalar loops
            }
        }
        return mixed ? new MixedScalarSliceKernel() : new ScalarSliceKernel();
    }
}
