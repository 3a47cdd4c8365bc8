package io.kvchecksum.internal;

import io.kvchecksum.Definition;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The mixed mode ({@link io.kvchecksum.ChecksumMode#MIXED}) on the Vector API: each loaded vector passes through
 * {@link #mix} ({@link Definition#feistel3} on every lane) before it enters the running sums. The backend runs these
 * loops in the same plan, block order, constant-stride paths and thread split as the standard ones and reads memory
 * once; a class of its own (not a flag in the standard loops) so that the standard loops stay exactly as compiled.
 *
 * <p>Unlike {@link VectorSliceKernel}, every loop here has <em>one</em> running-sum pair and one load per iteration.
 * The mixer is about fifteen vector operations: with four or eight of them in one loop body (the standard loops'
 * unrolling) C2 stops inlining at {@code NodeCountInliningCutoff} and boxes every vector (measured: 15x slower). One
 * accumulator pair is enough, since the mixer's arithmetic, not the adds' latency, sets the pace (docs/bench-cpu.md).
 * The row pass from memory ({@link #rowPass}) keeps one pair per row vector in a thread's scratch instead, and
 * {@link #rowRegs} (2 KiB rows at 512 bits) the standard row pass's two sums per four vectors in registers, its mixers
 * written out in the loop body, so that C2's node budget is spent on the Vector API's operations, not on call sites.
 * On Intel ({@link KernelSpecies#MIXED_STREAMS}) those rows read four streams of the block at once
 * ({@link #rowFour}; {@link #rowTwo}, two streams, takes its last tokens).
 *
 * <p>The mixer's multiplies are {@code LongVector} multiplies of two operands masked to their low 32 bits (the
 * constant too) or shifted right by 32, the shapes HotSpot compiles to {@code vpmuludq} on AVX2/AVX-512 (JDK-8341137)
 * instead of {@code vpmullq} (AVX-512DQ) or an emulated 64-bit lane multiply. A mask that C2 folds into a
 * {@code vpternlogd} with the xors before it is no longer seen (round 3 of the form before {@link #mix}'s, checked in
 * the compiled code); see {@code docs/bench-cpu.md}, "Mixed mode cost".
 */
final class MixedVectorSliceKernel implements SliceKernel {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;

    /**
     * Whether side-by-side heads from memory are read a row per pass ({@link #rowsAffine}), and other heads at 256 bits
     * by the row pass one head at a time; false only in A/B runs.
     */
    private final boolean rows;

    /**
     * Whether 2 KiB rows at 512 bits take {@link #rowRegs}, {@link #rowTwo} or {@link #rowFour}; false only in tests
     * and A/B runs.
     */
    private final boolean regs;

    /**
     * How many streams of the block 2 KiB rows at 512 bits read in lockstep: 1 ({@link #rowRegs}), 2 ({@link #rowTwo})
     * or 4 ({@link #rowFour}); {@link KernelSpecies#MIXED_STREAMS} as shipped; tests and A/B runs pick any.
     */
    private final int streams;

    /** Scratch of {@link #rowPass}: each thread's per-piece running sums of one row. */
    private static final ThreadLocal<long[][]> ROW_SUMS = ThreadLocal.withInitial(() -> new long[2][0]);

    /** Scratch of {@link #rowFour}: each thread's eight units' {@code A} and {@code T} (only at 512 bits). */
    private static final ThreadLocal<long[][]> FOUR_SUMS = ThreadLocal.withInitial(() -> new long[2][8 * L]);

    /** The kernel as the backend ships it: side-by-side heads from memory a row per pass. */
    MixedVectorSliceKernel() {
        this(true);
    }

    /**
     * {@code rowPass} false: heads from memory head by head, the caller touching the next block ahead, and at 256 bits
     * position-major (the loops before the row pass), kept so tests and the A/B run ({@code jmh/ab/MixedRowsAb.java})
     * can run both forms.
     */
    MixedVectorSliceKernel(boolean rowPass) {
        this(rowPass, true);
    }

    /**
     * {@code rowRegs} false: every row pass through the per-thread scratch ({@link #rowPass}), the shipped loop before
     * {@link #rowRegs}, kept so tests and the A/B run can compare both.
     */
    MixedVectorSliceKernel(boolean rowPass, boolean rowRegs) {
        this(rowPass, rowRegs, KernelSpecies.MIXED_STREAMS);
    }

    /**
     * {@code streams}: how many streams of the block 2 KiB rows at 512 bits read in lockstep, 1 ({@link #rowRegs}), 2
     * ({@link #rowTwo}) or 4 ({@link #rowFour}), so tests and the A/B run can run each on any CPU.
     */
    MixedVectorSliceKernel(boolean rowPass, boolean rowRegs, int streams) {
        if (streams != 1 && streams != 2 && streams != 4) {
            throw new IllegalArgumentException("streams " + streams + ": 1, 2 or 4");
        }
        this.rows = rowPass;
        this.regs = rowRegs;
        this.streams = streams;
    }

    /**
     * The mixer on every lane: exactly {@link Definition#feistel3}, each half of the result carried in its own vector,
     * unmasked. Round 1 changes only the high half: {@code y = x ^ p ^ (p << 32)} has its result's high half (the low
     * half of {@code y} is never read). Round 2 changes only the low half: {@code x ^ p ^ (p >>> 32)} has its low half
     * ({@code lo}, masked: it is round 3's multiply operand). Round 3 changes the high half again, which
     * {@code y ^ p ^ (p << 32)} carries; the result is that high half and {@code lo}. So no round masks its fold before
     * the xor, and every multiply's operands are a {@code & M32} or a {@code >>> 32} that C2 keeps as such, hence
     * {@code vpmuludq} (JDK-8341137). The form before (the folds masked, {@code ((p << 32) ^ p) & HI}) lost round 3's
     * {@code & M32} to a {@code vpternlogd} (C2's logic cones) and got {@code vpmullq}, and had one op more per round:
     * this one mixes 1.11-1.13x as fast in L1 at 512 and at 256 bits, 1.07-1.10x in the whole pass in cache
     * and 1.07-1.18x from memory at 256 bits; from memory at 512 bits, where memory sets the pace, no change
     * (docs/bench-cpu.md, "The mixer's multiplies at 512 bits").
     */
    static LongVector mix(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
        LongVector y = x.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
        p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
        LongVector lo = x.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
        p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
        return y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
    }

    /** Whole vectors per cell region: any token stride (MLA's back-to-back rows are the case stride = 8 * region). */
    @Override
    public boolean affine(int regionPieces, long tokenStride, int cellPieces) {
        return regionPieces % L == 0;
    }

    /**
     * At 256 bits (AVX2) the token-major loop below measured five times slower than its mixer allows (sixteen vector
     * registers for the mixer's constants, three sums and an unrolled body; docs/bench-cpu.md), while the position-major
     * order of the earlier separate loop did not: so that width reads one vector of piece positions over the block's
     * tokens at a time, like that loop did.
     */
    private static final boolean POSITION_MAJOR = L <= 4 && !KernelSpecies.WIDE_REGISTER_FILE;

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
     * {@link #sumAffine} one vector of piece positions {@code v} at a time over the block's tokens: {@code a += f(x);
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

    /** The offset-table path: the same loop at {@code off[i] + extra}, the pieces short of a vector one by one. */
    @Override
    public long sum(MemorySegment seg, long[] off, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        int vectors = regionPieces / L;
        long total = 0;
        if (vectors > 0) {
            final long vb = 8L * L;
            LongVector a = LongVector.zero(S);
            LongVector s = LongVector.zero(S);
            LongVector r = LongVector.zero(S);
            for (int i = 0; i < n; i++) {
                long at = off[i] + extra;
                for (int v = 0; v < vectors; v++) {
                    a = a.add(mix(LongVector.fromMemorySegment(S, seg, at + v * vb, LE)));
                    s = s.add(a);
                }
                r = r.add(a);
            }
            total = close(a, s, r, n, vectors, t0, cellPieces, pieceBase);
        }
        int c = vectors * L;
        if (c < regionPieces) {
            total += MixedScalarSliceKernel.direct(seg, off, extra + 8L * c, n, t0, cellPieces, pieceBase + c,
                    regionPieces - c);
        }
        return total;
    }

    /** {@link VectorSliceKernel#sumRows}, mixed: each token's row of side-by-side heads front to back. */
    @Override
    public void sumRows(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
            int heads, long[] a, long[] t, long[] out) {
        int total = heads * regionPieces;
        int vectorEnd = total - total % L;
        SliceKernel.clearRows(a, t, total);
        for (int i = 0; i < n; i++) {
            long base = off[i];
            int q = 0;
            for (; q < vectorEnd; q += L) {
                LongVector sum = LongVector.fromArray(S, a, q)
                        .add(mix(LongVector.fromMemorySegment(S, seg, base + 8L * q, LE)));
                sum.intoArray(a, q);
                LongVector.fromArray(S, t, q).add(sum).intoArray(t, q);
            }
            for (; q < total; q++) {
                a[q] += Definition.feistel3(seg.get(PIECE, base + 8L * q));
                t[q] += a[q];
            }
        }
        SliceKernel.finishRows(n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
    }

    /**
     * Side-by-side heads from memory are read a row per pass ({@link #rowPass}) wherever each head's region is whole
     * vectors: the head-by-head loops read a block in strided passes of one head's cells (the next block touched
     * ahead), which left the mixed mode at 0.2-0.45 of the standard mode at 4x LLC, the row pass at 0.3-0.9 on the same
     * loaded machine, in the same runs (docs/bench-cpu.md, "Mixed mode cost"). At the preferred width: on AMD family
     * 25 the row pass in 256-bit vectors measured no better at 512-bit preferred width (unlike the standard mode's).
     */
    @Override
    public boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        return rows && heads > 1 && kHeadStride == 8L * kPieces && kPieces % L == 0
                && (vPieces == 0 || (vHeadStride == 8L * vPieces && vPieces % L == 0));
    }

    @Override
    public void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, boolean fromMemory,
            long[] out) {
        if (fromMemory && rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)) {
            int cell = kPieces + (vSeg == null ? 0 : vPieces);
            Arrays.fill(out, 0, heads, 0);
            if (regs && regsRow(heads, kPieces, cell) && (vSeg == null || regsRow(heads, vPieces, cell))) {
                if (streams == 4) {
                    rowFour(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
                    if (vSeg != null) {
                        rowFour(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
                    }
                    return;
                }
                if (streams == 2) {
                    rowTwo(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / (4 * L), out);
                    if (vSeg != null) {
                        rowTwo(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * L), out);
                    }
                    return;
                }
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
            return;
        }
        if (rows && fromMemory && POSITION_MAJOR) {
            // The position-major loop reads a block in strided passes, one vector per token each: from memory that
            // left MLA at 0.29-0.34 of the standard mode at 4x LLC, the row pass per head 0.53-0.60 in the same runs
            // (docs/bench-cpu.md); so from memory each head's rows are read front to back.
            long[] one = new long[1];
            for (int h = 0; h < heads; h++) {
                int cell = kPieces + (vSeg == null ? 0 : vPieces);
                one[0] = 0;
                rowPass(kSeg, kBase + h * kHeadStride, kStride, n, t0, cell, 0, kPieces, 1, one);
                if (vSeg != null) {
                    rowPass(vSeg, vBase + h * vHeadStride, vStride, n, t0, cell, kPieces, vPieces, 1, one);
                }
                out[h] = one[0];
            }
            return;
        }
        SliceKernel.super.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                heads, n, t0, fromMemory, out);
    }

    /**
     * One region of every head, each token's row of {@code heads} side-by-side regions read front to back (token
     * {@code i}'s row at {@code base + i*stride}): per row vector {@code q} the running sums {@code A_q += f(x)} and
     * {@code T_q += A_q} in a thread's scratch (L1; the mixer, not these loads and stores, sets the pace), then head
     * {@code h}'s vectors contribute {@code A(c0 + 2vL + 2l) - 2P*T} with {@code c0 = 2(pieceBase + P(t0 + n)) + 1}, as
     * {@link SliceKernel#finishRows} but a vector at a time. Adds head {@code h}'s sum to {@code out[h]}.
     *
     * <p>One mixer per step at every width. Two per step at 256 bits ran 1.17x faster in L1 ({@code MixerBench.mixedTwo}),
     * but this loop only runs from memory, and there, with {@code -XX:UseAVX=2}, one per step took less CPU time per call
     * (mixed/standard 0.74 against 0.66, medians of 6 and 10 JVMs, {@code jmh/ab/mixed-variants-ab.sh};
     * docs/bench-cpu.md, "Mixed mode cost"); loops with more mixer call sites risk C2 no longer inlining it (same section).
     * With today's {@link #mix} on a Zen 5 VM two per step took 5-14% less CPU time than one in nine A/B runs, but less
     * wall time in only four (load 7-9; "The mixer's multiplies at 512 bits"): kept at one until a quiet A/B says more.
     */
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
     */
    static boolean regsRow(int heads, int pieces, int cellPieces) {
        return KernelSpecies.WIDE_REGISTER_FILE && L == 8 && pieces % (4 * L) == 0 && heads * pieces == 32 * L
                && cellPieces % L == 0 && Integer.bitCount(cellPieces / L) == 1;
    }

    /**
     * {@link #rowPass} with its sums in registers: {@link VectorSliceKernel}'s row-pass algebra on mixed vectors. The
     * row is eight units of four vectors; per unit {@code A += X}, {@code T += (A << s) - K} with {@code X} the unit's
     * mixed vectors summed, {@code K = x1 + 2x2 + 3x3} and {@code 2^s = P/L}; unit {@code j}'s sum is
     * {@code sum_l (c0 + 8L*(j % perHead) + 2l + 2L*2^s*n)*A_l - 2L*T_l}, {@code c0 = 2(t0*P + pieceBase) + 1} (the
     * standard mode's closing; only the pieces are mixed first). Adds unit {@code j}'s sum to its head's {@code out}.
     * The scratch's two loads and two stores per vector are gone (docs/bench-cpu.md, "Row sums in registers").
     *
     * <p>Written as both JIT tiers compile it: the loop body reads one unit (iteration {@code k}: unit {@code k & 7}
     * of token {@code k >> 3}) and rotates the eight units' sums, and the mixer is written out ({@link #mix} operation
     * for operation). Called in the body, C2 stopped inlining it at NodeCountInliningCutoff and boxed the vectors.
     * Bodies of half or a quarter row (sixteen or eight mixers, fewer moves) C2 compiled as fast, but C1 gave up on
     * them ("out of virtual registers"), after which the tiered policy can leave the method in its unprofiled C1 code
     * (0.1 GB/s, measured). The closing is written out: the sums put in an array were boxed once per call (a block).
     */
    static void rowRegs(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * n; k++) {
            long at = base + (k >> 3) * stride + (k & 7) * 4 * vb;
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
     * {@link #rowRegs} over two streams of the block: token {@code i}'s row and token {@code i + h}'s ({@code h = n/2}),
     * unit by unit in lockstep (two sequential streams, in different pages); an odd last token, and a block of one,
     * through {@link #rowRegs} alone. The unit's sums are shared: {@code A += X1 + X2} and
     * {@code T += ((A + h*X1) << s) - K1 - K2} (in a single pass over {@code 2h} tokens the first half's tokens stay
     * {@code h} steps longer in the running sums), so {@code A}, {@code T} and the closing are exactly
     * {@link #rowRegs}'s over {@code 2h} tokens. On Intel (Emerald Rapids) the mixer's cycles add to the misses' rather
     * than overlap them, and a second stream overlaps them: mixed/standard 0.78-0.80 (medians) against 0.62-0.66 for
     * {@link #rowRegs} from memory at 4x LLC (docs/bench-cpu.md, "On Intel (Emerald Rapids): two streams every tier
     * compiles"); {@link #rowFour} (four streams) is the choice on Intel now, and takes this for its last tokens.
     *
     * <p>Eight mixers written out per loop body (called, C2 stops inlining them at NodeCountInliningCutoff; the Vector
     * API's own methods are force-inlined and not subject to it), with the mixer's constants built once before the loop
     * ({@code m32}, {@code hi}, {@code c1}-{@code c3}): C2 compiles the same graph either way (the masks it needs for
     * {@code vpmuludq} are still {@code AndV}s of replicated constants), but C1, which inlines the Vector API's Java
     * fallbacks, then needs about a quarter fewer virtual registers per mixer. The same body with the constants built
     * in each mixer (as {@link #rowRegs} builds them) made C1 give up on its tier-3 on-stack compile ("out of virtual
     * registers in linear scan"), which left the method in tier-2 code at 0.1 GB/s; this one compiles at tiers 1-4,
     * on-stack and normal ({@code jmh/ab/mixer-compile-check.sh}).
     */
    static void rowTwo(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int h = n >> 1;
        if (h == 0) {
            rowRegs(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
            return;
        }
        if ((n & 1) != 0) {
            rowRegs(seg, base + 2L * h * stride, stride, 1, t0 + 2L * h, cellPieces, pieceBase, perHead, out);
        }
        final LongVector m32 = LongVector.broadcast(S, M32);
        final LongVector hi = LongVector.broadcast(S, HI);
        final LongVector c1 = LongVector.broadcast(S, 0x9E3779B9L).and(M32);
        final LongVector c2 = LongVector.broadcast(S, 0x85EBCA6BL).and(M32);
        final LongVector c3 = LongVector.broadcast(S, 0xC2B2AE35L).and(M32);
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
            LongVector x0, x1, x2, x3, z0, z1, z2, z3, r1, r2, u1, u2, p, q, y, lo;
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
            z0 = LongVector.fromMemorySegment(S, seg, at2, LE);
            p = z0.and(m32).mul(c1);
            y = z0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = z0.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            z0 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            z1 = LongVector.fromMemorySegment(S, seg, at2 + vb, LE);
            p = z1.and(m32).mul(c1);
            y = z1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = z1.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            z1 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            z2 = LongVector.fromMemorySegment(S, seg, at2 + 2 * vb, LE);
            p = z2.and(m32).mul(c1);
            y = z2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = z2.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            z2 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            z3 = LongVector.fromMemorySegment(S, seg, at2 + 3 * vb, LE);
            p = z3.and(m32).mul(c1);
            y = z3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
            p = y.lanewise(VectorOperators.LSHR, 32).mul(c2);
            lo = z3.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(m32);
            p = lo.mul(c3);
            z3 = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(hi).or(lo);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            q = x0.add(r1);
            u2 = z2.add(z3);
            u1 = z1.add(u2);
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
        n = 2 * h;
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
     * {@link #rowTwo} over four streams: tokens {@code i}, {@code i + h}, {@code i + 2h}, {@code i + 3h}
     * ({@code h = n/4}; the last {@code n - 4h} tokens, and a block of fewer than four, through {@link #rowTwo}) in
     * lockstep, with eight mixers per loop body: each iteration reads half a unit (two vectors) of each stream, and the
     * eight units' sums live in a thread's scratch (two loads and two stores per eight mixers). Half {@code v} of unit
     * {@code u}: {@code A += X}, {@code T += (((A & m) + h*W) << s) - K} with {@code X} the eight mixed vectors summed,
     * {@code W = 3X0 + 2X1 + X2} ({@code Xj} stream {@code j}'s two vectors: the extra steps its tokens stay in the
     * running sums in a single pass over {@code 4h} tokens), {@code K = ((X & m) << 1) + X'} ({@code X'} the second
     * vectors of the four streams), {@code m} all ones in the unit's second half (so the {@code A} term counts once per
     * unit, after the whole unit): exactly {@link #rowRegs} over {@code 4h} tokens. On Intel (Emerald Rapids) four
     * streams overlap more of the misses than two: mixed/standard 0.81-0.83 against 0.73-0.76 for {@link #rowTwo}
     * (medians, from memory at 4x LLC; docs/bench-cpu.md, "On Intel (Emerald Rapids): four streams").
     *
     * <p>Why half units and a scratch: a body of one whole unit of each of the four streams (sixteen mixers, sums in
     * registers) ran another few percent faster, but C1 gives up on its tier-3 on-stack compile ("out of virtual
     * registers"), the hazard {@link #rowTwo}'s note describes; eight mixers with the constants built before the loop
     * compile at tiers 1-4, on-stack and normal ({@code jmh/ab/mixer-compile-check.sh}).
     */
    static void rowFour(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int h = n >> 2;
        if (h == 0) {
            rowTwo(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
            return;
        }
        if (n > 4 * h) {
            rowTwo(seg, base + 4L * h * stride, stride, n - 4 * h, t0 + 4L * h, cellPieces,
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

    @Override
    public String describe() {
        return "mixed mode: Vector API " + S.vectorBitSize() + "-bit";
    }
}
