package io.kvchecksum.internal;

import io.kvchecksum.bench.MemoryBound;
import io.kvchecksum.jmh.KvFixture;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * DeepSeek MLA bf16 at 1MiB in cache, in one JVM, interleaved (not a benchmark; run by
 * {@code jmh/ab/in-cache-shapes-ab.sh}): {@code ship}, one {@code sumAffine} stream per layer as the prepared plans read
 * them before issue 28's last in-cache step; {@code pair}, two layers' streams in one loop with four running sums a
 * stream (as {@code VectorSliceKernel.streamPair} ships it); {@code pair2}, the same with {@code rowPass}'s two running
 * sums a stream; {@code bound}, the project's read bound. Each layer's sum is scaled by a factor as the plan's slices
 * are; the variants' totals are checked against {@code ship}'s first (a line says DIFFERS otherwise).
 */
public final class MlaShapesAb {
    static final VectorSpecies<Long> S = KernelSpecies.S;
    static final int L = S.length();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        String[] names = {"ship", "pair", "pair2", "bound"};
        try (KvFixture fx = KvFixture.of("deepseek-mla-bf16", "1MiB")) {
            MemorySegment[] segs = fx.segments().toArray(new MemorySegment[0]);
            int layers = segs.length;
            long[] bases = new long[layers];
            long[] factors = new long[layers];
            for (int r = 0; r < layers; r++) {
                factors[r] = 2 * r + 3;
            }
            VectorSliceKernel kern = new VectorSliceKernel(KernelSpecies.CHOSEN, true, true);
            long[] dyn = {1152, 16, 0, 144};
            try (MemoryBound bound = new MemoryBound(fx.segments(), 1)) {
                java.util.function.LongSupplier[] v = new java.util.function.LongSupplier[4];
                v[0] = () -> {
                    long z = 0;
                    for (int r = 0; r < layers; r++) {
                        z += factors[r] * kern.sumAffine(segs[r], bases[r], dyn[0], (int) dyn[1], dyn[2], (int) dyn[3], 0, (int) dyn[3]);
                    }
                    return z;
                };
                v[1] = () -> {
                    long z = 0;
                    long total = dyn[1] * dyn[3];
                    int r = 0;
                    for (; r + 1 < layers; r += 2) {
                        z += pair(segs[r], bases[r], factors[r], segs[r + 1], bases[r + 1], factors[r + 1], total, dyn[2], (int) dyn[3]);
                    }
                    for (; r < layers; r++) {
                        z += factors[r] * kern.sumAffine(segs[r], bases[r], dyn[0], (int) dyn[1], dyn[2], (int) dyn[3], 0, (int) dyn[3]);
                    }
                    return z;
                };
                v[2] = () -> {
                    long z = 0;
                    long total = dyn[1] * dyn[3];
                    int r = 0;
                    for (; r + 1 < layers; r += 2) {
                        z += pair2(segs[r], bases[r], factors[r], segs[r + 1], bases[r + 1], factors[r + 1], total, dyn[2], (int) dyn[3]);
                    }
                    for (; r < layers; r++) {
                        z += factors[r] * kern.sumAffine(segs[r], bases[r], dyn[0], (int) dyn[1], dyn[2], (int) dyn[3], 0, (int) dyn[3]);
                    }
                    return z;
                };
                v[3] = bound::read;
                long ref = v[0].getAsLong();
                if (v[1].getAsLong() != ref || v[2].getAsLong() != ref) {
                    System.out.println("pair DIFFERS");
                }
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    for (var s : v) {
                        sink += s.getAsLong();
                    }
                }
                int nv = v.length;
                double[][] t = new double[nv][rounds];
                for (int q = 0; q < rounds; q++) {
                    for (int j = 0; j < nv; j++) {
                        int w = (j + q) % nv;
                        long s = System.nanoTime();
                        sink += v[w].getAsLong();
                        t[w][q] = System.nanoTime() - s;
                    }
                }
                for (double[] x : t) {
                    Arrays.sort(x);
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder("deepseek-mla-bf16 1MiB, " + S.vectorBitSize() + "-bit, " + rounds + " rounds:");
                for (int w = 0; w < nv; w++) {
                    sb.append(String.format("%n  %-6s best %6.1f GB/s, median %6.1f GB/s, best/bound %.3f, median/bound %.3f",
                            names[w], bytes / t[w][0], bytes / t[w][rounds / 2], t[nv - 1][0] / t[w][0],
                            t[nv - 1][rounds / 2] / t[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }

    /** Two streams of {@code total} pieces (a whole cell, base 0) in lockstep: fa * sum_a + fb * sum_b. */
    static long pair(MemorySegment sa, long ba, long fa, MemorySegment sb, long bb, long fb, long total, long t0, int cellPieces) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
        LongVector u0 = zero, u1 = zero, u2 = zero, u3 = zero;
        final long vb = 8L * L;
        int groups = (int) (total / (4L * L));
        for (int g = 0; g < groups; g++) {
            long a = ba + g * 4 * vb;
            long b = bb + g * 4 * vb;
            a0 = a0.add(LongVector.fromMemorySegment(S, sa, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, sa, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, sa, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, sa, a + 3 * vb, LE));
            b0 = b0.add(LongVector.fromMemorySegment(S, sb, b, LE));
            b1 = b1.add(LongVector.fromMemorySegment(S, sb, b + vb, LE));
            b2 = b2.add(LongVector.fromMemorySegment(S, sb, b + 2 * vb, LE));
            b3 = b3.add(LongVector.fromMemorySegment(S, sb, b + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            u0 = u0.add(b0);
            u1 = u1.add(b1);
            u2 = u2.add(b2);
            u3 = u3.add(b3);
        }
        long c0 = 2 * t0 * cellPieces + 1;
        // fa * close(a) + fb * close(b), on vectors: both closings' terms scaled before one reduction
        LongVector a23 = a2.add(a3);
        LongVector b23 = b2.add(b3);
        LongVector all = a0.add(a1).add(a23).mul(fa).add(b0.add(b1).add(b23).mul(fb));
        LongVector sets = a1.add(a23).add(a23).add(a3).mul(fa).add(b1.add(b23).add(b23).add(b3).mul(fb));
        LongVector s = s0.add(s1).add(s2.add(s3)).mul(fa).add(u0.add(u1).add(u2.add(u3)).mul(fb));
        LongVector g = all.mul(VectorSliceKernel.TWO_IOTA.add(c0 + 8L * L * groups))
                .sub(s.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_8L))
                .add(sets.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L));
        long sum = g.reduceLanes(VectorOperators.ADD);
        long tail = groups * 4L * L;
        for (long q = tail; q < total; q++) {
            long w = c0 + 2 * q;
            sum += (fa * sa.get(SliceKernel.PIECE, ba + 8 * q) + fb * sb.get(SliceKernel.PIECE, bb + 8 * q)) * w;
        }
        return sum;
    }

    /** pair with two running sums per stream: A += sum_k x_k, T += (A << 2) - (x1 + 2x2 + 3x3). */
    static long pair2(MemorySegment sa, long ba, long fa, MemorySegment sb, long bb, long fb, long total, long t0, int cellPieces) {
        final LongVector zero = LongVector.zero(S);
        LongVector aa = zero, ta = zero, ab = zero, tb = zero;
        final long vb = 8L * L;
        int groups = (int) (total / (4L * L));
        for (int g = 0; g < groups; g++) {
            long a = ba + g * 4 * vb;
            long b = bb + g * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2;
            x0 = LongVector.fromMemorySegment(S, sa, a, LE);
            x1 = LongVector.fromMemorySegment(S, sa, a + vb, LE);
            x2 = LongVector.fromMemorySegment(S, sa, a + 2 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, sa, a + 3 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            aa = aa.add(x0.add(r1));
            ta = ta.add(aa.lanewise(VectorOperators.LSHL, 2).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, sb, b, LE);
            x1 = LongVector.fromMemorySegment(S, sb, b + vb, LE);
            x2 = LongVector.fromMemorySegment(S, sb, b + 2 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, sb, b + 3 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            ab = ab.add(x0.add(r1));
            tb = tb.add(ab.lanewise(VectorOperators.LSHL, 2).sub(r1.add(r2).add(x3)));
        }
        long c0 = 2 * t0 * cellPieces + 1;
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0 + 8L * L * groups);
        long sum = aa.mul(fa).add(ab.mul(fb)).mul(k).sub(ta.mul(fa).add(tb.mul(fb)).lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        long tail = groups * 4L * L;
        for (long q = tail; q < total; q++) {
            long w = c0 + 2 * q;
            sum += (fa * sa.get(SliceKernel.PIECE, ba + 8 * q) + fb * sb.get(SliceKernel.PIECE, bb + 8 * q)) * w;
        }
        return sum;
    }
}
