package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The shipped mixed kernel with its 2 KiB row pass in registers ({@code rowRegs}, 512 bits) touching the row ahead:
 * one byte load {@code dist} bytes ahead of each unit (or two, {@code pairs}), clamped to the block's last byte, summed
 * into a field so that C2 keeps it (A/B only, jmh/ab/MixedRowsAb.java; docs/bench-cpu.md, "On Intel (Emerald
 * Rapids): the mixer"; not taken: slower), or reading two streams at once ({@link #rowTwo}). Every other path is the
 * shipped kernel's. {@code rowRegs}'s two-stream form ships as {@code MixedVectorSliceKernel.rowTwo} (Intel; its
 * constants built before the loop, so that C1 compiles it); {@link #rowTwo} here is the first form, kept for the A/B
 * and for jmh/ab/mixer-compile-check.sh (C1 gives up on its on-stack compile at tier 3). {@link #rowPassTwo}: the
 * scratch row pass over two streams (256 bits; not taken: slower). {@link #rowFour} and {@link #rowFourHalves}: four
 * streams (faster than two; the first C1 cannot compile; the second ships as {@code MixedVectorSliceKernel.rowFour},
 * Intel's choice, and stays here as the A/B's copy: docs/bench-cpu.md, "On Intel (Emerald Rapids): four streams"). docs/bench-cpu.md, "On
 * Intel (Emerald Rapids): two streams every tier compiles".
 */
final class MixerTouchKernel implements SliceKernel {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;
    static long touchSink;
    /** Scratch of {@link #rowPassTwo}: each thread's per-piece sums of one row ({@code A}, {@code T}, {@code B}). */
    private static final ThreadLocal<long[][]> PASS_SUMS = ThreadLocal.withInitial(() -> new long[3][0]);
    private final MixedVectorSliceKernel shipped = new MixedVectorSliceKernel();
    private final long dist;
    private final boolean pairs;
    private final boolean two;
    private boolean halves;
    private boolean passTwo;
    private boolean four;
    private boolean fourHalves;
    private boolean fourRegs;
    /** Scratch of {@link #rowFourHalves}: each thread's eight units' {@code A} and {@code T}. */
    private static final ThreadLocal<long[][]> FOUR_SUMS = ThreadLocal.withInitial(() -> new long[2][8 * L]);

    MixerTouchKernel(long dist, boolean pairs) {
        this(dist, pairs, false);
    }

    /** No touch, 2 KiB rows through {@link #rowHalves}. */
    static MixerTouchKernel halves() {
        MixerTouchKernel k = new MixerTouchKernel(0, false, false);
        k.halves = true;
        return k;
    }

    /** No touch; rows that are not 2 KiB at 512 bits (every row at 256 bits) through {@link #rowPassTwo}. */
    static MixerTouchKernel passTwo() {
        MixerTouchKernel k = new MixerTouchKernel(0, false, false);
        k.passTwo = true;
        return k;
    }

    /** No touch, 2 KiB rows through {@link #rowFour}. */
    static MixerTouchKernel four() {
        MixerTouchKernel k = new MixerTouchKernel(0, false, false);
        k.four = true;
        return k;
    }

    /** No touch, 2 KiB rows through {@link #rowFourRegs}. */
    static MixerTouchKernel fourRegs() {
        MixerTouchKernel k = new MixerTouchKernel(0, false, false);
        k.fourRegs = true;
        return k;
    }

    /** No touch, 2 KiB rows through {@link #rowFourHalves}. */
    static MixerTouchKernel fourHalves() {
        MixerTouchKernel k = new MixerTouchKernel(0, false, false);
        k.fourHalves = true;
        return k;
    }

    /** {@code two}: no touch, 2 KiB rows through {@link #rowTwo} (two streams at once). */
    MixerTouchKernel(long dist, boolean pairs, boolean two) {
        this.dist = dist;
        this.pairs = pairs;
        this.two = two;
    }

    private static long vbOf() {
        return 8L * L;
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

    @Override
    public long sumAffine(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        return shipped.sumAffine(seg, base, stride, n, t0, cellPieces, pieceBase, regionPieces);
    }

    @Override
    public boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        return shipped.rowsAffine(heads, kPieces, kHeadStride, vPieces, vHeadStride);
    }

    @Override
    public void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, boolean fromMemory,
            long[] out) {
        int cell = kPieces + (vSeg == null ? 0 : vPieces);
        if (passTwo && fromMemory && rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)
                && !(MixedVectorSliceKernel.regsRow(heads, kPieces, cell)
                        && (vSeg == null || MixedVectorSliceKernel.regsRow(heads, vPieces, cell)))) {
            Arrays.fill(out, 0, heads, 0);
            rowPassTwo(kSeg, kBase, kStride, n, t0, cell, 0, kPieces, heads, out);
            if (vSeg != null) {
                rowPassTwo(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces, heads, out);
            }
            return;
        }
        if (passTwo || !fromMemory || !rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)
                || !MixedVectorSliceKernel.regsRow(heads, kPieces, cell)
                || !(vSeg == null || MixedVectorSliceKernel.regsRow(heads, vPieces, cell))) {
            shipped.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                    heads, n, t0, fromMemory, out);
            return;
        }
        Arrays.fill(out, 0, heads, 0);
        if (fourRegs) {
            rowFourRegs(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
            if (vSeg != null) {
                rowFourRegs(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
            }
        } else if (fourHalves) {
            rowFourHalves(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
            if (vSeg != null) {
                rowFourHalves(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
            }
        } else if (four) {
            rowFour(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
            if (vSeg != null) {
                rowFour(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
            }
        } else if (halves) {
            rowHalves(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
            if (vSeg != null) {
                rowHalves(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
            }
        } else if (two) {
            rowTwo(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
            if (vSeg != null) {
                rowTwo(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
            }
        } else if (pairs) {
            rowPairs(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out, dist);
            if (vSeg != null) {
                rowPairs(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out, dist);
            }
        } else {
            rowTouch(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out, dist);
            if (vSeg != null) {
                rowTouch(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out, dist);
            }
        }
    }

    @Override
    public String describe() {
        return "mixed mode, 2 KiB rows touching ahead (A/B only)";
    }

    static void rowTouch(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out, long dist) {
        final long last = base + (n - 1) * stride + 32 * vbOf() - 1;
        long sink = 0;
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * n; k++) {
            long at = base + (k >> 3) * stride + (k & 7) * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p, q, y, lo;
            sink += seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, Math.min(at + dist + 0, last));
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
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
        touchSink = sink;
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


    static void rowPairs(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out, long dist) {
        final long last = base + (n - 1) * stride + 32 * vbOf() - 1;
        long sink = 0;
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * n; k++) {
            long at = base + (k >> 3) * stride + (k & 7) * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p, q, y, lo;
            sink += seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, Math.min(at + dist + 0, last));
            sink += seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, Math.min(at + dist + 128, last));
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
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
        touchSink = sink;
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

    /**
     * {@code rowRegs} reading two streams at once: token {@code i}'s row and token {@code i + h}'s ({@code h = n/2}),
     * unit by unit in lockstep (two sequential streams of the block, in different pages); an odd last token goes
     * through the shipped {@code rowRegs} alone. The unit's sums are shared: {@code A += X1 + X2} and
     * {@code T += ((A + h*X1) << s) - K1 - K2} (the first half's tokens are {@code h} steps short in the running sums of
     * a single pass over {@code 2h} tokens), so {@code A}, {@code T} and the closing are exactly {@code rowRegs}'s over
     * {@code 2h} tokens. Not shipped: eight mixers per loop body, and C1 gave up on it ("out of virtual registers in
     * linear scan") in one of two JVMs, leaving the method in tier-2 code at 0.1 GB/s.
     */
    static void rowTwo(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int h = n >> 1;
        if (h == 0) {
            MixedVectorSliceKernel.rowRegs(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
            return;
        }
        if ((n & 1) != 0) {
            MixedVectorSliceKernel.rowRegs(seg, base + 2L * h * stride, stride, 1, t0 + 2L * h, cellPieces, pieceBase,
                    perHead, out);
            n = 2 * h;
        }
        final LongVector hv = LongVector.broadcast(S, h);
        final long half = h * stride;
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * h; k++) {
            long at = base + (k >> 3) * stride + (k & 7) * 4 * vb;
            long at2 = at + half;
            LongVector x0, x1, x2, x3, z0, z1, z2, z3, r1, r2, p, q, y, lo;
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            z0 = LongVector.fromMemorySegment(S, seg, at2, LE);
            p = z0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = z0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = z0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            z0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            z1 = LongVector.fromMemorySegment(S, seg, at2 + vb, LE);
            p = z1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = z1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = z1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            z1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            z2 = LongVector.fromMemorySegment(S, seg, at2 + 2 * vb, LE);
            p = z2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = z2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = z2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            z2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            z3 = LongVector.fromMemorySegment(S, seg, at2 + 3 * vb, LE);
            p = z3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = z3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = z3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            z3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            q = x0.add(r1);
            LongVector u2 = z2.add(z3), u1 = z1.add(u2);
            a0 = a0.add(q.add(z0.add(u1)));
            w0 = w0.add(a0.add(q.mul(hv)).lanewise(VectorOperators.LSHL, shift)
                    .sub(r1.add(r2).add(x3).add(u1.add(u2).add(z3))));
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


    /**
     * {@code rowRegs} over two streams of half rows: the block's first and second half of tokens ({@code h = n/2}; an
     * odd last token through {@code rowRegs} alone) read in turn unit by unit (256 bytes), the row's first four units
     * in one pass and its last four in a second; each half's sums its own (eight in a ring), closed as {@code rowRegs}
     * closes {@code h} tokens from {@code t0} and from {@code t0 + h}. Four mixers per loop body.
     */
    static void rowHalves(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int h = n >> 1;
        if (h == 0) {
            MixedVectorSliceKernel.rowRegs(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
            return;
        }
        if ((n & 1) != 0) {
            MixedVectorSliceKernel.rowRegs(seg, base + 2L * h * stride, stride, 1, t0 + 2L * h, cellPieces, pieceBase,
                    perHead, out);
        }
        rowHalf(seg, base, stride, h, t0, cellPieces, pieceBase, perHead, out, 0);
        rowHalf(seg, base, stride, h, t0, cellPieces, pieceBase, perHead, out, 1);
    }

    static void rowHalf(MemorySegment seg, long base, long stride, int h, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out, int pass) {
        final long half = h * stride;
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * h; k++) {
            long at = base + (k >> 3) * stride + (k & 1) * half + (((k >> 1) & 3) + 4 * pass) * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p, q, y, lo;
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
            p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
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
        LongVector k1 = VectorSliceKernel.TWO_IOTA.add(2 * (t0 * cellPieces + pieceBase) + 1
                + ((long) h << shift << VectorSliceKernel.SHIFT_2L));
        LongVector k2 = k1.add(2L * h * cellPieces);
        int u = 4 * pass;
        out[u / perHead] += a0.mul(k1.add(8L * L * (u % perHead)))
                .sub(w0.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[u / perHead] += a1.mul(k2.add(8L * L * (u % perHead)))
                .sub(w1.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        u++;
        out[u / perHead] += a2.mul(k1.add(8L * L * (u % perHead)))
                .sub(w2.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[u / perHead] += a3.mul(k2.add(8L * L * (u % perHead)))
                .sub(w3.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        u++;
        out[u / perHead] += a4.mul(k1.add(8L * L * (u % perHead)))
                .sub(w4.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[u / perHead] += a5.mul(k2.add(8L * L * (u % perHead)))
                .sub(w5.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        u++;
        out[u / perHead] += a6.mul(k1.add(8L * L * (u % perHead)))
                .sub(w6.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[u / perHead] += a7.mul(k2.add(8L * L * (u % perHead)))
                .sub(w7.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@code MixedVectorSliceKernel.rowPass} (the scratch row pass, the 256-bit path) over two streams: token {@code i}'s
     * row and token {@code i + h}'s ({@code h = n/2}; an odd last token through {@code rowPass} alone) in lockstep, a
     * vector of each per step: {@code A_q += f1 + f2}, {@code B_q += f1}, {@code T_q += A_q}, and {@code T + h*B} at the
     * close (the first half's tokens stay {@code h} steps longer in a single pass's running sums). Not shipped: slower
     * than the one-stream pass with {@code -XX:UseAVX=2} (docs/bench-cpu.md, "On Intel (Emerald Rapids): two streams
     * every tier compiles").
     */
    static void rowPassTwo(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] out) {
        final int h = n >> 1;
        if (h == 0) {
            MixedVectorSliceKernel.rowPass(seg, base, stride, n, t0, cellPieces, pieceBase, regionPieces, heads, out);
            return;
        }
        if ((n & 1) != 0) {
            MixedVectorSliceKernel.rowPass(seg, base + 2L * h * stride, stride, 1, t0 + 2L * h, cellPieces, pieceBase, regionPieces, heads, out);
        }
        int total = heads * regionPieces;
        long[][] sums = PASS_SUMS.get();
        if (sums[0].length < total) {
            sums[0] = new long[total];
            sums[1] = new long[total];
        }
        if (sums[2].length < total) {
            sums[2] = new long[total];
        }
        long[] a = sums[0];
        long[] t = sums[1];
        long[] b = sums[2];
        Arrays.fill(a, 0, total, 0);
        Arrays.fill(t, 0, total, 0);
        Arrays.fill(b, 0, total, 0);
        final long half = h * stride;
        for (int i = 0; i < h; i++) {
            long at = base + i * stride;
            for (int q = 0; q < total; q += L) {
                LongVector f1 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE));
                LongVector f2 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + half + 8L * q, LE));
                LongVector sum = LongVector.fromArray(S, a, q).add(f1.add(f2));
                sum.intoArray(a, q);
                LongVector.fromArray(S, b, q).add(f1).intoArray(b, q);
                LongVector.fromArray(S, t, q).add(sum).intoArray(t, q);
            }
        }
        long twoP = 2L * cellPieces;
        LongVector w0 = VectorSliceKernel.TWO_IOTA.add(2L * pieceBase + 1 + twoP * (t0 + 2L * h));
        for (int g = 0, q = 0; g < heads; g++) {
            LongVector acc = LongVector.zero(S);
            for (int p = 0; p < regionPieces; p += L, q += L) {
                LongVector tq = LongVector.fromArray(S, t, q).add(LongVector.fromArray(S, b, q).mul(h));
                acc = acc.add(LongVector.fromArray(S, a, q).mul(w0.add(2L * p))).sub(tq.mul(twoP));
            }
            out[g] += acc.reduceLanes(VectorOperators.ADD);
        }
    }

    /**
     * {@link #rowTwo} over four streams: tokens {@code i}, {@code i + h}, {@code i + 2h}, {@code i + 3h} ({@code h = n/4};
     * the last {@code n - 4h} tokens through {@code rowRegs}) unit by unit in lockstep, sixteen mixers per loop body,
     * the mixer's constants built before the loop. {@code A += X0 + X1 + X2 + X3},
     * {@code T += ((A + h*(3X0 + 2X1 + X2)) << s) - K0 - K1 - K2 - K3}: exactly {@code rowRegs} over {@code 4h} tokens.
     * A/B only.
     */
    static void rowFour(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int h = n >> 2;
        if (h == 0) {
            MixedVectorSliceKernel.rowTwo(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
            return;
        }
        if (n > 4 * h) {
            MixedVectorSliceKernel.rowTwo(seg, base + 4L * h * stride, stride, n - 4 * h, t0 + 4L * h, cellPieces,
                    pieceBase, perHead, out);
        }
        final LongVector m32 = LongVector.broadcast(S, M32);
        final LongVector hi = LongVector.broadcast(S, HI);
        final LongVector c1 = LongVector.broadcast(S, 0x9E3779B9L).and(M32);
        final LongVector c2 = LongVector.broadcast(S, 0x85EBCA6BL).and(M32);
        final LongVector c3 = LongVector.broadcast(S, 0xC2B2AE35L).and(M32);
        final LongVector hv = LongVector.broadcast(S, h);
        final long quarter = h * stride;
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * h; k++) {
            long at = base + (k >> 3) * stride + (k & 7) * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2, sx, sw, sk, p, q, y, lo;
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at + 2 * vb, LE);
            p = x2.and(m32).mul(c1);
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at + 3 * vb, LE);
            p = x3.and(m32).mul(c1);
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            sx = x0.add(r1);
            sw = sx;
            sk = r1.add(r2).add(x3);
            long at1 = at + quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at1, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at1 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at1 + 2 * vb, LE);
            p = x2.and(m32).mul(c1);
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at1 + 3 * vb, LE);
            p = x3.and(m32).mul(c1);
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            sx = sx.add(x0.add(r1));
            sw = sw.add(sx);
            sk = sk.add(r1.add(r2).add(x3));
            long at2 = at + 2 * quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at2, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at2 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at2 + 2 * vb, LE);
            p = x2.and(m32).mul(c1);
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at2 + 3 * vb, LE);
            p = x3.and(m32).mul(c1);
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            sx = sx.add(x0.add(r1));
            sw = sw.add(sx);
            sk = sk.add(r1.add(r2).add(x3));
            long at3 = at + 3 * quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at3, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at3 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x2 = LongVector.fromMemorySegment(S, seg, at3 + 2 * vb, LE);
            p = x2.and(m32).mul(c1);
            y = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x3 = LongVector.fromMemorySegment(S, seg, at3 + 3 * vb, LE);
            p = x3.and(m32).mul(c1);
            y = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            sx = sx.add(x0.add(r1));
            sk = sk.add(r1.add(r2).add(x3));
            a0 = a0.add(sx);
            w0 = w0.add(a0.add(sw.mul(hv)).lanewise(VectorOperators.LSHL, shift).sub(sk));
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
        n = 4 * h;
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

    /**
     * Four streams of the block in lockstep (tokens {@code i}, {@code i + h}, {@code i + 2h}, {@code i + 3h},
     * {@code h = n/4}; the last {@code n - 4h} tokens through {@code rowTwo}) with eight mixers per loop body: each
     * iteration reads half a unit (two vectors) of each stream, the unit's sums in a thread's scratch (two loads and
     * two stores per eight mixers). Half {@code v} of unit {@code u}: {@code A += X}, {@code T += (((A & m) + h*W) << s) - K}
     * with {@code X} the eight mixed vectors summed, {@code W = 3X0 + 2X1 + X2} (the streams' extra steps),
     * {@code K = ((X & m) << 1) + X'} ({@code X'} the second vectors), {@code m} all ones in the unit's second half
     * (the {@code A} term once per step, after the whole unit): exactly {@code rowRegs} over {@code 4h} tokens. A/B only.
     */
    static void rowFourHalves(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int h = n >> 2;
        if (h == 0) {
            MixedVectorSliceKernel.rowTwo(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
            return;
        }
        if (n > 4 * h) {
            MixedVectorSliceKernel.rowTwo(seg, base + 4L * h * stride, stride, n - 4 * h, t0 + 4L * h, cellPieces,
                    pieceBase, perHead, out);
        }
        long[][] sums = FOUR_SUMS.get();
        final long[] as = sums[0];
        final long[] ts = sums[1];
        Arrays.fill(as, 0);
        Arrays.fill(ts, 0);
        final LongVector m32 = LongVector.broadcast(S, M32);
        final LongVector hi = LongVector.broadcast(S, HI);
        final LongVector c1 = LongVector.broadcast(S, 0x9E3779B9L).and(M32);
        final LongVector c2 = LongVector.broadcast(S, 0x85EBCA6BL).and(M32);
        final LongVector c3 = LongVector.broadcast(S, 0xC2B2AE35L).and(M32);
        final LongVector hv = LongVector.broadcast(S, h);
        final long quarter = h * stride;
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        for (int k = 0; k < 16 * h; k++) {
            long at = base + (k >> 4) * stride + (k & 15) * 2 * vb;
            int u = ((k >> 1) & 7) * L;
            LongVector mask = LongVector.broadcast(S, -(long) (k & 1));
            LongVector x0, x1, sx, sw, s1, p, y, lo;
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = x0.add(x1);
            sw = sx;
            s1 = x1;
            long at1 = at + quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at1, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at1 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = sx.add(x0.add(x1));
            sw = sw.add(sx);
            s1 = s1.add(x1);
            long at2 = at + 2 * quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at2, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at2 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = sx.add(x0.add(x1));
            sw = sw.add(sx);
            s1 = s1.add(x1);
            long at3 = at + 3 * quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at3, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at3 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = sx.add(x0.add(x1));
            s1 = s1.add(x1);
            LongVector a = LongVector.fromArray(S, as, u).add(sx);
            a.intoArray(as, u);
            LongVector.fromArray(S, ts, u).add(a.and(mask).add(sw.mul(hv)).lanewise(VectorOperators.LSHL, shift)
                    .sub(sx.and(mask).lanewise(VectorOperators.LSHL, 1).add(s1))).intoArray(ts, u);
        }
        n = 4 * h;
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        for (int j = 0; j < 8; j++) {
            out[j / perHead] += LongVector.fromArray(S, as, j * L).mul(k.add(8L * L * (j % perHead)))
                    .sub(LongVector.fromArray(S, ts, j * L).lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L))
                    .reduceLanes(VectorOperators.ADD);
        }
    }

    /**
     * {@link #rowFourHalves} with the eight units' sums in registers (rotated every second iteration, after a unit's
     * second half) instead of a thread's scratch. A/B only.
     */
    static void rowFourRegs(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int h = n >> 2;
        if (h == 0) {
            MixedVectorSliceKernel.rowTwo(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
            return;
        }
        if (n > 4 * h) {
            MixedVectorSliceKernel.rowTwo(seg, base + 4L * h * stride, stride, n - 4 * h, t0 + 4L * h, cellPieces,
                    pieceBase, perHead, out);
        }
        final LongVector m32 = LongVector.broadcast(S, M32);
        final LongVector hi = LongVector.broadcast(S, HI);
        final LongVector c1 = LongVector.broadcast(S, 0x9E3779B9L).and(M32);
        final LongVector c2 = LongVector.broadcast(S, 0x85EBCA6BL).and(M32);
        final LongVector c3 = LongVector.broadcast(S, 0xC2B2AE35L).and(M32);
        final LongVector hv = LongVector.broadcast(S, h);
        final long quarter = h * stride;
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 16 * h; k++) {
            long at = base + (k >> 4) * stride + (k & 15) * 2 * vb;
            LongVector mask = LongVector.broadcast(S, -(long) (k & 1));
            LongVector x0, x1, sx, sw, s1, p, y, lo;
            x0 = LongVector.fromMemorySegment(S, seg, at, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = x0.add(x1);
            sw = sx;
            s1 = x1;
            long at1 = at + quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at1, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at1 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = sx.add(x0.add(x1));
            sw = sw.add(sx);
            s1 = s1.add(x1);
            long at2 = at + 2 * quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at2, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at2 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = sx.add(x0.add(x1));
            sw = sw.add(sx);
            s1 = s1.add(x1);
            long at3 = at + 3 * quarter;
            x0 = LongVector.fromMemorySegment(S, seg, at3, LE);
            p = x0.and(m32).mul(c1);
            y = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            x1 = LongVector.fromMemorySegment(S, seg, at3 + vb, LE);
            p = x1.and(m32).mul(c1);
            y = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = x1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            x1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            sx = sx.add(x0.add(x1));
            s1 = s1.add(x1);
            a0 = a0.add(sx);
            w0 = w0.add(a0.and(mask).add(sw.mul(hv)).lanewise(VectorOperators.LSHL, shift)
                    .sub(sx.and(mask).lanewise(VectorOperators.LSHL, 1).add(s1)));
            if ((k & 1) != 0) {
                LongVector q = a0;
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
        }
        n = 4 * h;
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
