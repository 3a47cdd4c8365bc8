package io.kvchecksum.internal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The inner loop of the fast CPU backend: one region's part of one slice sum over the tokens of one block.
 *
 * <p>Returns {@code sum_{i<n} sum_{p<regionPieces} x * (2*((t0+i)*cellPieces + pieceBase + p) + 1)} where {@code x} is
 * the little-endian piece at {@code tokenOffsets[i] + extra + 8p} of {@code segment}. Offsets have been validated.
 */
interface SliceKernel {
    /** A piece as every kernel reads it: 8 bytes, little-endian, at any alignment. */
    ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    long sum(MemorySegment segment, long[] tokenOffsets, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces);

    /**
     * The same sums for all heads of a region whose heads lie side by side ({@code headStride == cellBytes}), reading
     * each token's row of {@code heads * regionPieces} pieces front to back: sequential memory for token-major layouts.
     * Adds head {@code h}'s sum to {@code out[h]}. {@code a} and {@code t} are scratch of at least
     * {@code heads * regionPieces} longs.
     */
    void sumRows(MemorySegment segment, long[] tokenOffsets, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
            int heads, long[] a, long[] t, long[] out);

    /** Zeroes the running sums of {@link #sumRows}'s first {@code total} pieces. */
    static void clearRows(long[] a, long[] t, int total) {
        Arrays.fill(a, 0, total, 0);
        Arrays.fill(t, 0, total, 0);
    }

    /** Adds each head's sum from the per-piece running sums {@code a} (sum of x) and {@code t} (sum of prefix sums). */
    static void finishRows(int n, long t0, int cellPieces, int pieceBase, int regionPieces, int heads, long[] a, long[] t,
            long[] out) {
        long twoP = 2L * cellPieces;
        long tokenTerm = twoP * (t0 + n);
        for (int h = 0; h < heads; h++) {
            long s = 0;
            long w = 2L * pieceBase + 1 + tokenTerm;
            for (int p = 0, q = h * regionPieces; p < regionPieces; p++, q++, w += 2) {
                // (2*(t0*P + base + p) + 1)*A + 2P*(n*A - T)
                s += a[q] * w - twoP * t[q];
            }
            out[h] += s;
        }
    }

    /**
     * Whether {@link #sumAffine} takes a region of {@code regionPieces} pieces per cell at token stride
     * {@code tokenStride} in a cell of {@code cellPieces}; otherwise the caller uses {@link #sum}.
     */
    boolean affine(int regionPieces, long tokenStride, int cellPieces);

    /**
     * {@link #sum} for tokens at a constant stride: token {@code i}'s region starts at byte
     * {@code base + i*tokenStride} (a block within one page). No table of offsets, so every address is an affine
     * function of the loop counters and the JIT checks the bounds once per loop instead of once per load.
     */
    long sumAffine(MemorySegment segment, long base, long tokenStride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces);

    /**
     * One head's slice sum over a block at constant strides: its K region ({@code kPieces} at {@code kBase}) and its
     * V region ({@code vPieces} at {@code vBase}), both {@link #affine}.
     */
    default long headAffine(MemorySegment kSeg, long kBase, long kStride, int kPieces, MemorySegment vSeg, long vBase,
            long vStride, int vPieces, int n, long t0) {
        int cell = kPieces + vPieces;
        return sumAffine(kSeg, kBase, kStride, n, t0, cell, 0, kPieces)
                + sumAffine(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces);
    }

    /**
     * Every head of a layer over one block at constant strides: head {@code h}'s K region at
     * {@code kBase + h*kHeadStride}, its V region (none when {@code vSeg} is null) at {@code vBase + h*vHeadStride};
     * its slice sum goes to {@code out[h]}. {@code fromMemory} when the request is far larger than the caches: a
     * kernel may read differently then (docs/bench-cpu.md); the sums are the same.
     */
    default void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, boolean fromMemory,
            long[] out) {
        for (int h = 0; h < heads; h++) {
            out[h] = vSeg == null
                    ? sumAffine(kSeg, kBase + h * kHeadStride, kStride, n, t0, kPieces, 0, kPieces)
                    : headAffine(kSeg, kBase + h * kHeadStride, kStride, kPieces, vSeg, vBase + h * vHeadStride, vStride,
                            vPieces, n, t0);
        }
    }

    /**
     * Whether {@link #oneRowAffine} has a loop of its own for one position's row of {@code heads} side-by-side heads
     * from memory ({@code vPieces} 0: no V region), rather than {@link #headsAffine}'s head-by-head calls.
     */
    default boolean oneRow(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        return false;
    }

    /**
     * {@link #headsAffine} from memory for a block of one position ({@code n} 1; no token stride, as one position has
     * none): the row of side-by-side heads in one call, not in a pass per head (Jlama's pages of one position). Called
     * only where {@link #oneRow} holds, so a kernel without a loop of its own for it has nothing to do here.
     */
    default void oneRowAffine(MemorySegment kSeg, long kBase, long kHeadStride, int kPieces, MemorySegment vSeg, long vBase,
            long vHeadStride, int vPieces, int heads, long t0, long[] out) {
        throw new UnsupportedOperationException(describe() + " has no one-row loop (oneRow is false)");
    }

    /**
     * {@link #headsAffine} for a block in cache ({@code fromMemory} false), as the backend's prepared plans call it
     * (issue 28): a kernel may take loops here that it keeps out of {@code headsAffine}, whose size is at C2's
     * inlining limit (docs/bench-cpu.md, "What the loops do, and what each was worth"); the sums are the same.
     */
    default void headsInCache(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces, MemorySegment vSeg,
            long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0, long[] out) {
        headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces, heads, n, t0, false,
                out);
    }

    /**
     * Whether {@link #streamPair} reads two streams in one loop rather than one after the other (then the backend's
     * prepared plans pair MLA's layers).
     */
    default boolean pairsStreams() {
        return false;
    }

    /**
     * Two whole-cell regions of {@code pieces} pieces a token, each of {@code n} tokens back to back (MLA's latent rows
     * of one block in two layers): {@code fa * sumAffine(a) + fb * sumAffine(b)} with {@code pieceBase} 0, the token
     * stride {@code 8 * pieces} and the cell the region, wrapping like every sum.
     */
    default long streamPair(MemorySegment aSeg, long aBase, long fa, MemorySegment bSeg, long bBase, long fb, int n, long t0,
            int pieces) {
        long stride = 8L * pieces;
        return fa * sumAffine(aSeg, aBase, stride, n, t0, pieces, 0, pieces)
                + fb * sumAffine(bSeg, bBase, stride, n, t0, pieces, 0, pieces);
    }

    /**
     * Whether {@link #headsAffine} with {@code fromMemory} reads {@code heads} side-by-side heads (head stride = cell
     * bytes) a whole row of heads per pass rather than head by head ({@code vPieces} 0: no V region); the caller
     * then does not touch the next block ahead, since the rows already reach the prefetchers front to back.
     */
    default boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
        return false;
    }

    /**
     * Whether side-by-side heads streamed from memory are read row by row ({@link #sumRows}) rather than head by head
     * at a constant stride: the scalar loops' row-wise form is the faster one from memory (docs/bench-cpu.md).
     */
    default boolean streamRows() {
        return false;
    }

    /** What the kernel is, for {@link io.kvchecksum.KvChecksum#description()}. */
    String describe();
}
