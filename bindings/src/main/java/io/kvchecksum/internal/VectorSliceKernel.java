package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The multiply-free form on the Vector API. For one lane (a fixed piece {@code p} of the cell) over the block's
 * tokens {@code i = 0..n-1}, keep running sums {@code A += x_i; T += A}. Then {@code A = sum x_i} and
 * {@code n*A - T = sum i*x_i}, so the lane contributes
 * {@code (2*(t0*P + p) + 1)*A + 2P*(n*A - T)}: two vector adds per loaded vector, multiplies only once per block.
 * Four vectors (128 bytes on AVX2) are in flight per token so loads overlap.
 */
final class VectorSliceKernel implements SliceKernel {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(LE);
    /** {@code 2*lane}: the lane's share of the piece weight. */
    private static final LongVector WEIGHT = LongVector.zero(S).addIndex(2);

    @Override
    public long sum(MemorySegment seg, long[] off, long extra, int n, long t0, int cellPieces, int pieceBase, int regionPieces) {
        LongVector acc = LongVector.zero(S);
        int c = 0;
        final long bytes = 8L * L;
        // Per lane of chunk c: (2*(t0*P + p) + 1)*A + 2P*(n*A - T) = A*(2p + 1 + 2P*(t0 + n)) - 2P*T, with p = base + lane.
        final long twoP = 2L * cellPieces;
        final long tokenTerm = twoP * (t0 + n);
        for (; c + 4 * L <= regionPieces; c += 4 * L) {
            LongVector a0 = LongVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
            LongVector s0 = a0, s1 = a0, s2 = a0, s3 = a0;
            long chunk = extra + 8L * c;
            for (int i = 0; i < n; i++) {
                long a = off[i] + chunk;
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + bytes, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * bytes, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * bytes, LE));
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
            }
            long w = 2L * (pieceBase + c) + 1 + tokenTerm;
            acc = acc.add(a0.mul(WEIGHT.add(w))).sub(s0.mul(twoP))
                    .add(a1.mul(WEIGHT.add(w + 2L * L))).sub(s1.mul(twoP))
                    .add(a2.mul(WEIGHT.add(w + 4L * L))).sub(s2.mul(twoP))
                    .add(a3.mul(WEIGHT.add(w + 6L * L))).sub(s3.mul(twoP));
        }
        for (; c + L <= regionPieces; c += L) {
            LongVector a0 = LongVector.zero(S), s0 = a0;
            long chunk = extra + 8L * c;
            for (int i = 0; i < n; i++) {
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, off[i] + chunk, LE));
                s0 = s0.add(a0);
            }
            long w = 2L * (pieceBase + c) + 1 + tokenTerm;
            acc = acc.add(a0.mul(WEIGHT.add(w))).sub(s0.mul(twoP));
        }
        long total = acc.reduceLanes(VectorOperators.ADD);
        if (c < regionPieces) {
            for (int i = 0; i < n; i++) {
                long base = off[i] + extra;
                long w = 2 * ((t0 + i) * cellPieces + pieceBase + c) + 1;
                for (int p = c; p < regionPieces; p++) {
                    total += seg.get(PIECE, base + 8L * p) * w;
                    w += 2;
                }
            }
        }
        return total;
    }

    @Override
    public String describe() {
        return "Vector API " + S.vectorBitSize() + "-bit";
    }
}
