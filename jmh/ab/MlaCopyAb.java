package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;

/**
 * A/B of the verifying copy's MLA stream loop in one JVM (not a benchmark; built and run by
 * {@code jmh/ab/mla-copy-ab.sh}): DeepSeek MLA bf16 pages (16 tokens x 1152 bytes = 18 KiB, 61 layers) in a shuffled
 * table copied into another shuffled table, page by page, layer by layer, in {@code 4T} tasks of the same bytes on a
 * pool of {@code T} threads (as {@code CopyTurns}' baselines and the backend's split by layers), each side in rotating
 * turns: {@code memcopy} ({@link MemorySegment#copy}), {@code vector} (a plain four-vector move, {@code CopyTurns}'
 * {@code vectorcopy}), {@code copy} ({@link VectorCopyLoop#copy} with the checksum kernels' stream width: on Intel the
 * 512-bit {@code stream}, the loop for memory before {@code CpuCopy.NARROW_FROM_MEMORY}), {@code s256}
 * ({@link VectorCopyLoop#stream256}, the loop for memory on Intel and AMD families 25 and 26) and the candidate forms
 * below ({@code -Dab.candidates=vec256,copy2}: a plain 256-bit move, the {@code copy} side again). Prints best and median wall-clock time per side and
 * {@code best baseline / side}, the CopyTurns ratio. Sums and destination bytes are compared first.
 *
 * <p>Arguments: MiB of KV, rounds. {@code -Dab.threads=T} (default 2).
 */
public final class MlaCopyAb {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final long VB = 8L * L;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int LAYERS = 61;
    private static final int TOKENS = 16;
    private static final int PIECES = 144;                      // 1152 bytes per token
    private static final long PAGE = (long) TOKENS * PIECES * 8;
    static long sink;

    interface Side {
        long page(MemorySegment src, long s, MemorySegment dst, long d, long t0);
    }

