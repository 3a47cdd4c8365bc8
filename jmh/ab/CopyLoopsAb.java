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
 * {@link VectorCopyLoop}), with {@code memcopy} ({@link MemorySegment#copy}) of the same pages alongside, on one thread,
 * in cache: Llama-3-8B's pages of 16 tokens x 8 KV heads x 256 bytes, 16 layers of K and V (1 MiB, the shape
 * {@code CopyTurns ... 1MiB} copies), each K or V page one {@link CopyLoop#copyRows} call, into the same layout
 * ({@code perm}) or FlashInfer HND ({@code hnd}). Each round runs every side once (a batch of calls) in rotating order,
 * timed by the thread's CPU time so that a loaded machine's descheduling does not count; prints best and median per
 * side and memcopy's time over each copy's (the CopyTurns ratio). Sums and destination bytes are compared first.
 *
 * <p>Arguments: conversion ({@code perm}, {@code hnd}), rounds.
 */
public final class CopyLoopsAb {
    private static final int PAGES = 32;           // 16 layers x K, V
    private static final int TOKENS = 16;
    private static final int HEADS = 8;
    private static final int REGION = 256;         // bytes of one head's K (or V) of one token
    private static final long PAGE = (long) TOKENS * HEADS * REGION;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static long sink;

    public static void main(String[] args) {
        boolean hnd = args[0].equals("hnd");
        int rounds = Integer.parseInt(args[1]);
        long[] factors = new long[HEADS];
        SplittableRandom rnd = new SplittableRandom(2929);
        for (int h = 0; h < HEADS; h++) {
            factors[h] = rnd.nextLong() | 1;
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(PAGES * PAGE, 64);
            MemorySegment dst = arena.allocate(PAGES * PAGE, 64);
            for (long o = 0; o < src.byteSize(); o += 8) {
                src.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            CopyLoop[] loops = {new VectorCopyLoopOld(), new VectorCopyLoop()};
            String[] names = {"old", "new", "memcopy"};
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
            long until = System.nanoTime() + 4_000_000_000L;
            while (System.nanoTime() < until) {
                for (int w = 0; w < 3; w++) {
                    sink += side(w, loops, src, dst, hnd, factors);
                }
            }
            int batch = 50;
            double[][] t = new double[3][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int j = 0; j < 3; j++) {
                    int w = (j + r) % 3;
                    long s = THREADS.getCurrentThreadCpuTime();
                    for (int b = 0; b < batch; b++) {
                        sink += side(w, loops, src, dst, hnd, factors);
                    }
                    t[w][r] = (THREADS.getCurrentThreadCpuTime() - s) / (double) batch;
                }
            }
            StringBuilder sb = new StringBuilder(String.format("llama3-8b 1 MiB %s, 1 thread, %d rounds of %d, %s:%n",
                    args[0], rounds, batch, new VectorCopyLoop().describe()));
            for (int w = 0; w < 3; w++) {
                Arrays.sort(t[w]);
            }
            for (int w = 0; w < 3; w++) {
                sb.append(String.format("  %-8s best %7.2f us  median %7.2f us", names[w], t[w][0] / 1e3,
                        t[w][rounds / 2] / 1e3));
                if (w < 2) {
                    sb.append(String.format("  memcopy/this %.3f (best) %.3f (median)", t[2][0] / t[w][0],
                            t[2][rounds / 2] / t[w][rounds / 2]));
                }
                sb.append('\n');
            }
            System.out.print(sb);
        }
    }

    private static long side(int w, CopyLoop[] loops, MemorySegment src, MemorySegment dst, boolean hnd, long[] factors) {
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
}
