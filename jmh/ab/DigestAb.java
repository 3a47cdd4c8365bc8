package io.kvchecksum.internal;

import io.kvchecksum.Adler32Parts;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import jdk.incubator.vector.IntVector;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.stream.IntStream;

/**
 * A/B of SGLang's page digest loops against the plain read of the same pages in the same order, in one JVM (not a
 * benchmark; built and run by {@code jmh/ab/digest-ab.sh}): {@code PageDigestBench}'s fixture (a Llama-3-8B-shaped
 * SGLang pool, 32 layers, the page table a seeded shuffle), the CPU backend's split (the calling thread under 4 MiB,
 * else chunks of {@code max(1 MiB, total / 4T)} on all processors), each loop and each reader called once per round in
 * rotating order, so a loaded machine's noise hits all alike; prints best and median, and the bound (the faster of the
 * two readers, best over best and median over median) over each.
 * Every loop's value is checked against {@code java.util.zip.Adler32} first (exit on a difference).
 *
 * <p>Loops: {@code ship} the backend as it ships ({@code KvChecksum.pageDigest}); {@code vec} {@link VectorAdler32}
 * as it runs in cache (pages two at a time); {@code four} as it runs from memory (pages of up to four blocks four at a
 * time, what {@code ship} takes from 64 MiB up at 512 bits);
 * {@code old} the vector loop before issue 28's five-operation body ({@code jmh/ab/VectorAdler32Old.java}); {@code five}
 * the five-operation loop before the lockstep pairs ({@code jmh/ab/VectorAdler32Five.java}); {@code prev} the loop
 * before the groups of four from memory ({@code jmh/ab/VectorAdler32Prev.java}, pages two at a time at every size);
 * {@code stub}
 * {@code java.util.zip.Adler32}, one call per page. Readers: {@code readPages} (the project's read bound over the
 * pages in stream order, its default reader, as {@code PageDigestBench.readPages}; parts under 8 KiB, as these 2 KiB
 * pages, one at a time) and {@code read256} (its 256-bit reader, four streams in lockstep). Arguments: size ({@code 1MiB}, {@code 256MiB} or bytes), page size (negative: the table in order, not
 * shuffled), rounds, loops (comma-separated).
 */
public final class DigestAb {
    interface Loop {
        long adler(List<PageDigestPlan.Run> runs, int run, long skip, long length);
    }

