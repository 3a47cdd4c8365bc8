package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The shipped mixed kernel with side-by-side heads from memory read by copies of its row passes ({@code rowPass},
 * {@code rowRegs}) and in cache by copies of its head-by-head loops ({@code sumAffine}, {@code positionMajor}) as they
 * were before 2026-12-07 21:00 UTC, with the mixer as it was then (each round's fold masked
 * before its xor: {@code ((p << 32) ^ p) & HI}; round 3's multiply {@code vpmullq} at 512 bits). Not shipped: the A/B's
 * {@code prevmix} turn (jmh/ab/MixedRowsAb.java), so the mixer's two forms run from memory in one JVM; docs/bench-cpu.md,
 * "The mixer's multiplies at 512 bits". Every other path is the shipped kernel's.
 */
final class MixerPrevKernel implements SliceKernel {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;
    private static final ThreadLocal<long[][]> ROW_SUMS = ThreadLocal.withInitial(() -> new long[2][0]);
    private final MixedVectorSliceKernel shipped = new MixedVectorSliceKernel();

    /** The mixer before: exactly {@code Definition.feistel3}, the folds masked. */
    static LongVector mix(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
        p = x.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
    }

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

    private static final boolean POSITION_MAJOR = L <= 4 && !KernelSpecies.WIDE_REGISTER_FILE;

    /** The shipped {@code sumAffine} before (in cache: every head through it), its mixer {@link #mix}. */
    @Override
    public long sumAffine(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        if (POSITION_MAJOR) {
            return positionMajor(seg, base, stride, n, t0, cellPieces, pieceBase, regionPieces);
        }
        int vectors = regionPieces / L;
        final long vb = 8L * L;
        LongVector a = LongVector.zero(S);    // running sum of the mixed pieces
        LongVector s = LongVector.zero(S);    // running sum of a, once per vector
        LongVector r = LongVector.zero(S);    // running sum of a, once per token
        for (int i = 0; i < n; i++) {
            long at = base + i * stride;
            for (int v = 0; v < vectors; v++) {
                a = a.add(mix(LongVector.fromMemorySegment(S, seg, at + v * vb, LE)));
                s = s.add(a);
            }
            r = r.add(a);
        }
        return close(a, s, r, n, vectors, t0, cellPieces, pieceBase);
    }

    /**
     * The shipped {@code positionMajor} before: {@link #sumAffine} one vector of piece positions {@code v} at a time over the block's tokens: {@code a += f(x);
     * t += a} per token, then that vector's lanes contribute {@code a(c0 + 2vL + 2l + 2Pn) - 2P*t}, summed as vectors
     * and reduced once.
     */
    static long positionMajor(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        int vectors = regionPieces / L;
        final long vb = 8L * L;
        long twoP = 2L * cellPieces;
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + twoP * n;
        LongVector g = LongVector.zero(S);
        for (int v = 0; v < vectors; v++) {
            LongVector a = LongVector.zero(S);
            LongVector t = LongVector.zero(S);
            long at = base + v * vb;
            for (int i = 0; i < n; i++) {
                a = a.add(mix(LongVector.fromMemorySegment(S, seg, at + i * stride, LE)));
                t = t.add(a);
            }
            g = g.add(a.mul(VectorSliceKernel.TWO_IOTA.add(c0 + 2L * L * v))).sub(t.mul(twoP));
        }
        return g.reduceLanes(VectorOperators.ADD);
    }

    /**
     * The closing formula of the one-pair loops. Vector {@code v} of token {@code i} is step {@code m = iV + v} of
     * {@code nV}; so {@code sum m*x = nV*A - S} and {@code sum i*x = n*A - R} per lane. With the weight
     * {@code c0 + 2iP + 2vL + 2l} ({@code c0 = 2(t0*P + base) + 1}) the sum is
     * {@code A(c0 + 2l + 2Pn) - 2L*S + 2(LV - P)*R}, one lane reduction.
     */
    private static long close(LongVector a, LongVector s, LongVector r, int n, int vectors, long t0, int cellPieces,
            int pieceBase) {
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1;
        long twoP = 2L * cellPieces;
        LongVector g = a.mul(VectorSliceKernel.TWO_IOTA.add(c0 + twoP * n))
                .sub(s.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L))
                .add(r.mul(2L * L * vectors - twoP));
        return g.reduceLanes(VectorOperators.ADD);
    }


    @Override
    public boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        return shipped.rowsAffine(heads, kPieces, kHeadStride, vPieces, vHeadStride);
    }

    /**
     * The shipped {@code headsAffine}'s row passes from memory and its head-by-head loops in cache, through the copies
     * below; the rest the shipped kernel's.
     */
    @Override
    public void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, boolean fromMemory,
            long[] out) {
        if (!fromMemory) {
            // in cache: head by head through this kernel's sumAffine (the shipped kernel's in-cache path, old mixer)
            SliceKernel.super.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride,
                    vPieces, heads, n, t0, false, out);
            return;
        }
        if (!rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)) {
            shipped.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                    heads, n, t0, fromMemory, out);
            return;
        }
        int cell = kPieces + (vSeg == null ? 0 : vPieces);
        Arrays.fill(out, 0, heads, 0);
        if (MixedVectorSliceKernel.regsRow(heads, kPieces, cell) && (vSeg == null || MixedVectorSliceKernel.regsRow(heads, vPieces, cell))) {
            rowRegs(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
            if (vSeg != null) {
                rowRegs(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
            }
            return;
        }
        rowPass(kSeg, kBase, kStride, n, t0, cell, 0, kPieces, heads, out);
        if (vSeg != null) {
            rowPass(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces, heads, out);
        }
    }

    @Override
    public String describe() {
        return "mixed mode, the mixer before (A/B only)";
    }

    /** The shipped {@code MixedVectorSliceKernel.rowPass} before, its mixer {@link #mix}. */
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
            for (int q = 0; q < total; q += L) {
                LongVector sum = LongVector.fromArray(S, a, q)
                        .add(mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE)));
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

    /**
     * Whether a row of {@code heads} regions of {@code pieces} is {@link #rowRegs}'s: a 2 KiB row at 512 bits (eight
     * units of four vectors, sixteen sums in AVX-512's 32 registers; Llama-3-8B TP1's K or V row), each region whole
     * units and the cell a power of two vectors (the algebra's shift).

    /** The shipped {@code MixedVectorSliceKernel.rowRegs} before, its mixers written out as {@link #mix}. */
    static void rowRegs(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * n; k++) {
            long at = base + (k >> 3) * stride + (k & 7) * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p, q;
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, at + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, at + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            q = a0;
            a0 = a1;
            a1 = a2;
            a2 = a3;
            a3 = a4;
            a4 = a5;
            a5 = a6;
            a6 = a7;
            a7 = q;
            q = w0;
            w0 = w1;
            w1 = w2;
            w2 = w3;
            w3 = w4;
            w4 = w5;
            w5 = w6;
            w6 = w7;
            w7 = q;
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        out[0 / perHead] += a0.mul(k.add(8L * L * (0 % perHead)))
                .sub(w0.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[1 / perHead] += a1.mul(k.add(8L * L * (1 % perHead)))
                .sub(w1.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[2 / perHead] += a2.mul(k.add(8L * L * (2 % perHead)))
                .sub(w2.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[3 / perHead] += a3.mul(k.add(8L * L * (3 % perHead)))
                .sub(w3.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[4 / perHead] += a4.mul(k.add(8L * L * (4 % perHead)))
                .sub(w4.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[5 / perHead] += a5.mul(k.add(8L * L * (5 % perHead)))
                .sub(w5.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[6 / perHead] += a6.mul(k.add(8L * L * (6 % perHead)))
                .sub(w6.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[7 / perHead] += a7.mul(k.add(8L * L * (7 % perHead)))
                .sub(w7.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
    }
}
