package io.kvchecksum.internal;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.Definition;
import io.kvchecksum.KvMemory;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.spi.CpuModel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

/**
 * The CPU backend's verifying copy ({@link CopyPlan}): one pass, each piece loaded from the source, stored to the
 * destination and added into its slice sum ({@link CopyLoop}).
 *
 * <p>Each destination block is cut into <em>runs</em>: positions that stay within one source page and one destination
 * page, so both sides are at a constant token stride and the loop needs no table. Runs are copied one after another,
 * every copied slice of a run before the next run (a run's pages are read and written together). From
 * {@code PARALLEL_BYTES} on, a launch is split over the pool by layers ({@link #parallel}: about
 * {@code max(TASK_BYTES, bytes/4T)} per task, like the checksum path, each task its layers' slices over all runs); each
 * task adds {@code factor * s} into its own block values, joined on the calling thread. Byte cells (a piece
 * straddling K and V, or padded) are assembled in a scratch cell and copied from there, on the calling thread.
 *
 * <p>A staged plan ({@link CopyPlan#staged()}: source and destination memory overlap, vLLM's in-place rearrangement)
 * runs destination page by destination page and, within a page, staging unit by staging unit (one layer's cells of the
 * page, K and V together: {@link #units}): the unit's cells of the page's runs are first copied into a buffer of the
 * copying thread with their values summed as usual, then the buffer is written to the destination cells, then the
 * next unit. The buffer holds one unit, at most {@link CopyPlan#stagingUnitBytes()} (which the backend's
 * {@code maxStagedUnitBytes} bounds), not the page of every layer: for Llama-3-8B 64 KiB, which stays in L2 between
 * its reading and its writing. Pages are split over the pool like runs.
 *
 * <p>An instance is one immutable choice of how a launch is split over the pool ({@link Split}) and from how many bytes
 * the loops for memory run: the backend ships {@link #SHIPPED}; tests and same-JVM A/B measurements build the others
 * ({@code FastCpuBackend.withCopy}). Runs, groups and plans made ready are shared by all instances (they do not depend
 * on the choice).
 */
final class CpuCopy {
    /**
     * Whether this CPU takes the in-cache loop that copies rows into a destination holding each head's tokens back to
     * back (FlashInfer HND) head by head rather than token row by token row: Intel ({@link CpuModel#intel()}).
     * Measured on Emerald Rapids, one thread in L2, Llama-3-8B NHD into HND: head by head 0.90
     * of {@code MemorySegment.copy} against the token rows' 0.65 at AVX2, 0.91 against 0.80 at 512 bits (a plain move
     * of the same cells in token-row order reads 0.70 there: the eight heads' stores 4 KiB apart are what costs);
     * on AMD Zen 4 the token rows measured as fast as head by head, so AMD keeps them (docs/bench-cpu.md, "On Intel
     * (Emerald Rapids): the copy and its baseline").
     */
    static final boolean HEADS_INTO_HND = CpuModel.intel();
    /**
     * Whether the loops for memory copy contiguous streams (MLA's pages) in 256-bit vectors at any width: where the
     * checksum kernels read them so ({@link KernelSpecies.Streams#NARROW}: AMD families 25 and 26), and on Intel
     * ({@link CpuModel#intel()}). Measured on Emerald Rapids, DeepSeek MLA bf16, 1 GiB on two threads, same JVM: a
     * 256-bit stream 8-12 % faster than the 512-bit one, as a plain 256-bit move is than a 512-bit one
     * (docs/bench-cpu.md, "On Intel (Emerald Rapids): the copy's last cells"). In cache the streams keep the JVM's
     * width there.
     */
    static final boolean NARROW_FROM_MEMORY = CpuModel.intel() || narrowStreams();
    /**
     * Whether a launch split by layers over the pool is cut into a multiple of the threads' count of parts ({@link
     * #parallel}): Intel ({@link CpuModel#intel()}), where DeepSeek MLA's 61 layers were cut into 9 parts of 6-7 layers
     * on two threads, so that one part ran alone at the end (measured there; on AMD unmeasured, so unchanged).
     */
    static final boolean EVEN_PARTS = CpuModel.intel();
    /**
     * Whether the in-cache loop copies flat rows (a page permutation) of one chunk of four vectors per head with stepped
     * factors without a multiply per vector (VectorCopyLoop's {@code flatQuadsStepped}, Llama-3-8B at 512 bits): Intel
     * ({@link CpuModel#intel()}), where AVX-512's 64-bit lane multiply is three micro-ops (docs/bench-cpu.md, "On Intel
     * (Emerald Rapids): the copy's last cells"); AMD keeps {@code multiplyFlat}.
     */
    static final boolean STEPPED_QUADS = CpuModel.intel();
    private static final CopyLoop STANDARD = load(true, HEADS_INTO_HND, narrowStreams(), STEPPED_QUADS);
    private static final CopyLoop STANDARD_OTHER = load(true, !HEADS_INTO_HND, narrowStreams(), STEPPED_QUADS);
    /** {@link #STANDARD} with the other choice of {@link #STEPPED_QUADS}, for tests and A/B. */
    private static final CopyLoop STANDARD_QUADS_OTHER = load(true, HEADS_INTO_HND, narrowStreams(), !STEPPED_QUADS);
    /**
     * The standard loop for copies of {@link CpuWorkSplit#PARALLEL} bytes and more, read from memory (on the calling
     * thread too, as the checksum path treats them): its row loops, not the in-cache flat streams.
     */
    private static final CopyLoop FROM_MEMORY = load(false, false, NARROW_FROM_MEMORY, false);
    /** {@link #FROM_MEMORY} with the other stream width ({@link #NARROW_FROM_MEMORY} negated), for tests and A/B. */
    private static final CopyLoop FROM_MEMORY_OTHER = load(false, false, !NARROW_FROM_MEMORY, false);
    private static final CopyLoop MIXED = new ScalarCopyLoop(true);

    /** How a launch of {@code PARALLEL_BYTES} or more is cut into tasks over the pool ({@link #parallel}). */
    enum Split {
        /**
         * The shipped split: the launch's groups in layer order cut into parts, each part's groups one after another
         * over all runs (run ranges as well only where there are fewer groups than tasks).
         */
        LAYERS,
        /**
         * The split before it: run ranges, each over every group, run by run. Kept for same-JVM A/B measurements
         * ({@code CopyTurns -Dcopy.variant=}) and the tests that run both.
         */
        RUN_RANGES
    }

