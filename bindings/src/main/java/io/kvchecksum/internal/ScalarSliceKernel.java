package io.kvchecksum.internal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The fallback when the JVM lacks {@code jdk.incubator.vector}: the direct form with the weight stepped by 2 per
 * piece instead of recomputed.
 */
final class ScalarSliceKernel implements SliceKernel {
    private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Override
    public long sum(MemorySegment segment, long[] tokenOffsets, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        return direct(segment, tokenOffsets, extra, n, t0, cellPieces, pieceBase, regionPieces);
    }

    /** {@link SliceKernel#sum} in the direct form; also the vector kernel's tail for pieces short of a vector. */
    static long direct(MemorySegment segment, long[] tokenOffsets, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            long base = tokenOffsets[i] + extra;
            long w = 2 * ((t0 + i) * cellPieces + pieceBase) + 1;
            for (int p = 0; p < regionPieces; p++) {
                s += segment.get(PIECE, base + 8L * p) * w;
                w += 2;
            }
        }
        return s;
    }

    @Override
    public void sumRows(MemorySegment segment, long[] tokenOffsets, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] a, long[] t, long[] out) {
        int total = heads * regionPieces;
        java.util.Arrays.fill(a, 0, total, 0);
        java.util.Arrays.fill(t, 0, total, 0);
        for (int i = 0; i < n; i++) {
            long base = tokenOffsets[i];
            for (int q = 0; q < total; q++) {
                a[q] += segment.get(PIECE, base + 8L * q);
                t[q] += a[q];
            }
        }
        SliceKernel.finishRows(n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
    }

    @Override
    public String describe() {
        return "scalar";
    }
}
