package io.kvchecksum.internal;

import java.lang.foreign.MemorySegment;

/**
 * The inner loop of the CPU backend's verifying copy: one region (K or V) of one slice over {@code n} tokens at
 * constant strides on both sides (a run of positions that stays within one source page and one destination page).
 * Each 8-byte piece is loaded from the source once, stored to the destination and added into the weighted sum.
 *
 * <p>Returns {@code sum_{i<n} sum_{p<regionPieces} v(x) * (2*((t0+i)*cellPieces + pieceBase + p) + 1)} where {@code x}
 * is the little-endian piece at {@code srcBase + i*srcStride + 8p} of {@code src}, which is also stored at
 * {@code dstBase + i*dstStride + 8p} of {@code dst}; {@code v} the identity or the mixed mode's mixer. Offsets have been
 * validated by the plan.
 */
interface CopyLoop {
    long copy(MemorySegment src, long srcBase, long srcStride, MemorySegment dst, long dstBase, long dstStride, int n,
            long t0, int cellPieces, int pieceBase, int regionPieces);

    /**
     * {@code sum_h factors[f0 + h] * copy(...)} over {@code heads} heads at constant head strides on both sides (head
     * {@code h}'s region at {@code srcBase + h*srcHeadStride} and {@code dstBase + h*dstHeadStride}): a loop may go token
     * by token across the heads (a token's row of all heads is one contiguous run in token-major layouts). This default
     * copies head by head.
     */
    default long copyRows(MemorySegment src, long srcBase, long srcStride, long srcHeadStride, MemorySegment dst,
            long dstBase, long dstStride, long dstHeadStride, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
            int heads, long[] factors, int f0) {
        long sum = 0;
        for (int h = 0; h < heads; h++) {
            sum += factors[f0 + h] * copy(src, srcBase + h * srcHeadStride, srcStride, dst, dstBase + h * dstHeadStride,
                    dstStride, n, t0, cellPieces, pieceBase, regionPieces);
        }
        return sum;
    }

    /** What the loop is, for the backend's description. */
    String describe();
}