    public static void main(String[] args) throws Exception {
        String size = args[0];
        int pageArg = Integer.parseInt(args[1]);
        int pageSize = Math.abs(pageArg);
        int rounds = Integer.parseInt(args[2]);
        String[] which = args.length > 3 ? args[3].split(",") : new String[] {"ship", "stub", "vec", "short"};
        int threads = Runtime.getRuntime().availableProcessors();
        long bytes = bytesOf(size);
        int layersN = 32;
        long pageBytes = (long) pageSize * 8 * 128 * 2;
        int pages = (int) Math.max(1, bytes / (2L * layersN * pageBytes));
        Arena arena = Arena.ofShared();
        Random rnd = new Random(0x5617_AD1EL);
        List<KvMemory> ks = new ArrayList<>();
        List<KvMemory> vs = new ArrayList<>();
        for (int i = 0; i < 2 * layersN; i++) {
            MemorySegment m = arena.allocate(pages * pageBytes, 64);
            for (long o = 0; o < m.byteSize(); o += 8) {
                m.set(ValueLayout.JAVA_LONG_UNALIGNED, o, rnd.nextLong());
            }
            (i % 2 == 0 ? ks : vs).add(KvMemory.host(m));
        }
        List<Integer> t = new ArrayList<>(IntStream.range(0, pages).boxed().toList());
        if (pageArg > 0) {
            Collections.shuffle(t, rnd);
        }
        int[] table = t.stream().mapToInt(Integer::intValue).toArray();
        int[] layers = IntStream.range(0, layersN).toArray();
        KvCacheGroup g = KvLayouts.sglang(new KvLayouts.PagedShape(pages, pageSize, 8, 128, 2), 0, layers, ks, vs);
        PageDigestPlan plan = PageDigestPlan.of(SlicePlan.of(g, RequestBlocks.of(table, (long) pages * pageSize, 16)));
        List<MemoryBound.Range> inOrder = new ArrayList<>();
        for (PageDigestPlan.Run r : plan.runs()) {
            inOrder.add(new MemoryBound.Range(((KvMemory.Host) r.memory()).segment(), r.offset(), r.length()));
        }
        MemoryBound bound = MemoryBound.ofRanges(inOrder, threads);
        var backend = KvChecksums.byName("cpu");
        long expected = KvChecksums.reference().pageDigest(plan);
        boolean parallel = threads > 1 && plan.totalBytes() >= (4L << 20);
        long chunk = Math.max(1L << 20, plan.totalBytes() / (4L * threads));
        ForkJoinPool pool = new ForkJoinPool(threads);
        List<String> names = new ArrayList<>(Arrays.asList(which));
        names.add("readPages");
        names.add("read256");
        int n = names.size();
        java.util.function.LongSupplier[] fs = new java.util.function.LongSupplier[n];
        for (int i = 0; i < n; i++) {
            String nm = names.get(i);
            fs[i] = switch (nm) {
                case "ship" -> () -> backend.pageDigest(plan);
                case "readPages" -> bound::read;
                case "read256" -> () -> bound.read(MemoryBound.Reader.VECTOR256);
                default -> {
                    Loop l = loop(nm);
                    yield () -> run(plan, l, pool, parallel, chunk);
                }
            };
            if (!nm.startsWith("read")) {
                long got = fs[i].getAsLong();
                if (got != expected) {
                    throw new AssertionError(nm + " 0x" + Long.toHexString(got) + " != 0x" + Long.toHexString(expected));
                }
            }
        }
        long sink = 0;
        long until = System.nanoTime() + 4_000_000_000L;
        while (System.nanoTime() < until) {
            for (var f : fs) {
                sink += f.getAsLong();
            }
        }
        double[][] tm = new double[n][rounds];
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < n; j++) {
                int w = (j + r) % n;
                long s = System.nanoTime();
                sink += fs[w].getAsLong();
                tm[w][r] = System.nanoTime() - s;
            }
        }
        // the bound: the faster reader of the same pages in the same order (best of each; median of each), as the
        // project's bound is the fastest of its readers
        int rp = names.indexOf("readPages");
        int r256 = names.indexOf("read256");
        for (double[] times : tm) {
            Arrays.sort(times);
        }
        double boundBest = Math.min(tm[rp][0], tm[r256][0]);
        double boundMedian = Math.min(tm[rp][rounds / 2], tm[r256][rounds / 2]);
        StringBuilder sb = new StringBuilder(String.format("size %s page %d%s: %d bytes, %d runs, %d threads%s, %d rounds, vector %d bits",
                size, pageSize, pageArg < 0 ? " (table in order)" : "", plan.totalBytes(), plan.runs().size(), parallel ? threads : 1, parallel ? " chunk " + chunk : "",
                rounds, IntVector.SPECIES_PREFERRED.vectorBitSize()));
        for (int w = 0; w < n; w++) {
            sb.append(String.format("%n  %-10s best %7.1f us %6.1f GB/s, median %7.1f us; bound/x best %.2f median %.2f%s",
                    names.get(w), tm[w][0] / 1e3, plan.totalBytes() / tm[w][0], tm[w][rounds / 2] / 1e3,
                    boundBest / tm[w][0], boundMedian / tm[w][rounds / 2],
                    names.get(w).startsWith("read") ? "" : boundBest / tm[w][0] > 1.0 ? "  BROKEN BOUND" : ""));
        }
        System.out.println(sb + (sink == 42 ? " " : ""));
        System.exit(0);
    }

    static Loop loop(String name) {
        return switch (name) {
            case "vec" -> VectorAdler32::digest;
            case "four" -> (r, i, s, l) -> VectorAdler32.digest(r, i, s, l, true);
            case "old" -> VectorAdler32Old::digest;
            case "five" -> VectorAdler32Five::digest;
            case "prev" -> VectorAdler32Prev::digest;
            case "stub" -> DigestAb::stub;
            default -> throw new IllegalArgumentException(name);
        };
    }

    record Start(int run, long offset) {
    }

    static long run(PageDigestPlan plan, Loop loop, ForkJoinPool pool, boolean parallel, long chunkBytes) throws RuntimeException {
        List<PageDigestPlan.Run> runs = plan.runs();
        long total = plan.totalBytes();
        if (!parallel || total <= chunkBytes) {
            return loop.adler(runs, 0, 0, total);
        }
        List<Start> starts = new ArrayList<>();
        long next = 0;
        long at = 0;
        for (int i = 0; i < runs.size(); i++) {
            long len = runs.get(i).length();
            while (next < at + len) {
                starts.add(new Start(i, next - at));
                next += chunkBytes;
            }
            at += len;
        }
        List<Callable<Long>> calls = new ArrayList<>();
        for (int i = 0; i < starts.size(); i++) {
            Start s = starts.get(i);
            long length = Math.min(chunkBytes, total - i * chunkBytes);
            calls.add(() -> loop.adler(runs, s.run(), s.offset(), length));
        }
        long acc = Adler32Parts.EMPTY;
        try {
            List<Future<Long>> done = pool.invokeAll(calls);
            for (int i = 0; i < done.size(); i++) {
                acc = Adler32Parts.combine(acc, done.get(i).get(), Math.min(chunkBytes, total - i * chunkBytes));
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return acc;
    }

    static long stub(List<PageDigestPlan.Run> runs, int i, long skip, long left) {
        java.util.zip.Adler32 a = new java.util.zip.Adler32();
        while (left > 0) {
            PageDigestPlan.Run r = runs.get(i++);
            MemorySegment s = ((KvMemory.Host) r.memory()).segment();
            long take = Math.min(r.length() - skip, left);
            a.update(s.asSlice(r.offset() + skip, take).asByteBuffer());
            skip = 0;
            left -= take;
        }
        return a.getValue();
    }


    /** A size as the other harnesses take it: bytes, {@code KiB}/{@code MiB}/{@code GiB}, or a cache-relative name. */
    static long bytesOf(String size) {
        long cache = io.kvchecksum.bench.Caches.machine().bytesOf(size);
        if (cache > 0) {
            return cache;
        }
        String s = size.trim().toLowerCase(java.util.Locale.ROOT);
        int shift = s.endsWith("kib") ? 10 : s.endsWith("mib") ? 20 : s.endsWith("gib") ? 30 : 0;
        return Long.parseLong(shift == 0 ? s : s.substring(0, s.length() - 3)) << shift;
    }
}