    public static void main(String[] args) throws Exception {
        long mib = Long.parseLong(args[0]);
        int rounds = Integer.parseInt(args[1]);
        int threads = Integer.getInteger("ab.threads", 2);
        int pages = (int) Math.max(1, mib * 1024 * 1024 / LAYERS / PAGE);
        SplittableRandom rnd = new SplittableRandom(2929);
        int[] st = shuffled(pages, rnd);
        int[] dt = shuffled(pages, rnd);
        long layerBytes = pages * PAGE;
        VectorCopyLoop shipped = new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, false);
        List<String> names = new ArrayList<>(List.of("memcopy", "vector", "copy"));
        List<Side> sides = new ArrayList<>();
        sides.add((s, so, d, dd, t0) -> {
            MemorySegment.copy(s, so, d, dd, PAGE);
            return 0;
        });
        sides.add(MlaCopyAb::vector);
        sides.add((s, so, d, dd, t0) -> shipped.copy(s, so, 8L * PIECES, d, dd, 8L * PIECES, TOKENS, t0, PIECES, 0, PIECES));
        names.add("s256");
        sides.add((s, so, d, dd, t0) -> VectorCopyLoop.stream256(s, so, d, dd, (long) TOKENS * PIECES, t0 * PIECES));
        for (String c : System.getProperty("ab.candidates", "").split(",")) {
            if (!c.isEmpty()) {
                names.add(c);
                sides.add(candidate(c));
            }
        }
        int n = sides.size();
        try (Arena arena = Arena.ofShared(); ForkJoinPool pool = new ForkJoinPool(threads)) {
            MemorySegment src = arena.allocate(LAYERS * layerBytes, 64);
            MemorySegment dst = arena.allocate(LAYERS * layerBytes, 64);
            for (long o = 0; o < src.byteSize(); o += 8) {
                src.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            // tasks: (layer, page) in layer order, cut into 4T parts of the same bytes
            long total = (long) LAYERS * pages;
            int tasks = threads == 1 ? 1 : Integer.getInteger("ab.tasks", 4 * threads);
            long[] cuts = new long[tasks + 1];
            for (int t = 0; t <= tasks; t++) {
                cuts[t] = Boolean.getBoolean("ab.layerCuts") ? (long) (t * LAYERS / tasks) * pages : t * total / tasks;
            }
            long[] ref = null;
            byte[] refBytes = null;
            for (int w = 2; w < n; w++) {   // the copies agree (sum and bytes); the moves' bytes too
                dst.fill((byte) 0);
                long sum = run(pool, sides.get(w), src, dst, st, dt, pages, layerBytes, cuts);
                if (names.get(w).startsWith("vec")) {
                    continue;
                }
                byte[] b = dst.asSlice(0, Math.min(dst.byteSize(), 64L << 20)).toArray(ValueLayout.JAVA_BYTE);
                if (ref == null) {
                    ref = new long[] {sum};
                    refBytes = b;
                } else if (ref[0] != sum || !Arrays.equals(refBytes, b)) {
                    throw new AssertionError(names.get(w) + " differs from copy");
                }
            }
            long until = System.nanoTime() + 3_000_000_000L;
            while (System.nanoTime() < until) {
                for (int w = 0; w < n; w++) {
                    sink += run(pool, sides.get(w), src, dst, st, dt, pages, layerBytes, cuts);
                }
            }
            double[][] t = new double[n][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int j = 0; j < n; j++) {
                    int w = (j + r) % n;
                    long s = System.nanoTime();
                    sink += run(pool, sides.get(w), src, dst, st, dt, pages, layerBytes, cuts);
                    t[w][r] = (System.nanoTime() - s) / 1e3;
                }
            }
            for (int w = 0; w < n; w++) {
                Arrays.sort(t[w]);
            }
            double base = Math.min(t[0][0], t[1][0]);
            double baseMed = Math.min(t[0][rounds / 2], t[1][rounds / 2]);
            System.out.printf("mla %d MiB (%d pages x %d layers), %d threads, %d rounds, %d-bit, wall clock:%n",
                    LAYERS * layerBytes >> 20, pages, LAYERS, threads, rounds, S.vectorBitSize());
            for (int w = 0; w < n; w++) {
                System.out.printf("  %-8s best %9.1f us  median %9.1f us  baseline/this %.3f (best) %.3f (median)%n",
                        names.get(w), t[w][0], t[w][rounds / 2], base / t[w][0], baseMed / t[w][rounds / 2]);
            }
        }
    }

    private static int[] shuffled(int pages, SplittableRandom rnd) {
        int[] p = new int[pages];
        for (int i = 0; i < pages; i++) {
            p[i] = i;
        }
        for (int i = pages - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int x = p[i];
            p[i] = p[j];
            p[j] = x;
        }
        return p;
    }

    private static long run(ForkJoinPool pool, Side side, MemorySegment src, MemorySegment dst, int[] st, int[] dt,
            int pages, long layerBytes, long[] cuts) throws Exception {
        List<Callable<Long>> calls = new ArrayList<>();
        for (int t = 0; t + 1 < cuts.length; t++) {
            long a = cuts[t];
            long b = cuts[t + 1];
            calls.add(() -> {
                long sum = 0;
                for (long k = a; k < b; k++) {
                    int l = (int) (k / pages);
                    int i = (int) (k % pages);
                    long so = l * layerBytes + st[i] * PAGE;
                    long d = l * layerBytes + dt[i] * PAGE;
                    sum += (2L * l + 1) * side.page(src, so, dst, d, (long) i * TOKENS);
                }
                return sum;
            });
        }
        long sum = 0;
        if (cuts.length == 2) {
            return calls.get(0).call();
        }
        for (var f : pool.invokeAll(calls)) {
            sum += f.get();
        }
        return sum;
    }

    /** CopyTurns' {@code vectorcopy}: four vectors loaded, then stored. */
    static long vector(MemorySegment s, long sa, MemorySegment d, long da, long t0) {
        for (long o = 0; o < PAGE; o += 4 * VB) {
            var x0 = LongVector.fromMemorySegment(S, s, sa + o, LE);
            var x1 = LongVector.fromMemorySegment(S, s, sa + o + VB, LE);
            var x2 = LongVector.fromMemorySegment(S, s, sa + o + 2 * VB, LE);
            var x3 = LongVector.fromMemorySegment(S, s, sa + o + 3 * VB, LE);
            x0.intoMemorySegment(d, da + o, LE);
            x1.intoMemorySegment(d, da + o + VB, LE);
            x2.intoMemorySegment(d, da + o + 2 * VB, LE);
            x3.intoMemorySegment(d, da + o + 3 * VB, LE);
        }
        return 0;
    }

    private static final VectorCopyLoop SHIPPED = new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, false);

    private static Side candidate(String name) {
        return switch (name) {
            case "copy2" -> (s, so, d, dd, t0) -> {   // the shipped loop again (the spread between equal sides)
                return SHIPPED.copy(s, so, 8L * PIECES, d, dd, 8L * PIECES, TOKENS, t0, PIECES, 0, PIECES);
            };
            case "vec256" -> (s, so, d, dd, t0) -> {   // a plain move in 256-bit vectors
                for (long o = 0; o < PAGE; o += 128) {
                    var x0 = LongVector.fromMemorySegment(LongVector.SPECIES_256, s, so + o, LE);
                    var x1 = LongVector.fromMemorySegment(LongVector.SPECIES_256, s, so + o + 32, LE);
                    var x2 = LongVector.fromMemorySegment(LongVector.SPECIES_256, s, so + o + 64, LE);
                    var x3 = LongVector.fromMemorySegment(LongVector.SPECIES_256, s, so + o + 96, LE);
                    x0.intoMemorySegment(d, dd + o, LE);
                    x1.intoMemorySegment(d, dd + o + 32, LE);
                    x2.intoMemorySegment(d, dd + o + 64, LE);
                    x3.intoMemorySegment(d, dd + o + 96, LE);
                }
                return 0;
            };
            default -> throw new IllegalArgumentException(name);
        };
    }
}
