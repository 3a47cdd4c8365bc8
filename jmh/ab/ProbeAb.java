package io.kvchecksum;

import io.kvchecksum.bench.ProbeWindowBound;
import io.kvchecksum.internal.ProbeWindows;
import io.kvchecksum.jmh.Backends;
import io.kvchecksum.jmh.KvFixture;
import io.kvchecksum.jmh.ModelShape;
import io.kvchecksum.jmh.PageProbeBench;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

/**
 * A/B of the page probe's host loop in one JVM (not a benchmark; built and run by {@code jmh/ab/probe-ab.sh}):
 * docs/bench-cpu.md, "Page probe cost". Sides, one call each in turn with the order rotating, best and median:
 * <ul>
 * <li>{@code full}: the CPU backend's full checksum of the request (what the target scales);
 * <li>{@code ship}: {@link PageProbe#compute} as it ships; {@code onePage}: the same of the request's first page (the
 *     fixed per-call cost);
 * <li>{@code dN}: the loop before the sums were carried over the runs (a reduction per run of one memory), with the
 *     windows of the page {@code N} ahead touched ({@code d0}: no touch); {@code rN}: the same with the sums carried
 *     over the runs ({@code ProbeWindows.sumRuns}, as shipped: {@code r1} is {@code ship} without its fixed cost);
 * <li>{@code sN}: {@code rN} with a sparse touch: one window per 4 KiB of each run's head and tail rows (the first
 *     window of a run of parts whose windows lie within 4 KiB of it), so the touch takes the page walk ahead without a
 *     load per window;
 * <li>{@code twoPass}: per chunk, one load of every window of the chunk, then the summing pass;
 * <li>{@code serial}: {@code d1} on the calling thread alone (what the pool adds);
 * <li>{@code bound}: {@link ProbeWindowBound}, a plain read of exactly the probe's windows (every 64-byte window one
 *     vector load and an add) in the same page order, the same chunks and the same pool: the honest bound of a reader
 *     of those bytes; {@code bound1}: the same on the calling thread alone;
 * <li>{@code rmN}: chunks of {@code N} pages read memory by memory (all the chunk's windows of one layer's K, then
 *     the next), not page by page;
 * <li>{@code pool2}, {@code twoPassPool2}: on a pool of 2 workers instead of the common pool (1 worker and the caller
 *     on 2 processors).
 * </ul>
 * Every probe side's head and tail values are compared with {@code ship}'s first (exit on a difference). Before each timed
 * call {@code PageProbeBench.evictBytes()} of another buffer is read (twice the L3, at least 128 MiB; {@code -DevictMiB=N}:
 * N MiB), untimed, so every side starts with its lines out of the caches ({@code -Dwarm=true}: not).
 *
 * <p>Arguments: layout ({@code vllm-flash-16} or {@code sglang-1}), size ({@code 256MiB}), rounds, sides (comma
 * separated), and {@code huge} to madvise the cache's memory {@code MADV_HUGEPAGE} before it is filled (this machine's
 * THP is {@code madvise}); the AnonHugePages of {@code /proc/self/smaps} is printed either way.
 */
public final class ProbeAb {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_512;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int CHUNK_WINDOWS = 1 << 12;
    static volatile long sink;

