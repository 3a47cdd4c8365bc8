package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The multiply-free form on the Vector API. For one lane (a fixed piece {@code p} of the cell) over the block's
 * tokens {@code i = 0..n-1}, keep running sums {@code A += x_i; T += A}. Then {@code A = sum x_i} and
 * {@code n*A - T = sum i*x_i}, so the lane contributes {@code (2*(t0*P + p) + 1)*A + 2P*(n*A - T)}.
 *
 * <p>The piece {@code p} of lane {@code l} of chunk {@code c} is {@code base + c*L + l}; summing over chunks and lanes,
 * {@code sum (2p+1+2P(t0+n))*A - 2P*T} splits into terms that need only {@code G = sum_c A_c},
 * {@code sum_c c*A_c} (kept as a second running sum over chunks), the lane-weighted {@code sum_l l*G_l} and
 * {@code sum T}: every vector operation is an add, and the few multiplies happen on scalars once per call. (64-bit
 * lane multiplies have no AVX2 instruction and would dominate the loop.) Four vectors (128 bytes with AVX2) are
 * loaded per token so loads overlap.
 */
final class VectorSliceKernel implements SliceKernel {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /** How contiguous streams from memory are read: {@link KernelSpecies#CHOSEN}, or in tests another choice. */
    private final KernelSpecies.Streams streams;

    /** The kernel as the selector chose it for this JVM and CPU ({@link KernelSpecies#CHOSEN}). */
    VectorSliceKernel() {
        this(KernelSpecies.CHOSEN);
    }

    /** Whether side-by-side heads from memory may be read a row per pass ({@link #rowsAffine}); false only in tests. */
    private final boolean rows;

    /** The kernel with {@code streams}: tests run every choice the selector can make on any machine. */
    VectorSliceKernel(KernelSpecies.Streams streams) {
        this(streams, true);
    }

    /**
     * The kernel with {@code streams}, and with side-by-side heads read head by head instead of in row passes when
     * {@code rowPass} is false: the previous loops, kept so tests and the A/B measurement can run both forms.
     */
    VectorSliceKernel(KernelSpecies.Streams streams, boolean rowPass) {
        this(streams, rowPass, true);
    }

    /**
     * Whether K's and V's cells of eight vectors (bf16 head dim 128 at 256 bits) are read in cache in two loops
     * ({@link #eightAffine} each), every head's K before any V, rather than in one loop per head ({@link #headEight});
     * false only in tests and the A/B measurement.
     */
    private final boolean eightTwoLoops;

    /**
     * Whether a 2 KiB row of side-by-side heads from memory is read at 256 bits ({@link #rowPass256}): with
     * {@link KernelSpecies.Streams#NARROW} (AMD families 25 and 26), and wherever 256 bits is the preferred width
     * (AVX2), where the row's sixteen accumulators do not fit the sixteen vector registers and C2 spills some, yet the
     * one-pass row still read Llama-3-8B TP1 from memory at 1.04-1.26x the head-by-head loops (docs/bench-cpu.md, "The
     * 2 KiB row at AVX2 width").
     */
    private final boolean rows256;

    /**
     * The kernel with {@code streams} and {@code rowPass} as above, and with K's and V's eight-vector cells in cache read
     * in one loop ({@link #headEight}, the loop before issue 28's in-cache work) when {@code eightTwoLoops} is false.
     */
    VectorSliceKernel(KernelSpecies.Streams streams, boolean rowPass, boolean eightTwoLoops) {
        this.streams = java.util.Objects.requireNonNull(streams, "streams");
        this.rows = rowPass;
        this.rows256 = streams.narrow() || S.vectorBitSize() == 256;
        this.eightTwoLoops = eightTwoLoops;
    }

    @Override
    public long sum(MemorySegment seg, long[] off, long extra, int n, long t0, int cellPieces, int pieceBase, int regionPieces) {
        if (regionPieces == 8 * L) {
            return eightVectorCells(seg, off, extra, n, t0, cellPieces, pieceBase);
        }
        return chunkByChunk(seg, off, extra, n, t0, cellPieces, pieceBase, regionPieces);
    }

    /**
     * Cells of exactly eight vectors (bf16 head dim 128 on AVX2), each read front to back in one pass. With
     * {@code q = 8L*i + k} the position of piece {@code k} of token {@code i} in the concatenated cells, the weight
     * {@code 2((t0+i)P + base + k) + 1} is {@code 2(t0*P + base) + 1 + 2q + 2i(P - 8L)}; so the sum needs only
     * {@code sum x}, {@code sum q*x} and {@code sum_i i*X_i} ({@code X_i} a cell's total), all running sums.
     */
    private static long eightVectorCells(MemorySegment seg, long[] off, long extra, int n, long t0, int cellPieces,
            int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;   // running sums of x, by vector index mod 4
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;   // running sums of those
        LongVector r = zero;                                      // running sum over cells of all x so far
        final long bytes = 8L * L;
        for (int i = 0; i < n; i++) {
            long a = off[i] + extra;
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + bytes, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * bytes, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * bytes, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a + 4 * bytes, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + 5 * bytes, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 6 * bytes, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 7 * bytes, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            r = r.add(a0.add(a1)).add(a2.add(a3));
        }
        long perSet = 2L * n;                                  // vectors in each of the four sets
        LongVector g = a0.add(a1).add(a2.add(a3));
        long sumX = g.reduceLanes(VectorOperators.ADD);
        // sum over vectors v of v*x_v, with v = 4u + set: 4*(perSet*A_set - S_set) + set*A_set
        long vx = 4 * (perSet * sumX - s0.add(s1).add(s2.add(s3)).reduceLanes(VectorOperators.ADD))
                + a1.reduceLanes(VectorOperators.ADD) + 2 * a2.reduceLanes(VectorOperators.ADD)
                + 3 * a3.reduceLanes(VectorOperators.ADD);
        long laneWeighted = laneWeighted(g);
        long qx = L * vx + laneWeighted;                          // sum q*x
        long iX = n * sumX - r.reduceLanes(VectorOperators.ADD);  // sum_i i*X_i
        return (2 * (t0 * cellPieces + pieceBase) + 1) * sumX + 2 * qx + 2 * (cellPieces - 8L * L) * iX;
    }

