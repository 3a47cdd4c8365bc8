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

    /** What the loop is, for the backend's description. */
    String describe();
}