    public static void main(String[] args) throws Throwable {
        String layout = args[0];
        String size = args[1];
        int rounds = Integer.parseInt(args[2]);
        String[] sides = args[3].split(",");
        boolean huge = args.length > 4 && args[4].equals("huge");
        ModelShape s = ModelShape.LLAMA3_8B_TP1;
        Arena arena = Arena.ofShared();
        KvCacheGroup group;
        RequestBlocks request;
        int slots = Math.toIntExact(s.tokens(size));
        if (layout.equals("vllm-flash-16")) {
            int pages = Math.ceilDiv(slots, ModelShape.BLOCK_SIZE);
            long layerBytes = s.bytesPerToken() / s.layers() * pages * ModelShape.BLOCK_SIZE;
            List<MemorySegment> segs = alloc(arena, s.layers(), layerBytes, huge);
            List<KvMemory> mem = segs.stream().map(KvMemory::host).map(KvMemory.class::cast).toList();
            group = KvLayouts.vllmFlash(new KvLayouts.PagedShape(pages, ModelShape.BLOCK_SIZE, s.heads(), s.headDim(),
                    s.elemBytes()), 0, null, mem);
            request = RequestBlocks.of(shuffled(pages), (long) pages * ModelShape.BLOCK_SIZE, ModelShape.BLOCK_SIZE);
        } else {
            long bufferBytes = (long) slots * s.heads() * s.headDim() * s.elemBytes();
            List<MemorySegment> all = alloc(arena, 2 * s.layers(), bufferBytes, huge);
            List<KvMemory> ks = new ArrayList<>();
            List<KvMemory> vs = new ArrayList<>();
            for (int i = 0; i < all.size(); i++) {
                (i % 2 == 0 ? ks : vs).add(KvMemory.host(all.get(i)));
            }
            group = KvLayouts.sglang(new KvLayouts.PagedShape(slots, 1, s.heads(), s.headDim(), s.elemBytes()), 0,
                    IntStream.range(0, s.layers()).toArray(), ks, vs);
            request = RequestBlocks.of(shuffled(slots), slots, ModelShape.BLOCK_SIZE);
        }
        System.out.println("# AnonHugePages " + anonHugeKiB() + " KiB, common pool parallelism "
                + ForkJoinPool.getCommonPoolParallelism() + ", processors " + Runtime.getRuntime().availableProcessors());
        SlicePlan plan = SlicePlan.of(group, request);
        SlicePlan onePage = SlicePlan.of(group, RequestBlocks.of(new int[] {request.page(0)}, group.pageSize(),
                ModelShape.BLOCK_SIZE));
        KvChecksum cpu = Backends.open("cpu");
        long fullBytes = group.bytesPerToken() * request.numTokens();
        Win win = Win.of(plan);
        long read = win.bytesPerPage(group.pageSize()) * plan.numPages();
        double fraction = (double) read / fullBytes;
        System.out.printf("# %s; %s %s: %d bytes, %d pages, probe reads %d bytes, fraction %.4f%n", cpu.description(),
                layout, size, fullBytes, plan.numPages(), read, fraction);
        PageProbe.Probes want = PageProbe.compute(cpu, plan, 64);
        ForkJoinPool pool2 = new ForkJoinPool(2);
        ProbeWindowBound bound = ProbeWindowBound.of(plan);
        List<LongSupplier> work = new ArrayList<>();
        for (String side : sides) {
            LongSupplier w = switch (side) {
                case "full" -> () -> cpu.blockChecksums(plan)[0];
                case "ship" -> () -> PageProbe.compute(cpu, plan, 64).head()[0];
                case "onePage" -> () -> PageProbe.compute(cpu, onePage, 64).head()[0];
                case "bound" -> bound::read;
                case "bound1" -> bound::readOnCaller;
                case "twoPass" -> probe(win, plan, -1, null, want);
                case "twoPassPool2" -> probe(win, plan, -1, pool2, want);
                case "serial" -> probe(win, plan, 1, "serial", want);
                case "pool2" -> probe(win, plan, 1, pool2, want);
                default -> {
                    if (side.startsWith("s")) {
                        Win c = win.copy();
                        c.carried = true;
                        c.sparse = true;
                        yield probe(c, plan, Integer.parseInt(side.substring(1)), null, want);
                    }
                    if (side.startsWith("r") && !side.startsWith("rm")) {
                        win.carried = true;
                        Win c = win.copy();
                        win.carried = false;
                        yield probe(c, plan, Integer.parseInt(side.substring(1)), null, want);
                    }
                    if (side.startsWith("rm")) {
                        yield runMajor(win, plan, Integer.parseInt(side.substring(2)), want);
                    }
                    if (!side.startsWith("d")) {
                        throw new IllegalArgumentException("side " + side);
                    }
                    yield probe(win, plan, Integer.parseInt(side.substring(1)), null, want);
                }
            };
            work.add(w);
        }
        // Each timed call starts with the probe's lines out of the caches (its 8 MiB of vLLM windows fit any L3, so a
        // side right after another probe side would read from L3): PageProbeBench.evictBytes() read in between (twice
        // the L3, at least 128 MiB; -DevictMiB=N: N MiB), untimed.
        long evict = Long.getLong("evictMiB", PageProbeBench.evictBytes() >> 20) << 20;
        System.out.println("# " + (Boolean.getBoolean("warm") ? "caches not evicted" : "evict " + (evict >> 20) + " MiB before each call"));
        MemorySegment flush = Boolean.getBoolean("warm") ? null : arena.allocate(evict, 64);
        long until = System.nanoTime() + 3_000_000_000L;
        while (System.nanoTime() < until) {
            for (LongSupplier w : work) {
                sink += w.getAsLong();
            }
        }
        int n = sides.length;
        long[][] t = new long[n][rounds];
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < n; j++) {
                int x = (j + r) % n;
                if (flush != null) {
                    sink += evict(flush);
                }
                long t0 = System.nanoTime();
                sink += work.get(x).getAsLong();
                t[x][r] = System.nanoTime() - t0;
            }
        }
        double[] best = new double[n];
        double[] med = new double[n];
        for (int j = 0; j < n; j++) {
            Arrays.sort(t[j]);
            best[j] = t[j][0] / 1e3;
            med[j] = t[j][rounds / 2] / 1e3;
        }
        int full = Arrays.asList(sides).indexOf("full");
        int fixed = Arrays.asList(sides).indexOf("onePage");
        int bnd = Arrays.asList(sides).indexOf("bound");
        for (int j = 0; j < n; j++) {
            StringBuilder b = new StringBuilder(String.format("%-13s best %9.1f us  median %9.1f us", sides[j], best[j], med[j]));
            if (full >= 0 && j != full && j != fixed) {
                double fb = fixed >= 0 ? best[fixed] : 0;
                double fm = fixed >= 0 ? med[fixed] : 0;
                b.append(String.format("  less fixed / (fraction x full): best %.2f median %.2f",
                        (best[j] - fb) / (fraction * best[full]), (med[j] - fm) / (fraction * med[full])));
            }
            if (bnd >= 0 && j != bnd && j != full && j != fixed) {
                b.append(String.format("  / bound: best %.2f median %.2f", best[j] / best[bnd], med[j] / med[bnd]));
            }
            System.out.println(b);
        }
    }

    private static LongSupplier probe(Win win, SlicePlan plan, int dist, Object pool, PageProbe.Probes want) {
        LongSupplier w = () -> {
            long[][] ht = win.probe(plan, dist, pool);
            return ht[0][0] ^ ht[1][ht[1].length - 1];
        };
        long[][] ht = win.probe(plan, dist, pool);
        if (!Arrays.equals(ht[0], want.head()) || !Arrays.equals(ht[1], want.tail())) {
            throw new AssertionError("probe with touch distance " + dist + " differs from PageProbe");
        }
        return w;
    }

    private static long evict(MemorySegment m) {
        LongVector a = LongVector.zero(S);
        for (long o = 0; o < m.byteSize(); o += 64) {
            a = a.add(LongVector.fromMemorySegment(S, m, o, LE));
        }
        return a.reduceLanes(VectorOperators.ADD);
    }

    private static LongSupplier runMajor(Win win, SlicePlan plan, int chunk, PageProbe.Probes want) {
        LongSupplier w = () -> {
            long[][] ht = win.runMajor(plan, chunk);
            return ht[0][0] ^ ht[1][ht[1].length - 1];
        };
        long[][] ht = win.runMajor(plan, chunk);
        if (!Arrays.equals(ht[0], want.head()) || !Arrays.equals(ht[1], want.tail())) {
            throw new AssertionError("run-major probe differs from PageProbe");
        }
        return w;
    }

    private static List<MemorySegment> alloc(Arena arena, int n, long bytes, boolean huge) throws Throwable {
        MethodHandle madvise = Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find("madvise")
                .orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_INT));
        MethodHandle mmap = Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find("mmap")
                .orElseThrow(), FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        List<MemorySegment> segs = new ArrayList<>();
        long hp = 1L << 21;
        for (int i = 0; i < n; i++) {
            MemorySegment m;
            if (huge) {
                // mmap'd, not Arena.allocate: the arena zeroes (faults in 4 KiB pages) before any madvise could apply
                long len = (bytes + hp - 1) & -hp;
                MemorySegment raw = (MemorySegment) mmap.invokeExact(MemorySegment.NULL, len + hp, 3, 0x22, -1, 0L);
                long at = (raw.address() + hp - 1) & -hp;
                m = MemorySegment.ofAddress(at).reinterpret(bytes, arena, null);
                int rc = (int) madvise.invokeExact(m, len, 14 /* MADV_HUGEPAGE */);
                if (rc != 0) {
                    throw new IllegalStateException("madvise " + rc);
                }
            } else {
                m = arena.allocate(bytes, 64);
            }
            segs.add(m);
        }
        IntStream.range(0, n).parallel().forEach(i -> {
            SplittableRandom rnd = new SplittableRandom(KvFixture.SEED + i);
            MemorySegment m = segs.get(i);
            for (long w = 0; w < m.byteSize() / 8; w++) {
                m.setAtIndex(ValueLayout.JAVA_LONG, w, rnd.nextLong());
            }
        });
        return segs;
    }

    private static int[] shuffled(int pages) {
        List<Integer> t = new ArrayList<>(IntStream.range(0, pages).boxed().toList());
        java.util.Collections.shuffle(t, new java.util.Random(KvFixture.SEED));
        return t.stream().mapToInt(Integer::intValue).toArray();
    }

    private static long anonHugeKiB() throws Exception {
        long kib = 0;
        for (String l : Files.readAllLines(Path.of("/proc/self/smaps"))) {
            if (l.startsWith("AnonHugePages:")) {
                kib += Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        }
        return kib;
    }

    /** PageProbe.HostWindows' arrays (64-byte windows only), with variants of its loop. */
    static final class Win {
        final MemorySegment[] runSeg;
        final int[] runStart;
        final long[] base;
        final long[] pageStride;
        final long[] tokenStride;
        final long[] tailSkip;
        final long[] w;
        final boolean[] of8;
        /** Whether the sums are carried over the runs ({@link ProbeWindows#sumRuns}, as shipped) or per run (before). */
        boolean carried;
        /** Whether the touch reads one window per 4 KiB of each run's head (and tail) row instead of every window. */
        boolean sparse;
        /** Per part, whether a sparse touch reads its head window, its tail window. */
        final boolean[] touchHead;
        final boolean[] touchTail;

        Win(MemorySegment[] runSeg, int[] runStart, long[] base, long[] pageStride, long[] tokenStride, long[] tailSkip,
                long[] w) {
            this.runSeg = runSeg;
            this.runStart = runStart;
            this.base = base;
            this.pageStride = pageStride;
            this.tokenStride = tokenStride;
            this.tailSkip = tailSkip;
            this.w = w;
            of8 = new boolean[runSeg.length];
            Arrays.fill(of8, true);
            touchHead = new boolean[base.length];
            touchTail = new boolean[base.length];
            for (int r = 0; r < runSeg.length; r++) {
                long lastHead = Long.MIN_VALUE / 2;
                long lastTail = Long.MIN_VALUE / 2;
                for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                    boolean same = j > runStart[r] && pageStride[j] == pageStride[j - 1]
                            && tokenStride[j] == tokenStride[j - 1];
                    if (!same || Math.abs(base[j] - lastHead) >= 4096) {
                        touchHead[j] = true;
                        lastHead = base[j];
                    }
                    if (!same || Math.abs(base[j] + tailSkip[j] - lastTail) >= 4096) {
                        touchTail[j] = true;
                        lastTail = base[j] + tailSkip[j];
                    }
                }
            }
        }

        Win copy() {
            Win c = new Win(runSeg, runStart, base, pageStride, tokenStride, tailSkip, w);
            c.carried = carried;
            c.sparse = sparse;
            return c;
        }

        static Win of(SlicePlan plan) {
            List<SlicePlan.Slice> slices = plan.slices();
            int np = 0;
            for (SlicePlan.Slice s : slices) {
                np += s.v() == null ? 1 : 2;
            }
            long[] base = new long[np];
            long[] pageStride = new long[np];
            long[] tokenStride = new long[np];
            long[] tailSkip = new long[np];
            long[] w = new long[np];
            List<MemorySegment> runSeg = new ArrayList<>();
            List<Integer> runStart = new ArrayList<>();
            int k = 0;
            for (int kind = 0; kind < 2; kind++) {
                for (SlicePlan.LayerRun run : plan.layerRuns()) {
                    for (int h = 0; h < run.numHeads(); h++) {
                        SlicePlan.Slice s = slices.get(run.firstSlice() + h);
                        SlicePlan.Part part = kind == 0 ? s.k() : s.v();
                        MemorySegment seg = ((KvMemory.Host) part.memory()).segment();
                        if (runSeg.isEmpty() || runSeg.get(runSeg.size() - 1) != seg) {
                            runSeg.add(seg);
                            runStart.add(k);
                        }
                        if (part.pieces() < 8) {
                            throw new IllegalArgumentException("cells below 64 bytes");
                        }
                        base[k] = part.base();
                        pageStride[k] = part.pageStride();
                        tokenStride[k] = part.tokenStride();
                        tailSkip[k] = part.pieces() * 8L - 64;
                        w[k] = PageProbe.weight(s.layer(), s.head(), kind);
                        k++;
                    }
                }
            }
            runStart.add(k);
            return new Win(runSeg.toArray(new MemorySegment[0]), runStart.stream().mapToInt(Integer::intValue).toArray(),
                    base, pageStride, tokenStride, tailSkip, w);
        }

        long bytesPerPage(int pageSize) {
            long b = 0;
            for (int j = 0; j < base.length; j++) {
                b += pageSize == 1 ? Math.min(128, tailSkip[j] + 64) : 128;
            }
            return b;
        }

        private static int[] order(SlicePlan plan) {
            long[] keys = new long[plan.numPages()];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = (long) plan.page(i) << 32 | i;
            }
            Arrays.sort(keys);
            int[] o = new int[keys.length];
            for (int p = 0; p < o.length; p++) {
                o[p] = (int) keys[p];
            }
            return o;
        }

        private long lastSlot(SlicePlan plan, int i) {
            RequestBlocks r = plan.request();
            return Math.min(plan.pageSize(), r.numTokens() - r.startToken() - (long) i * plan.pageSize()) - 1;
        }

        private void run(int chunks, Object pool, IntConsumer one) {
            IntStream range = IntStream.range(0, chunks);
            if (pool == null) {
                range.parallel().forEach(one);
            } else if (pool instanceof ForkJoinPool fj) {
                fj.submit(() -> range.parallel().forEach(one)).join();
            } else {
                range.forEach(one);
            }
        }

        /** The probe: touch distance {@code dist} pages (0 none, -1 two passes per chunk). */
        long[][] probe(SlicePlan plan, int dist, Object pool) {
            int pages = plan.numPages();
            long[] head = new long[pages];
            long[] tail = new long[pages];
            int chunk = Math.max(1, CHUNK_WINDOWS / (2 * base.length));
            int[] order = order(plan);
            run(Math.ceilDiv(pages, chunk), pool, c -> {
                int p0 = c * chunk;
                int p1 = Math.min(pages, p0 + chunk);
                long touched = 0;
                if (dist < 0) {
                    for (int p = p0; p < p1; p++) {
                        touched += touch(plan.page(order[p]), lastSlot(plan, order[p]));
                    }
                } else {
                    for (int p = p0; p < Math.min(p1, p0 + dist); p++) {
                        touched += touch(plan.page(order[p]), lastSlot(plan, order[p]));
                    }
                }
                long[] ht = new long[2];
                for (int p = p0; p < p1; p++) {
                    if (dist > 0 && p + dist < p1) {
                        touched += touch(plan.page(order[p + dist]), lastSlot(plan, order[p + dist]));
                    }
                    int i = order[p];
                    ht[0] = 0;
                    ht[1] = 0;
                    if (carried) {
                        ProbeWindows.INSTANCE.sumRuns(runSeg, runStart, of8, base, pageStride, tokenStride, tailSkip, w,
                                plan.page(i), lastSlot(plan, i), ht);
                    } else {
                        for (int r = 0; r < runSeg.length; r++) {
                            ProbeWindows.INSTANCE.sum8(runSeg[r], base, pageStride, tokenStride, tailSkip, w, runStart[r],
                                    runStart[r + 1], plan.page(i), lastSlot(plan, i), ht);
                        }
                    }
                    head[i] = ht[0];
                    tail[i] = ht[1];
                }
                if (touched == 0x5EED_F00DL) {
                    sink = touched;
                }
            });
            return new long[][] {head, tail};
        }

        /** Chunks of {@code chunk} pages in address order; in each, run by run (one memory), the chunk's pages. */
        long[][] runMajor(SlicePlan plan, int chunk) {
            int pages = plan.numPages();
            long[] head = new long[pages];
            long[] tail = new long[pages];
            int[] order = order(plan);
            run(Math.ceilDiv(pages, chunk), null, c -> {
                int p0 = c * chunk;
                int p1 = Math.min(pages, p0 + chunk);
                int n = p1 - p0;
                long[] pg = new long[n];
                long[] ls = new long[n];
                for (int p = 0; p < n; p++) {
                    pg[p] = plan.page(order[p0 + p]);
                    ls[p] = lastSlot(plan, order[p0 + p]);
                }
                long[] h = new long[n];
                long[] t = new long[n];
                long[] ht = new long[2];
                for (int r = 0; r < runSeg.length; r++) {
                    for (int p = 0; p < n; p++) {
                        ht[0] = 0;
                        ht[1] = 0;
                        ProbeWindows.INSTANCE.sum8(runSeg[r], base, pageStride, tokenStride, tailSkip, w, runStart[r],
                                runStart[r + 1], pg[p], ls[p], ht);
                        h[p] += ht[0];
                        t[p] += ht[1];
                    }
                }
                for (int p = 0; p < n; p++) {
                    head[order[p0 + p]] = h[p];
                    tail[order[p0 + p]] = t[p];
                }
            });
            return new long[][] {head, tail};
        }

        private long touch(long page, long lastSlot) {
            long t = 0;
            if (sparse) {
                for (int r = 0; r < runSeg.length; r++) {
                    MemorySegment m = runSeg[r];
                    for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                        long at = base[j] + page * pageStride[j];
                        if (touchHead[j]) {
                            t += m.get(ValueLayout.JAVA_BYTE, at);
                        }
                        if (touchTail[j]) {
                            t += m.get(ValueLayout.JAVA_BYTE, at + lastSlot * tokenStride[j] + tailSkip[j]);
                        }
                    }
                }
                return t;
            }
            for (int r = 0; r < runSeg.length; r++) {
                MemorySegment m = runSeg[r];
                for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                    long at = base[j] + page * pageStride[j];
                    t += m.get(ValueLayout.JAVA_BYTE, at);
                    t += m.get(ValueLayout.JAVA_BYTE, at + lastSlot * tokenStride[j] + tailSkip[j]);
                }
            }
            return t;
        }
    }
}
