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
            long total = (long) n * regionPieces;
            long j0 = t0 * cellPieces + pieceBase;
            return narrow ? stream256(src, srcBase, dst, dstBase, total, j0)
                    : stream(src, srcBase, dst, dstBase, total, j0);
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
     * which AVX-512 has ({@code vpmullq}) and AVX2 has not (there {@link #rowUnits} runs instead: three multiplies per
     * unit of eight vectors, which C2 emulates at AVX2).
     */
    static final boolean ROWS = S.vectorBitSize() >= 512;

    /**
     * Which loop {@link #copyRows} runs: {@code AUTO}, the backend's: {@link #rowUnits} where the JVM lacks AVX-512's
     * 64-bit lane multiply, else {@link #multiplyRows}; {@code UNITS}: {@link #rowUnits} wherever the geometry allows
     * (for tests at every width); {@code MULTIPLY}: the loops before {@link #rowUnits} (tests and A/B measurements).
     */
    enum Rows { AUTO, UNITS, MULTIPLY }

    private final Rows rows;

    /**
     * Whether runs whose source rows lie back to back are copied as flat streams ({@link #multiplyFlat},
     * {@link #flatUnits}, {@link #flatSourceUnits}): for copies in cache, where the per-access bounds checks the flat
     * streams drop were what kept the loops below a plain copy; from memory the row loops were as fast or faster
     * (measured on Zen 4, docs/bench-cpu.md, "The verifying copy in cache: bounds checks").
     */
    private final boolean flat;

    /**
     * Whether rows into a destination that holds each head's tokens back to back (FlashInfer HND: a destination token
     * stride of one region) go head by head ({@link CopyLoop#copyRows}'s default over {@link #copy}: each head's
     * tokens read at the source's row stride and written as one stream) instead of token row by token row (each row's
     * heads stored a head stride apart). The CPU backend's in-cache choice on Intel ({@code CpuCopy}, measured on
     * Emerald Rapids: docs/bench-cpu.md, "On Intel (Emerald Rapids): the copy and its baseline").
     */
    private final boolean transposedByHeads;

    /** The loop of the CPU backend in cache: {@link Rows#AUTO}, flat streams. */
    VectorCopyLoop() {
        this(Rows.AUTO, true);
    }

    VectorCopyLoop(Rows rows) {
        this(rows, true);
    }

    /**
     * @param rows which rows loop runs
     * @param flat whether runs with back-to-back source rows run as flat streams (the in-cache loop) or as rows
     */
    VectorCopyLoop(Rows rows, boolean flat) {
        this(rows, flat, false);
    }

    /**
     * @param rows which rows loop runs
     * @param flat whether runs with back-to-back source rows run as flat streams (the in-cache loop) or as rows
     * @param transposedByHeads whether rows into a destination holding each head's tokens back to back go head by head
     */
    VectorCopyLoop(Rows rows, boolean flat, boolean transposedByHeads) {
        this(rows, flat, transposedByHeads, NARROW_STREAMS);
    }

    /**
     * @param rows which rows loop runs
     * @param flat whether runs with back-to-back source rows run as flat streams (the in-cache loop) or as rows
     * @param transposedByHeads whether rows into a destination holding each head's tokens back to back go head by head
     * @param narrow whether contiguous streams (MLA rows) go in 256-bit vectors ({@link #stream256})
     */
    VectorCopyLoop(Rows rows, boolean flat, boolean transposedByHeads, boolean narrow) {
        this(rows, flat, transposedByHeads, narrow, false);
    }

    /**
     * @param rows which rows loop runs
     * @param flat whether runs with back-to-back source rows run as flat streams (the in-cache loop) or as rows
     * @param transposedByHeads whether rows into a destination holding each head's tokens back to back go head by head
     * @param narrow whether contiguous streams (MLA rows) go in 256-bit vectors ({@link #stream256})
     * @param steppedQuads whether flat rows of one chunk of four vectors per head with stepped factors go through
     *         {@link #flatQuadsStepped} rather than {@link #multiplyFlat}
     */
    VectorCopyLoop(Rows rows, boolean flat, boolean transposedByHeads, boolean narrow, boolean steppedQuads) {
        this.steppedQuads = steppedQuads;
        this.rows = rows;
        this.flat = flat;
        this.transposedByHeads = transposedByHeads;
        this.narrow = narrow;
    }

    /** Whether contiguous streams (MLA rows) go in 256-bit vectors ({@link #stream256}) rather than {@link #stream}. */
    private final boolean narrow;

    /**
     * Whether flat rows (a page permutation) of one chunk of four vectors per head whose factors step by a constant go
     * through {@link #flatQuadsStepped} (no multiply) rather than {@link #multiplyFlat} (a 64-bit lane multiply per
     * vector): the CPU backend's in-cache choice on Intel at 512 bits, where {@code vpmullq} is three micro-ops.
     */
    private final boolean steppedQuads;

    @Override
    public long copyRows(MemorySegment src, long srcBase, long srcStride, long srcHeadStride, MemorySegment dst,
            long dstBase, long dstStride, long dstHeadStride, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
            int heads, long[] factors, int f0) {
        if (heads == 1) {   // MLA's rows, K-only caches: straight to the region's loop, two calls fewer per run
            return factors[f0] * copy(src, srcBase, srcStride, dst, dstBase, dstStride, n, t0, cellPieces, pieceBase,
                    regionPieces);
        }
        if (transposedByHeads && dstStride == 8L * regionPieces) {   // into HND: each head's tokens one stream
            return CopyLoop.super.copyRows(src, srcBase, srcStride, srcHeadStride, dst, dstBase, dstStride, dstHeadStride,
                    n, t0, cellPieces, pieceBase, regionPieces, heads, factors, f0);
        }
        if (rows == Rows.UNITS || (rows == Rows.AUTO && !ROWS)) {
            int per = regionPieces / (8 * L);
            if (regionPieces % (8 * L) == 0 && heads > 1) {
                return rowUnits(src, srcBase, srcStride, srcHeadStride, dst, dstBase, dstStride, dstHeadStride, n, t0,
                        cellPieces, pieceBase, per, heads, factors, f0);
            }
        }
        if (flat && ROWS && heads > 1 && regionPieces == 4 * L && srcHeadStride == 32L * L && srcStride == heads * srcHeadStride
                && dstHeadStride == srcHeadStride && dstStride == srcStride) {
            if (steppedQuads && stepped(factors, f0, heads)) {
                long f = factors[f0];
                return flatQuadsStepped(src, srcBase, dst, dstBase, n * srcStride, 2 * (t0 * cellPieces + pieceBase) + 1,
                        2L * cellPieces, f, factors[f0 + 1] - f, heads);
            }
            return multiplyFlat(src, srcBase, dst, dstBase, n, t0, cellPieces, pieceBase, heads, factors, f0);
        }
        if (!flat && ROWS && heads > 1 && regionPieces == 4 * L && srcHeadStride == 32L * L
                && srcStride == heads * srcHeadStride) {   // from memory, a flat source (vLLM flash): into HND or flash
            return multiplyFlatSource(src, srcBase, dst, dstBase, dstStride, dstHeadStride, n, t0, cellPieces, pieceBase,
                    heads, factors, f0);
        }
        return multiplyRows(src, srcBase, srcStride, srcHeadStride, dst, dstBase, dstStride, dstHeadStride, n, t0,
                cellPieces, pieceBase, regionPieces, heads, factors, f0);
    }

    /**
     * Side-by-side heads copied a token's row at a time (the checksum kernel's row pass, {@code VectorSliceKernel.rowPass256},
     * with stores): each head's region is cut into units of eight vectors ({@code per} per head); for each token, unit
     * by unit across the row, the unit is copied and its sums folded into the row's two running sums, so that each
     * token's row is read, and in token-major layouts written, front to back in one pass over the run, as a plain copy
     * reads it. Where the source holds the run's rows back to back (vLLM's flash layout: a page permutation, or into
     * FlashInfer HND) the rows are one flat stream of units ({@link #flatUnits}, {@link #flatSourceUnits}), read
     * without per-access bounds checks.
     *
     * <p>Piece {@code kL + l} of a unit at piece {@code 8Lq} of its head's region, in token {@code i}, has weight
     * {@code w_l + 2P*i + 16L*q + 2L*k}, {@code w_l = 2(t0*P + base) + 1 + 2l}. With the unit's vectors {@code x_k}
     * summed, {@code r = sum_k x_k}, and {@code kv = sum_k k*x_k}, the unit adds {@code f*(r*(w + 2P*i) + 2L*(kv + 8q*r))}
     * ({@code f} its head's factor) lane by lane: each unit folds {@code f*r} and {@code f*(kv + 8q*r)} into the row's
     * two sums {@code R}, {@code K}, and each row ends with {@code T += R*(w + 2P*i) + 2L*K}; one lane reduction closes
     * the run, exact mod 2^64. So every sum stays in a register whatever the row's heads: the loops before held two
     * sums per unit in a scratch array (AVX2's sixteen registers cannot hold a 2 KiB row's sixteen), whose round trip
     * per unit cost about 9 % in cache, where the three 64-bit multiplies per unit (emulated at AVX2) cost nothing
     * measurable (docs/bench-cpu.md, "What the layout change costs by itself").
     *
     * <p>Where a head's region is one unit and the heads' factors step by a constant (a layer's heads in order, the
     * definition's factors: Llama-3-8B's rows at 256 bits), the multiplies per unit go too ({@link #flatHeadsStepped},
     * {@link #flatSourceHeadsStepped}, {@link #rowsOfHeadsStepped}): into FlashInfer HND in cache 3-12 % faster at AVX2,
     * a page permutation and the rows from memory unchanged (docs/bench-cpu.md, "The verifying copy's last gaps").
     */
    private long rowUnits(MemorySegment src, long srcBase, long srcStride, long srcHeadStride, MemorySegment dst,
            long dstBase, long dstStride, long dstHeadStride, int n, long t0, int cellPieces, int pieceBase, int per,
            int heads, long[] factors, int f0) {
        // lane l's weight base, 2(t0*P + base) + 1 + 2l, as a scalar: a vector crossing a call that C2 does not
        // inline is boxed, and one returned from such a call kept the loop's sums boxed (a third slower, measured)
        long c = 2 * (t0 * cellPieces + pieceBase) + 1;
        long twoP = 2L * cellPieces;
        int units = heads * per;
        final long unitBytes = 64L * L;
        if (per == 1 && stepped(factors, f0, heads)) {   // Llama-3-8B at AVX2: no multiply per unit
            long f = factors[f0];
            long d = factors[f0 + 1] - f;
            if (flat && srcHeadStride == unitBytes && dstHeadStride == srcHeadStride && srcStride == heads * srcHeadStride
                    && dstStride == srcStride) {
                return flatHeadsStepped(src, srcBase, dst, dstBase, n * srcStride, c, twoP, f, d, heads);
            } else if (flat && srcHeadStride == unitBytes && srcStride == heads * srcHeadStride) {
                return flatSourceHeadsStepped(src, srcBase, dst, dstBase, dstStride, dstHeadStride, n * srcStride, c, twoP,
                        f, d, heads);
            }
            return rowsOfHeadsStepped(src, srcBase, srcStride, srcHeadStride, dst, dstBase, dstStride, dstHeadStride, n, c,
                    twoP, f, d, heads);
        }
        if (!flat) {
            return rowsOfUnits(src, srcBase, srcStride, srcHeadStride, dst, dstBase, dstStride, dstHeadStride, n, per,
                    units, c, twoP, factors, f0);
        } else if (srcHeadStride == per * unitBytes && dstHeadStride == srcHeadStride && srcStride == heads * srcHeadStride
                && dstStride == srcStride) {
            return flatUnits(src, srcBase, dst, dstBase, n * srcStride, per, units, c, twoP, factors, f0);
        } else if (srcHeadStride == per * unitBytes && srcStride == heads * srcHeadStride) {
            return flatSourceUnits(src, srcBase, dst, dstBase, dstStride, dstHeadStride, n * srcStride, per, units, c,
                    twoP, factors, f0);
        }
        return rowsOfUnits(src, srcBase, srcStride, srcHeadStride, dst, dstBase, dstStride, dstHeadStride, n, per, units,
                c, twoP, factors, f0);
    }

    /**
     * {@link #rowUnits} where both sides hold the run's rows back to back (the same token-major layout on both: a page
     * permutation): one flat stream of units, its offsets a constant step apart, so that C2 drops the per-access bounds
     * checks (it does for an offset linear in a loop counter with a constant scale, not for a stride in a variable).
     * {@return the run's weighted sum}
     */
    private static long flatUnits(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, long bytes,
            int per, int units, long c, long twoP, long[] factors, int f0) {
        LongVector w = TWO_IOTA.add(c);
        final long vb = 8L * L;
        final long unitBytes = 8 * vb;
        final LongVector zero = LongVector.zero(S);
        LongVector rs = zero;
        LongVector ks = zero;
        LongVector t = zero;
        int j = 0;
        int h = 0;
        int q = 0;
        for (long o = 0; o < bytes; o += unitBytes) {
            long sp = srcBase + o;
            long dp = dstBase + o;
            LongVector x0 = LongVector.fromMemorySegment(S, src, sp, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, sp + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, sp + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, sp + 3 * vb, LE);
            LongVector x4 = LongVector.fromMemorySegment(S, src, sp + 4 * vb, LE);
            LongVector x5 = LongVector.fromMemorySegment(S, src, sp + 5 * vb, LE);
            LongVector x6 = LongVector.fromMemorySegment(S, src, sp + 6 * vb, LE);
            LongVector x7 = LongVector.fromMemorySegment(S, src, sp + 7 * vb, LE);
            x0.intoMemorySegment(dst, dp, LE);
            x1.intoMemorySegment(dst, dp + vb, LE);
            x2.intoMemorySegment(dst, dp + 2 * vb, LE);
            x3.intoMemorySegment(dst, dp + 3 * vb, LE);
            x4.intoMemorySegment(dst, dp + 4 * vb, LE);
            x5.intoMemorySegment(dst, dp + 5 * vb, LE);
            x6.intoMemorySegment(dst, dp + 6 * vb, LE);
            x7.intoMemorySegment(dst, dp + 7 * vb, LE);
            LongVector r = x7;
            LongVector kv = r;
            r = r.add(x6);
            kv = kv.add(r);
            r = r.add(x5);
            kv = kv.add(r);
            r = r.add(x4);
            kv = kv.add(r);
            r = r.add(x3);
            kv = kv.add(r);
            r = r.add(x2);
            kv = kv.add(r);
            r = r.add(x1);
            kv = kv.add(r);
            r = r.add(x0);
            if (q != 0) {   // the unit's place in its head's region: 16L*q more weight a piece, 2L * 8q
                kv = kv.add(r.mul(8L * q));
            }
            long f = factors[f0 + h];
            rs = rs.add(r.mul(f));
            ks = ks.add(kv.mul(f));
            if (++j == units) {
                t = t.add(rs.mul(w)).add(ks.lanewise(VectorOperators.LSHL, SHIFT_2L));
                w = w.add(twoP);
                rs = zero;
                ks = zero;
                j = 0;
                h = 0;
                q = 0;
            } else if (++q == per) {
                q = 0;
                h++;
            }
        }
        return t.reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@link #rowUnits} where the source holds the run's rows back to back and the destination does not (FlashInfer
     * HND): the source read as one flat stream without bounds checks ({@link #flatUnits}), each unit stored at its
     * destination strides. {@return the run's weighted sum}
     */
    private static long flatSourceUnits(MemorySegment src, long srcBase, MemorySegment dst, long dstBase,
            long dstStride, long dstHeadStride, long bytes, int per, int units, long c, long twoP, long[] factors,
            int f0) {
        LongVector w = TWO_IOTA.add(c);
        final long vb = 8L * L;
        final long unitBytes = 8 * vb;
        final LongVector zero = LongVector.zero(S);
        LongVector rs = zero;
        LongVector ks = zero;
        LongVector t = zero;
        int j = 0;
        int h = 0;
        int q = 0;
        long dRow = dstBase;
        long dh = dstBase;
        long dp = dstBase;
        for (long o = 0; o < bytes; o += unitBytes) {
            long sp = srcBase + o;
            LongVector x0 = LongVector.fromMemorySegment(S, src, sp, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, sp + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, sp + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, sp + 3 * vb, LE);
            LongVector x4 = LongVector.fromMemorySegment(S, src, sp + 4 * vb, LE);
            LongVector x5 = LongVector.fromMemorySegment(S, src, sp + 5 * vb, LE);
            LongVector x6 = LongVector.fromMemorySegment(S, src, sp + 6 * vb, LE);
            LongVector x7 = LongVector.fromMemorySegment(S, src, sp + 7 * vb, LE);
            x0.intoMemorySegment(dst, dp, LE);
            x1.intoMemorySegment(dst, dp + vb, LE);
            x2.intoMemorySegment(dst, dp + 2 * vb, LE);
            x3.intoMemorySegment(dst, dp + 3 * vb, LE);
            x4.intoMemorySegment(dst, dp + 4 * vb, LE);
            x5.intoMemorySegment(dst, dp + 5 * vb, LE);
            x6.intoMemorySegment(dst, dp + 6 * vb, LE);
            x7.intoMemorySegment(dst, dp + 7 * vb, LE);
            LongVector r = x7;
            LongVector kv = r;
            r = r.add(x6);
            kv = kv.add(r);
            r = r.add(x5);
            kv = kv.add(r);
            r = r.add(x4);
            kv = kv.add(r);
            r = r.add(x3);
            kv = kv.add(r);
            r = r.add(x2);
            kv = kv.add(r);
            r = r.add(x1);
            kv = kv.add(r);
            r = r.add(x0);
            if (q != 0) {   // the unit's place in its head's region: 16L*q more weight a piece, 2L * 8q
                kv = kv.add(r.mul(8L * q));
            }
            long f = factors[f0 + h];
            rs = rs.add(r.mul(f));
            ks = ks.add(kv.mul(f));
            if (++j == units) {
                t = t.add(rs.mul(w)).add(ks.lanewise(VectorOperators.LSHL, SHIFT_2L));
                w = w.add(twoP);
                rs = zero;
                ks = zero;
                j = 0;
                h = 0;
                q = 0;
                dRow += dstStride;
                dh = dRow;
                dp = dRow;
            } else if (++q == per) {
                q = 0;
                h++;
                dh += dstHeadStride;
                dp = dh;
            } else {
                dp += unitBytes;
            }
        }
        return t.reduceLanes(VectorOperators.ADD);
    }

    /**
     * Whether {@code heads} factors from {@code f0} step by one constant, {@code factors[f0 + h] = factors[f0] + h*d}
     * mod 2^64: a layer's heads in order (the definition's {@code m = 2(layer*H + head) + 1}, {@code d = 2}) in any
     * layout that holds them at one head stride; any two heads. Then {@link #rowUnits} needs no multiply per unit
     * ({@link #flatHeadsStepped}).
     */
    static boolean stepped(long[] factors, int f0, int heads) {
        long d = factors[f0 + 1] - factors[f0];
        boolean stepped = true;
        for (int h = 2; h < heads; h++) {
            stepped &= factors[f0 + h] - factors[f0 + h - 1] == d;
        }
        return stepped;
    }

    /**
     * {@link #flatUnits} where each head's region is one unit (bf16 head dim 128 at 256 bits: Llama-3-8B's rows) and
     * the heads' factors step by a constant ({@link #stepped}: {@code f_h = f + h*d}): no multiply per unit. With the
     * units' plain and place-weighted sums {@code r_h}, {@code kv_h} (as in {@link #rowUnits}), their running sums over
     * the row {@code Pr}, {@code Pk}, and the running sums of those, {@code Sr = sum_h Pr_h = H*Pr - sum_h h*r_h} (and
     * {@code Sk}), the row's {@code sum_h f_h r_h = F*Pr - d*Sr} with {@code F = f + d*H}, likewise for {@code kv}; so
     * the row adds {@code F*(Pr*w + 2L*Pk) - d*(Sr*w + 2L*Sk)}: the two brackets are summed over the run in two vectors,
     * multiplied by {@code F} and {@code d} once, on scalars, at the end. A unit costs two adds more than its sums
     * instead of two 64-bit lane multiplies by its head's factor (emulated at AVX2, about seven instructions each) and
     * the factor's broadcast; with one unit per head the loop has no place-in-head counter either (measured: that
     * counter's branch alone cost about as much as the multiplies, docs/bench-cpu.md, "The verifying copy's last
     * gaps"). {@return the run's weighted sum}
     */
    private static long flatHeadsStepped(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, long bytes,
            long c, long twoP, long f, long d, int heads) {
        LongVector w = TWO_IOTA.add(c);
        final long vb = 8L * L;
        final long unitBytes = 8 * vb;
        final LongVector zero = LongVector.zero(S);
        LongVector pr = zero;
        LongVector pk = zero;
        LongVector sr = zero;
        LongVector sk = zero;
        LongVector t1 = zero;
        LongVector t2 = zero;
        int h = 0;
        for (long o = 0; o < bytes; o += unitBytes) {
            long sp = srcBase + o;
            long dp = dstBase + o;
            LongVector x0 = LongVector.fromMemorySegment(S, src, sp, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, sp + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, sp + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, sp + 3 * vb, LE);
            LongVector x4 = LongVector.fromMemorySegment(S, src, sp + 4 * vb, LE);
            LongVector x5 = LongVector.fromMemorySegment(S, src, sp + 5 * vb, LE);
            LongVector x6 = LongVector.fromMemorySegment(S, src, sp + 6 * vb, LE);
            LongVector x7 = LongVector.fromMemorySegment(S, src, sp + 7 * vb, LE);
            x0.intoMemorySegment(dst, dp, LE);
            x1.intoMemorySegment(dst, dp + vb, LE);
            x2.intoMemorySegment(dst, dp + 2 * vb, LE);
            x3.intoMemorySegment(dst, dp + 3 * vb, LE);
            x4.intoMemorySegment(dst, dp + 4 * vb, LE);
            x5.intoMemorySegment(dst, dp + 5 * vb, LE);
            x6.intoMemorySegment(dst, dp + 6 * vb, LE);
            x7.intoMemorySegment(dst, dp + 7 * vb, LE);
            LongVector r = x7;
            LongVector kv = r;
            r = r.add(x6);
            kv = kv.add(r);
            r = r.add(x5);
            kv = kv.add(r);
            r = r.add(x4);
            kv = kv.add(r);
            r = r.add(x3);
            kv = kv.add(r);
            r = r.add(x2);
            kv = kv.add(r);
            r = r.add(x1);
            kv = kv.add(r);
            r = r.add(x0);
            pr = pr.add(r);
            pk = pk.add(kv);
            sr = sr.add(pr);
            sk = sk.add(pk);
            if (++h == heads) {
                t1 = t1.add(pr.mul(w)).add(pk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                t2 = t2.add(sr.mul(w)).add(sk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                w = w.add(twoP);
                pr = zero;
                pk = zero;
                sr = zero;
                sk = zero;
                h = 0;
            }
        }
        return (f + d * heads) * t1.reduceLanes(VectorOperators.ADD) - d * t2.reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@link #flatHeadsStepped} with a head's region one chunk of four vectors (bf16 head dim 128 at 512 bits:
     * Llama-3-8B's rows there), both sides flat: per chunk {@code r = sum_k x_k}, {@code kv = sum_k k*x_k} (piece
     * {@code kL + l} of the head's region has weight {@code w_l + 2P*i + 2L*k}), folded into the row's running sums as
     * there; adds only, where {@link #multiplyFlat} multiplies every vector by its head's factor. {@return the run's
     * weighted sum}
     */
    private static long flatQuadsStepped(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, long bytes,
            long c, long twoP, long f, long d, int heads) {
        LongVector w = TWO_IOTA.add(c);
        final long vb = 8L * L;
        final long chunk = 4 * vb;
        final LongVector zero = LongVector.zero(S);
        LongVector pr = zero;
        LongVector pk = zero;
        LongVector sr = zero;
        LongVector sk = zero;
        LongVector t1 = zero;
        LongVector t2 = zero;
        int h = 0;
        for (long o = 0; o < bytes; o += chunk) {
            long sp = srcBase + o;
            long dp = dstBase + o;
            LongVector x0 = LongVector.fromMemorySegment(S, src, sp, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, sp + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, sp + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, sp + 3 * vb, LE);
            x0.intoMemorySegment(dst, dp, LE);
            x1.intoMemorySegment(dst, dp + vb, LE);
            x2.intoMemorySegment(dst, dp + 2 * vb, LE);
            x3.intoMemorySegment(dst, dp + 3 * vb, LE);
            LongVector r = x3;
            LongVector kv = r;
            r = r.add(x2);
            kv = kv.add(r);
            r = r.add(x1);
            kv = kv.add(r);
            r = r.add(x0);
            pr = pr.add(r);
            pk = pk.add(kv);
            sr = sr.add(pr);
            sk = sk.add(pk);
            if (++h == heads) {
                t1 = t1.add(pr.mul(w)).add(pk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                t2 = t2.add(sr.mul(w)).add(sk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                w = w.add(twoP);
                pr = zero;
                pk = zero;
                sr = zero;
                sk = zero;
                h = 0;
            }
        }
        return (f + d * heads) * t1.reduceLanes(VectorOperators.ADD) - d * t2.reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@link #flatSourceUnits} with one unit per head and stepped factors ({@link #flatHeadsStepped}): the source one
     * flat stream, each head's unit stored at its destination place. {@return the run's weighted sum}
     */
    private static long flatSourceHeadsStepped(MemorySegment src, long srcBase, MemorySegment dst, long dstBase,
            long dstStride, long dstHeadStride, long bytes, long c, long twoP, long f, long d, int heads) {
        LongVector w = TWO_IOTA.add(c);
        final long vb = 8L * L;
        final long unitBytes = 8 * vb;
        final LongVector zero = LongVector.zero(S);
        LongVector pr = zero;
        LongVector pk = zero;
        LongVector sr = zero;
        LongVector sk = zero;
        LongVector t1 = zero;
        LongVector t2 = zero;
        int h = 0;
        long dRow = dstBase;
        long dp = dstBase;
        for (long o = 0; o < bytes; o += unitBytes) {
            long sp = srcBase + o;
            LongVector x0 = LongVector.fromMemorySegment(S, src, sp, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, sp + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, sp + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, sp + 3 * vb, LE);
            LongVector x4 = LongVector.fromMemorySegment(S, src, sp + 4 * vb, LE);
            LongVector x5 = LongVector.fromMemorySegment(S, src, sp + 5 * vb, LE);
            LongVector x6 = LongVector.fromMemorySegment(S, src, sp + 6 * vb, LE);
            LongVector x7 = LongVector.fromMemorySegment(S, src, sp + 7 * vb, LE);
            x0.intoMemorySegment(dst, dp, LE);
            x1.intoMemorySegment(dst, dp + vb, LE);
            x2.intoMemorySegment(dst, dp + 2 * vb, LE);
            x3.intoMemorySegment(dst, dp + 3 * vb, LE);
            x4.intoMemorySegment(dst, dp + 4 * vb, LE);
            x5.intoMemorySegment(dst, dp + 5 * vb, LE);
            x6.intoMemorySegment(dst, dp + 6 * vb, LE);
            x7.intoMemorySegment(dst, dp + 7 * vb, LE);
            LongVector r = x7;
            LongVector kv = r;
            r = r.add(x6);
            kv = kv.add(r);
            r = r.add(x5);
            kv = kv.add(r);
            r = r.add(x4);
            kv = kv.add(r);
            r = r.add(x3);
            kv = kv.add(r);
            r = r.add(x2);
            kv = kv.add(r);
            r = r.add(x1);
            kv = kv.add(r);
            r = r.add(x0);
            pr = pr.add(r);
            pk = pk.add(kv);
            sr = sr.add(pr);
            sk = sk.add(pk);
            if (++h == heads) {
                t1 = t1.add(pr.mul(w)).add(pk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                t2 = t2.add(sr.mul(w)).add(sk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                w = w.add(twoP);
                pr = zero;
                pk = zero;
                sr = zero;
                sk = zero;
                h = 0;
                dRow += dstStride;
                dp = dRow;
            } else {
                dp += dstHeadStride;
            }
        }
        return (f + d * heads) * t1.reduceLanes(VectorOperators.ADD) - d * t2.reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@link #rowsOfUnits} with one unit per head and stepped factors ({@link #flatHeadsStepped}): one loop over the
     * run's heads, both sides at their strides. {@return the run's weighted sum}
     */
    private static long rowsOfHeadsStepped(MemorySegment src, long srcBase, long srcStride, long srcHeadStride,
            MemorySegment dst, long dstBase, long dstStride, long dstHeadStride, int n, long c, long twoP, long f, long d,
            int heads) {
        LongVector w = TWO_IOTA.add(c);
        final long vb = 8L * L;
        final long unitBytes = 8 * vb;
        final LongVector zero = LongVector.zero(S);
        LongVector pr = zero;
        LongVector pk = zero;
        LongVector sr = zero;
        LongVector sk = zero;
        LongVector t1 = zero;
        LongVector t2 = zero;
        int h = 0;
        long sRow = srcBase;
        long dRow = dstBase;
        long sp = srcBase;
        long dp = dstBase;
        for (int u = n * heads; u > 0; u--) {
            LongVector x0 = LongVector.fromMemorySegment(S, src, sp, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, sp + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, sp + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, sp + 3 * vb, LE);
            LongVector x4 = LongVector.fromMemorySegment(S, src, sp + 4 * vb, LE);
            LongVector x5 = LongVector.fromMemorySegment(S, src, sp + 5 * vb, LE);
            LongVector x6 = LongVector.fromMemorySegment(S, src, sp + 6 * vb, LE);
            LongVector x7 = LongVector.fromMemorySegment(S, src, sp + 7 * vb, LE);
            x0.intoMemorySegment(dst, dp, LE);
            x1.intoMemorySegment(dst, dp + vb, LE);
            x2.intoMemorySegment(dst, dp + 2 * vb, LE);
            x3.intoMemorySegment(dst, dp + 3 * vb, LE);
            x4.intoMemorySegment(dst, dp + 4 * vb, LE);
            x5.intoMemorySegment(dst, dp + 5 * vb, LE);
            x6.intoMemorySegment(dst, dp + 6 * vb, LE);
            x7.intoMemorySegment(dst, dp + 7 * vb, LE);
            LongVector r = x7;
            LongVector kv = r;
            r = r.add(x6);
            kv = kv.add(r);
            r = r.add(x5);
            kv = kv.add(r);
            r = r.add(x4);
            kv = kv.add(r);
            r = r.add(x3);
            kv = kv.add(r);
            r = r.add(x2);
            kv = kv.add(r);
            r = r.add(x1);
            kv = kv.add(r);
            r = r.add(x0);
            pr = pr.add(r);
            pk = pk.add(kv);
            sr = sr.add(pr);
            sk = sk.add(pk);
            if (++h == heads) {
                t1 = t1.add(pr.mul(w)).add(pk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                t2 = t2.add(sr.mul(w)).add(sk.lanewise(VectorOperators.LSHL, SHIFT_2L));
                w = w.add(twoP);
                pr = zero;
                pk = zero;
                sr = zero;
                sk = zero;
                h = 0;
                sRow += srcStride;
                dRow += dstStride;
                sp = sRow;
                dp = dRow;
            } else {
                sp += srcHeadStride;
                dp += dstHeadStride;
            }
        }
        return (f + d * heads) * t1.reduceLanes(VectorOperators.ADD) - d * t2.reduceLanes(VectorOperators.ADD);
    }

    /** {@link #rowUnits}'s pass over the rows where they are not back to back on both sides. {@return the run's weighted sum} */
    private static long rowsOfUnits(MemorySegment src, long srcBase, long srcStride, long srcHeadStride,
            MemorySegment dst, long dstBase, long dstStride, long dstHeadStride, int n, int per, int units, long c,
            long twoP, long[] factors, int f0) {
        LongVector w = TWO_IOTA.add(c);
        final long vb = 8L * L;
        final long unitBytes = 8 * vb;
        final LongVector zero = LongVector.zero(S);
        LongVector t = zero;
        for (int i = 0; i < n; i++) {
            long sRow = srcBase + i * srcStride;
            long dRow = dstBase + i * dstStride;
            LongVector rs = zero;
            LongVector ks = zero;
            for (int j = 0; j < units; j++) {
                int h = j / per;
                int q = j - h * per;
                long sp = sRow + h * srcHeadStride + q * unitBytes;
                long dp = dRow + h * dstHeadStride + q * unitBytes;
                LongVector x0 = LongVector.fromMemorySegment(S, src, sp, LE);
                LongVector x1 = LongVector.fromMemorySegment(S, src, sp + vb, LE);
                LongVector x2 = LongVector.fromMemorySegment(S, src, sp + 2 * vb, LE);
                LongVector x3 = LongVector.fromMemorySegment(S, src, sp + 3 * vb, LE);
                LongVector x4 = LongVector.fromMemorySegment(S, src, sp + 4 * vb, LE);
                LongVector x5 = LongVector.fromMemorySegment(S, src, sp + 5 * vb, LE);
                LongVector x6 = LongVector.fromMemorySegment(S, src, sp + 6 * vb, LE);
                LongVector x7 = LongVector.fromMemorySegment(S, src, sp + 7 * vb, LE);
                x0.intoMemorySegment(dst, dp, LE);
                x1.intoMemorySegment(dst, dp + vb, LE);
                x2.intoMemorySegment(dst, dp + 2 * vb, LE);
                x3.intoMemorySegment(dst, dp + 3 * vb, LE);
                x4.intoMemorySegment(dst, dp + 4 * vb, LE);
                x5.intoMemorySegment(dst, dp + 5 * vb, LE);
                x6.intoMemorySegment(dst, dp + 6 * vb, LE);
                x7.intoMemorySegment(dst, dp + 7 * vb, LE);
                LongVector r = x7;
                LongVector kv = r;
                r = r.add(x6);
                kv = kv.add(r);
                r = r.add(x5);
                kv = kv.add(r);
                r = r.add(x4);
                kv = kv.add(r);
                r = r.add(x3);
                kv = kv.add(r);
                r = r.add(x2);
                kv = kv.add(r);
                r = r.add(x1);
                kv = kv.add(r);
                r = r.add(x0);
                if (q != 0) {   // the unit's place in its head's region: 16L*q more weight a piece, 2L * 8q
                    kv = kv.add(r.mul(8L * q));
                }
                long f = factors[f0 + h];
                rs = rs.add(r.mul(f));
                ks = ks.add(kv.mul(f));
            }
            t = t.add(rs.mul(w)).add(ks.lanewise(VectorOperators.LSHL, SHIFT_2L));
            w = w.add(twoP);
        }
        return t.reduceLanes(VectorOperators.ADD);
    }

    /**
     * The rows loop with AVX-512 (kept there: on Zen 4 a few percent faster in cache than a multiply-free row pass
     * with its sums in registers, and as fast from memory). Heads token by token: each token's cells of all heads in
     * turn (in token-major layouts the token's row, read and written front to back: sequential streams, as a plain copy
     * has; one call per layer and run instead of one per head), each vector multiplied by its head's factor {@code m} as
     * it passes, so that one set of running sums serves every head: with {@code y = m*x}, {@code A += y} per vector position of the
     * region and {@code T += A} once per token, the weights being the same for every head's piece at one position.
     */
    private long multiplyRows(MemorySegment src, long srcBase, long srcStride, long srcHeadStride, MemorySegment dst,
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
     * {@link #multiplyRows} where both sides hold the run's rows back to back (a page permutation in vLLM's flash layout)
     * and each head's region is one chunk of four vectors (bf16 head dim 128 at 512 bits): one flat stream, its offsets a
     * constant step apart, so that C2 drops the per-access bounds checks (it does for an offset linear in a loop counter
     * with a constant scale, not for strides in variables). Only with {@link #flat} (in cache; from memory the rows
     * loop was as fast, docs/bench-cpu.md, "The verifying copy in cache: bounds checks"). Chosen in {@link #copyRows},
     * not inside {@link #multiplyRows}: with the branch there, its loops ran slower into FlashInfer HND.
     */
    private static long multiplyFlat(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, int n, long t0,
            int cellPieces, int pieceBase, int heads, long[] factors, int f0) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final long chunk = 4 * vb;
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        long bytes = (long) n * heads * chunk;
        int h = 0;
        for (long o = 0; o < bytes; o += chunk) {
            LongVector x0 = LongVector.fromMemorySegment(S, src, srcBase + o, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, srcBase + o + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, srcBase + o + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, srcBase + o + 3 * vb, LE);
            x0.intoMemorySegment(dst, dstBase + o, LE);
            x1.intoMemorySegment(dst, dstBase + o + vb, LE);
            x2.intoMemorySegment(dst, dstBase + o + 2 * vb, LE);
            x3.intoMemorySegment(dst, dstBase + o + 3 * vb, LE);
            long m = factors[f0 + h];
            a0 = a0.add(x0.mul(m));
            a1 = a1.add(x1.mul(m));
            a2 = a2.add(x2.mul(m));
            a3 = a3.add(x3.mul(m));
            if (++h == heads) {
                h = 0;
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
            }
        }
        // lane l of vector v: (2(t0*P + base + vL + l) + 1 + 2Pn)*A - 2P*T, as in multiplyRows with one chunk
        long twoP = 2L * cellPieces;
        LongVector lanes = TWO_IOTA.add(2 * (t0 * cellPieces + pieceBase) + 1 + twoP * n);
        return a0.mul(lanes).add(a1.mul(lanes.add(2L * L))).add(a2.mul(lanes.add(4L * L))).add(a3.mul(lanes.add(6L * L)))
                .sub(s0.add(s1).add(s2.add(s3)).mul(twoP)).reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@link #multiplyFlat}'s flat source for copies from memory ({@code flat} off), the destination at its own strides
     * (vLLM flash into FlashInfer HND, or into flash: a page permutation): the source one flat stream without bounds
     * checks, each head's chunk stored at its destination place. Measured against {@link #multiplyRows} from memory
     * (Llama-3-8B 256 MiB, one thread, 512 bits, same JVM): into HND 11-13 % faster, as fast as a plain move of the same
     * cells in the same order, a page permutation 9-11 % faster, at {@code MemorySegment.copy}'s speed (docs/bench-cpu.md,
     * "The verifying copy's last gaps"). In cache {@link #multiplyRows} stays for HND (there the move itself is the
     * limit) and {@link #multiplyFlat} for a permutation. {@return the run's weighted sum}
     */
    private static long multiplyFlatSource(MemorySegment src, long srcBase, MemorySegment dst, long dstBase,
            long dstStride, long dstHeadStride, int n, long t0, int cellPieces, int pieceBase, int heads, long[] factors,
            int f0) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final long chunk = 4 * vb;
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        long bytes = (long) n * heads * chunk;
        int h = 0;
        long dRow = dstBase;
        long dp = dstBase;
        for (long o = 0; o < bytes; o += chunk) {
            LongVector x0 = LongVector.fromMemorySegment(S, src, srcBase + o, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, src, srcBase + o + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, src, srcBase + o + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, src, srcBase + o + 3 * vb, LE);
            x0.intoMemorySegment(dst, dp, LE);
            x1.intoMemorySegment(dst, dp + vb, LE);
            x2.intoMemorySegment(dst, dp + 2 * vb, LE);
            x3.intoMemorySegment(dst, dp + 3 * vb, LE);
            long m = factors[f0 + h];
            a0 = a0.add(x0.mul(m));
            a1 = a1.add(x1.mul(m));
            a2 = a2.add(x2.mul(m));
            a3 = a3.add(x3.mul(m));
            if (++h == heads) {
                h = 0;
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
                dRow += dstStride;
                dp = dRow;
            } else {
                dp += dstHeadStride;
            }
        }
        long twoP = 2L * cellPieces;
        LongVector lanes = TWO_IOTA.add(2 * (t0 * cellPieces + pieceBase) + 1 + twoP * n);
        return a0.mul(lanes).add(a1.mul(lanes.add(2L * L))).add(a2.mul(lanes.add(4L * L))).add(a3.mul(lanes.add(6L * L)))
                .sub(s0.add(s1).add(s2.add(s3)).mul(twoP)).reduceLanes(VectorOperators.ADD);
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

    /**
     * Whether contiguous streams (MLA rows) are copied in 256-bit vectors ({@link #stream256}): where the checksum
     * kernels read MLA streams at 256 bits ({@link KernelSpecies.Streams#NARROW}, AMD families 25 and 26 with AVX-512). Measured
     * there (one thread, DeepSeek MLA bf16 pages of 18 KiB): from memory 19.2 ms per 256 MiB against 24.3 ms at 512 bits
     * ({@code MemorySegment.copy} 21.7 ms), and in cache no slower (1 MiB: 23.2 against 23.8 us). The CPU backend's
     * loops for memory take 256 bits on Intel as well ({@code CpuCopy.NARROW_FROM_MEMORY}; the loop's {@code narrow}).
     */
    static final boolean NARROW_STREAMS = KernelSpecies.CHOSEN.narrow();

    private static final VectorSpecies<Long> S256 = LongVector.SPECIES_256;
    private static final LongVector TWO_IOTA_256 = LongVector.fromArray(S256, new long[] {0, 2, 4, 6}, 0);

    /** {@link #stream} in 256-bit vectors (four lanes: {@code 2L = 8}, {@code 8L = 32}). */
    static long stream256(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, long total, long j0) {
        final LongVector zero = LongVector.zero(S256);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 32;
        long groups = total / 16;
        long span = groups * 4 * vb;
        for (long o = 0; o < span; o += 4 * vb) {
            LongVector x0 = LongVector.fromMemorySegment(S256, src, srcBase + o, LE);
            LongVector x1 = LongVector.fromMemorySegment(S256, src, srcBase + o + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S256, src, srcBase + o + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S256, src, srcBase + o + 3 * vb, LE);
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
        LongVector a = a0.add(a1).add(a2.add(a3));
        long c0 = 2 * j0 + 1;
        LongVector v = a1.add(a2.lanewise(VectorOperators.LSHL, 1)).add(a3.lanewise(VectorOperators.LSHL, 1)).add(a3);
        long sum = a.mul(TWO_IOTA_256.add(c0 + 32L * groups)).add(v.lanewise(VectorOperators.LSHL, 3))
                .sub(s0.add(s1).add(s2.add(s3)).lanewise(VectorOperators.LSHL, 5)).reduceLanes(VectorOperators.ADD);
        long w = c0 + 2 * groups * 16L;
        for (long q = groups * 16L, o = span; q < total; q++, o += 8, w += 2) {
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
        return "vector copy " + S.vectorBitSize() + "-bit" + (narrow ? ", MLA streams 256-bit" : "")
                + (rows == Rows.AUTO && !ROWS ? ", head rows in units" : "") + (flat ? "" : ", rows from memory")
                + (transposedByHeads ? ", head by head into HND" : "")
                + (steppedQuads ? ", stepped factors in flat rows" : "");
    }
}
