package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * {@link MixedSliceSums.Part} on the Vector API: one vector of piece positions at a time, its lanes' running sums
 * {@code A} and {@code T} in registers over the block's tokens, each loaded vector through the mixer first.
 *
 * <p>The mixer's multiplies are written as {@code LongVector} multiplies of two operands masked to their low 32 bits
 * (the constant too), the shape HotSpot compiles to {@code vpmuludq} on AVX2/AVX-512 (JDK-8341137) instead of an
 * emulated 64-bit lane multiply; see {@code docs/bench-cpu.md}, "Mixed mode cost", for what was checked.
 */
final class MixedVectorPart implements MixedSliceSums.Part {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    /** {@code 2l} in lane {@code l}: the weight step between neighbouring pieces. */
    private static final LongVector TWO_IOTA;

    static {
        long[] w = new long[L];
        for (int l = 0; l < L; l++) {
            w[l] = 2L * l;
        }
        TWO_IOTA = LongVector.fromArray(S, w, 0);
    }

    /** The mixer on every lane: exactly {@link io.kvchecksum.Definition#feistel3}. */
    static LongVector mix(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32))
                .lanewise(VectorOperators.LSHL, 32));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32));
        p = x.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32))
                .lanewise(VectorOperators.LSHL, 32));
    }

    @Override
    public long sum(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int pieces) {
        long twoP = 2L * cellPieces;
        long s = 0;
        int p = 0;
        for (; p + L <= pieces; p += L) {
            LongVector a = LongVector.zero(S);
            LongVector t = LongVector.zero(S);
            long byteOff = 8L * p;
            for (int i = 0; i < n; i++) {
                a = a.add(mix(LongVector.fromMemorySegment(S, seg, off[i] + byteOff, LE)));
                t = t.add(a);
            }
            // One lane reduction per vector of piece positions (a lane read at a variable index is a call).
            LongVector w = TWO_IOTA.add(2 * (t0 * cellPieces + pieceBase + p) + 1 + twoP * n);
            s += a.mul(w).sub(t.mul(twoP)).reduceLanes(VectorOperators.ADD);
        }
        if (p < pieces) {
            s += MixedSliceSums.scalar(seg, off, n, t0, cellPieces, pieceBase, p, pieces);
        }
        return s;
    }

    @Override
    public String describe() {
        return "mixed mode: Vector API " + S.vectorBitSize() + "-bit";
    }
}
