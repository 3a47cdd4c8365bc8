package io.kvchecksum.bench;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** The read bound's Vector API loop; loaded only where the JVM has {@code jdk.incubator.vector}. */
final class VectorRead {
    private static final VectorSpecies<Long> SPECIES = LongVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private VectorRead() {
    }

    /**
     * Four independent vector accumulators, so the loop is limited by loads, not by the latency of one add chain:
     * the fastest plain read this JVM can express, which is what makes it a bound.
     */
    static long readPart(MemorySegment s, long offset, long length) {
        int lanes = SPECIES.length();
        long step = 4L * lanes * 8;
        long end = offset + length;
        long o = offset;
        LongVector a0 = LongVector.zero(SPECIES);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (; o + step <= end; o += step) {
            a0 = a0.add(LongVector.fromMemorySegment(SPECIES, s, o, le));
            a1 = a1.add(LongVector.fromMemorySegment(SPECIES, s, o + lanes * 8L, le));
            a2 = a2.add(LongVector.fromMemorySegment(SPECIES, s, o + lanes * 16L, le));
            a3 = a3.add(LongVector.fromMemorySegment(SPECIES, s, o + lanes * 24L, le));
        }
        long sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (; o + 8 <= end; o += 8) {
            sum += s.get(WORD, o);
        }
        return sum;
    }
}