    /** The backend's copy: split by layers, the loops for memory from {@code PARALLEL_BYTES} on. */
    static final CpuCopy SHIPPED = new CpuCopy(Split.LAYERS, CpuWorkSplit.PARALLEL);

    private final Split split;
    /** The in-cache loop: this CPU's ({@link #HEADS_INTO_HND}) or, for tests on any CPU, the other choice. */
    private final CopyLoop inCache;
    /** From this many bytes of a launch (or a segmented plan's launches together) the loops for memory run. */
    private final long fromMemoryBytes;
    /** The loop for memory: this CPU's ({@link #NARROW_FROM_MEMORY}) or, for tests on any CPU, the other choice. */
    private final CopyLoop fromMemory;
    /** Whether {@link Split#LAYERS} cuts a multiple of the threads' count of parts ({@link #EVEN_PARTS}). */
    private final boolean evenParts;

    /**
     * @param split how a large launch is cut over the pool
     * @param fromMemoryBytes from how many bytes of a launch the standard mode takes {@link #FROM_MEMORY}'s loops
     *         (the backend: {@code PARALLEL_BYTES}; 0: every copy, for tests that check those loops on small vectors)
     */
    CpuCopy(Split split, long fromMemoryBytes) {
        this(split, fromMemoryBytes, HEADS_INTO_HND);
    }

    /**
     * @param split how a large launch is cut over the pool
     * @param fromMemoryBytes from how many bytes of a launch the standard mode takes {@link #FROM_MEMORY}'s loops
     * @param headsIntoHnd whether the in-cache loop copies rows into HND head by head ({@link #HEADS_INTO_HND}: this
     *         CPU's choice; the other for tests that run both on any CPU)
     */
    CpuCopy(Split split, long fromMemoryBytes, boolean headsIntoHnd) {
        this(split, fromMemoryBytes, headsIntoHnd, NARROW_FROM_MEMORY, EVEN_PARTS);
    }

    /**
     * @param split how a large launch is cut over the pool
     * @param fromMemoryBytes from how many bytes of a launch the standard mode takes {@link #FROM_MEMORY}'s loops
     * @param headsIntoHnd whether the in-cache loop copies rows into HND head by head ({@link #HEADS_INTO_HND})
     * @param narrowFromMemory whether the loops for memory copy contiguous streams in 256-bit vectors
     *         ({@link #NARROW_FROM_MEMORY}: this CPU's choice)
     * @param evenParts whether the split by layers cuts a multiple of the threads' count of parts ({@link #EVEN_PARTS})
     */
    CpuCopy(Split split, long fromMemoryBytes, boolean headsIntoHnd, boolean narrowFromMemory, boolean evenParts) {
        this(split, fromMemoryBytes, headsIntoHnd, narrowFromMemory, evenParts, STEPPED_QUADS);
    }

    /**
     * {@link #CpuCopy(Split, long, boolean, boolean, boolean)} with the in-cache choice {@code steppedQuads}
     * ({@link #STEPPED_QUADS}: this CPU's); with it the other, {@code headsIntoHnd} must be this CPU's.
     */
    CpuCopy(Split split, long fromMemoryBytes, boolean headsIntoHnd, boolean narrowFromMemory, boolean evenParts,
            boolean steppedQuads) {
        if (steppedQuads != STEPPED_QUADS && headsIntoHnd != HEADS_INTO_HND) {
            throw new IllegalArgumentException("one in-cache choice other than this CPU's at a time");
        }
        this.inCache = steppedQuads != STEPPED_QUADS ? STANDARD_QUADS_OTHER
                : headsIntoHnd == HEADS_INTO_HND ? STANDARD : STANDARD_OTHER;
        this.fromMemory = narrowFromMemory == NARROW_FROM_MEMORY ? FROM_MEMORY : FROM_MEMORY_OTHER;
        this.evenParts = evenParts;
        if (fromMemoryBytes < 0) {
            throw new IllegalArgumentException("fromMemoryBytes must be at least 0, got " + fromMemoryBytes);
        }
        this.split = java.util.Objects.requireNonNull(split);
        this.fromMemoryBytes = fromMemoryBytes;
    }

    /**
     * The backend with the other in-cache choice for rows into HND ({@link #HEADS_INTO_HND} negated), for same-JVM A/B
     * measurements: {@code CopyTurns -Dcopy.variant=io.kvchecksum.internal.CpuCopy#otherIntoHnd}.
     */
    static FastCpuBackend otherIntoHnd(int threads) {
        return FastCpuBackend.withCopy(threads, new CpuCopy(Split.LAYERS, CpuWorkSplit.PARALLEL, !HEADS_INTO_HND));
    }

    /**
     * The backend with the other choices for copies from memory ({@link #NARROW_FROM_MEMORY} and {@link #EVEN_PARTS}
     * negated: on Intel the choices before them), for same-JVM A/B measurements: {@code CopyTurns
     * -Dcopy.variant=io.kvchecksum.internal.CpuCopy#otherFromMemory}.
     */
    static FastCpuBackend otherFromMemory(int threads) {
        return FastCpuBackend.withCopy(threads, new CpuCopy(Split.LAYERS, CpuWorkSplit.PARALLEL, HEADS_INTO_HND,
                !NARROW_FROM_MEMORY, !EVEN_PARTS));
    }

    /**
     * The backend with the other in-cache choice for flat rows of four vectors per head ({@link #STEPPED_QUADS}
     * negated), for same-JVM A/B measurements: {@code CopyTurns -Dcopy.variant=io.kvchecksum.internal.CpuCopy#otherQuads}.
     */
    static FastCpuBackend otherQuads(int threads) {
        return FastCpuBackend.withCopy(threads, new CpuCopy(Split.LAYERS, CpuWorkSplit.PARALLEL, HEADS_INTO_HND,
                NARROW_FROM_MEMORY, EVEN_PARTS, !STEPPED_QUADS));
    }

