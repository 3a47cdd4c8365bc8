package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The verifying copy on the Vector API, in the checksum kernels' multiply-free form ({@link VectorSliceKernel}): each
 * vector is loaded from the source, stored to the destination and added into running sums {@code A += x; T += A}, so a
 * piece costs one load, one store and two adds, and the few multiplies happen on scalars once per call.
 *
 * <p>For a chunk of four vectors (piece {@code c*L + l} of the region, {@code L} lanes) over the run's tokens
 * {@code i < n}: {@code A = sum_i x_i}, {@code T = sum_i (n - i) x_i}, so {@code sum_i i*x_i = n*A - T} and the chunk
 * contributes {@code (2(t0*P + base + c*L + l) + 1 + 2P*n)*A - 2P*T}. Over chunks the terms in {@code c} need only
 * {@code G = sum_c A_c} and {@code sum_c c*A_c}, kept as running sums over chunks, and the lane-weighted
 * {@code sum_l l*G_l}; pieces past the last whole vector go one by one.
 */
final class VectorCopyLoop implements CopyLoop {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    @Override
    public long copy(MemorySegment src, long srcBase, long srcStride, MemorySegment dst, long dstBase, long dstStride, int n,
            long t0, int cellPieces, int pieceBase, int regionPieces) {
        if (srcStride == 8L * regionPieces && dstStride == srcStride && cellPieces == regionPieces) {
            return stream(src, srcBase, dst, dstBase, (long) n * regionPieces, t0 * cellPieces + pieceBase);
        }
        final LongVector zero = LongVector.zero(S);
        LongVector run = zero;    // running sum of A_c over chunks; at the end G
        LongVector h = zero;      // sum over chunks of run: sum_c A_c * (chunks - c)
        LongVector tt = zero;     // sum over chunks of T_c
        int chunks = 0;
        int c = 0;
        final long vb = 8L * L;
        for (; c + 4 * L <= regionPieces; c += 4 * L) {
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            long sa = srcBase + 8L * c;
            long da = dstBase + 8L * c;
            for (int i = 0; i < n; i++, sa += srcStride, da += dstStride) {
                LongVector x0 = LongVector.fromMemorySegment(S, src, sa, LE);
                LongVector x1 = LongVector.fromMemorySegment(S, src, sa + vb, LE);
                LongVector x2 = LongVector.fromMemorySegment(S, src, sa + 2 * vb, LE);
                LongVector x3 = LongVector.fromMemorySegment(S, src, sa + 3 * vb, LE);
                x0.intoMemorySegment(dst, da, LE);
                x1.intoMemorySegment(dst, da + vb, LE);
                x2.intoMemorySegment(dst, da + 2 * vb, LE);
                x3.intoMemorySegment(dst, da + 3 * vb, LE);
                a0 = a0.add(x0);
                a1 = a1.add(x1);
                a2 = a2.add(x2);
                a3 = a3.add(x3);
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
            }
            run = run.add(a0);
            h = h.add(run);
            run = run.add(a1);
            h = h.add(run);
            run = run.add(a2);
            h = h.add(run);
            run = run.add(a3);
            h = h.add(run);
            tt = tt.add(s0.add(s1)).add(s2.add(s3));
            chunks += 4;
        }
        for (; c + L <= regionPieces; c += L) {
            LongVector a0 = zero, s0 = zero;
            long sa = srcBase + 8L * c;
            long da = dstBase + 8L * c;
            for (int i = 0; i < n; i++, sa += srcStride, da += dstStride) {
                LongVector x0 = LongVector.fromMemorySegment(S, src, sa, LE);
                x0.intoMemorySegment(dst, da, LE);
                a0 = a0.add(x0);
                s0 = s0.add(a0);
            }
            run = run.add(a0);
            h = h.add(run);
            tt = tt.add(s0);
            chunks++;
        }
        long total = 0;
        if (chunks > 0) {
            long sumG = run.reduceLanes(VectorOperators.ADD);
            long sumCA = chunks * sumG - h.reduceLanes(VectorOperators.ADD);
            long twoP = 2L * cellPieces;
            total = (2L * pieceBase + 1 + twoP * (t0 + n)) * sumG + 2L * L * sumCA + 2 * laneWeighted(run)
                    - twoP * tt.reduceLanes(VectorOperators.ADD);
        }
        if (c < regionPieces) {
            total += SCALAR.copy(src, srcBase + 8L * c, srcStride, dst, dstBase + 8L * c, dstStride, n, t0, cellPieces,
                    pieceBase + c, regionPieces - c);
        }
        return total;
    }

    private static final CopyLoop SCALAR = new ScalarCopyLoop(false);

    /**
     * Cells back to back on both sides (MLA rows, or K-only cells at token stride = cell): one stream of {@code total}
     * pieces whose piece {@code q} has weight {@code 2(j0 + q) + 1}, four vectors per step. With {@code q = 4L*g + v*L + l}
     * ({@code g} the step, {@code v} the vector in it) the weight splits into {@code 2j0 + 1 + 2l + 2Lv} and {@code 8L*g};
     * the latter summed over steps is {@code 8L * (groups*A - T)} with the running sums {@code A}, {@code T}.
     */
    private static long stream(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, long total, long j0) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 8L * L;
        long groups = total / (4L * L);
        long span = groups * 4 * vb;
        for (long o = 0; o < span; o += 4 * vb) {
            LongVector x0 = LongVector.fromMemorySegment(S, src, srcBase + o, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, srcBase + o + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, srcBase + o + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, srcBase + o + 3 * vb, LE);
            x0.intoMemorySegment(dst, dstBase + o, LE);
            x1.intoMemorySegment(dst, dstBase + o + vb, LE);
            x2.intoMemorySegment(dst, dstBase + o + 2 * vb, LE);
            x3.intoMemorySegment(dst, dstBase + o + 3 * vb, LE);
            a0 = a0.add(x0);
            a1 = a1.add(x1);
            a2 = a2.add(x2);
            a3 = a3.add(x3);
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        // sum_g (groups - g) x_g = T, so sum_g g*x_g = groups*A - T per vector
        LongVector a = a0.add(a1).add(a2.add(a3));
        long sumA = a.reduceLanes(VectorOperators.ADD);
        long sumT = s0.add(s1).add(s2.add(s3)).reduceLanes(VectorOperators.ADD);
        long c0 = 2 * j0 + 1;
        long sum = c0 * sumA + 2 * laneWeighted(a) + 2L * L * (a1.reduceLanes(VectorOperators.ADD)
                + 2 * a2.reduceLanes(VectorOperators.ADD) + 3 * a3.reduceLanes(VectorOperators.ADD))
                + 8L * L * (groups * sumA - sumT);
        long w = c0 + 2 * groups * 4L * L;
        for (long q = groups * 4L * L, o = span; q < total; q++, o += 8, w += 2) {
            long x = src.get(SliceKernel.PIECE, srcBase + o);
            dst.set(SliceKernel.PIECE, dstBase + o, x);
            sum += x * w;
        }
        return sum;
    }

    /** {@code sum_l l * g_l}: the lane-weighted sum of the closing formulas, once per call. */
    private static long laneWeighted(LongVector g) {
        long sum = 0;
        for (int l = 1; l < L; l++) {
            sum += l * g.lane(l);
        }
        return sum;
    }

    @Override
    public String describe() {
        return "vector copy " + S.vectorBitSize() + "-bit";
    }
}