    private static long chunkByChunk(MemorySegment seg, long[] off, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        final LongVector zero = LongVector.zero(S);
        LongVector run = zero;    // running sum of A_c over chunks so far; at the end, G = sum over chunks of A_c
        LongVector h = zero;      // sum over chunks of run: = sum_c A_c * (chunks - c)
        LongVector tt = zero;     // sum over chunks of T_c
        int chunks = 0;
        int c = 0;
        final long bytes = 8L * L;
        for (; c + 4 * L <= regionPieces; c += 4 * L) {
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
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
            long chunk = extra + 8L * c;
            for (int i = 0; i < n; i++) {
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, off[i] + chunk, LE));
                s0 = s0.add(a0);
            }
            run = run.add(a0);
            h = h.add(run);
            tt = tt.add(s0);
            chunks++;
        }
        long total = 0;
        if (chunks > 0) {
            LongVector g = run;
            long sumG = g.reduceLanes(VectorOperators.ADD);
            // sum_c c*A_c = chunks*G - H, lane by lane
            long sumCA = chunks * sumG - h.reduceLanes(VectorOperators.ADD);
            long laneWeighted = laneWeighted(g);
            long twoP = 2L * cellPieces;
            // sum_{c,l} A_{c,l} * (2*(base + c*L + l) + 1 + 2P(t0+n)) - 2P * sum T
            total = (2L * pieceBase + 1 + twoP * (t0 + n)) * sumG + 2L * L * sumCA + 2 * laneWeighted
                    - twoP * tt.reduceLanes(VectorOperators.ADD);
        }
        if (c < regionPieces) {
            total += ScalarSliceKernel.direct(seg, off, extra + 8L * c, n, t0, cellPieces, pieceBase + c, regionPieces - c);
        }
        return total;
    }

    /** {@code sum_l l * g_l}: the lane-weighted sum of the closing formulas, once per call. */
    private static long laneWeighted(LongVector g) {
        long sum = 0;
        for (int l = 1; l < L; l++) {
            sum += l * g.lane(l);
        }
        return sum;
    }

    /**
     * The pieces {@code from..total-1} of a stream past its last whole group, the first at byte {@code at}, one by
     * one: piece {@code q} has weight {@code c0 + 2q}.
     */
    private static long streamTail(MemorySegment seg, long at, long from, long total, long c0) {
        long sum = 0;
        long w = c0 + 2 * from;
        for (long q = from, o = at; q < total; q++, o += 8, w += 2) {
            sum += seg.get(PIECE, o) * w;
        }
        return sum;
    }

    /** {@code 2*l} in lane {@code l}: the lane's share of the piece weight {@code 2p}. */
    static final LongVector TWO_IOTA;

    static {
        long[] w = new long[L];
        for (int l = 0; l < L; l++) {
            w[l] = 2L * l;
        }
        TWO_IOTA = LongVector.fromArray(S, w, 0);
    }

    static final int SHIFT_8L = Integer.numberOfTrailingZeros(8 * L);
    static final int SHIFT_2L = Integer.numberOfTrailingZeros(2 * L);

    @Override
    public boolean affine(int regionPieces, long tokenStride, int cellPieces) {
        return regionPieces % (4 * L) == 0
                || (tokenStride == 8L * regionPieces && cellPieces == regionPieces);
    }

    @Override
    public long sumAffine(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        if (stride == 8L * regionPieces && cellPieces == regionPieces) {
            return stream(seg, base, (long) n * regionPieces, t0, cellPieces, pieceBase);
        }
        if (regionPieces == 8 * L) {
            return eightAffine(seg, base, stride, n, t0, cellPieces, pieceBase);
        }
        // Four vectors of every token per pass (one pass for bf16 head dim 128 at 512 bits): a nested loop over a
        // token's groups keeps C2 from holding the accumulators in registers (measured: 6x slower).
        long sum = 0;
        for (int g = 0; g < regionPieces; g += 4 * L) {
            sum += affineTokens(seg, base + 8L * g, stride, n, t0, cellPieces, pieceBase + g);
        }
        return sum;
    }

    /**
     * K and V of one head when each is exactly four vectors per token (bf16 head dim 128 at 512 bits): both loops
     * in one method and one closing step with one lane reduction, instead of two calls and two reductions; the
     * per-call cost is what limits this shape in cache (docs/bench-cpu.md).
     */
    @Override
    public long headAffine(MemorySegment kSeg, long kBase, long kStride, int kPieces, MemorySegment vSeg, long vBase,
            long vStride, int vPieces, int n, long t0) {
        if (kPieces == 4 * L && vPieces == 4 * L) {
            return headFour(kSeg, kBase, kStride, vSeg, vBase, vStride, n, t0);
        }
        if (kPieces == 8 * L && vPieces == 8 * L) {
            return headEight(kSeg, kBase, kStride, vSeg, vBase, vStride, n, t0);
        }
        return SliceKernel.super.headAffine(kSeg, kBase, kStride, kPieces, vSeg, vBase, vStride, vPieces, n, t0);
    }

    /**
     * Side-by-side heads from memory are read a row per pass where the whole row is one pass: four units of four
     * vectors (a row of 1 KiB at 512 bits, 512 bytes at 256), or eight with AVX-512's registers (Llama-3-8B TP1's
     * 2 KiB rows at 512 bits). Measured from memory (docs/bench-cpu.md), the one-pass row read beat the head-by-head
     * passes with the next block touched ahead; rows cut into several strided passes (Llama-3-8B at 256 bits: four
     * passes of 512 bytes) lost to them, and in cache the head-by-head loops were as fast or faster, so those stay.
     * With {@link KernelSpecies.Streams#NARROW} (AMD families 25 and 26), and at AVX2 width, a 2 KiB row is read
     * at 256 bits ({@link #rowPass256}; see {@link #rows256}).
     */
    @Override
    public boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        int cell = kPieces + vPieces;
        if (rows && rows256 && heads > 1 && kHeadStride == 8L * kPieces && narrowRow(heads, kPieces)
                && (vPieces == 0 || (vHeadStride == 8L * vPieces && narrowRow(heads, vPieces)))) {
            return true;
        }
        return rows && heads > 1 && kHeadStride == 8L * kPieces && onePass(heads, kPieces)
                && (vPieces == 0 || (vHeadStride == 8L * vPieces && onePass(heads, vPieces)))
                && cell % L == 0 && Integer.bitCount(cell / L) == 1;
    }

    /** Whether a row of {@code heads} cells of {@code pieces} is one pass of {@link #rowPass}. */
    private static boolean onePass(int heads, int pieces) {
        int units = heads * pieces / (4 * L);
        return pieces % (4 * L) == 0 && (units == 4 || (units == 8 && KernelSpecies.WIDE_REGISTER_FILE));
    }

    @Override
    public void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, boolean fromMemory,
            long[] out) {
        if (fromMemory && rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)) {
            int cell = kPieces + (vSeg == null ? 0 : vPieces);
            Arrays.fill(out, 0, heads, 0);
            if (rows256 && narrowRow(heads, kPieces) && (vSeg == null || narrowRow(heads, vPieces))) {
                rowPass256(kSeg, kBase, kStride, n, t0, cell, 0, kPieces / 32, out);
                if (vSeg != null) {
                    rowPass256(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / 32, out);
                }
                return;
            }
            rowPass(kSeg, kBase, kStride, n, t0, cell, 0, kPieces, heads, out);
            if (vSeg != null) {
                rowPass(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces, heads, out);
            }
            return;
        }
        if (vSeg == null && fromMemory && streams.narrow() && kStride == 8L * kPieces) {
            for (int h = 0; h < heads; h++) {
                out[h] = stream256(kSeg, kBase + h * kHeadStride, (long) n * kPieces, t0, kPieces);
            }
            return;
        }
        if (vSeg == null && fromMemory && KernelSpecies.STREAM_HALVES && kStride == 8L * kPieces) {
            long total = (long) n * kPieces;
            long groups = total / (4L * L);
            for (int h = 0; h < heads; h++) {
                out[h] = total % (4L * L) == 0 && (groups & 1) == 0
                        ? streamHalves(kSeg, kBase + h * kHeadStride, groups, t0, kPieces)
                        : stream(kSeg, kBase + h * kHeadStride, total, t0, kPieces, 0);
            }
            return;
        }
        if (vSeg != null && kPieces == 4 * L && vPieces == 4 * L) {
            for (int h = 0; h < heads; h++) {
                out[h] = headFour(kSeg, kBase + h * kHeadStride, kStride, vSeg, vBase + h * vHeadStride, vStride, n, t0);
            }
            return;
        }
        if (vSeg != null && kPieces == 8 * L && vPieces == 8 * L && !fromMemory && eightTwoLoops) {
            eightKThenV(kSeg, kBase, kStride, kHeadStride, vSeg, vBase, vStride, vHeadStride, heads, n, t0, out);
            return;
        }
        if (vSeg != null && kPieces == 8 * L && vPieces == 8 * L) {
            for (int h = 0; h < heads; h++) {
                // from memory, K's and V's strided rows read in one loop measured slower than one after the other
                out[h] = fromMemory
                        ? eightAffine(kSeg, kBase + h * kHeadStride, kStride, n, t0, 16 * L, 0)
                                + eightAffine(vSeg, vBase + h * vHeadStride, vStride, n, t0, 16 * L, 8 * L)
                        : headEight(kSeg, kBase + h * kHeadStride, kStride, vSeg, vBase + h * vHeadStride, vStride, n, t0);
            }
            return;
        }
        SliceKernel.super.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                heads, n, t0, fromMemory, out);
    }

    /**
     * In cache (issue 28, Llama-3-8B at -XX:UseAVX=2): K's and V's eight-vector cells each in their own loop, as from
     * memory, and every head's K before any V: one loop for both ({@link #headEight}) read 0.73 of the project's bound,
     * K and V head by head 0.80, all K then all V 0.81-0.82 (docs/bench-cpu.md, "What limits the ratios"); the loop
     * over heads inside one method ({@link #eightHeads}) rather than a call per head, 1.01-1.02 of that.
     */
    private static void eightKThenV(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int heads, int n, long t0, long[] out) {
        eightHeads(kSeg, kBase, kStride, kHeadStride, heads, n, t0, 0, out, false);
        eightHeads(vSeg, vBase, vStride, vHeadStride, heads, n, t0, 8 * L, out, true);
    }

    /**
     * {@link #eightAffine} for every head of a region ({@code heads} regions of eight vectors in cells of sixteen, head
     * {@code h}'s at {@code base + h*headStride}) in one call; each head's sum goes to {@code out[h]}, or is added to it
     * with {@code add}. The closing is {@link #closeEight}'s as {@link #closeTokens} of {@code a_k + b_k} plus
     * {@code 8L * sum b} (one lane reduction more, a smaller method for C2).
     */
    private static void eightHeads(MemorySegment seg, long base, long stride, long headStride, int heads, int n, long t0,
            int pieceBase, long[] out, boolean add) {
        final long vb = 8L * L;
        for (int h = 0; h < heads; h++) {
            final LongVector zero = LongVector.zero(S);
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            long head = base + h * headStride;
            for (int i = 0; i < n; i++) {
                long a = head + i * stride;
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
                b0 = b0.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
                b1 = b1.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
                b2 = b2.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
                b3 = b3.add(LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE));
                s0 = s0.add(a0).add(b0);
                s1 = s1.add(a1).add(b1);
                s2 = s2.add(a2).add(b2);
                s3 = s3.add(a3).add(b3);
            }
            long hi = b0.add(b1).add(b2.add(b3)).reduceLanes(VectorOperators.ADD) << SHIFT_8L;
            long sum = hi + closeTokens(a0.add(b0), a1.add(b1), a2.add(b2), a3.add(b3), s0.add(s1).add(s2.add(s3)), n, t0,
                    16 * L, pieceBase);
            out[h] = add ? out[h] + sum : sum;
        }
    }

    /**
     * The prepared plans' in-cache call: with AVX-512's registers, K's and V's four-vector cells (bf16 head dim 128,
     * Llama-3-8B) two tokens per iteration, every head's K before any V, and the loop over heads inside one method
     * ({@link #fourHeadsByTwo}), where {@link #headsAffine} reads one token per iteration, K then V head by head, a
     * call per head ({@link #headFour}): on Llama-3-8B TP1 at 1 MiB the kernel alone read 1.04 of that with two tokens
     * per iteration, 1.07 with all K first as well, 1.12-1.13 with the heads' loop inside (docs/bench-cpu.md, "What the
     * loops do, and what each was worth"). At 256 bits, K's and V's eight-vector cells four heads per iteration
     * ({@link #eightQuads}) where the heads are a multiple of four, else as {@code headsAffine} reads them in cache. A method of its own, not a branch of {@code headsAffine}: C2's inlining budget. An odd block (a
     * request's last) takes {@code headsAffine}.
     */
    @Override
    public void headsInCache(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, long[] out) {
        if (KernelSpecies.WIDE_REGISTER_FILE && vSeg != null && kPieces == 4 * L && vPieces == 4 * L && (n & 1) == 0) {
            fourHeadsByTwo(kSeg, kBase, kStride, kHeadStride, heads, n, t0, 8 * L, 0, out, false);
            fourHeadsByTwo(vSeg, vBase, vStride, vHeadStride, heads, n, t0, 8 * L, 4 * L, out, true);
            return;
        }
        if (eightTwoLoops && vSeg != null && kPieces == 8 * L && vPieces == 8 * L) {
            if (!KernelSpecies.WIDE_REGISTER_FILE && (heads & 3) == 0) {
                eightQuads(kSeg, kBase, kStride, kHeadStride, heads, n, t0, 16 * L, 0, out, false);
                eightQuads(vSeg, vBase, vStride, vHeadStride, heads, n, t0, 16 * L, 8 * L, out, true);
                return;
            }
            eightKThenV(kSeg, kBase, kStride, kHeadStride, vSeg, vBase, vStride, vHeadStride, heads, n, t0, out);
            return;
        }
        headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces, heads, n, t0, false,
                out);
    }

    /**
     * Eight-vector cells of four heads per loop iteration (at 256 bits, sixteen registers): where the cells of
     * consecutive heads are adjacent (Llama-3-8B's rows), a 1 KiB run of each token's row instead of one 256-byte cell,
     * so the loads follow the row; measured in cache at {@code -XX:UseAVX=2} the plain read of the cells head by head
     * was 0.80-0.86 of the read bound and in row order 0.87-0.93, and this loop read 1.00-1.06 of {@link #eightHeads}
     * (docs/bench-cpu.md, "What the loops do"). Three sums
     * per head fit four heads in the registers: for a token's vectors {@code x_0..x_7} the suffix sums
     * {@code p_k = x_k + ... + x_7} give the token's total {@code p_0} and {@code sum k*x_k = p_1 + ... + p_7};
     * {@code q} adds the latter, {@code r} the totals (a running sum), {@code t} the running {@code r}, so that
     * {@code sum_i i*X_i = n*r - t} and the closing is {@link #closeTokens}'s with {@code all = r}, {@code sets = q}.
     * {@code heads} a multiple of four; each head's sum goes to {@code out[h]}, or is added to it with {@code add}.
     */
    private static void eightQuads(MemorySegment seg, long base, long stride, long headStride, int heads, int n, long tok0,
            int cellPieces, int pieceBase, long[] out, boolean add) {
        final long vb = 8L * L;
        long c0 = 2 * (tok0 * cellPieces + pieceBase) + 1;
        long twoP = 2L * cellPieces;
        LongVector w = TWO_IOTA.add(c0 + twoP * n);
        for (int h = 0; h + 3 < heads; h += 4) {
            final LongVector zero = LongVector.zero(S);
            LongVector q0 = zero, r0 = zero, t0 = zero, q1 = zero, r1 = zero, t1 = zero;
            LongVector q2 = zero, r2 = zero, t2 = zero, q3 = zero, r3 = zero, t3 = zero;
            long h0 = base + h * headStride;
            for (int i = 0; i < n; i++) {
                long x0 = h0 + i * stride;
                long x1 = x0 + headStride;
                long x2 = x1 + headStride;
                long x3 = x2 + headStride;
                LongVector p0 = LongVector.fromMemorySegment(S, seg, x0 + 7 * vb, LE);
                LongVector u0 = p0;
                p0 = p0.add(LongVector.fromMemorySegment(S, seg, x0 + 6 * vb, LE));
                u0 = u0.add(p0);
                p0 = p0.add(LongVector.fromMemorySegment(S, seg, x0 + 5 * vb, LE));
                u0 = u0.add(p0);
                p0 = p0.add(LongVector.fromMemorySegment(S, seg, x0 + 4 * vb, LE));
                u0 = u0.add(p0);
                p0 = p0.add(LongVector.fromMemorySegment(S, seg, x0 + 3 * vb, LE));
                u0 = u0.add(p0);
                p0 = p0.add(LongVector.fromMemorySegment(S, seg, x0 + 2 * vb, LE));
                u0 = u0.add(p0);
                p0 = p0.add(LongVector.fromMemorySegment(S, seg, x0 + vb, LE));
                u0 = u0.add(p0);
                p0 = p0.add(LongVector.fromMemorySegment(S, seg, x0, LE));
                q0 = q0.add(u0);
                r0 = r0.add(p0);
                t0 = t0.add(r0);
                LongVector p1 = LongVector.fromMemorySegment(S, seg, x1 + 7 * vb, LE);
                LongVector u1 = p1;
                p1 = p1.add(LongVector.fromMemorySegment(S, seg, x1 + 6 * vb, LE));
                u1 = u1.add(p1);
                p1 = p1.add(LongVector.fromMemorySegment(S, seg, x1 + 5 * vb, LE));
                u1 = u1.add(p1);
                p1 = p1.add(LongVector.fromMemorySegment(S, seg, x1 + 4 * vb, LE));
                u1 = u1.add(p1);
                p1 = p1.add(LongVector.fromMemorySegment(S, seg, x1 + 3 * vb, LE));
                u1 = u1.add(p1);
                p1 = p1.add(LongVector.fromMemorySegment(S, seg, x1 + 2 * vb, LE));
                u1 = u1.add(p1);
                p1 = p1.add(LongVector.fromMemorySegment(S, seg, x1 + vb, LE));
                u1 = u1.add(p1);
                p1 = p1.add(LongVector.fromMemorySegment(S, seg, x1, LE));
                q1 = q1.add(u1);
                r1 = r1.add(p1);
                t1 = t1.add(r1);
                LongVector p2 = LongVector.fromMemorySegment(S, seg, x2 + 7 * vb, LE);
                LongVector u2 = p2;
                p2 = p2.add(LongVector.fromMemorySegment(S, seg, x2 + 6 * vb, LE));
                u2 = u2.add(p2);
                p2 = p2.add(LongVector.fromMemorySegment(S, seg, x2 + 5 * vb, LE));
                u2 = u2.add(p2);
                p2 = p2.add(LongVector.fromMemorySegment(S, seg, x2 + 4 * vb, LE));
                u2 = u2.add(p2);
                p2 = p2.add(LongVector.fromMemorySegment(S, seg, x2 + 3 * vb, LE));
                u2 = u2.add(p2);
                p2 = p2.add(LongVector.fromMemorySegment(S, seg, x2 + 2 * vb, LE));
                u2 = u2.add(p2);
                p2 = p2.add(LongVector.fromMemorySegment(S, seg, x2 + vb, LE));
                u2 = u2.add(p2);
                p2 = p2.add(LongVector.fromMemorySegment(S, seg, x2, LE));
                q2 = q2.add(u2);
                r2 = r2.add(p2);
                t2 = t2.add(r2);
                LongVector p3 = LongVector.fromMemorySegment(S, seg, x3 + 7 * vb, LE);
                LongVector u3 = p3;
                p3 = p3.add(LongVector.fromMemorySegment(S, seg, x3 + 6 * vb, LE));
                u3 = u3.add(p3);
                p3 = p3.add(LongVector.fromMemorySegment(S, seg, x3 + 5 * vb, LE));
                u3 = u3.add(p3);
                p3 = p3.add(LongVector.fromMemorySegment(S, seg, x3 + 4 * vb, LE));
                u3 = u3.add(p3);
                p3 = p3.add(LongVector.fromMemorySegment(S, seg, x3 + 3 * vb, LE));
                u3 = u3.add(p3);
                p3 = p3.add(LongVector.fromMemorySegment(S, seg, x3 + 2 * vb, LE));
                u3 = u3.add(p3);
                p3 = p3.add(LongVector.fromMemorySegment(S, seg, x3 + vb, LE));
                u3 = u3.add(p3);
                p3 = p3.add(LongVector.fromMemorySegment(S, seg, x3, LE));
                q3 = q3.add(u3);
                r3 = r3.add(p3);
                t3 = t3.add(r3);
            }
            long s0 = r0.mul(w).add(q0.lanewise(VectorOperators.LSHL, SHIFT_2L)).sub(t0.mul(twoP)).reduceLanes(VectorOperators.ADD);
            long s1 = r1.mul(w).add(q1.lanewise(VectorOperators.LSHL, SHIFT_2L)).sub(t1.mul(twoP)).reduceLanes(VectorOperators.ADD);
            long s2 = r2.mul(w).add(q2.lanewise(VectorOperators.LSHL, SHIFT_2L)).sub(t2.mul(twoP)).reduceLanes(VectorOperators.ADD);
            long s3 = r3.mul(w).add(q3.lanewise(VectorOperators.LSHL, SHIFT_2L)).sub(t3.mul(twoP)).reduceLanes(VectorOperators.ADD);
            out[h] = add ? out[h] + s0 : s0;
            out[h + 1] = add ? out[h + 1] + s1 : s1;
            out[h + 2] = add ? out[h + 2] + s2 : s2;
            out[h + 3] = add ? out[h + 3] + s3 : s3;
        }
    }

    /**
     * {@link #affineTokens} for every head of a region ({@code heads} regions of four vectors, head {@code h}'s at
     * {@code base + h*headStride}), two tokens per iteration for an even {@code n}: the same running sums, half the loop
     * iterations, and one call for all heads. Each head's sum goes to {@code out[h]}, or is added to it with
     * {@code add}. Four tokens per iteration crossed C2's inlining budget (the vector operations fell back to Java,
     * 2.5x slower); so did two at 256 bits with {@link #eightAffine}'s twelve accumulators.
     */
    private static void fourHeadsByTwo(MemorySegment seg, long base, long stride, long headStride, int heads, int n, long t0,
            int cellPieces, int pieceBase, long[] out, boolean add) {
        final long vb = 8L * L;
        for (int h = 0; h < heads; h++) {
            final LongVector zero = LongVector.zero(S);
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            long head = base + h * headStride;
            for (int i = 0; i < n; i += 2) {
                long a = head + i * stride;
                long b = a + stride;
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, b, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, b + vb, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, b + 2 * vb, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, b + 3 * vb, LE));
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
            }
            long sum = closeTokens(a0, a1, a2, a3, s0.add(s1).add(s2.add(s3)), n, t0, cellPieces, pieceBase);
            out[h] = add ? out[h] + sum : sum;
        }
    }

    /**
     * Two layers' MLA streams in lockstep with AVX-512's registers (sixteen accumulators), as the read bound reads two
     * parts: measured 1.02-1.04 of a {@link #stream} per layer on DeepSeek MLA bf16 at 1 MiB; at 256 bits (sixteen
     * registers) slower, so {@link #pairsStreams} is false there (docs/bench-cpu.md).
     */
    @Override
    public boolean pairsStreams() {
        return KernelSpecies.WIDE_REGISTER_FILE;
    }

    /**
     * {@link SliceKernel#streamPair}: both streams' {@link #stream} sums in one loop; the closing scales each stream's
     * vectors by its factor before one lane reduction (the closing is linear in them, so the sum is exact mod 2^64).
     */
    @Override
    public long streamPair(MemorySegment aSeg, long aBase, long fa, MemorySegment bSeg, long bBase, long fb, int n, long t0,
            int pieces) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
        LongVector u0 = zero, u1 = zero, u2 = zero, u3 = zero;
        final long vb = 8L * L;
        long total = (long) n * pieces;
        int groups = Math.toIntExact(total / (4L * L));
        for (int g = 0; g < groups; g++) {
            long a = aBase + g * 4 * vb;
            long b = bBase + g * 4 * vb;
            a0 = a0.add(LongVector.fromMemorySegment(S, aSeg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, aSeg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, aSeg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, aSeg, a + 3 * vb, LE));
            b0 = b0.add(LongVector.fromMemorySegment(S, bSeg, b, LE));
            b1 = b1.add(LongVector.fromMemorySegment(S, bSeg, b + vb, LE));
            b2 = b2.add(LongVector.fromMemorySegment(S, bSeg, b + 2 * vb, LE));
            b3 = b3.add(LongVector.fromMemorySegment(S, bSeg, b + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            u0 = u0.add(b0);
            u1 = u1.add(b1);
            u2 = u2.add(b2);
            u3 = u3.add(b3);
        }
        long c0 = 2 * t0 * pieces + 1;
        // close() of each stream, its vectors scaled by the stream's factor
        LongVector a23 = a2.add(a3);
        LongVector b23 = b2.add(b3);
        LongVector all = a0.add(a1).add(a23).mul(fa).add(b0.add(b1).add(b23).mul(fb));
        LongVector sets = a1.add(a23).add(a23).add(a3).mul(fa).add(b1.add(b23).add(b23).add(b3).mul(fb));
        LongVector tri = s0.add(s1).add(s2.add(s3)).mul(fa).add(u0.add(u1).add(u2.add(u3)).mul(fb));
        long sum = all.mul(TWO_IOTA.add(c0 + 8L * L * groups))
                .sub(tri.lanewise(VectorOperators.LSHL, SHIFT_8L))
                .add(sets.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        long done = groups * 4L * L;
        if (done < total) {   // MLA's rows are whole groups; the tails' calls (not inlined here) cost 0.3% of the pass
            sum += fa * streamTail(aSeg, aBase + 8 * done, done, total, c0)
                    + fb * streamTail(bSeg, bBase + 8 * done, done, total, c0);
        }
        return sum;
    }

    /**
     * One position's row of side-by-side heads from memory where the row pass does not take it (Llama-3-8B's 2 KiB rows
     * at 256 bits): head by head through {@link #headsAffine}, a row of eight heads was sixteen calls of a loop for
     * many tokens, each paying its start and closing (docs/bench-cpu.md, "Segmented caches"). A method of its own, not
     * a branch of {@code headsAffine}: grown by it, that method got slower at both widths (C2's inlining budget).
     */
    @Override
    public boolean oneRow(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        return heads > 1 && kPieces > 0 && kPieces % L == 0 && kHeadStride == 8L * kPieces
                && (vPieces == 0 || (vPieces % L == 0 && vHeadStride == 8L * vPieces))
                && !rowsAffine(heads, kPieces, kHeadStride, vPieces, vHeadStride);
    }

    @Override
    public void oneRowAffine(MemorySegment kSeg, long kBase, long kHeadStride, int kPieces, MemorySegment vSeg, long vBase,
            long vHeadStride, int vPieces, int heads, long t0, long[] out) {
        long cell = kPieces + (vSeg == null ? 0 : vPieces);
        oneRowPart(kSeg, kBase, kPieces, heads, 2 * t0 * cell + 1, out, false);
        if (vSeg != null) {
            oneRowPart(vSeg, vBase, vPieces, heads, 2 * (t0 * cell + kPieces) + 1, out, true);
        }
    }

    /**
     * Each head's cell of {@code pieces} in one walk of running sums, no multiply per vector: with piece
     * {@code p = jL + l} weighted {@code c + 2p}, a head's sum is {@code sum_l A_l (c + 2LJ + 2l) - 2L sum_l T_l} for
     * {@code J} vectors, {@code A} their sum and {@code T} the sum of their prefix sums (exact modulo 2^64). Into
     * {@code out[h]}, or added to it with {@code add}.
     */
    private static void oneRowPart(MemorySegment seg, long base, int pieces, int heads, long c, long[] out, boolean add) {
        int vectors = pieces / L;
        long cellBytes = 8L * pieces;
        LongVector weights = TWO_IOTA.add(c + 2L * L * vectors);
        for (int h = 0; h < heads; h++) {
            long at = base + h * cellBytes;
            LongVector a = LongVector.zero(S);
            LongVector t = LongVector.zero(S);
            for (int j = 0; j < vectors; j++) {
                a = a.add(LongVector.fromMemorySegment(S, seg, at + 8L * L * j, LE));
                t = t.add(a);
            }
            long sum = a.mul(weights).sub(t.lanewise(VectorOperators.LSHL, SHIFT_2L)).reduceLanes(VectorOperators.ADD);
            out[h] = add ? out[h] + sum : sum;
        }
    }

    /**
     * K and V of one head when each is exactly eight vectors per token (bf16 head dim 128 at 256 bits): one loop of
     * sixteen loads per token and one closing, instead of two {@link #eightAffine} calls. With {@code v = 4u + k} a
     * vector's place in the head's sixteen (K's eight, then V's) and {@code l} a lane, piece {@code p = vL + l} has
     * weight {@code c0 + 2iP + 2p}, {@code P = 16L}: so {@code x_k} (the sets {@code k} of all four quarters
     * {@code u}), {@code y} (quarters 1 and 3, the upper halves of K and V), {@code w} (V's eight) and the running sum
     * {@code s} of all of them give the sum with seven accumulators (AVX2 has sixteen registers):
     * {@code A(c0 + 2Pn + 2l) - 2P*s + 8L*y + 16L*w + 2L*(x1 + 2x2 + 3x3)}, {@code A = sum_k x_k}.
     */
    private static long headEight(MemorySegment kSeg, long kBase, long kStride, MemorySegment vSeg, long vBase, long vStride,
            int n, long t0) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        LongVector x0 = zero, x1 = zero, x2 = zero, x3 = zero, y = zero, w = zero, s = zero;
        for (int i = 0; i < n; i++) {
            long k = kBase + i * kStride;
            long v = vBase + i * vStride;
            // upper halves first, so that at most four loaded vectors and one partial sum are live at a time
            LongVector k4 = LongVector.fromMemorySegment(S, kSeg, k + 4 * vb, LE);
            LongVector k5 = LongVector.fromMemorySegment(S, kSeg, k + 5 * vb, LE);
            LongVector k6 = LongVector.fromMemorySegment(S, kSeg, k + 6 * vb, LE);
            LongVector k7 = LongVector.fromMemorySegment(S, kSeg, k + 7 * vb, LE);
            y = y.add(k4.add(k5).add(k6.add(k7)));
            x0 = x0.add(LongVector.fromMemorySegment(S, kSeg, k, LE)).add(k4);
            x1 = x1.add(LongVector.fromMemorySegment(S, kSeg, k + vb, LE)).add(k5);
            x2 = x2.add(LongVector.fromMemorySegment(S, kSeg, k + 2 * vb, LE)).add(k6);
            x3 = x3.add(LongVector.fromMemorySegment(S, kSeg, k + 3 * vb, LE)).add(k7);
            LongVector v4 = LongVector.fromMemorySegment(S, vSeg, v + 4 * vb, LE);
            LongVector v5 = LongVector.fromMemorySegment(S, vSeg, v + 5 * vb, LE);
            LongVector v6 = LongVector.fromMemorySegment(S, vSeg, v + 6 * vb, LE);
            LongVector v7 = LongVector.fromMemorySegment(S, vSeg, v + 7 * vb, LE);
            LongVector vHi = v4.add(v5).add(v6.add(v7));
            y = y.add(vHi);
            x0 = x0.add(v4);
            x1 = x1.add(v5);
            x2 = x2.add(v6);
            x3 = x3.add(v7);
            LongVector v0 = LongVector.fromMemorySegment(S, vSeg, v, LE);
            LongVector v1 = LongVector.fromMemorySegment(S, vSeg, v + vb, LE);
            LongVector v2 = LongVector.fromMemorySegment(S, vSeg, v + 2 * vb, LE);
            LongVector v3 = LongVector.fromMemorySegment(S, vSeg, v + 3 * vb, LE);
            w = w.add(v0.add(v1).add(v2.add(v3))).add(vHi);
            x0 = x0.add(v0);
            x1 = x1.add(v1);
            x2 = x2.add(v2);
            x3 = x3.add(v3);
            s = s.add(x0.add(x1).add(x2.add(x3)));
        }
        long cell = 16L * L;
        long twoP = 2 * cell;
        long c0 = 2 * t0 * cell + 1;
        LongVector sets = x1.add(x2).add(x2).add(x3).add(x3).add(x3);   // x1 + 2x2 + 3x3
        LongVector g = x0.add(x1).add(x2.add(x3)).mul(TWO_IOTA.add(c0 + twoP * n))
                .sub(s.mul(twoP))
                .add(y.lanewise(VectorOperators.LSHL, SHIFT_8L))
                .add(w.lanewise(VectorOperators.LSHL, SHIFT_8L + 1))
                .add(sets.lanewise(VectorOperators.LSHL, SHIFT_2L));
        return g.reduceLanes(VectorOperators.ADD);
    }

    private static long headFour(MemorySegment kSeg, long kBase, long kStride, MemorySegment vSeg, long vBase, long vStride,
            int n, long t0) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        for (int i = 0; i < n; i++) {
            long a = kBase + i * kStride;
            a0 = a0.add(LongVector.fromMemorySegment(S, kSeg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, kSeg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, kSeg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, kSeg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
        LongVector u0 = zero, u1 = zero, u2 = zero, u3 = zero;
        for (int i = 0; i < n; i++) {
            long a = vBase + i * vStride;
            b0 = b0.add(LongVector.fromMemorySegment(S, vSeg, a, LE));
            b1 = b1.add(LongVector.fromMemorySegment(S, vSeg, a + vb, LE));
            b2 = b2.add(LongVector.fromMemorySegment(S, vSeg, a + 2 * vb, LE));
            b3 = b3.add(LongVector.fromMemorySegment(S, vSeg, a + 3 * vb, LE));
            u0 = u0.add(b0);
            u1 = u1.add(b1);
            u2 = u2.add(b2);
            u3 = u3.add(b3);
        }
        return closeHead(a0, a1, a2, a3, b0, b1, b2, b3,
                s0.add(s1).add(s2.add(s3)).add(u0.add(u1).add(u2.add(u3))), n, t0);
    }

    /** The closing formula of {@link #headAffine} (also the mixed kernel's): K in {@code a}, V in {@code b}. */
    static long closeHead(LongVector a0, LongVector a1, LongVector a2, LongVector a3, LongVector b0, LongVector b1,
            LongVector b2, LongVector b3, LongVector tri, int n, long t0) {
        long cell = 8L * L;                 // pieces per cell: K and V, four vectors each
        long twoP = 2 * cell;
        long cK = 2 * t0 * cell + 1 + twoP * n;
        long cV = cK + 2L * 4 * L;          // V's pieces start after K's
        LongVector kAll = a0.add(a1).add(a2.add(a3));
        LongVector vAll = b0.add(b1).add(b2.add(b3));
        LongVector sets = a1.add(a2).add(a2).add(a3).add(a3).add(a3)
                .add(b1).add(b2).add(b2).add(b3).add(b3).add(b3);   // a1 + 2a2 + 3a3, likewise for V
        LongVector g = kAll.mul(TWO_IOTA.add(cK)).add(vAll.mul(TWO_IOTA.add(cV)))
                .add(sets.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .sub(tri.mul(twoP));
        return g.reduceLanes(VectorOperators.ADD);
    }

    /**
     * A region whose cells lie back to back and make up the whole cell (MLA: the latent row, no V): one contiguous
     * stream of {@code total} pieces whose piece {@code q} (counted from the block's first) has weight
     * {@code c0 + 2q}, {@code c0 = 2(t0*P + base) + 1}. Read front to back in groups of four vectors, with the running
     * sums {@code a_k += x; s_k += a_k} per vector set {@code k}; no token structure at all.
     */
    private static long stream(MemorySegment seg, long base, long total, long t0, int cellPieces, int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 8L * L;
        long groups = total / (4L * L);
        long end = base + groups * 4 * vb;
        for (long a = base; a < end; a += 4 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1;
        long sum = close(a0, a1, a2, a3, s0.add(s1).add(s2.add(s3)), c0, groups);
        // pieces past the last whole group: weight c0 + 2q, q counted from the block's first piece
        return sum + streamTail(seg, end, groups * 4L * L, total, c0);
    }

    /**
     * A region of exactly eight vectors per token at a constant token stride (bf16 head dim 128 at 256 bits, the AVX2
     * path): one pass, not two passes of four with a lane reduction each. Vector {@code v = 4u + k} of token {@code i}
     * goes to {@code a_k} ({@code u = 0}) or {@code b_k} ({@code u = 1}); once per token {@code s_k += a_k + b_k}. Then
     * with {@code A = sum_k (a_k + b_k)}, the weight {@code c0 + 2iP + 2L(4u + k) + 2l} sums to
     * {@code A(c0 + 2l + 2Pn) - 2P*S + 8L*B + 2L*(A_1 + 2A_2 + 3A_3)} ({@code B = sum_k b_k}, {@code A_k = a_k + b_k}):
     * per token eight loads and sixteen adds, the same two adds per load as {@link #affineTokens}.
     */
    private static long eightAffine(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces,
            int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 8L * L;
        for (int i = 0; i < n; i++) {
            long a = base + i * stride;
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            b0 = b0.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
            b1 = b1.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
            b2 = b2.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
            b3 = b3.add(LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE));
            s0 = s0.add(a0).add(b0);
            s1 = s1.add(a1).add(b1);
            s2 = s2.add(a2).add(b2);
            s3 = s3.add(a3).add(b3);
        }
        return closeEight(a0, a1, a2, a3, b0, b1, b2, b3, s0.add(s1).add(s2.add(s3)), n, t0, cellPieces, pieceBase);
    }

    /** The closing formula of {@link #eightAffine} (also the mixed kernel's): one lane reduction. */
    static long closeEight(LongVector a0, LongVector a1, LongVector a2, LongVector a3, LongVector b0, LongVector b1,
            LongVector b2, LongVector b3, LongVector s, int n, long t0, int cellPieces, int pieceBase) {
        LongVector x1 = a1.add(b1);
        LongVector x23 = a2.add(b2).add(a3.add(b3));
        LongVector x3 = a3.add(b3);
        LongVector bAll = b0.add(b1).add(b2.add(b3));
        LongVector all = a0.add(b0).add(x1).add(x23);
        LongVector sets = x1.add(x23).add(x23).add(x3);   // A_1 + 2A_2 + 3A_3
        long twoP = 2L * cellPieces;
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1;
        LongVector g = all.mul(TWO_IOTA.add(c0 + twoP * n))
                .sub(s.mul(twoP))
                .add(bAll.lanewise(VectorOperators.LSHL, SHIFT_8L))
                .add(sets.lanewise(VectorOperators.LSHL, SHIFT_2L));
        return g.reduceLanes(VectorOperators.ADD);
    }

    /**
     * A region of exactly four vectors per token at a constant token stride: the running sums
     * {@code a_k += x; s_k += a_k} once per token give {@code A_k = sum_i x} and {@code S_k = sum_i (n-i)*x} per lane,
     * so {@code sum_i i*x = n*A - S} needs no third sum. With piece {@code p = kL + l} of the region, the weight
     * {@code 2((t0+i)P + base + p) + 1} is {@code c0 + 2kL + 2l + 2P*i}; per token four loads and eight adds.
     */
    private static long affineTokens(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces,
            int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 8L * L;
        for (int i = 0; i < n; i++) {
            long a = base + i * stride;
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return closeTokens(a0, a1, a2, a3, s0.add(s1).add(s2.add(s3)), n, t0, cellPieces, pieceBase);
    }

    /** The closing formula of {@link #affineTokens} (also the mixed kernel's): one lane reduction. */
    static long closeTokens(LongVector a0, LongVector a1, LongVector a2, LongVector a3, LongVector s, int n, long t0,
            int cellPieces, int pieceBase) {
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1;
        long twoP = 2L * cellPieces;
        LongVector a23 = a2.add(a3);
        LongVector all = a0.add(a1).add(a23);
        LongVector sets = a1.add(a23).add(a23).add(a3);   // a1 + 2a2 + 3a3
        LongVector g = all.mul(TWO_IOTA.add(c0 + twoP * n))
                .add(sets.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .sub(s.mul(twoP));
        return g.reduceLanes(VectorOperators.ADD);
    }

    private static final VectorSpecies<Long> S256 = LongVector.SPECIES_256;
    private static final LongVector TWO_IOTA_256 = LongVector.fromArray(S256, new long[] {0, 2, 4, 6}, 0);

    /**
     * {@link #stream} of a whole cell ({@code pieceBase} 0) in 256-bit vectors, for {@link KernelSpecies.Streams#NARROW}:
     * the same loop and closing with four lanes, written out because a species must be a constant for the JIT.
     */
    private static long stream256(MemorySegment seg, long base, long total, long t0, int cellPieces) {
        final LongVector zero = LongVector.zero(S256);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 32;
        long groups = total / 16;
        long end = base + groups * 4 * vb;
        for (long a = base; a < end; a += 4 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S256, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S256, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S256, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S256, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        long c0 = 2 * t0 * cellPieces + 1;
        // close() with L = 4: A*(c0 + 2l + 32U) - 32*S + 8*(a1 + 2a2 + 3a3)
        LongVector a23 = a2.add(a3);
        LongVector sets = a1.add(a23).add(a23).add(a3);
        LongVector g = a0.add(a1).add(a23).mul(TWO_IOTA_256.add(c0 + 32 * groups))
                .sub(s0.add(s1).add(s2.add(s3)).lanewise(VectorOperators.LSHL, 5))
                .add(sets.lanewise(VectorOperators.LSHL, 3));
        long sum = g.reduceLanes(VectorOperators.ADD);
        return sum + streamTail(seg, end, groups * 16, total, c0);
    }

    /**
     * {@link #stream} of a whole cell's block from memory (DeepSeek MLA's latent rows, {@code groups} groups of four
     * vectors, an even number) with its two halves in lockstep (twelve sums; {@link KernelSpecies#STREAM_HALVES}): two streams a
     * block keep more of its lines in flight than one, 1.02-1.05x {@link #stream}'s median on Intel at 1 GiB
     * (docs/bench-cpu.md, "Two streams a block"), and as few operations a vector. {@code a += x + y; s += a; b += x},
     * and {@code s + (groups/2)*b} is the single pass's {@code s}: there the first half's groups stay in {@code a} for
     * {@code groups/2} more steps.
     */
    private static long streamHalves(MemorySegment seg, long base, long groups, long t0, int cellPieces) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
        final long vb = 8L * L;
        final long h = groups / 2;
        final long half = h * 4 * vb;
        final long end = base + half;
        for (long p = base; p < end; p += 4 * vb) {
            long r = p + half;
            LongVector x0 = LongVector.fromMemorySegment(S, seg, p, LE);
            LongVector y0 = LongVector.fromMemorySegment(S, seg, r, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, seg, p + vb, LE);
            LongVector y1 = LongVector.fromMemorySegment(S, seg, r + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE);
            LongVector y2 = LongVector.fromMemorySegment(S, seg, r + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE);
            LongVector y3 = LongVector.fromMemorySegment(S, seg, r + 3 * vb, LE);
            a0 = a0.add(x0.add(y0));
            a1 = a1.add(x1.add(y1));
            a2 = a2.add(x2.add(y2));
            a3 = a3.add(x3.add(y3));
            b0 = b0.add(x0);
            b1 = b1.add(x1);
            b2 = b2.add(x2);
            b3 = b3.add(x3);
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        long c0 = 2 * t0 * cellPieces + 1;
        LongVector all = s0.add(s1).add(s2.add(s3)).add(b0.add(b1).add(b2.add(b3)).mul(h));
        return close(a0, a1, a2, a3, all, c0, groups);
    }

    /**
     * The closing formula of {@link #stream}, on whole vectors and one lane reduction: with {@code A = sum_k a_k},
     * {@code S = sum_k s_k} and {@code U} groups of four vectors,
     * {@code sum = A*(c0 + 2l + 8LU) - 8L*S + 2L*(a1 + 2a2 + 3a3)}, lane {@code l} of each vector.
     */
    static long close(LongVector a0, LongVector a1, LongVector a2, LongVector a3, LongVector s, long c0, long groups) {
        LongVector a23 = a2.add(a3);
        LongVector all = a0.add(a1).add(a23);
        LongVector sets = a1.add(a23).add(a23).add(a3);   // a1 + 2a2 + 3a3
        LongVector g = all.mul(TWO_IOTA.add(c0 + 8L * L * groups))
                .sub(s.lanewise(VectorOperators.LSHL, SHIFT_8L))
                .add(sets.lanewise(VectorOperators.LSHL, SHIFT_2L));
        return g.reduceLanes(VectorOperators.ADD);
    }

    /**
     * One region of {@code heads} cells side by side (token-major rows: vLLM flash, FlashInfer NHD, SGLang) read a whole
     * row per token in one pass ({@link #rowsAffine}): the row is cut into units of four vectors (a head of bf16 head
     * dim 128 is one unit at 512 bits), four or eight units per row, so a Llama-3-8B row of 2 KiB is read front to
     * back instead of in eight strided passes of 256 bytes.
     *
     * <p>Each unit keeps two running sums per lane instead of three: with the unit's vectors {@code x_k}, {@code k <
     * 4}, of token {@code i}, {@code A += sum_k x_k} and {@code T += (A << s) - sum_k k*x_k} where {@code 2^s = P/L}
     * ({@code P} the cell's pieces). Then {@code T = 2^s * sum_i (n-i) X_i - sum_{i,k} k x_{i,k}}, so
     * {@code W = 2^s*n*A - T = sum_{i,k} (2^s*i + k) x_{i,k}}, and as piece {@code kL + l} of token {@code i} has weight
     * {@code c0 + 2l + 2L(2^s*i + k)}, {@code c0 = 2(t0*P + base) + 1}, the unit's sum is
     * {@code sum_l (c0 + 2l + 2L*2^s*n)*A_l - 2L*T_l}: exact mod 2^64 like every other form, and sixteen accumulators
     * for eight units leave AVX-512's 32 registers room for the loads. A unit's sum goes to its head's {@code out}.
     */
    private static void rowPass(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] out) {
        int perHead = regionPieces / (4 * L);
        int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        if (heads * perHead == 8 && n >= 2 && Integer.bitCount(n) == 1) {
            rowEightHalves(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, shift, out);
        } else if (heads * perHead == 8) {
            rowEight(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, 0, shift, out);
        } else {
            rowFour(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, 0, shift, out);
        }
    }

    /** Four units of {@link #rowPass}, the first unit {@code u}. */
    private static void rowFour(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, int u, int shift, long[] out) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero;
        for (int i = 0; i < n; i++) {
            long p = base + i * stride;
            LongVector x0, x1, x2, x3, r1, r2;
            x0 = LongVector.fromMemorySegment(S, seg, p, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p + 4 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + 5 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 6 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 7 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p + 8 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + 9 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 10 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 11 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a2 = a2.add(x0.add(r1));
            w2 = w2.add(a2.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p + 12 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + 13 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 14 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 15 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a3 = a3.add(x0.add(r1));
            w3 = w3.add(a3.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
        }
        // unit j's sum: sum_l (c0_j + 2l)*A + 2L*(2^s*n*A - T), c0_j = c0 + 8L*((u + j) % perHead)
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << SHIFT_2L);
        LongVector k = TWO_IOTA.add(c0);
        out[u / perHead] += a0.mul(k.add(8L * L * (u % perHead))).sub(w0.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 1) / perHead] += a1.mul(k.add(8L * L * ((u + 1) % perHead))).sub(w1.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 2) / perHead] += a2.mul(k.add(8L * L * ((u + 2) % perHead))).sub(w2.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 3) / perHead] += a3.mul(k.add(8L * L * ((u + 3) % perHead))).sub(w3.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
    }

    /**
     * Eight units of {@link #rowPass}, the first unit {@code u}, in one pass over the rows: AVX-512 only (sixteen
     * accumulators). Iteration {@code k} reads the half row {@code k & 1} of token {@code k >> 1} into the first four
     * units' sums and then swaps them with the last four's, so the loop body has sixteen loads, not thirty-two: C2
     * stops inlining the Vector API's methods past a node budget (NodeCountInliningCutoff), and a body of thirty-two
     * loads with its closing crossed it (measured: the vector operations fell back to Java, 50 times slower). Where
     * {@code n} is a power of two {@link #rowEightHalves} reads the block instead (jmh/ab/RowsAb's {@code eight} side
     * calls this loop for the A/B).
     */
    static void rowEight(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, int u, int shift, long[] out) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 2 * n; k++) {
            long p = base + (k >> 1) * stride + (k & 1) * 16 * vb;
            LongVector x0, x1, x2, x3, r1, r2, q;
            x0 = LongVector.fromMemorySegment(S, seg, p, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p + 4 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + 5 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 6 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 7 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p + 8 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + 9 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 10 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 11 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a2 = a2.add(x0.add(r1));
            w2 = w2.add(a2.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p + 12 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + 13 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 14 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 15 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a3 = a3.add(x0.add(r1));
            w3 = w3.add(a3.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            q = a0;
            a0 = a4;
            a4 = q;
            q = w0;
            w0 = w4;
            w4 = q;
            q = a1;
            a1 = a5;
            a5 = q;
            q = w1;
            w1 = w5;
            w5 = q;
            q = a2;
            a2 = a6;
            a6 = q;
            q = w2;
            w2 = w6;
            w6 = q;
            q = a3;
            a3 = a7;
            a7 = q;
            q = w3;
            w3 = w7;
            w7 = q;
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << SHIFT_2L);
        LongVector k = TWO_IOTA.add(c0);
        out[u / perHead] += a0.mul(k.add(8L * L * (u % perHead))).sub(w0.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 1) / perHead] += a1.mul(k.add(8L * L * ((u + 1) % perHead))).sub(w1.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 2) / perHead] += a2.mul(k.add(8L * L * ((u + 2) % perHead))).sub(w2.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 3) / perHead] += a3.mul(k.add(8L * L * ((u + 3) % perHead))).sub(w3.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 4) / perHead] += a4.mul(k.add(8L * L * ((u + 4) % perHead))).sub(w4.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 5) / perHead] += a5.mul(k.add(8L * L * ((u + 5) % perHead))).sub(w5.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 6) / perHead] += a6.mul(k.add(8L * L * ((u + 6) % perHead))).sub(w6.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[(u + 7) / perHead] += a7.mul(k.add(8L * L * ((u + 7) % perHead))).sub(w7.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@link #rowEight} with the block's two halves of tokens read in lockstep, for {@code n} a power of two (every
     * whole block): tokens {@code j} and {@code j + h} ({@code h = n/2}), a quarter row (two units, sixteen loads) of
     * each per iteration, the four groups of unit sums rotated after each. Two streams a block keep more of its lines
     * in flight from memory than one: the row pass read Llama-3-8B TP1 at 1.03-1.07x {@link #rowEight}'s median from
     * memory on Intel (1 GiB, 2 threads; docs/bench-cpu.md, "Two streams a block"). The units' sums are shared:
     * {@code a += X1 + X2} and {@code w += ((a + h*X1) << s) - K1 - K2}, where a single pass over the {@code n} tokens
     * keeps token {@code j}'s total in {@code a} for {@code h} steps more; so {@code a}, {@code w} and the closing are
     * {@link #rowEight}'s, exactly.
     */
    private static void rowEightHalves(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces,
            int pieceBase, int perHead, int shift, long[] out) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int h = n >> 1;
        final int lh = Integer.numberOfTrailingZeros(h);
        final long half = h * stride;
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 4 * h; k++) {
            long p = base + (k >> 2) * stride + (k & 3) * 8 * vb;
            long r = p + half;
            LongVector y0, y1, y2, y3, z0, z1, z2, z3, x, q;
            y0 = LongVector.fromMemorySegment(S, seg, p, LE);
            z0 = LongVector.fromMemorySegment(S, seg, r, LE);
            y1 = LongVector.fromMemorySegment(S, seg, p + vb, LE);
            z1 = LongVector.fromMemorySegment(S, seg, r + vb, LE);
            y2 = LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE);
            z2 = LongVector.fromMemorySegment(S, seg, r + 2 * vb, LE);
            y3 = LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE);
            z3 = LongVector.fromMemorySegment(S, seg, r + 3 * vb, LE);
            y2 = y2.add(y3);
            y1 = y1.add(y2);
            x = y0.add(y1);
            z2 = z2.add(z3);
            z1 = z1.add(z2);
            a0 = a0.add(x.add(z0.add(z1)));
            w0 = w0.add(a0.add(x.lanewise(VectorOperators.LSHL, lh)).lanewise(VectorOperators.LSHL, shift)
                    .sub(y1.add(y2).add(y3).add(z1.add(z2).add(z3))));
            y0 = LongVector.fromMemorySegment(S, seg, p + 4 * vb, LE);
            z0 = LongVector.fromMemorySegment(S, seg, r + 4 * vb, LE);
            y1 = LongVector.fromMemorySegment(S, seg, p + 5 * vb, LE);
            z1 = LongVector.fromMemorySegment(S, seg, r + 5 * vb, LE);
            y2 = LongVector.fromMemorySegment(S, seg, p + 6 * vb, LE);
            z2 = LongVector.fromMemorySegment(S, seg, r + 6 * vb, LE);
            y3 = LongVector.fromMemorySegment(S, seg, p + 7 * vb, LE);
            z3 = LongVector.fromMemorySegment(S, seg, r + 7 * vb, LE);
            y2 = y2.add(y3);
            y1 = y1.add(y2);
            x = y0.add(y1);
            z2 = z2.add(z3);
            z1 = z1.add(z2);
            a1 = a1.add(x.add(z0.add(z1)));
            w1 = w1.add(a1.add(x.lanewise(VectorOperators.LSHL, lh)).lanewise(VectorOperators.LSHL, shift)
                    .sub(y1.add(y2).add(y3).add(z1.add(z2).add(z3))));
            q = a0;
            a0 = a2;
            a2 = a4;
            a4 = a6;
            a6 = q;
            q = a1;
            a1 = a3;
            a3 = a5;
            a5 = a7;
            a7 = q;
            q = w0;
            w0 = w2;
            w2 = w4;
            w4 = w6;
            w6 = q;
            q = w1;
            w1 = w3;
            w3 = w5;
            w5 = w7;
            w7 = q;
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << SHIFT_2L);
        LongVector k = TWO_IOTA.add(c0);
        out[0] += a0.mul(k).sub(w0.lanewise(VectorOperators.LSHL, SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[1 / perHead] += a1.mul(k.add(8L * L * (1 % perHead))).sub(w1.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[2 / perHead] += a2.mul(k.add(8L * L * (2 % perHead))).sub(w2.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[3 / perHead] += a3.mul(k.add(8L * L * (3 % perHead))).sub(w3.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[4 / perHead] += a4.mul(k.add(8L * L * (4 % perHead))).sub(w4.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[5 / perHead] += a5.mul(k.add(8L * L * (5 % perHead))).sub(w5.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[6 / perHead] += a6.mul(k.add(8L * L * (6 % perHead))).sub(w6.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
        out[7 / perHead] += a7.mul(k.add(8L * L * (7 % perHead))).sub(w7.lanewise(VectorOperators.LSHL, SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
    }

    /** Whether a row of {@code heads} cells of {@code pieces} is the 2 KiB row {@link #rowPass256} reads. */
    private static boolean narrowRow(int heads, int pieces) {
        return pieces % 32 == 0 && heads * pieces == 256;
    }

    /**
     * {@link #rowPass} of a 2 KiB row in 256-bit vectors, for {@link KernelSpecies.Streams#NARROW} (AMD families 25 and 26,
     * where 512-bit loads read memory slower): eight units of eight vectors ({@code perHead} units per head), two
     * running sums each (sixteen accumulators: AVX-512's 32 registers hold them at 256 bits too; at AVX2 width
     * C2 spills some, and the pass still wins from memory: {@link #rows256}). A unit's vectors
     * {@code x_k}, {@code k < 8}: {@code A += sum_k x_k}, {@code T += (A << s) - sum_k k*x_k}, {@code 2^s = P/4}; the
     * unit's sum is {@code sum_l (c0 + 2l + 8*2^s*n)*A_l - 8*T_l}. The loop body reads a quarter row (two units,
     * sixteen loads, within C2's inlining budget) and rotates the four quarters' accumulators. A block's K rows are read
     * before its V rows: one loop over both, token by token (each head's K and V cells one unit of sixteen vectors,
     * eight closings a block instead of sixteen), read Llama-3-8B TP1 from memory at 0.94-1.12x this (medians), no
     * clear gain at either width (docs/bench-cpu.md, "The row pass from memory: where the time goes").
     */
    private static void rowPass256(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final LongVector zero = LongVector.zero(S256);
        final long vb = 32;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / 4);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 4 * n; k++) {
            long p = base + (k >> 2) * stride + (k & 3) * 16 * vb;
            LongVector x0, x1, x2, x3, x4, x5, x6, x7, r, kv, q;
            x0 = LongVector.fromMemorySegment(S256, seg, p, LE);
            x1 = LongVector.fromMemorySegment(S256, seg, p + vb, LE);
            x2 = LongVector.fromMemorySegment(S256, seg, p + 2 * vb, LE);
            x3 = LongVector.fromMemorySegment(S256, seg, p + 3 * vb, LE);
            x4 = LongVector.fromMemorySegment(S256, seg, p + 4 * vb, LE);
            x5 = LongVector.fromMemorySegment(S256, seg, p + 5 * vb, LE);
            x6 = LongVector.fromMemorySegment(S256, seg, p + 6 * vb, LE);
            x7 = LongVector.fromMemorySegment(S256, seg, p + 7 * vb, LE);
            r = x7;
            kv = r;
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
            a0 = a0.add(r.add(x0));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(kv));
            x0 = LongVector.fromMemorySegment(S256, seg, p + 8 * vb, LE);
            x1 = LongVector.fromMemorySegment(S256, seg, p + 9 * vb, LE);
            x2 = LongVector.fromMemorySegment(S256, seg, p + 10 * vb, LE);
            x3 = LongVector.fromMemorySegment(S256, seg, p + 11 * vb, LE);
            x4 = LongVector.fromMemorySegment(S256, seg, p + 12 * vb, LE);
            x5 = LongVector.fromMemorySegment(S256, seg, p + 13 * vb, LE);
            x6 = LongVector.fromMemorySegment(S256, seg, p + 14 * vb, LE);
            x7 = LongVector.fromMemorySegment(S256, seg, p + 15 * vb, LE);
            r = x7;
            kv = r;
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
            a1 = a1.add(r.add(x0));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(kv));
            q = a0;
            a0 = a2;
            a2 = a4;
            a4 = a6;
            a6 = q;
            q = a1;
            a1 = a3;
            a3 = a5;
            a5 = a7;
            a7 = q;
            q = w0;
            w0 = w2;
            w2 = w4;
            w4 = w6;
            w6 = q;
            q = w1;
            w1 = w3;
            w3 = w5;
            w5 = w7;
            w7 = q;
        }
        // unit j: piece base pieceBase + 32*(j % perHead), so c0 grows by 64 per unit within a head
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << 3);
        LongVector c = TWO_IOTA_256.add(c0);
        out[0 / perHead] += a0.mul(c.add(64L * (0 % perHead))).sub(w0.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
        out[1 / perHead] += a1.mul(c.add(64L * (1 % perHead))).sub(w1.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
        out[2 / perHead] += a2.mul(c.add(64L * (2 % perHead))).sub(w2.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
        out[3 / perHead] += a3.mul(c.add(64L * (3 % perHead))).sub(w3.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
        out[4 / perHead] += a4.mul(c.add(64L * (4 % perHead))).sub(w4.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
        out[5 / perHead] += a5.mul(c.add(64L * (5 % perHead))).sub(w5.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
        out[6 / perHead] += a6.mul(c.add(64L * (6 % perHead))).sub(w6.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
        out[7 / perHead] += a7.mul(c.add(64L * (7 % perHead))).sub(w7.lanewise(VectorOperators.LSHL, 3))
                .reduceLanes(VectorOperators.ADD);
    }

    @Override
    public void sumRows(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
            int heads, long[] a, long[] t, long[] out) {
        int total = heads * regionPieces;
        int vectorEnd = total - total % L;
        SliceKernel.clearRows(a, t, total);
        int i = 0;
        // Four rows per pass: the running sums stay in registers across them, so a[] and t[] are read and written
        // once per four tokens instead of once per token.
        for (; i + 4 <= n; i += 4) {
            long b0 = off[i], b1 = off[i + 1], b2 = off[i + 2], b3 = off[i + 3];
            int q = 0;
            for (; q < vectorEnd; q += L) {
                long o = 8L * q;
                LongVector sum = LongVector.fromArray(S, a, q);
                LongVector tri = LongVector.fromArray(S, t, q);
                sum = sum.add(LongVector.fromMemorySegment(S, seg, b0 + o, LE));
                tri = tri.add(sum);
                sum = sum.add(LongVector.fromMemorySegment(S, seg, b1 + o, LE));
                tri = tri.add(sum);
                sum = sum.add(LongVector.fromMemorySegment(S, seg, b2 + o, LE));
                tri = tri.add(sum);
                sum = sum.add(LongVector.fromMemorySegment(S, seg, b3 + o, LE));
                tri = tri.add(sum);
                sum.intoArray(a, q);
                tri.intoArray(t, q);
            }
            for (; q < total; q++) {
                long o = 8L * q;
                long sum = a[q];
                long tri = t[q];
                sum += seg.get(PIECE, b0 + o);
                tri += sum;
                sum += seg.get(PIECE, b1 + o);
                tri += sum;
                sum += seg.get(PIECE, b2 + o);
                tri += sum;
                sum += seg.get(PIECE, b3 + o);
                tri += sum;
                a[q] = sum;
                t[q] = tri;
            }
        }
        for (; i < n; i++) {
            long base = off[i];
            int q = 0;
            for (; q < vectorEnd; q += L) {
                LongVector sum = LongVector.fromArray(S, a, q).add(LongVector.fromMemorySegment(S, seg, base + 8L * q, LE));
                sum.intoArray(a, q);
                LongVector.fromArray(S, t, q).add(sum).intoArray(t, q);
            }
            for (; q < total; q++) {
                a[q] += seg.get(PIECE, base + 8L * q);
                t[q] += a[q];
            }
        }
        SliceKernel.finishRows(n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
    }

    @Override
    public String describe() {
        return "Vector API " + S.vectorBitSize() + "-bit, " + streams.why();
    }
}
