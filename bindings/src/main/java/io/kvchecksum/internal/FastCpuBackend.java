package io.kvchecksum.internal;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;
import io.kvchecksum.spi.ByteCellRoute;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;

/**
 * The fast CPU backend: the multiply-free Vector API loop ({@link VectorSliceKernel}) where the JVM has
 * {@code jdk.incubator.vector}, else a scalar loop, split over the machine's cores for requests of a few MiB or more
 * (handing work to another thread costs tens of microseconds, more than a small request takes). Memory of a
 * confined {@link java.lang.foreign.Arena} can only be read by its owner, so such requests run on the calling thread.
 *
 * <p>Blocks are visited in the order of their cells' addresses, not of the block table, and a block that lies within
 * one page is read at a constant token stride, so the JIT checks bounds once per loop; MLA rows (the whole cell, back
 * to back) are one stream per block. What each of these is worth was measured: {@code docs/bench-cpu.md}.
 */
public final class FastCpuBackend implements KvChecksum {
    /** Below this many KV bytes a request runs on the calling thread (the read bound splits work the same way). */
    public static final long PARALLEL_BYTES = 4L << 20;
    /** The smallest piece of work handed to another thread. */
    public static final long TASK_BYTES = 1L << 20;

    private static final SliceKernel KERNEL = loadKernel(false);
    /** The mixed mode's loops: the same structure as {@link #KERNEL}'s, each piece through the mixer as it is read. */
    private static final SliceKernel MIXED_KERNEL = loadKernel(true);
    // Diagnostic switches, off by default, each restoring one earlier behaviour so that its cost can be measured
    // (docs/bench-cpu.md): the row-wise streaming loop for side-by-side heads, no read-ahead of the next block,
    // the offset table for every block, blocks in table order. The results are the same either way.
    private static final boolean ROWS = Boolean.getBoolean("kvchecksum.cpu.rows");
    private static final boolean TOUCH = !Boolean.getBoolean("kvchecksum.cpu.notouch");
    private static final boolean NO_AFFINE = Boolean.getBoolean("kvchecksum.cpu.noaffine");
    private static final boolean NO_ORDER = Boolean.getBoolean("kvchecksum.cpu.noorder");
    private static volatile ForkJoinPool pool;
    /** Never started: only asked whether a segment is readable by a thread other than its owner. */
    private static final Thread NOT_THE_CALLER = Thread.ofPlatform().unstarted(() -> { });

    private final int threads;

    public FastCpuBackend() {
        this(Runtime.getRuntime().availableProcessors());
    }

    /** A backend using at most {@code threads} threads per call (1: the calling thread only). */
    public FastCpuBackend(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        this.threads = threads;
    }

    @Override
    public String name() {
        return "cpu";
    }

    @Override
    public String description() {
        return "cpu (" + KERNEL.describe() + ", " + threads + " thread" + (threads == 1 ? "" : "s") + ")";
    }

    /** Whether this JVM runs the Vector API loop; false means {@code --add-modules jdk.incubator.vector} is missing. */
    public static boolean vectorized() {
        return KERNEL instanceof VectorSliceKernel;
    }

    /** Both modes, through the same plan, block order, paths and thread split; only the kernel differs. */
    @Override
    public boolean supports(ChecksumMode mode) {
        return true;
    }

    @Override
    public long[] blockChecksums(SlicePlan plan) {
        plan.requireHost(name(), "");
        plan.requireMode(this);
        if (plan.hasByteCells()) {
            // cells that straddle K and V or are padded: their own path; the loops below only ever see whole pieces
            return ByteCellRoute.blockChecksums(plan, this::blockChecksums, ByteCellSums::blockChecksums);
        }
        long[] out = new long[plan.numBlocks()];
        long[] factors = new long[plan.numSlices()];
        for (int i = 0; i < factors.length; i++) {
            factors[i] = plan.slice(i).factor();
        }
        run(plan, (task) -> {
            int first = task.run.firstSlice();
            if (!task.parallel) {
                // on the calling thread: straight into the result, nothing to allocate or publish
                compute(plan, task, (h, p, b, s) -> out[b] += factors[first + h] * s);
                return NOTHING;
            }
            long[] part = new long[task.p1 - task.p0];
            compute(plan, task, (h, p, b, s) -> part[p - task.p0] += factors[first + h] * s);
            return () -> {
                for (int i = 0; i < part.length; i++) {
                    out[task.blocks.order[task.p0 + i]] += part[i];
                }
            };
        });
        return out;
    }

