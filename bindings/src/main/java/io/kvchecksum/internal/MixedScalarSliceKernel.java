package io.kvchecksum.internal;

import io.kvchecksum.Definition;

import java.lang.foreign.MemorySegment;

/**
 * The mixed mode ({@link io.kvchecksum.ChecksumMode#MIXED}) when the JVM lacks {@code jdk.incubator.vector}:
 * {@link ScalarSliceKernel}'s loops with every piece passed through {@link Definition#feistel3} as it is read, and the
 * same closing formulas (they are linear in the piece values).
 */
final class MixedScalarSliceKernel implements SliceKernel {
    private static final ScalarSliceKernel STANDARD = new ScalarSliceKernel();

    @Override
    public long sum(MemorySegment segment, long[] tokenOffsets, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        return direct(segment, tokenOffsets, extra, n, t0, cellPieces, pieceBase, regionPieces);
    }

    /** {@link ScalarSliceKernel#direct}, mixed; also the mixed vector kernel's tail. */
    static long direct(MemorySegment segment, long[] tokenOffsets, long extra, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            long base = tokenOffsets[i] + extra;
            long w = 2 * ((t0 + i) * cellPieces + pieceBase) + 1;
            for (int p = 0; p < regionPieces; p++) {
                s += Definition.feistel3(segment.get(PIECE, base + 8L * p)) * w;
                w += 2;
            }
        }
        return s;
    }

    @Override
    public boolean affine(int regionPieces, long tokenStride, int cellPieces) {
        return STANDARD.affine(regionPieces, tokenStride, cellPieces);   // the same paths as the standard loops
    }

    /** {@link ScalarSliceKernel#sumAffine}, mixed. */
    @Override
    public long sumAffine(MemorySegment segment, long base, long tokenStride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        if (regionPieces % 4 != 0 || regionPieces <= ScalarSliceKernel.DIRECT_PIECES) {
            long s = 0;
            for (int i = 0; i < n; i++) {
                long b = base + i * tokenStride;
                long w = 2 * ((t0 + i) * cellPieces + pieceBase) + 1;
                for (int p = 0; p < regionPieces; p++) {
                    s += Definition.feistel3(segment.get(PIECE, b + 8L * p)) * w;
                    w += 2;
                }
            }
            return s;
        }
        long a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        long s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        long r = 0;
        int groups = regionPieces / 4;
        for (int i = 0; i < n; i++) {
            long row = base + i * tokenStride;
            for (int p = 0; p < regionPieces; p += 4) {
                long b = row + 8L * p;
                a0 += Definition.feistel3(segment.get(PIECE, b));
                a1 += Definition.feistel3(segment.get(PIECE, b + 8));
                a2 += Definition.feistel3(segment.get(PIECE, b + 16));
                a3 += Definition.feistel3(segment.get(PIECE, b + 24));
                s0 += a0;
                s1 += a1;
                s2 += a2;
                s3 += a3;
            }
            r += a0 + a1 + a2 + a3;
        }
        return ScalarSliceKernel.close(a0, a1, a2, a3, s0 + s1 + s2 + s3, r, n, groups, t0, cellPieces, pieceBase,
                regionPieces);
    }

    @Override
    public boolean streamRows() {
        return true;
    }

    @Override
    public void sumRows(MemorySegment segment, long[] tokenOffsets, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] a, long[] t, long[] out) {
        int total = heads * regionPieces;
        SliceKernel.clearRows(a, t, total);
        for (int i = 0; i < n; i++) {
            long base = tokenOffsets[i];
            for (int q = 0; q < total; q++) {
                a[q] += Definition.feistel3(segment.get(PIECE, base + 8L * q));
                t[q] += a[q];
            }
        }
        SliceKernel.finishRows(n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
    }

    @Override
    public String describe() {
        return "mixed mode: scalar";
    }
}