    /** {@link #otherFromMemory} with only the stream width ({@link #NARROW_FROM_MEMORY}) the other. */
    static FastCpuBackend otherStreamsFromMemory(int threads) {
        return FastCpuBackend.withCopy(threads, new CpuCopy(Split.LAYERS, CpuWorkSplit.PARALLEL, HEADS_INTO_HND,
                !NARROW_FROM_MEMORY, EVEN_PARTS));
    }

    /** {@link #otherFromMemory} with only the parts ({@link #EVEN_PARTS}) the other. */
    static FastCpuBackend otherParts(int threads) {
        return FastCpuBackend.withCopy(threads, new CpuCopy(Split.LAYERS, CpuWorkSplit.PARALLEL, HEADS_INTO_HND,
                NARROW_FROM_MEMORY, !EVEN_PARTS));
    }

    /** The standard mode's loop for a copy of {@code bytes} (a launch, or a segmented plan's launches together). */
    private CopyLoop standard(long bytes) {
        return bytes >= fromMemoryBytes ? fromMemory : inCache;
    }

    /** The loop of {@code w}'s launch: the mixed mode's, or {@code standard}. */
    private static CopyLoop loop(Work w, CopyLoop standard) {
        return w.launch.mode() == ChecksumMode.MIXED ? MIXED : standard;
    }

    /** {@return the choice, for a backend's description in tests and measurements} */
    String choice() {
        return "split by " + (split == Split.LAYERS ? "layers" : "run ranges")
                + (fromMemoryBytes == CpuWorkSplit.PARALLEL ? "" : ", loops for memory from " + fromMemoryBytes + " bytes")
                + (inCache == STANDARD ? "" : ", in cache " + inCache.describe())
                + (fromMemory == FROM_MEMORY ? "" : ", from memory " + fromMemory.describe())
                + (evenParts == EVEN_PARTS ? "" : evenParts ? ", parts a multiple of the threads" : ", parts not rounded");
    }

    /** The standard mode's loop, for the backend's description. */
    static String describe() {
        return STANDARD.describe();
    }

    /**
     * Runs every launch of {@code plan}, the whole-piece ones split over {@code pool} where given and large enough.
     *
     * @param pool the pool for {@code threads > 1}, asked for only when a launch is split
     */
    long[] run(CopyPlan plan, int threads, IntFunction<ForkJoinPool> pool, Thread notTheCaller) {
        if (plan.isSegmented()) {
            return segmented(plan, threads, pool, notTheCaller);
        }
        long[] out = new long[plan.numBlocks()];
        boolean staged = plan.staged();
        for (CopyPlan.Launch l : plan.launches()) {
            Prepared prepared = prepared(l);
            Runs runs = prepared.runs;
            if (l.cellKind() == CompiledPlan.CellKind.BYTE_CELLS) {
                if (staged) {
                    stagedByteCells(l, prepared.staging, runs, out);
                } else {
                    byteCells(l, runs, out);
                }
                continue;
            }
            long bytes = prepared.bytes;   // Launch.bytes() walks the pairs: once per launch, not per copy
            CopyLoop loop = l.mode() == ChecksumMode.MIXED ? MIXED : standard(bytes);
            if (staged) {
                stagedParallel(l, prepared, loop, bytes, threads > 1 && bytes >= CpuWorkSplit.PARALLEL
                        && sharable(l, notTheCaller) ? pool.apply(threads) : null, threads, out);
                continue;
            }
            if (threads > 1 && bytes >= CpuWorkSplit.PARALLEL && sharable(l, notTheCaller)) {
                parallel(l, prepared, loop, bytes, threads, pool.apply(threads), out);
            } else {
                wholePieces(prepared, loop, 0, runs.count, out, 0, null);
            }
        }
        return out;
    }

    /** A launch of a segmented plan: what it needs, and where its blocks go among the plan's. */
    private record Work(CopyPlan.Launch launch, Prepared prepared, int[] blocks, long bytes) {
    }

    /**
     * A segmented plan's launches made ready once: one entry per plan, not one per segment launch (an engine compiles a
     * plan per request, hundreds of launches each: entries per launch in {@link #PREPARED} filled the old generation
     * and the copies waited for its collections; a weak map per plan did too, measured), kept for the last
     * {@link #RECENT} plans copied: a plan over heap-backed KV keeps that KV reachable until {@code RECENT} other
     * segmented plans were copied. The loop is not kept: it depends on the instance's choice and {@code bytes}.
     */
    private record Segmented(List<Work> whole, List<Work> byteCells, long bytes, boolean sharable) {
        static Segmented of(CopyPlan plan, Thread notTheCaller) {
            List<Work> whole = new ArrayList<>();
            List<Work> bytes = new ArrayList<>();
            long total = 0;
            boolean shared = true;
            List<CopyPlan> segments = plan.segments();
            for (CopyPlan segment : segments) {   // the standard loop depends on the bytes of all segments together
                for (CopyPlan.Launch l : segment.launches()) {
                    total += l.cellKind() == CompiledPlan.CellKind.BYTE_CELLS ? 0 : l.bytes();
                }
            }
            for (int i = 0; i < segments.size(); i++) {
                for (CopyPlan.Launch l : segments.get(i).launches()) {
                    int[] blocks = new int[l.numBlocks()];
                    for (int k = 0; k < blocks.length; k++) {
                        blocks[k] = plan.blockOf(i, k);
                    }
                    Work w = new Work(l, prepare(l), blocks, l.bytes());
                    (l.cellKind() == CompiledPlan.CellKind.BYTE_CELLS ? bytes : whole).add(w);
                }
            }
            for (int i = 0; i < whole.size() && shared && total >= CpuWorkSplit.PARALLEL; i++) {   // only for the pool
                shared = CpuCopy.sharable(whole.get(i).launch, notTheCaller);
            }
            return new Segmented(List.copyOf(whole), List.copyOf(bytes), total, shared);
        }
    }

