package io.kvchecksum.jmh;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * The Jlama staging-buffer load on a loaded machine, in interleaved turns: a staging buffer (one token-major group, as
 * {@code StagedLoad}) moved into a session of one Jlama page per segment ({@link KvSegments}, as {@code JlamaKv}), by
 * three operations, each as the engine runs it per request (plans compiled per call): {@code verify} the verifying copy
 * over the whole segmented destination ({@code compileCopy} + {@code copyAndChecksum}, one plan); {@code after} the
 * plain copy of the same page runs ({@code MemorySegment.copy}, per segment, layer, K and V) and then the segments'
 * checksums ({@code KvSegments.plan(..).blockChecksums}); {@code copy} the plain copy alone; {@code perSegment} the
 * verifying copy one segment plan per call (what the engine ran before a plan took a segmented destination). Prints
 * each turn's times and the medians.
 *
 * <p>Arguments: layers, KV heads, head bytes, tokens, positions per Jlama page, block size, threads, seconds
 * (default {@code 4 4 64 256 1 16 2 20}: TinyLlama's fallback shape, one position per page).
 */
public final class SegmentedCopyTurns {
    private SegmentedCopyTurns() {
    }

    /**
     * Runs the turns.
     *
     * @param args layers, KV heads, head bytes, tokens, positions per page, block size, threads, seconds
     */
    public static void main(String[] args) {
        int[] a = {4, 4, 64, 256, 1, 16, 2, 20};
        for (int i = 0; i < args.length && i < a.length; i++) {
            a[i] = Integer.parseInt(args[i]);
        }
        int layers = a[0];
        int heads = a[1];
        int headBytes = a[2];
        int tokens = a[3];
        int perPage = a[4];
        int blockSize = a[5];
        int threads = a[6];
        long seconds = a[7];
        long row = (long) heads * headBytes;
        KvChecksum cpu = Backends.cpu(threads);
        Random rnd = new Random(29);
        try (Arena arena = Arena.ofShared()) {
            int pageSize = Math.toIntExact(gcd(perPage, blockSize));
            int jlamaPages = Math.ceilDiv(tokens, perPage);
            MemorySegment[][][] session = new MemorySegment[jlamaPages][layers][2];
            List<KvCacheGroup> groups = new ArrayList<>();
            for (int p = 0; p < jlamaPages; p++) {
                List<CacheLayer> ls = new ArrayList<>();
                for (int l = 0; l < layers; l++) {
                    for (int kv = 0; kv < 2; kv++) {
                        session[p][l][kv] = arena.allocate(perPage * row, 64);
                    }
                    ls.add(CacheLayer.of(l, 0, heads, region(session[p][l][0], pageSize, row, headBytes),
                            region(session[p][l][1], pageSize, row, headBytes)));
                }
                groups.add(KvCacheGroup.of(pageSize, perPage / pageSize, ls));
            }
            KvSegments segments = KvSegments.of(groups);
            int positions = jlamaPages * perPage;
            MemorySegment staging = arena.allocate(2L * layers * positions * row, 64);
            for (long o = 0; o < staging.byteSize(); o += 8) {
                staging.set(ValueLayout.JAVA_LONG_UNALIGNED, o, rnd.nextLong());
            }
            List<CacheLayer> described = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                described.add(CacheLayer.of(l, 0, heads,
                        region(staging.asSlice(2L * l * positions * row, positions * row), pageSize, row, headBytes),
                        region(staging.asSlice((2L * l + 1) * positions * row, positions * row), pageSize, row, headBytes)));
            }
            KvCacheGroup staged = KvCacheGroup.of(pageSize, positions / pageSize, described);
            int[] table = new int[positions / pageSize];
            Arrays.setAll(table, i -> i);
            ChecksumSpec spec = ChecksumSpec.STANDARD;

            Runnable copy = () -> {
                for (int p = 0; p < jlamaPages; p++) {
                    long n = Math.min(perPage, tokens - (long) p * perPage);
                    for (int l = 0; l < layers; l++) {
                        for (int kv = 0; kv < 2; kv++) {
                            MemorySegment.copy(staging, (2L * l + kv) * positions * row + (long) p * perPage * row,
                                    session[p][l][kv], 0, n * row);
                        }
                    }
                }
            };
            long[][] out = new long[3][];
            Runnable verify = () -> {
                CopyPlan plan = cpu.compileCopy(staged, RequestBlocks.of(table, tokens, 0, blockSize), segments,
                        KvSegments.request(tokens, 0, blockSize), spec);
                out[0] = cpu.copyAndChecksum(plan);
            };
            Runnable perSegment = () -> {   // the engine before one plan per request: a copy per segment share
                CopyPlan plan = cpu.compileCopy(staged, RequestBlocks.of(table, tokens, 0, blockSize), segments,
                        KvSegments.request(tokens, 0, blockSize), spec);
                long[] v = new long[plan.numBlocks()];
                for (int i = 0; i < plan.segments().size(); i++) {
                    plan.addSegment(i, cpu.copyAndChecksum(plan.segments().get(i)), v);
                }
                out[2] = v;
            };
            Runnable after = () -> {
                copy.run();
                out[1] = segments.plan(tokens, 0, blockSize, spec).blockChecksums(cpu);
            };
            verify.run();
            after.run();
            perSegment.run();
            if (!Arrays.equals(out[0], out[1]) || !Arrays.equals(out[0], out[2])) {
                throw new AssertionError("the verifying copy's values differ from the checksums after the copy");
            }
            String[] names = {"verify", "after", "copy", "perSegment"};
            Runnable[] ops = {verify, after, copy, perSegment};
            if (Boolean.getBoolean("turns.split")) {   // where the verifying copy's time goes: compiling, or copying
                CopyPlan once = cpu.compileCopy(staged, RequestBlocks.of(table, tokens, 0, blockSize), segments,
                        KvSegments.request(tokens, 0, blockSize), spec);
                names = new String[] {"compile", "after", "copy", "run"};
                ops = new Runnable[] {() -> cpu.compileCopy(staged, RequestBlocks.of(table, tokens, 0, blockSize), segments,
                        KvSegments.request(tokens, 0, blockSize), spec), after, copy, () -> cpu.copyAndChecksum(once)};
            }
            System.out.printf("layers %d, heads %d x %d B, %d tokens, %d per Jlama page (%d segments), blocks of %d, %s%n",
                    layers, heads, headBytes, tokens, perPage, jlamaPages, blockSize, cpu.description());
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            List<double[]> turns = new ArrayList<>();
            long warm = System.nanoTime() + 5_000_000_000L;
            while (System.nanoTime() < warm) {
                for (Runnable r : ops) {
                    r.run();
                }
            }
            while (System.nanoTime() < end) {
                double[] t = new double[4];
                for (int k = 0; k < 4; k++) {
                    int reps = 20;
                    long t0 = System.nanoTime();
                    for (int i = 0; i < reps; i++) {
                        ops[k].run();
                    }
                    t[k] = (System.nanoTime() - t0) / 1e3 / reps;
                }
                turns.add(t);
                System.out.printf("turn %2d: " + names[0] + " %8.1f us  after %8.1f us  copy %8.1f us  " + names[3] + " %8.1f us"
                        + "  after/verify %.2f  copy/verify %.2f%n", turns.size(), t[0], t[1], t[2], t[3], t[1] / t[0],
                        t[2] / t[0]);
            }
            double[] med = new double[6];
            for (int k = 0; k < 4; k++) {
                final int kk = k;
                med[k] = median(turns.stream().mapToDouble(t -> t[kk]).toArray());
            }
            med[4] = median(turns.stream().mapToDouble(t -> t[1] / t[0]).toArray());
            med[5] = median(turns.stream().mapToDouble(t -> t[2] / t[0]).toArray());
            System.out.printf("median of %d turns: %s %.1f us, %s %.1f us, %s %.1f us, %s %.1f us; after/verify %.2f,"
                    + " copy/verify %.2f%n", turns.size(), names[0], med[0], names[1], med[1], names[2], med[2], names[3],
                    med[3], med[4], med[5]);
        }
    }

    private static KvRegion region(MemorySegment m, int pageSize, long row, int headBytes) {
        return new KvRegion(KvMemory.host(m), 0, pageSize * row, row, headBytes, headBytes);
    }

    private static double median(double[] x) {
        Arrays.sort(x);
        return x.length == 0 ? Double.NaN : x[x.length / 2];
    }

    private static long gcd(long a, long b) {
        return b == 0 ? a : gcd(b, a % b);
    }
}
