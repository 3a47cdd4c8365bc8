package io.kvchecksum.internal;

import java.lang.foreign.MemorySegment;

/**
 * The inner loop of the fast CPU backend: one region's part of one slice sum over the tokens of one block.
 *
 * <p>Returns {@code sum_{i<n} sum_{p<regionPieces} x * (2*((t0+i)*cellPieces + pieceBase + p) + 1)} where {@code x} is
 * the little-endian piece at {@code tokenOffsets[i] + extra + 8p} of {@code segment}. Offsets have been validated.
 */
interface SliceKernel {

    long sum(MemorySegment segment, long[] tokenOffsets, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces);

    /** What the kernel is, for {@link io.kvchecksum.KvChecksum#description()}. */
    String describe();
}