    private static final int RECENT = 4;
    private static final Map<CopyPlan, Segmented> SEGMENTED = Collections.synchronizedMap(
            new LinkedHashMap<>(8, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<CopyPlan, Segmented> eldest) {
                    return size() > RECENT;
                }
            });

    /**
     * A segmented plan ({@link CopyPlan#segments()}: a Jlama page per segment, often a few positions) as one piece of
     * work, as the checksum's {@code runTogether} runs a step's segments: the bytes of all segments decide whether it
     * runs on the calling thread or on the pool; on the pool each launch's runs are cut into ranges of about
     * {@code max(TASK_BYTES, total/4T)} bytes and consecutive small ranges of several segments are packed into one task,
     * all handed over in one {@code invokeAll}. Each run's value goes straight into the plan's block that holds it.
     */
    private long[] segmented(CopyPlan plan, int threads, IntFunction<ForkJoinPool> pool, Thread notTheCaller) {
        long[] out = new long[plan.numBlocks()];
        Segmented ready = SEGMENTED.get(plan);
        if (ready == null) {
            ready = Segmented.of(plan, notTheCaller);
            SEGMENTED.put(plan, ready);
        }
        for (Work w : ready.byteCells) {
            long[] values = new long[w.blocks.length];
            byteCells(w.launch, w.prepared.runs, values);
            for (int k = 0; k < values.length; k++) {
                out[w.blocks[k]] += values[k];
            }
        }
        List<Work> work = ready.whole;
        long total = ready.bytes;
        CopyLoop standard = standard(total);
        if (threads < 2 || !ready.sharable || total < CpuWorkSplit.PARALLEL) {
            for (Work w : work) {
                wholePieces(w.prepared, loop(w, standard), 0, w.prepared.runs.count, out, 0, w.blocks);
            }
            return out;
        }
        long target = Math.max(CpuWorkSplit.TASK, total / (4L * threads));
        List<List<int[]>> tasks = new ArrayList<>();
        List<int[]> current = new ArrayList<>();
        long filled = 0;
        for (int w = 0; w < work.size(); w++) {
            Work x = work.get(w);
            int count = x.prepared.runs.count;
            long perRun = Math.max(1, x.bytes / Math.max(1, count));
            int step = (int) Math.max(1, Math.min(count, target / perRun));
            for (int r0 = 0; r0 < count; r0 += step) {
                int r1 = Math.min(count, r0 + step);
                current.add(new int[] {w, r0, r1});
                filled += (r1 - r0) * perRun;
                if (filled >= target) {
                    tasks.add(current);
                    current = new ArrayList<>();
                    filled = 0;
                }
            }
        }
        if (!current.isEmpty()) {
            tasks.add(current);
        }
        List<Callable<long[]>> calls = new ArrayList<>(tasks.size());
        for (List<int[]> t : tasks) {
            calls.add(() -> {
                long[] part = new long[out.length];
                for (int[] piece : t) {
                    Work x = work.get(piece[0]);
                    wholePieces(x.prepared, loop(x, standard), piece[1], piece[2], part, 0, x.blocks);
                }
                return part;
            });
        }
        addParts(pool.apply(threads), calls, new int[calls.size()], out);
        return out;
    }

    /**
     * What a launch's copy needs besides the bytes: its runs, its groups of heads, the factors, for a staged copy the
     * plan's staging units and each as the groups cut to its pairs ({@link #units}), and the bytes it moves.
     */
    private record Prepared(Runs runs, List<Group> groups, List<Group> byLayer, long[] factors,
            CopyPlan.Staging staging, List<List<Group>> units, long bytes) {
    }

    /**
     * Each launch's runs and groups, made on its first copy and kept while the plan lives: a plan copied many times
     * (an engine's step after step) pays for them once; keys are launches by identity, held weakly.
     */
    private static final Map<CopyPlan.Launch, Prepared> PREPARED =
            Collections.synchronizedMap(new WeakHashMap<>());

    private static Prepared prepared(CopyPlan.Launch l) {
        Prepared p = PREPARED.get(l);
        if (p == null) {
            p = prepare(l);
            PREPARED.put(l, p);
        }
        return p;
    }

    private static Prepared prepare(CopyPlan.Launch l) {
        long[] factors = new long[l.pairs().size()];
        for (int i = 0; i < factors.length; i++) {
            factors[i] = l.pairs().get(i).factor();
        }
        List<Group> groups = l.cellKind() == CompiledPlan.CellKind.BYTE_CELLS ? List.of() : groups(l);
        List<Group> byLayer = new ArrayList<>(groups);
        byLayer.sort(java.util.Comparator.comparingInt(Group::firstPair));   // stable: a layer's K, then its V
        CopyPlan.Staging staging = l.staging();
        return new Prepared(Runs.of(l), groups, List.copyOf(byLayer), factors, staging, units(l, staging, groups),
                l.bytes());
    }

    /**
     * The launch's staging units ({@link CopyPlan#staged()}): the plan's ({@link CopyPlan.Launch#staging()}: a layer's
     * pairs of the launch, K and V together), each as the launch's groups cut to its pairs, K's groups before V's. A
     * group may hold several layers (layers whose cells lie at one constant stride, e.g. side by side in a token's row)
     * and holds K or V only, so groups are cut and joined by unit: within a unit a write may land on bytes the same unit
     * has still to read (NHD read as HND on the same blocks, a permute moving a K cell onto V bytes); between units the
     * plan's classification ({@code CopyStaging}) shows that no unit's source cells share a byte with another unit's
     * destination cells, so units staged one after another are exact.
     */
    private static List<List<Group>> units(CopyPlan.Launch l, CopyPlan.Staging staging, List<Group> groups) {
        Map<CopyPlan.Pair, Integer> unitOfPair = new IdentityHashMap<>();
        for (int u = 0; u < staging.units(); u++) {
            for (CopyPlan.Pair p : staging.unit(u)) {
                unitOfPair.put(p, u);
            }
        }
        List<CopyPlan.Pair> pairs = l.pairs();
        List<List<Group>> units = new ArrayList<>(staging.units());
        for (int u = 0; u < staging.units(); u++) {
            units.add(new ArrayList<>());
        }
        for (Group g : groups) {
            int end = g.firstPair + g.heads;
            for (int i = g.firstPair; i < end; ) {
                int unit = unitOfPair.get(pairs.get(i));
                int j = i + 1;
                while (j < end && unitOfPair.get(pairs.get(j)) == unit) {
                    j++;
                }
                // pairs i .. j-1 of the group: the same strides, pair i's parts where the group's first pair's were
                Group cut = i == g.firstPair && j == end ? g : new Group(g.srcSeg, part(pairs.get(i), true, g.v),
                        g.srcHeadStride, g.dstSeg, part(pairs.get(i), false, g.v), g.dstHeadStride, g.cellPieces,
                        g.pieceBase, g.regionPieces, i, j - i, g.v);
                units.get(unit).add(cut);
                i = j;
            }
        }
        return units.stream().map(List::copyOf).toList();
    }

    /** The split sizes of the checksum path, without the SPI's class in this package's hot loop. */
    private static final class CpuWorkSplit {
        static final long PARALLEL = io.kvchecksum.spi.CpuWorkSplit.PARALLEL_BYTES;
        static final long TASK = io.kvchecksum.spi.CpuWorkSplit.TASK_BYTES;
    }

    /**
     * The launch's runs: positions {@code t0[r] .. t0[r]+n[r]-1} of destination block {@code block[r]} (relative to
     * the first), within source page {@code srcPage[r]} from slot {@code srcSlot[r]} and destination page
     * {@code dstPage[r]} from slot {@code dstSlot[r]}.
     */
    record Runs(int count, int[] block, long[] t0, int[] n, long[] srcPage, int[] srcSlot, long[] dstPage, int[] dstSlot) {
        static Runs of(CopyPlan.Launch l) {
            int ps = l.sourcePageSize();
            int pd = l.destinationPageSize();
            int bs = l.blockSize();
            long start = l.startToken();
            int cap = l.numBlocks() + 4;
            List<long[]> rows = new ArrayList<>(cap);
            for (int b = 0; b < l.numBlocks(); b++) {
                long from = (l.firstBlock() + b) * (long) bs;
                long end = Math.min(from + bs, l.numTokens());
                for (long t = from; t < end; ) {
                    long i = t - start;
                    long sSlot = i % ps;
                    long dSlot = i % pd;
                    long n = Math.min(end - t, Math.min(ps - sSlot, pd - dSlot));
                    rows.add(new long[] {b, t, n, l.sourcePage((int) (i / ps)), sSlot, l.destinationPage((int) (i / pd)), dSlot});
                    t += n;
                }
            }
            int c = rows.size();
            int[] block = new int[c];
            long[] t0 = new long[c];
            int[] n = new int[c];
            long[] sp = new long[c];
            int[] ss = new int[c];
            long[] dp = new long[c];
            int[] ds = new int[c];
            for (int r = 0; r < c; r++) {
                long[] x = rows.get(r);
                block[r] = (int) x[0];
                t0[r] = x[1];
                n[r] = (int) x[2];
                sp[r] = x[3];
                ss[r] = (int) x[4];
                dp[r] = x[5];
                ds[r] = (int) x[6];
            }
            return new Runs(c, block, t0, n, sp, ss, dp, ds);
        }
    }

    /**
     * Every pair over runs {@code r0 .. r1-1}: each run's slice sums times the pairs' factors added into
     * {@code out[block - blockBase]} (or {@code out[blocks[block]]}: a segment's blocks among its plan's). Run by run, every pair of the run: the pages of one run are read and written
     * together. Consecutive pairs whose K (or V) regions are at constant head strides on both sides (the heads of a layer in
     * every layout in the field) form one group, copied token by token across the heads ({@link CopyLoop#copyRows}): in
     * token-major layouts each token's row front to back.
     */
    private static void wholePieces(Prepared prepared, CopyLoop loop, int r0, int r1, long[] out, int blockBase,
            int[] blocks) {
        wholePieces(prepared, prepared.groups, loop, r0, r1, out, blockBase, blocks);
    }

    private static void wholePieces(Prepared prepared, List<Group> groups, CopyLoop loop, int r0, int r1, long[] out,
            int blockBase, int[] blocks) {
        Runs runs = prepared.runs;
        long[] factors = prepared.factors;
        for (int r = r0; r < r1; r++) {
            long sPage = runs.srcPage[r];
            long dPage = runs.dstPage[r];
            int ss = runs.srcSlot[r];
            int ds = runs.dstSlot[r];
            int n = runs.n[r];
            long t0 = runs.t0[r];
            long value = 0;
            for (Group g : groups) {
                value += loop.copyRows(g.srcSeg, g.src.cellOffset(sPage, ss), g.src.tokenStride(), g.srcHeadStride,
                        g.dstSeg, g.dst.cellOffset(dPage, ds), g.dst.tokenStride(), g.dstHeadStride, n, t0, g.cellPieces,
                        g.pieceBase, g.regionPieces, g.heads, factors, g.firstPair);
            }
            out[blocks == null ? runs.block[r] - blockBase : blocks[runs.block[r]]] += value;
        }
    }

    /** The launch's pairs cut into groups of one region kind at constant head strides on both sides. */
    private static List<Group> groups(CopyPlan.Launch l) {
        int p0 = 0;
        int p1 = l.pairs().size();
        List<Group> groups = new ArrayList<>();
        for (boolean v : new boolean[] {false, true}) {
            int i = p0;
            while (i < p1) {
                CopyPlan.Pair first = l.pairs().get(i);
                SlicePlan.Part a = v ? first.source().v() : first.source().k();
                if (a == null) {
                    i++;
                    continue;
                }
                SlicePlan.Part b = v ? first.destination().v() : first.destination().k();
                int j = i + 1;
                long sStep = 0;
                long dStep = 0;
                if (j < p1 && sameGeometry(first, l.pairs().get(j), v)) {
                    sStep = part(l.pairs().get(j), true, v).base() - a.base();
                    dStep = part(l.pairs().get(j), false, v).base() - b.base();
                    while (j < p1 && sameGeometry(l.pairs().get(j - 1), l.pairs().get(j), v)
                            && part(l.pairs().get(j), true, v).base() - part(l.pairs().get(j - 1), true, v).base() == sStep
                            && part(l.pairs().get(j), false, v).base() - part(l.pairs().get(j - 1), false, v).base() == dStep) {
                        j++;
                    }
                }
                groups.add(new Group(host(a), a, sStep, host(b), b, dStep, first.pieces(),
                        v ? first.source().k().pieces() : 0, a.pieces(), i, j - i, v));
                i = j;
            }
        }
        return List.copyOf(groups);
    }

    /**
     * Pairs {@code firstPair ..} of one region kind (K or V: {@code v}) at constant head strides on both sides: the
     * first pair's parts, their segments and the strides.
     */
    private record Group(MemorySegment srcSeg, SlicePlan.Part src, long srcHeadStride, MemorySegment dstSeg,
                         SlicePlan.Part dst, long dstHeadStride, int cellPieces, int pieceBase, int regionPieces,
                         int firstPair, int heads, boolean v) {
    }

    private static SlicePlan.Part part(CopyPlan.Pair p, boolean source, boolean v) {
        SlicePlan.Slice s = source ? p.source() : p.destination();
        return v ? s.v() : s.k();
    }

    /** Whether pairs {@code a} and {@code b} have K (or V) regions of one geometry in the same memory on each side. */
    private static boolean sameGeometry(CopyPlan.Pair a, CopyPlan.Pair b, boolean v) {
        return a.pieces() == b.pieces() && same(part(a, true, v), part(b, true, v)) && same(part(a, false, v), part(b, false, v));
    }

    private static boolean same(SlicePlan.Part x, SlicePlan.Part y) {
        // identity first: the heads of a layer share one KvMemory, and a segment's equals compares more than that
        return x != null && y != null && (x.memory() == y.memory() || x.memory().equals(y.memory()))
                && x.pageStride() == y.pageStride()
                && x.tokenStride() == y.tokenStride() && x.pieces() == y.pieces() && x.bytes() == y.bytes();
    }

    /** Groups {@code g0 .. g1-1} over runs {@code r0 .. r1-1}, with their own block values from {@code blockBase} on. */
    private record Task(int g0, int g1, int r0, int r1, int blockBase, int blocks) {
    }

    /**
     * Runs {@code calls} on {@code pool} and adds each one's block values into {@code out} from {@code bases[i]} on; a
     * task's runtime exception is rethrown as it was.
     */
    private static void addParts(ForkJoinPool pool, List<Callable<long[]>> calls, int[] bases, long[] out) {
        List<long[]> parts = PoolCalls.invokeAll(pool, calls, "copying");
        for (int i = 0; i < parts.size(); i++) {
            long[] part = parts.get(i);
            for (int k = 0; k < part.length; k++) {
                out[bases[i] + k] += part[k];
            }
        }
    }

    /**
     * A launch of {@code PARALLEL_BYTES} or more over the pool, in as many tasks as run ranges of about
     * {@code max(TASK_BYTES, bytes/4T)} would make: its groups in layer order (a layer's K, then its V: {@code byLayer})
     * cut into that many parts, each over all runs, group after group (a group over every run, then the next); only a
     * launch with fewer groups than tasks has its parts cut into run ranges too. So each thread reads and writes one
     * layer's K (or V) pages at a time, as the baseline's {@code MemorySegment.copy} of the same page runs does, rather
     * than every layer of its own pages: at two threads from memory faster than the run ranges in paired same-JVM
     * measurements: by 4-16 % in a page permutation and on MLA, within the noise into FlashInfer HND (docs/bench-cpu.md,
     * "From memory on two threads"). Each task adds into block values of its run range. {@link Split#RUN_RANGES}: run
     * ranges only, each over every group run by run (the split before).
     */
    private void parallel(CopyPlan.Launch l, Prepared prepared, CopyLoop loop, long bytes, int threads,
            ForkJoinPool pool, long[] out) {
        Runs runs = prepared.runs;
        long target = Math.max(CpuWorkSplit.TASK, bytes / (4L * threads));
        long perRun = Math.max(1, bytes / Math.max(1, runs.count));
        int step = (int) Math.max(1, Math.min(runs.count, target / perRun));
        int wanted = (runs.count + step - 1) / step;
        if (wanted == 1) {
            wholePieces(prepared, loop, 0, runs.count, out, 0, null);
            return;
        }
        boolean runRanges = split == Split.RUN_RANGES;
        List<Group> groups = runRanges ? prepared.groups : prepared.byLayer;
        if (evenParts && !runRanges) {   // whole rounds of parts: none runs alone at the end (MLA's 61 layers: 9 -> 10)
            wanted = (wanted + threads - 1) / threads * threads;
        }
        int parts = runRanges ? 1 : Math.min(groups.size(), wanted);
        int ranges = (wanted + parts - 1) / parts;
        List<Task> tasks = new ArrayList<>(parts * ranges);
        for (int p = 0; p < parts; p++) {
            for (int q = 0; q < ranges; q++) {
                int r0 = (int) ((long) q * runs.count / ranges);
                int r1 = (int) ((long) (q + 1) * runs.count / ranges);
                if (r0 < r1) {
                    int base = runs.block[r0];
                    tasks.add(new Task(p * groups.size() / parts, (p + 1) * groups.size() / parts, r0, r1, base,
                            runs.block[r1 - 1] - base + 1));
                }
            }
        }
        List<Callable<long[]>> calls = new ArrayList<>(tasks.size());
        for (Task t : tasks) {
            List<Group> part = groups.subList(t.g0, t.g1);
            calls.add(() -> {
                long[] values = new long[t.blocks];
                if (runRanges) {
                    wholePieces(prepared, part, loop, t.r0, t.r1, values, t.blockBase, null);
                } else {
                    for (Group g : part) {   // a group over all the task's runs, then the next: layer by layer
                        wholePieces(prepared, List.of(g), loop, t.r0, t.r1, values, t.blockBase, null);
                    }
                }
                return values;
            });
        }
        addParts(pool, calls, tasks.stream().mapToInt(Task::blockBase).toArray(), out);
    }

    /** The copying thread's staging buffer, grown to the largest unit it staged. */
    private static final ThreadLocal<MemorySegment[]> STAGE = ThreadLocal.withInitial(() -> new MemorySegment[1]);

    /**
     * The most stage bytes one staged unit used since {@link #resetLargestStage()}: tests hold it to the plan's
     * {@link CopyPlan#stagingUnitBytes()} (what the backend's limit and the README promise a staged copy holds).
     */
    private static final AtomicLong LARGEST_STAGE = new AtomicLong();

    /** {@return the most stage bytes one staged unit used since the last reset} */
    static long largestStage() {
        return LARGEST_STAGE.get();
    }

    static void resetLargestStage() {
        LARGEST_STAGE.set(0);
    }

    private static MemorySegment stage(long bytes) {
        if (bytes > LARGEST_STAGE.get()) {   // a read of a line that stays shared: no write per unit
            LARGEST_STAGE.accumulateAndGet(bytes, Math::max);
        }
        MemorySegment[] held = STAGE.get();
        if (held[0] == null || held[0].byteSize() < bytes) {
            held[0] = Arena.ofAuto().allocate(Math.max(bytes, 4096), 64);
        }
        return held[0];
    }

    /** Runs {@code r0 .. r1-1} cut where the destination page changes: the start of each page's runs, then r1. */
    private static int[] pageStarts(Runs runs) {
        int[] starts = new int[runs.count + 1];
        int k = 0;
        for (int r = 0; r < runs.count; r++) {
            if (r == 0 || runs.dstPage[r] != runs.dstPage[r - 1]) {
                starts[k++] = r;
            }
        }
        starts[k++] = runs.count;
        return Arrays.copyOf(starts, k);
    }

    /**
     * Whether a run of {@code n} positions of group {@code g} tiles its span at the destination's strides (a full page
     * in HND or NHD with every head copied): then it is staged at those strides and goes out in one copy; any other run
     * is staged packed, token by token across the heads, so that a unit's stage is exactly its cells' bytes.
     */
    private static boolean tiles(Group g, int n) {
        long row = 8L * g.regionPieces;
        return g.dst.tokenStride() >= 0 && g.dstHeadStride >= 0
                && (n - 1) * g.dst.tokenStride() + (g.heads - 1) * g.dstHeadStride + row == row * g.heads * n;
    }

    /** A run's cells of one group in the stage: {@code n * heads} cells of {@code 8 * regionPieces} bytes, no gaps. */
    private static long stageBytes(Group g, int n) {
        return 8L * g.regionPieces * g.heads * n;
    }

    /**
     * Pages {@code q0 .. q1-1} of {@code starts} staged unit by unit: per page, per staging unit (one layer's groups, K
     * and V: {@link #units}), the unit's cells of the page's runs copied into the buffer with their values summed, then
     * written out, then the next unit; the buffer holds one unit, never more than {@link CopyPlan#stagingUnitBytes()}.
     */
    private static void stagedPieces(Prepared prepared, CopyLoop loop, int[] starts, int q0, int q1, long[] out,
            int blockBase) {
        Runs runs = prepared.runs;
        long[] factors = prepared.factors;
        for (int q = q0; q < q1; q++) {
            for (List<Group> unit : prepared.units) {
                long need = 0;
                for (int r = starts[q]; r < starts[q + 1]; r++) {
                    for (Group g : unit) {
                        need += stageBytes(g, runs.n[r]);
                    }
                }
                MemorySegment stage = stage(need);
                long at = 0;
                for (int r = starts[q]; r < starts[q + 1]; r++) {
                    long value = 0;
                    int n = runs.n[r];
                    for (Group g : unit) {
                        long row = 8L * g.regionPieces;
                        boolean tiles = tiles(g, n);
                        value += loop.copyRows(g.srcSeg, g.src.cellOffset(runs.srcPage[r], runs.srcSlot[r]),
                                g.src.tokenStride(), g.srcHeadStride, stage, at,
                                tiles ? g.dst.tokenStride() : row * g.heads, tiles ? g.dstHeadStride : row, n,
                                runs.t0[r], g.cellPieces, g.pieceBase, g.regionPieces, g.heads, factors, g.firstPair);
                        at += stageBytes(g, n);
                    }
                    out[runs.block[r] - blockBase] += value;
                }
                at = 0;
                for (int r = starts[q]; r < starts[q + 1]; r++) {
                    int n = runs.n[r];
                    for (Group g : unit) {
                        long row = 8L * g.regionPieces;
                        long dst = g.dst.cellOffset(runs.dstPage[r], runs.dstSlot[r]);
                        long ts = g.dst.tokenStride();
                        if (tiles(g, n)) {
                            MemorySegment.copy(stage, at, g.dstSeg, dst, stageBytes(g, n));
                        } else if (g.heads == 1 || g.dstHeadStride == row) {   // a token's heads side by side: a copy per token
                            for (int i = 0; i < n; i++) {
                                MemorySegment.copy(stage, at + i * row * g.heads, g.dstSeg, dst + i * ts, row * g.heads);
                            }
                        } else {
                            for (int i = 0; i < n; i++) {
                                for (int h = 0; h < g.heads; h++) {
                                    MemorySegment.copy(stage, at + (i * g.heads + h) * row, g.dstSeg,
                                            dst + i * ts + h * g.dstHeadStride, row);
                                }
                            }
                        }
                        at += stageBytes(g, n);
                    }
                }
            }
        }
    }

    /** A staged launch's pages, on the calling thread or cut into page ranges over {@code pool} (when not null). */
    private static void stagedParallel(CopyPlan.Launch l, Prepared prepared, CopyLoop loop, long bytes,
            ForkJoinPool pool, int threads, long[] out) {
        int[] starts = pageStarts(prepared.runs);
        long perToken = 0;
        for (Group g : prepared.groups) {
            perToken += 8L * g.regionPieces * g.heads;
        }
        long pageBytes = perToken * l.destinationPageSize();
        int pages = starts.length - 1;
        long target = Math.max(CpuWorkSplit.TASK, bytes / (4L * Math.max(1, threads)));
        int step = (int) Math.max(1, Math.min(pages, target / Math.max(1, pageBytes)));
        if (pool == null || step >= pages) {
            stagedPieces(prepared, loop, starts, 0, pages, out, 0);
            return;
        }
        List<Callable<long[]>> calls = new ArrayList<>();
        List<Integer> bases = new ArrayList<>();
        Runs runs = prepared.runs;
        for (int q0 = 0; q0 < pages; q0 += step) {
            int a = q0;
            int b = Math.min(pages, q0 + step);
            int base = runs.block[starts[a]];
            int blocks = runs.block[starts[b] - 1] - base + 1;
            bases.add(base);
            calls.add(() -> {
                long[] part = new long[blocks];
                stagedPieces(prepared, loop, starts, a, b, part, base);
                return part;
            });
        }
        addParts(pool, calls, bases.stream().mapToInt(Integer::intValue).toArray(), out);
    }

    /**
     * Byte cells of a staged launch, page by page and, within a page, unit by unit (the plan's: one layer's pairs, K and
     * V: a byte cell's pieces straddle them, see {@link #units} for why a unit is never split): every pair's cells of the unit
     * assembled into the buffer (zeroed past K and V: the padding) and summed, then written out.
     */
    private static void stagedByteCells(CopyPlan.Launch l, CopyPlan.Staging staging, Runs runs, long[] out) {
        ChecksumMode mode = l.mode();
        int[] starts = pageStarts(runs);
        for (int q = 0; q + 1 < starts.length; q++) {
            long tokens = 0;
            for (int r = starts[q]; r < starts[q + 1]; r++) {
                tokens += runs.n[r];
            }
            for (int u = 0; u < staging.units(); u++) {
                List<CopyPlan.Pair> unit = staging.unit(u);
                long perToken = 0;
                for (CopyPlan.Pair pair : unit) {
                    perToken += 8L * pair.pieces();
                }
                MemorySegment stage = stage(perToken * tokens);
                for (int pass = 0; pass < 2; pass++) {
                    long at = 0;
                    for (CopyPlan.Pair pair : unit) {
                        ByteCells cells = new ByteCells(pair);
                        int pieces = pair.pieces();
                        for (int r = starts[q]; r < starts[q + 1]; r++) {
                            long s = 0;
                            for (int i = 0; i < runs.n[r]; i++, at += 8L * pieces) {
                                if (pass == 0) {
                                    stage.asSlice(at, 8L * pieces).fill((byte) 0);
                                    cells.read(runs.srcPage[r], runs.srcSlot[r] + i, stage, at);
                                    s += cellSum(stage, at, pieces, runs.t0[r] + i, mode);
                                } else {
                                    cells.write(stage, at, runs.dstPage[r], runs.dstSlot[r] + i);
                                }
                            }
                            if (pass == 0) {
                                out[runs.block[r]] += pair.factor() * s;
                            }
                        }
                    }
                }
            }
        }
    }

    /** Byte cells: each cell's K and V bytes assembled into a zeroed scratch of whole pieces, summed, and copied out. */
    private static void byteCells(CopyPlan.Launch l, Runs runs, long[] out) {
        ChecksumMode mode = l.mode();
        for (CopyPlan.Pair pair : l.pairs()) {
            ByteCells cells = new ByteCells(pair);
            int pieces = pair.pieces();
            MemorySegment cell = MemorySegment.ofArray(new long[pieces]);   // bytes past K and V stay zero: the padding
            for (int r = 0; r < runs.count; r++) {
                long s = 0;
                for (int i = 0; i < runs.n[r]; i++) {
                    cells.read(runs.srcPage[r], runs.srcSlot[r] + i, cell, 0);
                    cells.write(cell, 0, runs.dstPage[r], runs.dstSlot[r] + i);
                    s += cellSum(cell, 0, pieces, runs.t0[r] + i, mode);
                }
                out[runs.block[r]] += pair.factor() * s;
            }
        }
    }

    /**
     * A pair's byte cells on both sides: a cell's K bytes then its V bytes (a piece may straddle them), read into or
     * written from whole pieces at some place of a scratch.
     */
    private record ByteCells(SlicePlan.Part sk, SlicePlan.Part sv, SlicePlan.Part dk, SlicePlan.Part dv) {
        ByteCells(CopyPlan.Pair pair) {
            this(pair.source().k(), pair.source().v(), pair.destination().k(), pair.destination().v());
        }

        /** The source cell at {@code slot} of {@code page} into {@code into} from {@code at}. */
        void read(long page, int slot, MemorySegment into, long at) {
            MemorySegment.copy(host(sk), sk.cellOffset(page, slot), into, at, sk.bytes());
            if (sv != null) {
                MemorySegment.copy(host(sv), sv.cellOffset(page, slot), into, at + sk.bytes(), sv.bytes());
            }
        }

        /** {@code from}'s bytes from {@code at} into the destination cell at {@code slot} of {@code page}. */
        void write(MemorySegment from, long at, long page, int slot) {
            MemorySegment.copy(from, at, host(dk), dk.cellOffset(page, slot), dk.bytes());
            if (dv != null) {
                MemorySegment.copy(from, at + dk.bytes(), host(dv), dv.cellOffset(page, slot), dv.bytes());
            }
        }
    }

    /** A byte cell's pieces as the definition reads them: little-endian words at any alignment. */
    private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** {@code sum_p v(x_p) * (2(t*P + p) + 1)} over the {@code pieces} pieces of the cell at {@code at} of {@code seg}. */
    private static long cellSum(MemorySegment seg, long at, int pieces, long t, ChecksumMode mode) {
        long s = 0;
        long w = Definition.weight(t * pieces);
        for (int p = 0; p < pieces; p++, w += 2) {
            s += Definition.pieceValue(seg.get(PIECE, at + 8L * p), mode) * w;
        }
        return s;
    }

    private static MemorySegment host(SlicePlan.Part p) {
        return ((KvMemory.Host) p.memory()).segment();
    }

    /** Segments of a confined arena may only be used by their owner thread: such copies stay on the caller. */
    private static boolean sharable(CopyPlan.Launch l, Thread notTheCaller) {
        for (CopyPlan.Pair p : l.pairs()) {
            for (SlicePlan.Slice s : List.of(p.source(), p.destination())) {
                if (!host(s.k()).isAccessibleBy(notTheCaller) || (s.v() != null && !host(s.v()).isAccessibleBy(notTheCaller))) {
                    return false;
                }
            }
        }
        return true;
    }

    /** {@link VectorCopyLoop#NARROW_STREAMS}, or false in a JVM without {@code jdk.incubator.vector}. */
    private static boolean narrowStreams() {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            try {
                return VectorCopyLoop.NARROW_STREAMS;
            } catch (LinkageError e) {
                // the scalar loop
            }
        }
        return false;
    }

    private static CopyLoop load(boolean inCache, boolean headsIntoHnd, boolean narrow, boolean steppedQuads) {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            try {
                return new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, inCache, headsIntoHnd, narrow, steppedQuads);
            } catch (LinkageError e) {
                // fall through to the scalar loop
            }
        }
        return new ScalarCopyLoop(false);
    }
}
