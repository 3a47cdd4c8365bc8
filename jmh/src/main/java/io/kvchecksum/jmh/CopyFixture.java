package io.kvchecksum.jmh;

import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvLayouts.PagedShape;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.spi.CpuWorkSplit;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;

/**
 * A verifying copy of one request and its baseline: the source is a {@link KvFixture} (vLLM flash or MLA pages in a
 * shuffled table), the destination another cache of the same pages in another shuffled table, in the same layout
 * ({@code perm}: the page permutation of an engine's receive path) or FlashInfer HND ({@code hnd}: a layout
 * conversion; MLA has one layout, so {@code hnd} is {@code perm} there).
 *
 * <p>The baseline is {@link MemorySegment#copy} of the same page runs with the same threads (and, as a second
 * baseline, a Vector API copy loop of the same runs, {@link #baselineVector}), each in two orders: for every layer and
 * table entry the page's K then its V ({@link #baseline}), or for every layer its K pages then its V pages, the order
 * in which the verifying copy's split by layers runs ({@link #baselineGroups}, {@link #baselineVectorGroups}); and the
 * vector loop at 256 bits in that order ({@link #baselineVector256Groups}); the fastest of the five is the bound. Each
 * copies the source page's bytes of a region into the destination page's, split over a pool of as many threads as the CPU backend uses from {@link CpuWorkSplit#PARALLEL_BYTES} on, in tasks
 * of about {@code max(TASK_BYTES, total/4T)}, as the backend splits its work. In the {@code hnd} conversion the baseline
 * writes each page's bytes as they are (the same bytes, not transposed): a copy can go no faster than that.
 *
 * @param source the source cache and request
 * @param destination the destination's group
 * @param destinationRequest the destination's table
 * @param arena the destination's memory
 * @param plan the compiled copy
 * @param runs the baseline's page runs, {@code [task][run]}: {source segment, source offset, destination segment,
 *     destination offset, bytes}, each page's K then V
 * @param groupRuns the same runs, each layer's K pages then its V pages
 * @param pool the baseline's pool, or null on the calling thread
 */
