package io.kvchecksum.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * A/B of the verifying copy's loops in one JVM (not a benchmark; built and run by {@code jmh/ab/copy-loops-ab.sh}):
 * {@code old} ({@link VectorCopyLoopOld}, the loops before this change) against {@code new} (the backend's
 * {@link VectorCopyLoop}), with {@code memcopy} ({@link MemorySegment#copy}) of the same pages and {@code move} (a
 * plain Vector API move of the same cells into the same destination layout, no sums: {@link Move}) and {@code heads}
 * (the backend's loop with rows into HND head by head, {@code CopyLoop}'s default over {@code copy}: the in-cache
 * choice on Intel; in a page permutation the same as {@code new}) alongside, on one thread,
 * in cache: Llama-3-8B's pages of 16 tokens x 8 KV heads x 256 bytes, 16 layers of K and V (1 MiB, the shape
 * {@code CopyTurns ... 1MiB} copies), each K or V page one {@link CopyLoop#copyRows} call, into the same layout
 * ({@code perm}) or FlashInfer HND ({@code hnd}). Each round runs every side once (a batch of calls) in rotating order,
 * timed by the thread's CPU time so that a loaded machine's descheduling does not count; prints best and median per
 * side and memcopy's time over each copy's (the CopyTurns ratio). Sums and destination bytes are compared first.
 *
 * <p>Arguments: conversion ({@code perm}, {@code hnd}), rounds.
 */
public final class CopyLoopsAb {
    private static final int PAGES = Integer.getInteger("ab.pages", 32);   // 16 layers x K, V (1 MiB); 16: 512 KiB
    private static final int TOKENS = 16;
    private static final int HEADS = 8;
    private static final int REGION = 256;         // bytes of one head's K (or V) of one token
    private static final long PAGE = (long) TOKENS * HEADS * REGION;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static long sink;
    /** {@code -Dab.flat=false}: both sides' loops for memory (rows, no flat streams) instead of the in-cache ones. */
    private static final boolean FLAT = !"false".equals(System.getProperty("ab.flat"));
    /** {@code -Dab.randomFactors=true}: random odd head factors instead of a layer's (which step by 2). */
    private static final boolean RANDOM_FACTORS = Boolean.getBoolean("ab.randomFactors");

    public static void main(String[] args) {
        boolean hnd = args[0].equals("hnd");
        int rounds = Integer.parseInt(args[1]);
        long[] factors = new long[HEADS];
        SplittableRandom rnd = new SplittableRandom(2929);
        for (int h = 0; h < HEADS; h++) {   // a layer's factors, 2(layer*2^16 + head) + 1, or any (-Dab.randomFactors)
            factors[h] = RANDOM_FACTORS ? rnd.nextLong() | 1 : 2 * (5L * 65536 + h) + 1;
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(PAGES * PAGE, 64);
            MemorySegment dst = arena.allocate(PAGES * PAGE, 64);
            for (long o = 0; o < src.byteSize(); o += 8) {
                src.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            CopyLoop[] loops = {new VectorCopyLoopOld(VectorCopyLoopOld.Rows.AUTO, FLAT),
                    new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, FLAT), null, null,
                    new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, FLAT, true)};
            String[] names = {"old", "new", "memcopy", "move", "heads"};
            int sides = names.length;
            long[] sums = new long[2];
            byte[][] bytes = new byte[2][];
            for (int k = 0; k < 2; k++) {
                dst.fill((byte) 0);
                sums[k] = run(loops[k], src, dst, hnd, factors);
                bytes[k] = dst.toArray(ValueLayout.JAVA_BYTE);
            }
            if (sums[0] != sums[1] || !Arrays.equals(bytes[0], bytes[1])) {
                throw new AssertionError("old and new differ");
            }
            dst.fill((byte) 0);
            side(3, loops, src, dst, hnd, factors);
            if (!Arrays.equals(bytes[1], dst.toArray(ValueLayout.JAVA_BYTE))) {
                throw new AssertionError("move and new differ");
            }
            dst.fill((byte) 0);
            if (run(loops[4], src, dst, hnd, factors) != sums[1] || !Arrays.equals(bytes[1], dst.toArray(ValueLayout.JAVA_BYTE))) {
                throw new AssertionError("heads and new differ");
            }
            long until = System.nanoTime() + 4_000_000_000L;
            while (System.nanoTime() < until) {
                for (int w = 0; w < sides; w++) {
                    sink += side(w, loops, src, dst, hnd, factors);
                }
            }
            int batch = 50;
            double[][] t = new double[sides][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int j = 0; j < sides; j++) {
                    int w = (j + r) % sides;
                    long s = THREADS.getCurrentThreadCpuTime();
                    for (int b = 0; b < batch; b++) {
                        sink += side(w, loops, src, dst, hnd, factors);
                    }
                    t[w][r] = (THREADS.getCurrentThreadCpuTime() - s) / (double) batch;
                }
            }
            StringBuilder sb = new StringBuilder(String.format("llama3-8b %d KiB %s, 1 thread, %d rounds of %d, %s:%n",
                    PAGES * PAGE / 1024, args[0], rounds, batch, loops[1].describe() + (RANDOM_FACTORS ? ", random factors" : "")));
            if (Boolean.getBoolean("ab.raw")) {   // each round's old/new times, us
                StringBuilder raw = new StringBuilder("  rounds (old/new):");
                for (int r = 0; r < rounds; r++) {
                    raw.append(String.format(" %.1f/%.1f", t[0][r] / 1e3, t[1][r] / 1e3));
                }
                System.out.println(raw);
            }
            for (int w = 0; w < sides; w++) {
                Arrays.sort(t[w]);
            }
            for (int w = 0; w < sides; w++) {
                sb.append(String.format("  %-8s best %7.2f us  median %7.2f us", names[w], t[w][0] / 1e3,
                        t[w][rounds / 2] / 1e3));
                if (w != 2) {
                    sb.append(String.format("  memcopy/this %.3f (best) %.3f (median)", t[2][0] / t[w][0],
                            t[2][rounds / 2] / t[w][rounds / 2]));
                }
                if (w < 2 || w == 4) {
                    sb.append(String.format("  move/this %.3f (best)", t[3][0] / t[w][0]));
                }
                sb.append('\n');
            }
            System.out.print(sb);
        }
    }

    private static long side(int w, CopyLoop[] loops, MemorySegment src, MemorySegment dst, boolean hnd, long[] factors) {
        if (w == 3) {
            for (int p = 0; p < PAGES; p++) {
                Move.page(src, p * PAGE, dst, p * PAGE, hnd);
            }
            return dst.get(ValueLayout.JAVA_LONG, 0);
        }
        if (w == 2) {
            for (int p = 0; p < PAGES; p++) {
                MemorySegment.copy(src, p * PAGE, dst, p * PAGE, PAGE);
            }
            return dst.get(ValueLayout.JAVA_LONG, 0);
        }
        return run(loops[w], src, dst, hnd, factors);
    }

    /** Every page: rows of 8 heads; K at piece base 0, V at 32 of a 64-piece cell. */
    private static long run(CopyLoop loop, MemorySegment src, MemorySegment dst, boolean hnd, long[] factors) {
        long sum = 0;
        for (int p = 0; p < PAGES; p++) {
            long base = p * PAGE;
            sum += loop.copyRows(src, base, HEADS * REGION, REGION, dst, base, hnd ? REGION : HEADS * REGION,
                    hnd ? TOKENS * REGION : REGION, TOKENS, 1000, 64, (p & 1) * 32, 32, HEADS, factors, 0);
        }
        return sum;
    }

    /**
     * A plain move of a page's cells, in the order the verifying copy reads them (the source's token rows front to
     * back as one flat stream at a constant step, so without bounds checks, as the shipped loops read it), each head's
     * 256 bytes stored at its destination place; four vectors per step, no arithmetic.
     */
    static final class Move {
        private static final jdk.incubator.vector.VectorSpecies<Long> S = jdk.incubator.vector.LongVector.SPECIES_PREFERRED;
        private static final java.nio.ByteOrder LE = java.nio.ByteOrder.LITTLE_ENDIAN;
        private static final long VB = 8L * S.length();
        private static final long STEP = 4 * VB;

        static void page(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, boolean hnd) {
            long per = REGION / STEP;   // steps per head's region
            long dp = dstBase;
            long k = 0;
            int h = 0;
            int i = 0;
            for (long o = 0; o < PAGE; o += STEP) {
                var x0 = jdk.incubator.vector.LongVector.fromMemorySegment(S, src, srcBase + o, LE);
                var x1 = jdk.incubator.vector.LongVector.fromMemorySegment(S, src, srcBase + o + VB, LE);
                var x2 = jdk.incubator.vector.LongVector.fromMemorySegment(S, src, srcBase + o + 2 * VB, LE);
                var x3 = jdk.incubator.vector.LongVector.fromMemorySegment(S, src, srcBase + o + 3 * VB, LE);
                if (!hnd) {
                    dp = dstBase + o;
                }
                x0.intoMemorySegment(dst, dp, LE);
                x1.intoMemorySegment(dst, dp + VB, LE);
                x2.intoMemorySegment(dst, dp + 2 * VB, LE);
                x3.intoMemorySegment(dst, dp + 3 * VB, LE);
                if (hnd) {   // token i, head h, step k of the head's region -> h*TOKENS*REGION + i*REGION + k*STEP
                    if (++k < per) {
                        dp += STEP;
                    } else {
                        k = 0;
                        if (++h == HEADS) {
                            h = 0;
                            i++;
                        }
                        dp = dstBase + (long) h * TOKENS * REGION + (long) i * REGION;
                    }
                }
            }
        }
    }
}
