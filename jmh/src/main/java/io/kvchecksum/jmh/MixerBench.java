package io.kvchecksum.jmh;

import io.kvchecksum.Definition;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/**
 * The mixed mode's arithmetic alone, in L1: one running-sum pair over 16 KiB read as vectors, with no mixer
 * ({@code plain}: the standard loop's work per vector), with the mixer as the CPU kernel writes it ({@code mixed}),
 * in its literal form ({@code mixedLiteral}) and on scalars ({@code scalarMixed}). The time per call over the number of
 * vectors is the cost per piece vector that no loop structure removes; {@code docs/bench-cpu.md}, "Mixed mode cost".
 * The mixers here are copies of {@code MixedVectorSliceKernel.mix} (package-private) and are checked against
 * {@link Definition#feistel3} lane by lane in set-up. Run once as is and once with {@code -jvmArgsAppend} adding
 * {@code -XX:UseAVX=2}.
 */
@State(Scope.Thread)
public class MixerBench extends Bench {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;
    static final long BYTES = 16 << 10;

    private MemorySegment seg;

    @Setup(Level.Trial)
    public void setUp() {
        seg = closing(Arena.ofConfined()).allocate(BYTES, 64);
        SplittableRandom rnd = new SplittableRandom(KvFixture.SEED);
        for (long o = 0; o < BYTES; o += 8) {
            seg.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
        }
        for (long o = 0; o < BYTES; o += 8L * L) {
            LongVector x = LongVector.fromMemorySegment(S, seg, o, LE);
            LongVector m = mix(x);
            LongVector lit = mixLiteral(x);
            for (int l = 0; l < L; l++) {
                long want = Definition.feistel3(x.lane(l));
                check(m.lane(l) == want && lit.lane(l) == want,
                        "mixer copy differs from Definition.feistel3 at byte " + o);
            }
        }
        System.out.println("vector width " + S.vectorBitSize() + " bits; " + BYTES / (8L * L) + " vectors per call");
    }

    /**
     * {@code MixedVectorSliceKernel.mix}: the folds written so that AVX-512 can fuse the xors. A copy, checked in
     * set-up: the kernel's is package-private in {@code io.kvchecksum.internal}, which no other module may use, and the
     * public API ({@link MixedModeBench}) times the whole pass, not the mixer alone in L1.
     */
    static LongVector mix(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
        p = x.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
    }

    /** The mixer as {@link Definition#feistel3} reads, operation for operation. */
    static LongVector mixLiteral(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32))
                .lanewise(VectorOperators.LSHL, 32));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32));
        p = x.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32))
                .lanewise(VectorOperators.LSHL, 32));
    }

    // plain, mixed and mixedLiteral stay three loops: each must compile to its own loop with its mixer inlined (one
    // loop taking the mixer as a function leaves C2 a call site that can box the vectors, which is what is timed).
    @Benchmark
    public long plain() {
        LongVector a = LongVector.zero(S);
        LongVector t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(LongVector.fromMemorySegment(S, seg, o, LE));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    @Benchmark
    public long mixed() {
        LongVector a = LongVector.zero(S);
        LongVector t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(mix(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    @Benchmark
    public long mixedLiteral() {
        LongVector a = LongVector.zero(S);
        LongVector t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(mixLiteral(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    @Benchmark
    public long scalarMixed() {
        long a = 0;
        long t = 0;
        for (long o = 0; o < BYTES; o += 8) {
            a += Definition.feistel3(seg.get(ValueLayout.JAVA_LONG_UNALIGNED, o));
            t += a;
        }
        return a + t;
    }
}