    @Override
    public SliceSums sliceSums(SlicePlan plan) {
        plan.requireHost(name(), "");
        plan.requireMode(this);
        if (plan.hasByteCells()) {
            return ByteCellRoute.sliceSums(plan, this::sliceSums, p -> p.sliceSums(ByteCellSums.values(p)));
        }
        int nb = plan.numBlocks();
        long[] values = new long[plan.numSlices() * nb];
        run(plan, (task) -> {
            int row0 = task.run.firstSlice();
            compute(plan, task, (h, p, b, s) -> values[(row0 + h) * nb + b] = s);
            return NOTHING;
        });
        return plan.sliceSums(values);
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

    /**
     * A layer and the blocks {@code order[p0] .. order[p1-1]}; {@code streaming} when the request is far larger than
     * the caches, so its bytes come from memory.
     */
    private record Task(SlicePlan.LayerRun run, Blocks blocks, int p0, int p1, boolean streaming, boolean parallel) {
    }

    private static final Runnable NOTHING = () -> { };

    @FunctionalInterface
    private interface SliceSink {
        void accept(int localHead, int position, int blockColumn, long sliceSum);
    }

    /** Computes a task and returns the step that publishes its result; publishing runs on the calling thread. */
    @FunctionalInterface
    private interface TaskBody {
        Runnable run(Task task);
    }

    private void run(SlicePlan plan, TaskBody body) {
        int nb = plan.numBlocks();
        if (nb == 0) {
            return;
        }
        boolean parallel = parallel(plan);
        List<Task> tasks = tasks(plan, nb, parallel, Blocks.of(plan));
        if (!parallel || tasks.size() == 1) {
            for (Task t : tasks) {
                body.run(t).run();
            }
            return;
        }
        List<Callable<Runnable>> calls = new ArrayList<>(tasks.size());
        for (Task t : tasks) {
            calls.add(() -> body.run(t));
        }
        try {
            for (Future<Runnable> f : pool(threads).invokeAll(calls)) {
                f.get().run();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while checksumming", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
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
            if (sorted || nb >= 1 << 24 || NO_ORDER) {
                for (int b = 0; b < nb; b++) {
                    order[b] = b;
                }
            } else {
                java.util.Arrays.sort(keys);
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

    /** One task per layer when sequential; when parallel, layers cut into block ranges of about {@code target} bytes. */
    private List<Task> tasks(SlicePlan plan, int nb, boolean parallel, Blocks order) {
        List<Task> tasks = new ArrayList<>();
        long total = kvBytes(plan);
        boolean streaming = total >= PARALLEL_BYTES;
        long target = Math.max(TASK_BYTES, total / (4L * threads));
        for (SlicePlan.LayerRun run : plan.layerRuns()) {
            int step = nb;
            if (parallel) {
                long cellBytes = 8L * plan.slice(run.firstSlice()).pieces();
                long perBlock = Math.max(1, run.numHeads() * cellBytes * plan.request().blockSize());
                step = (int) Math.max(1, Math.min(nb, target / perBlock));
            }
            for (int p0 = 0; p0 < nb; p0 += step) {
                tasks.add(new Task(run, order, p0, Math.min(nb, p0 + step), streaming, parallel));
            }
        }
        return tasks;
    }

    private static void compute(SlicePlan plan, Task task, SliceSink sink) {
        SliceKernel kernel = plan.mode() == ChecksumMode.MIXED ? MIXED_KERNEL : KERNEL;
        RequestBlocks request = plan.request();
        SlicePlan.LayerRun run = task.run;
        int heads = run.numHeads();
        SlicePlan.Slice first = plan.slice(run.firstSlice());
        SlicePlan.Part k = first.k();
        SlicePlan.Part v = first.v();
        MemorySegment kSeg = ((KvMemory.Host) k.memory()).segment();
        MemorySegment vSeg = v == null ? null : ((KvMemory.Host) v.memory()).segment();
        int pieces = first.pieces();
        int kPieces = k.pieces();
        int pageSize = plan.pageSize();
        long start = request.startToken();
        int maxTokens = (int) Math.min(request.blockSize(), request.numTokens() - start);
        // scratch of the offset-table path, allocated only when a block needs it
        long[] kOff = null;
        long[] vOff = null;
        long[] perHead = null;
        long[] scratchA = null;
        long[] scratchT = null;
        boolean streaming = task.streaming;
        int rowPieces = streaming ? heads * Math.max(kPieces, first.vPieces()) : 0;
        int vPieces = first.vPieces();
        boolean kAffine = kernel.affine(kPieces, k.tokenStride(), pieces);
        boolean vAffine = v == null || kernel.affine(vPieces, v.tokenStride(), pieces);
        boolean rows = streaming && heads > 1 && (run.kHeadStride() == 8L * kPieces
                || (v != null && run.vHeadStride() == 8L * vPieces));
        // Streaming side-by-side heads head by head reads each block in strided passes; reading the next block's rows
        // front to back first (one byte per cache line) lets the prefetchers stream it while this block is summed.
        boolean touchAhead = streaming && heads > 1 && TOUCH;
        long touched = 0;
        Blocks blocks = task.blocks;
        for (int p = task.p0; p < task.p1; p++) {
            int b = blocks.order[p];
            long t0 = blocks.t0[p];
            int n = blocks.n[p];
            int slot = blocks.slot[p];
            long page = blocks.page[p];
            if (slot + n <= pageSize && kAffine && vAffine && !(rows && (ROWS || kernel.streamRows())) && !NO_AFFINE) {
                // the block within one page: token i's cell at a constant stride, no offset table
                long kBase = k.cellOffset(page, slot);
                long vBase = v == null ? 0 : v.cellOffset(page, slot);
                if (touchAhead && p + 1 < task.p1) {
                    touched += touchNext(blocks, p + 1, pageSize, k, kSeg, v, vSeg, heads, run);
                }
                for (int h = 0; h < heads; h++) {
                    long sum = v == null
                            ? kernel.sumAffine(kSeg, kBase + h * run.kHeadStride(), k.tokenStride(), n, t0, pieces, 0, kPieces)
                            : kernel.headAffine(kSeg, kBase + h * run.kHeadStride(), k.tokenStride(), kPieces, vSeg,
                                    vBase + h * run.vHeadStride(), v.tokenStride(), vPieces, n, t0);
                    sink.accept(h, p, b, sum);
                }
                continue;
            }
            // The offset-table path: one division per block, then step slot by slot.
            int tableIndex = (int) ((t0 - start) / pageSize);
            if (kOff == null) {
                kOff = new long[maxTokens];
                vOff = v == null ? null : new long[maxTokens];
                perHead = new long[heads];
                scratchA = new long[rowPieces];
                scratchT = new long[rowPieces];
            }
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
            java.util.Arrays.fill(perHead, 0);
            addRegion(kernel, kSeg, k.pieces(), run.kHeadStride(), kOff, n, t0, pieces, 0, heads, scratchA, scratchT, perHead, streaming);
            if (v != null) {
                addRegion(kernel, vSeg, v.pieces(), run.vHeadStride(), vOff, n, t0, pieces, kPieces, heads, scratchA, scratchT, perHead,
                        streaming);
            }
            for (int h = 0; h < heads; h++) {
                sink.accept(h, p, b, perHead[h]);
            }
        }
        if (touched == 42) {
            blackhole = touched;   // the touched bytes must look used, or the JIT drops the loads
        }
    }

    private static volatile long blackhole;

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

    private static ForkJoinPool pool(int threads) {
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
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
                && !Boolean.getBoolean("kvchecksum.cpu.scalar")) {
            try {
                return mixed ? new MixedVectorSliceKernel() : new VectorSliceKernel();
            } catch (LinkageError e) {
                // fall through to the scalar loops
            }
        }
        return mixed ? new MixedScalarSliceKernel() : new ScalarSliceKernel();
    }
}
