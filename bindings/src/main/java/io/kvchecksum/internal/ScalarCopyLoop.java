package io.kvchecksum.internal;

import io.kvchecksum.Definition;

import java.lang.foreign.MemorySegment;

/**
 * The verifying copy one piece at a time: the fallback where the JVM lacks {@code jdk.incubator.vector}, and the mixed
 * mode's loop (each piece through {@link Definition#feistel3} as it passes).
 */
final class ScalarCopyLoop implements CopyLoop {
    private final boolean mixed;

    ScalarCopyLoop(boolean mixed) {
        this.mixed = mixed;
    }

    @Override
    public long copy(MemorySegment src, long srcBase, long srcStride, MemorySegment dst, long dstBase, long dstStride, int n,
            long t0, int cellPieces, int pieceBase, int regionPieces) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            long a = srcBase + i * srcStride;
            long b = dstBase + i * dstStride;
            long w = Definition.weight((t0 + i) * cellPieces + pieceBase);
            for (int p = 0; p < regionPieces; p++, a += 8, b += 8, w += 2) {
                long x = src.get(SliceKernel.PIECE, a);
                dst.set(SliceKernel.PIECE, b, x);
                sum += (mixed ? Definition.feistel3(x) : x) * w;
            }
        }
        return sum;
    }

    @Override
    public String describe() {
        return mixed ? "scalar mixed copy" : "scalar copy";
    }
}