record CopyFixture(KvFixture source, KvCacheGroup destination, RequestBlocks destinationRequest, Arena arena,
                   CopyPlan plan, List<List<Object[]>> runs, List<List<Object[]>> groupRuns, ForkJoinPool pool)
        implements AutoCloseable {

    static CopyFixture of(KvChecksum backend, String shape, String size, String conversion, int threads) {
        KvFixture src = KvFixture.of(shape, size);
        ModelShape s = src.shape();
        int pages = src.table().length;
        PagedShape ps = new PagedShape(pages, ModelShape.BLOCK_SIZE, s.heads(), s.headDim(), s.elemBytes());
        long layerBytes = s.bytesPerToken() / s.layers() * pages * ModelShape.BLOCK_SIZE;
        Arena arena = Arena.ofShared();
        List<MemorySegment> segs = new ArrayList<>();
        for (int l = 0; l < s.layers(); l++) {
            segs.add(arena.allocate(layerBytes, 64));
        }
        List<KvMemory> mem = segs.stream().map(KvMemory::host).map(KvMemory.class::cast).toList();
        KvCacheGroup dst = s.mla() ? KvLayouts.vllmMla(ps, null, mem)
                : "hnd".equals(conversion) ? KvLayouts.flashInferHnd(ps, 0, null, mem) : KvLayouts.vllmFlash(ps, 0, null, mem);
        int[] table = KvFixture.shuffledPages(pages, new Random(KvFixture.SEED + 1));
        RequestBlocks dq = RequestBlocks.of(table, src.tokens(), ModelShape.BLOCK_SIZE);
        CopyPlan plan = backend.compileCopy(src.group(), src.request(), dst, dq, ChecksumSpec.STANDARD);
        // the baseline's runs: per layer and table entry, the page of every region (K, V) as one contiguous run;
        // groupRuns: per layer and region, every table entry's page (a layer's K pages, then its V pages)
        List<Object[]> all = new ArrayList<>();
        List<Object[]> byGroup = new ArrayList<>();
        int regions = s.mla() ? 1 : 2;
        long pageBytes = layerBytes / pages / regions;
        for (int l = 0; l < s.layers(); l++) {
            for (int i = 0; i < pages; i++) {
                for (int part = 0; part < regions; part++) {
                    all.add(run(src, segs, s, l, i, part, pageBytes, pages, table, conversion));
                }
            }
            for (int part = 0; part < regions; part++) {
                for (int i = 0; i < pages; i++) {
                    byGroup.add(run(src, segs, s, l, i, part, pageBytes, pages, table, conversion));
                }
            }
        }
        long total = src.kvBytes();
        boolean parallel = threads > 1 && total >= CpuWorkSplit.PARALLEL_BYTES;
        List<List<Object[]>> tasks = tasks(all, parallel, total, threads);
        List<List<Object[]>> groupTasks = tasks(byGroup, parallel, total, threads);
        return new CopyFixture(src, dst, dq, arena, plan, tasks, groupTasks, parallel ? new ForkJoinPool(threads) : null);
    }

    private static Object[] run(KvFixture src, List<MemorySegment> segs, ModelShape s, int l, int i, int part, long pageBytes,
            int pages, int[] table, String conversion) {
        long sOff = s.mla() ? src.table()[i] * pageBytes : (part * (long) pages + src.table()[i]) * pageBytes;
        long dOff = s.mla() ? table[i] * pageBytes : "hnd".equals(conversion)
                ? (2L * table[i] + part) * pageBytes : (part * (long) pages + table[i]) * pageBytes;
        return new Object[] {src.segments().get(l), sOff, segs.get(l), dOff, pageBytes};
    }

    private static List<List<Object[]>> tasks(List<Object[]> all, boolean parallel, long total, int threads) {
        List<List<Object[]>> tasks = new ArrayList<>();
        if (!parallel) {
            tasks.add(all);
        } else {
            long target = Math.max(CpuWorkSplit.TASK_BYTES, total / (4L * threads));
            List<Object[]> t = new ArrayList<>();
            long bytes = 0;
            for (Object[] r : all) {
                t.add(r);
                bytes += (long) r[4];
                if (bytes >= target) {
                    tasks.add(t);
                    t = new ArrayList<>();
                    bytes = 0;
                }
            }
            if (!t.isEmpty()) {
                tasks.add(t);
            }
        }
        return tasks;
    }

    /** The baseline: every page run copied with {@link MemorySegment#copy}. {@return a word of the destination} */
    long baseline() {
        return each(runs, CopyFixture::copy);
    }

    /**
     * {@link #baseline} in the verifying copy's order over the pool ({@code CpuCopy}'s split by layers): a layer's K
     * pages, then its V pages, in tasks of the same bytes, rather than each page's K and V in turn. {@return a word of
     * the destination}
     */
    long baselineGroups() {
        return each(groupRuns, CopyFixture::copy);
    }

    /** {@link #baselineVector} in the verifying copy's order ({@link #baselineGroups}). {@return a word of the destination} */
    long baselineVectorGroups() {
        return each(groupRuns, VectorCopy::copy);
    }

    /**
     * {@link #baselineVectorGroups} in 256-bit vectors: from memory on Intel a plain copy in 256-bit vectors ran 12-14 %
     * faster than in 512-bit ones (docs/bench-cpu.md, "On Intel (Emerald Rapids): the copy's last cells"), so it is a
     * baseline too. {@return a word of the destination}
     */
    long baselineVector256Groups() {
        return each(groupRuns, VectorCopy::copy256);
    }

    /**
     * The second baseline: every page run copied by a Vector API loop (four vectors loaded, then stored, at the JVM's
     * preferred width), which in this JVM can be faster than {@link MemorySegment#copy}; the bound of the verifying
     * copy is the fastest of the five baselines. {@return a word of the destination}
     */
    long baselineVector() {
        return each(runs, VectorCopy::copy);
    }

    /** Loaded only where the Vector API module is present. */
    private static final class VectorCopy {
        private static final jdk.incubator.vector.VectorSpecies<Long> S = jdk.incubator.vector.LongVector.SPECIES_PREFERRED;
        private static final java.nio.ByteOrder LE = java.nio.ByteOrder.LITTLE_ENDIAN;

        private static final jdk.incubator.vector.VectorSpecies<Long> S256 = jdk.incubator.vector.LongVector.SPECIES_256;

        /** {@link #copy} at 256 bits (a constant species of its own: the Vector API compiles only constant species). */
        static void copy256(List<Object[]> t) {
            long vb = 32;
            for (Object[] r : t) {
                MemorySegment s = (MemorySegment) r[0];
                MemorySegment d = (MemorySegment) r[2];
                long sa = (long) r[1];
                long da = (long) r[3];
                long n = (long) r[4];
                long o = 0;
                for (; o + 4 * vb <= n; o += 4 * vb) {
                    var x0 = jdk.incubator.vector.LongVector.fromMemorySegment(S256, s, sa + o, LE);
                    var x1 = jdk.incubator.vector.LongVector.fromMemorySegment(S256, s, sa + o + vb, LE);
                    var x2 = jdk.incubator.vector.LongVector.fromMemorySegment(S256, s, sa + o + 2 * vb, LE);
                    var x3 = jdk.incubator.vector.LongVector.fromMemorySegment(S256, s, sa + o + 3 * vb, LE);
                    x0.intoMemorySegment(d, da + o, LE);
                    x1.intoMemorySegment(d, da + o + vb, LE);
                    x2.intoMemorySegment(d, da + o + 2 * vb, LE);
                    x3.intoMemorySegment(d, da + o + 3 * vb, LE);
                }
                if (o < n) {
                    MemorySegment.copy(s, sa + o, d, da + o, n - o);
                }
            }
        }

        static void copy(List<Object[]> t) {
            long vb = 8L * S.length();
            for (Object[] r : t) {
                MemorySegment s = (MemorySegment) r[0];
                MemorySegment d = (MemorySegment) r[2];
                long sa = (long) r[1];
                long da = (long) r[3];
                long n = (long) r[4];
                long o = 0;
                for (; o + 4 * vb <= n; o += 4 * vb) {
                    var x0 = jdk.incubator.vector.LongVector.fromMemorySegment(S, s, sa + o, LE);
                    var x1 = jdk.incubator.vector.LongVector.fromMemorySegment(S, s, sa + o + vb, LE);
                    var x2 = jdk.incubator.vector.LongVector.fromMemorySegment(S, s, sa + o + 2 * vb, LE);
                    var x3 = jdk.incubator.vector.LongVector.fromMemorySegment(S, s, sa + o + 3 * vb, LE);
                    x0.intoMemorySegment(d, da + o, LE);
                    x1.intoMemorySegment(d, da + o + vb, LE);
                    x2.intoMemorySegment(d, da + o + 2 * vb, LE);
                    x3.intoMemorySegment(d, da + o + 3 * vb, LE);
                }
                if (o < n) {
                    MemorySegment.copy(s, sa + o, d, da + o, n - o);
                }
            }
        }
    }

    private long each(List<List<Object[]>> runs, java.util.function.Consumer<List<Object[]>> copier) {
        if (pool == null) {
            for (List<Object[]> t : runs) {
                copier.accept(t);
            }
        } else {
            List<Callable<Void>> calls = new ArrayList<>(runs.size());
            for (List<Object[]> t : runs) {
                calls.add(() -> {
                    copier.accept(t);
                    return null;
                });
            }
            try {
                for (Future<Void> f : pool.invokeAll(calls)) {
                    f.get();
                }
            } catch (InterruptedException | ExecutionException e) {
                throw new IllegalStateException(e);
            }
        }
        return ((MemorySegment) runs.get(0).get(0)[2]).get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
    }

    private static void copy(List<Object[]> t) {
        for (Object[] r : t) {
            MemorySegment.copy((MemorySegment) r[0], (long) r[1], (MemorySegment) r[2], (long) r[3], (long) r[4]);
        }
    }

    /** Checks the copy's values against the checksum of the destination after it, and the source's own checksums. */
    void verify(KvChecksum backend, long[] values) {
        long[] after = backend.blockChecksums(destination, destinationRequest);
        long[] producer = backend.blockChecksums(source.group(), source.request());
        Bench.check(Arrays.equals(values, after), "copy: the values differ from the destination's checksums after it");
        Bench.check(Arrays.equals(values, producer), "copy: the values differ from the source's checksums");
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdown();
        }
        arena.close();
        source.close();
    }
}
