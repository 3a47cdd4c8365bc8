package io.kvchecksum.internal;

import java.lang.foreign.MemorySegment;

/**
 * The scalar loops, the fallback when the JVM lacks {@code jdk.incubator.vector}: the direct form with the weight
 * stepped by 2 per piece instead of recomputed, and the running-sum form.
 *
 * <p>The build generates the mixed mode's scalar kernel, {@code MixedScalarSliceKernel}, from this file, with every
 * piece passed through {@link io.kvchecksum.Definition#feistel3} as it is read (bindings/pom.xml rewrites each read of
 * a piece); the closing formulas are linear in the piece values, so they serve both. Edit this file, and read pieces
 * only in that one form.
 */
final class ScalarSliceKernel implements SliceKernel {
    /** Regions up to this many pieces take the direct form in {@link #sumAffine}. */
    static final int DIRECT_PIECES = 32;

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
    public boolean affine(int regionPieces, long tokenStride, int cellPieces) {
        return true;
    }

    @Override
    public boolean streamRows() {
        return true;
    }

    /**
     * The running-sum form on scalars, four pieces at a time: per piece two adds and no multiply, with four
     * independent chains so the adds overlap. For lane {@code k} (pieces {@code p = 4u + k}) over the tokens,
     * {@code a += x; s += a} per group as in the vector kernel; the few multiplies happen once per call. Regions of up
     * to {@value #DIRECT_PIECES} pieces (bf16 head dim 128) use the direct form instead: with eight groups or fewer
     * per token the inner loop's overhead outweighs the saved multiply (measured in L1, one thread, 32-piece cells:
     * direct 10.7 GB/s, running sums 9.4; 72 and 144 pieces: running sums 16.0 and 22.9, direct 13.0 and 14.9).
     */
    @Override
    public long sumAffine(MemorySegment segment, long base, long tokenStride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        if (regionPieces % 4 != 0 || regionPieces <= DIRECT_PIECES) {
            long s = 0;
            for (int i = 0; i < n; i++) {
                long b = base + i * tokenStride;
                long w = 2 * ((t0 + i) * cellPieces + pieceBase) + 1;
                for (int p = 0; p < regionPieces; p++) {
                    s += segment.get(PIECE, b + 8L * p) * w;
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
                long b = row + 8L * p;   // from the int counter, so the bounds checks can leave the loop
                a0 += segment.get(PIECE, b);
                a1 += segment.get(PIECE, b + 8);
                a2 += segment.get(PIECE, b + 16);
                a3 += segment.get(PIECE, b + 24);
                s0 += a0;
                s1 += a1;
                s2 += a2;
                s3 += a3;
            }
            r += a0 + a1 + a2 + a3;
        }
        return close(a0, a1, a2, a3, s0 + s1 + s2 + s3, r, n, groups, t0, cellPieces, pieceBase, regionPieces);
    }

    /** The closing formula of {@link #sumAffine} (also the mixed scalar kernel's). */
    static long close(long a0, long a1, long a2, long a3, long s, long r, int n, int groups, long t0, int cellPieces,
            int pieceBase, int regionPieces) {
        // The vector kernel's closing formula with lanes of width 1 (see VectorSliceKernel#affineTokens).
        long u = (long) n * groups;
        long x = a0 + a1 + a2 + a3;
        long dp = 2L * (cellPieces - regionPieces);
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1;
        return x * (c0 + 8 * u + dp * n) - 8 * s + 2 * (a1 + 2 * a2 + 3 * a3) - dp * r;
    }

    @Override
    public void sumRows(MemorySegment segment, long[] tokenOffsets, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] a, long[] t, long[] out) {
        int total = heads * regionPieces;
        SliceKernel.clearRows(a, t, total);
        for (int i = 0; i < n; i++) {
            addRow(segment, tokenOffsets[i], total, a, t);
        }
        SliceKernel.finishRows(n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
    }

    /**
     * One token's row into {@link #sumRows}'s running sums. A method of its own for the JIT's sake (a one-shot CLI
     * {@code sum} runs this loop from a cold JVM, docs/bench-cpu.md): small and called once per row, it reaches the
     * compile threshold within the first few blocks, compiles quickly, and its compiled code then serves every later
     * call, also from a caller still interpreted. The loop inside {@link #sumRows} was first compiled on stack
     * (which only the call that triggered it enters), later calls re-entering it interpreted until the whole method
     * was compiled.
     */
    private static void addRow(MemorySegment segment, long base, int total, long[] a, long[] t) {
        for (int q = 0; q < total; q++) {
            a[q] += segment.get(PIECE, base + 8L * q);
            t[q] += a[q];
        }
    }

    @Override
    public String describe() {
        return "scalar";
    }
}
