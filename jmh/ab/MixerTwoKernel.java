package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The shipped mixed kernel with the scratch row pass from memory ({@code rowPass}) mixing two vectors per step (two
 * shipped mixers, the scratch's loads and stores per vector as before), as the row pass did at 256 bits before
 * 2026-12-07 05:15 UTC with the mixer of then. Not shipped: the A/B's {@code two} turn (jmh/ab/MixedRowsAb.java);
 * docs/bench-cpu.md, "The mixer's multiplies at 512 bits". 2 KiB rows at 512 bits ({@code rowRegs}) and every other
 * path are the shipped kernel's.
 */
final class MixerTwoKernel implements SliceKernel {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;
    private static final ThreadLocal<long[][]> ROW_SUMS = ThreadLocal.withInitial(() -> new long[2][0]);
    private final MixedVectorSliceKernel shipped = new MixedVectorSliceKernel();

    @Override
    public long sum(MemorySegment seg, long[] off, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        return shipped.sum(seg, off, extra, n, t0, cellPieces, pieceBase, regionPieces);
    }

    @Override
    public void sumRows(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
            int heads, long[] a, long[] t, long[] out) {
        shipped.sumRows(seg, off, n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
    }

    @Override
    public boolean affine(int regionPieces, long tokenStride, int cellPieces) {
        return shipped.affine(regionPieces, tokenStride, cellPieces);
    }

    @Override
    public long sumAffine(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        return shipped.sumAffine(seg, base, stride, n, t0, cellPieces, pieceBase, regionPieces);
    }

    @Override
    public boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        return shipped.rowsAffine(heads, kPieces, kHeadStride, vPieces, vHeadStride);
    }

    /** The shipped {@code headsAffine}'s row passes from memory, through the two-per-step copy below; the rest the shipped kernel's. */
    @Override
    public void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, boolean fromMemory,
            long[] out) {
        if (!fromMemory || !rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)) {
            shipped.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                    heads, n, t0, fromMemory, out);
            return;
        }
        int cell = kPieces + (vSeg == null ? 0 : vPieces);
        Arrays.fill(out, 0, heads, 0);
        if (MixedVectorSliceKernel.regsRow(heads, kPieces, cell) && (vSeg == null || MixedVectorSliceKernel.regsRow(heads, vPieces, cell))) {
            shipped.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                    heads, n, t0, fromMemory, out);
            return;
        }
        rowPass(kSeg, kBase, kStride, n, t0, cell, 0, kPieces, heads, out);
        if (vSeg != null) {
            rowPass(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces, heads, out);
        }
    }

    @Override
    public String describe() {
        return "mixed mode, two mixers per step in the row pass (A/B only)";
    }

    /** {@code MixedVectorSliceKernel.rowPass} with two mixers per step. */
    static void rowPass(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] out) {
        int total = heads * regionPieces;
        long[][] sums = ROW_SUMS.get();
        if (sums[0].length < total) {
            sums[0] = new long[total];
            sums[1] = new long[total];
        }
        long[] a = sums[0];
        long[] t = sums[1];
        Arrays.fill(a, 0, total, 0);
        Arrays.fill(t, 0, total, 0);
        for (int i = 0; i < n; i++) {
            long at = base + i * stride;
            int q = 0;
            for (; q + 2 * L <= total; q += 2 * L) {
                LongVector x0 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE));
                LongVector x1 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * (q + L), LE));
                LongVector s0 = LongVector.fromArray(S, a, q).add(x0);
                LongVector s1 = LongVector.fromArray(S, a, q + L).add(x1);
                s0.intoArray(a, q);
                s1.intoArray(a, q + L);
                LongVector.fromArray(S, t, q).add(s0).intoArray(t, q);
                LongVector.fromArray(S, t, q + L).add(s1).intoArray(t, q + L);
            }
            for (; q < total; q += L) {
                LongVector sum = LongVector.fromArray(S, a, q)
                        .add(MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE)));
                sum.intoArray(a, q);
                LongVector.fromArray(S, t, q).add(sum).intoArray(t, q);
            }
        }
        long twoP = 2L * cellPieces;
        LongVector w0 = VectorSliceKernel.TWO_IOTA.add(2L * pieceBase + 1 + twoP * (t0 + n));
        for (int h = 0, q = 0; h < heads; h++) {
            LongVector g = LongVector.zero(S);
            for (int p = 0; p < regionPieces; p += L, q += L) {
                g = g.add(LongVector.fromArray(S, a, q).mul(w0.add(2L * p)))
                        .sub(LongVector.fromArray(S, t, q).mul(twoP));
            }
            out[h] += g.reduceLanes(VectorOperators.ADD);
        }
    }
}
