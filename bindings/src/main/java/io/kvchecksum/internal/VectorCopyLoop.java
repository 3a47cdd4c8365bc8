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
 * {@code G = sum_c A_c} and {@code sum_c c*A_c}, kept as running sums over chunks; the closing step weights the lanes
 * with one vector multiply and reduces once per call; pieces past the last whole vector go one by one.
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
            // lane l: (2*base + 1 + 2P(t0 + n) + 2L*chunks + 2l)*G - 2L*H - 2P*TT, one reduction
            long twoP = 2L * cellPieces;
            long c1 = 2L * pieceBase + 1 + twoP * (t0 + n) + 2L * L * chunks;
            total = run.mul(TWO_IOTA.add(c1)).sub(h.lanewise(VectorOperators.LSHL, SHIFT_2L)).sub(tt.mul(twoP))
                    .reduceLanes(VectorOperators.ADD);
        }
        if (c < regionPieces) {
            total += SCALAR.copy(src, srcBase + 8L * c, srcStride, dst, dstBase + 8L * c, dstStride, n, t0, cellPieces,
                    pieceBase + c, regionPieces - c);
        }
        return total;
    }

    private static final CopyLoop SCALAR = new ScalarCopyLoop(false);

    /**
     * Whether the rows loop runs: it multiplies every vector by its head's factor, one 64-bit lane multiply per vector,
     * which AVX-512 has ({@code vpmullq}) and AVX2 has not (there the head-by-head loop is the faster one).
     */
    static final boolean ROWS = S.vectorBitSize() >= 512;

    /**
     * Heads token by token: each token's cells of all heads in turn (in token-major layouts the token's row, read and
     * written front to back: sequential streams, as a plain copy has; one call per layer and run instead of one per
     * head), each vector multiplied by its head's factor {@code m} as it passes,
     * so that one set of running sums serves every head: with {@code y = m*x}, {@code A += y} per vector position of the
     * region and {@code T += A} once per token, the weights being the same for every head's piece at one position.
     */
    @Override
    public long copyRows(MemorySegment src, long srcBase, long srcStride, long srcHeadStride, MemorySegment dst,
            long dstBase, long dstStride, long dstHeadStride, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
            int heads, long[] factors, int f0) {
        if (!ROWS || regionPieces % L != 0 || heads < 2) {
            return CopyLoop.super.copyRows(src, srcBase, srcStride, srcHeadStride, dst, dstBase, dstStride, dstHeadStride, n,
                    t0, cellPieces, pieceBase, regionPieces, heads, factors, f0);
        }
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final long twoP = 2L * cellPieces;
        LongVector w = zero;   // the weighted lanes of every chunk, reduced once at the end
        int c = 0;
        for (; c + 4 * L <= regionPieces; c += 4 * L) {
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            long sRow = srcBase + 8L * c;
            long dRow = dstBase + 8L * c;
            for (int i = 0; i < n; i++, sRow += srcStride, dRow += dstStride) {
                long sa = sRow;
                long da = dRow;
                for (int h = 0; h < heads; h++, sa += srcHeadStride, da += dstHeadStride) {
                    LongVector x0 = LongVector.fromMemorySegment(S, src, sa, LE);
                    LongVector x1 = LongVector.fromMemorySegment(S, src, sa + vb, LE);
                    LongVector x2 = LongVector.fromMemorySegment(S, src, sa + 2 * vb, LE);
                    LongVector x3 = LongVector.fromMemorySegment(S, src, sa + 3 * vb, LE);
                    x0.intoMemorySegment(dst, da, LE);
                    x1.intoMemorySegment(dst, da + vb, LE);
                    x2.intoMemorySegment(dst, da + 2 * vb, LE);
                    x3.intoMemorySegment(dst, da + 3 * vb, LE);
                    long m = factors[f0 + h];
                    a0 = a0.add(x0.mul(m));
                    a1 = a1.add(x1.mul(m));
                    a2 = a2.add(x2.mul(m));
                    a3 = a3.add(x3.mul(m));
                }
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
            }
            // lane l of vector v: (2(t0*P + base + c + vL + l) + 1 + 2Pn)*A - 2P*T
            LongVector lanes = TWO_IOTA.add(2 * (t0 * cellPieces + pieceBase + c) + 1 + twoP * n);
            w = w.add(a0.mul(lanes)).add(a1.mul(lanes.add(2L * L))).add(a2.mul(lanes.add(4L * L)))
                    .add(a3.mul(lanes.add(6L * L))).sub(s0.add(s1).add(s2.add(s3)).mul(twoP));
        }
        for (; c + L <= regionPieces; c += L) {
            LongVector a0 = zero, s0 = zero;
            long sRow = srcBase + 8L * c;
            long dRow = dstBase + 8L * c;
            for (int i = 0; i < n; i++, sRow += srcStride, dRow += dstStride) {
                long sa = sRow;
                long da = dRow;
                for (int h = 0; h < heads; h++, sa += srcHeadStride, da += dstHeadStride) {
                    LongVector x0 = LongVector.fromMemorySegment(S, src, sa, LE);
                    x0.intoMemorySegment(dst, da, LE);
                    a0 = a0.add(x0.mul(factors[f0 + h]));
                }
                s0 = s0.add(a0);
            }
            LongVector lanes = TWO_IOTA.add(2 * (t0 * cellPieces + pieceBase + c) + 1 + twoP * n);
            w = w.add(a0.mul(lanes)).sub(s0.mul(twoP));
        }
        return w.reduceLanes(VectorOperators.ADD);
    }

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
        // sum_g (groups - g) x_g = T, so sum_g g*x_g = groups*A - T per vector; lane l:
        // (c0 + 8L*groups + 2l)*A + 2L*(a1 + 2a2 + 3a3) - 8L*T, one reduction
        LongVector a = a0.add(a1).add(a2.add(a3));
        long c0 = 2 * j0 + 1;
        LongVector v = a1.add(a2.lanewise(VectorOperators.LSHL, 1)).add(a3.lanewise(VectorOperators.LSHL, 1)).add(a3);
        long sum = a.mul(TWO_IOTA.add(c0 + 8L * L * groups)).add(v.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .sub(s0.add(s1).add(s2.add(s3)).lanewise(VectorOperators.LSHL, SHIFT_8L)).reduceLanes(VectorOperators.ADD);
        long w = c0 + 2 * groups * 4L * L;
        for (long q = groups * 4L * L, o = span; q < total; q++, o += 8, w += 2) {
            long x = src.get(SliceKernel.PIECE, srcBase + o);
            dst.set(SliceKernel.PIECE, dstBase + o, x);
            sum += x * w;
        }
        return sum;
    }

    /** {@code 2l} in lane {@code l}: the lane's share of a piece's weight. */
    private static final LongVector TWO_IOTA;
    private static final int SHIFT_2L = Integer.numberOfTrailingZeros(2 * L);
    private static final int SHIFT_8L = Integer.numberOfTrailingZeros(8 * L);

    static {
        long[] w = new long[L];
        for (int l = 0; l < L; l++) {
            w[l] = 2L * l;
        }
        TWO_IOTA = LongVector.fromArray(S, w, 0);
    }

    @Override
    public String describe() {
        return "vector copy " + S.vectorBitSize() + "-bit";
    }
}
