package io.kvchecksum.bench;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The read bound's Vector API loop; loaded only where the JVM has {@code jdk.incubator.vector}. Its unrolled loads have
 * the shape of the CPU kernel's ({@code VectorSliceKernel}, package-private in bindings): a copy on purpose, as a bound
 * reads without the kernel's code, and one loop per species, which must be a constant for the JIT.
 */
final class VectorRead {
    private static final VectorSpecies<Long> SPECIES = LongVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private VectorRead() {
    }

    /**
     * Eight loads per iteration into four independent vector sums, so the loop is limited by loads, not by the
     * latency of one add chain or by the loop's own instructions: the fastest plain read this JVM expresses.
     */
    static long readPart(MemorySegment s, long offset, long length) {
        int lanes = SPECIES.length();
        long vb = lanes * 8L;
        long step = 8 * vb;
        long end = offset + length / step * step;
        LongVector a0 = LongVector.zero(SPECIES);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (long o = offset; o < end; o += step) {
            a0 = a0.add(LongVector.fromMemorySegment(SPECIES, s, o, le));
            a1 = a1.add(LongVector.fromMemorySegment(SPECIES, s, o + vb, le));
            a2 = a2.add(LongVector.fromMemorySegment(SPECIES, s, o + 2 * vb, le));
            a3 = a3.add(LongVector.fromMemorySegment(SPECIES, s, o + 3 * vb, le));
            a0 = a0.add(LongVector.fromMemorySegment(SPECIES, s, o + 4 * vb, le));
            a1 = a1.add(LongVector.fromMemorySegment(SPECIES, s, o + 5 * vb, le));
            a2 = a2.add(LongVector.fromMemorySegment(SPECIES, s, o + 6 * vb, le));
            a3 = a3.add(LongVector.fromMemorySegment(SPECIES, s, o + 7 * vb, le));
        }
        long sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (long o = end; o + 8 <= offset + length; o += 8) {
            sum += s.get(WORD, o);
        }
        return sum;
    }

    private static final VectorSpecies<Long> S256 = LongVector.SPECIES_256;

    /** {@link #readPart} in 256-bit vectors: a separate loop, since a species must be a constant for the JIT. */
    static long readPart256(MemorySegment s, long offset, long length) {
        long vb = 32;
        long step = 8 * vb;
        long end = offset + length / step * step;
        LongVector a0 = LongVector.zero(S256);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (long o = offset; o < end; o += step) {
            a0 = a0.add(LongVector.fromMemorySegment(S256, s, o, le));
            a1 = a1.add(LongVector.fromMemorySegment(S256, s, o + vb, le));
            a2 = a2.add(LongVector.fromMemorySegment(S256, s, o + 2 * vb, le));
            a3 = a3.add(LongVector.fromMemorySegment(S256, s, o + 3 * vb, le));
            a0 = a0.add(LongVector.fromMemorySegment(S256, s, o + 4 * vb, le));
            a1 = a1.add(LongVector.fromMemorySegment(S256, s, o + 5 * vb, le));
            a2 = a2.add(LongVector.fromMemorySegment(S256, s, o + 6 * vb, le));
            a3 = a3.add(LongVector.fromMemorySegment(S256, s, o + 7 * vb, le));
        }
        long sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (long o = end; o + 8 <= offset + length; o += 8) {
            sum += s.get(WORD, o);
        }
        return sum;
    }
}
