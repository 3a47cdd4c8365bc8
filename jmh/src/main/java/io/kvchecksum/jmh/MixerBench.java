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


import javax.crypto.Cipher;
import javax.crypto.spec.SecretKeySpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The mixed mode's arithmetic alone, in L1: one running-sum pair over 16 KiB read as vectors, with no mixer
 * ({@code plain}: the standard loop's work per vector), with the mixer as the CPU kernel writes it ({@code mixed}),
 * the same with two vectors and two running-sum pairs per iteration ({@code mixedTwo}: whether overlapping two
 * mixers' multiplies helps), in its literal form ({@code mixedLiteral}) and on scalars ({@code scalarMixed}). The time
 * per call over the number of vectors is the cost per piece vector that no loop structure removes;
 * {@code docs/bench-cpu.md}, "Mixed mode cost". The mixers here are copies of {@code MixedVectorSliceKernel.mix}
 * (package-private) and are checked against {@link Definition#feistel3} lane by lane in set-up.
 *
 * <p>Beside them, the in-cache limits of other mixers in the same loop ({@code docs/detection.md}, "Choosing the
 * mixer"; none is a mode of the library): {@code fmix64} (MurmurHash3's finalizer, two 64-bit lane multiplies:
 * {@code vpmullq} with AVX-512DQ, emulated with AVX2), {@code mulXs32} ({@code y = x*C; y ^ y >>> 32}, the cheapest
 * multiply-xorshift), {@code xsMulXs} ({@code x ^= x >>> 32; x *= C; x ^= x >>> 32}), each checked in set-up against
 * its scalar form; and {@code aesEcb}, AES-128 in ECB mode through {@code javax.crypto} over the same 16 KiB
 * (HotSpot's AES-NI/VAES intrinsics; the Vector API has no AES round and no carry-less multiply). Run once as is and
 * once with {@code -jvmArgsAppend} adding {@code -XX:UseAVX=2}.
 */
@State(Scope.Thread)
public class MixerBench extends Bench {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;
    static final long BYTES = 16 << 10;

    private static final long C_MUL = 0xff51afd7ed558ccdL;
    private static final long C_MUL2 = 0xc4ceb9fe1a85ec53L;

    private MemorySegment seg;
    private byte[] bytes;
    private byte[] encrypted;
    private Cipher aes;

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
        for (long o = 0; o < BYTES; o += 8L * L) {
            LongVector x = LongVector.fromMemorySegment(S, seg, o, LE);
            LongVector f = fmix64(x);
            LongVector m = mulXs32(x);
            LongVector xm = xsMulXs(x);
            for (int l = 0; l < L; l++) {
                long v = x.lane(l);
                check(f.lane(l) == fmix64(v) && m.lane(l) == mulXs32(v) && xm.lane(l) == xsMulXs(v),
                        "a candidate mixer's vector form differs from its scalar form at byte " + o);
            }
        }
        bytes = seg.toArray(ValueLayout.JAVA_BYTE);
        encrypted = new byte[bytes.length];
        try {
            aes = Cipher.getInstance("AES/ECB/NoPadding");
            aes.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(Arrays.copyOf(bytes, 16), "AES"));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES/ECB/NoPadding unavailable", e);
        }
        System.out.println("vector width " + S.vectorBitSize() + " bits; " + BYTES / (8L * L) + " vectors per call");
    }

    /** MurmurHash3's fmix64 on one piece, as golden/generator/detection.py defines it. */
    static long fmix64(long x) {
        x ^= x >>> 33;
        x *= C_MUL;
        x ^= x >>> 33;
        x *= C_MUL2;
        return x ^ x >>> 33;
    }

    /** {@link #fmix64(long)} on every lane: two full 64-bit lane multiplies. */
    static LongVector fmix64(LongVector x) {
        x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 33)).mul(C_MUL);
        x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 33)).mul(C_MUL2);
        return x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 33));
    }

    /** detection.py's {@code mul-xs32} on one piece. */
    static long mulXs32(long x) {
        long y = x * C_MUL;
        return y ^ y >>> 32;
    }

    /** {@link #mulXs32(long)} on every lane. */
    static LongVector mulXs32(LongVector x) {
        LongVector y = x.mul(C_MUL);
        return y.lanewise(VectorOperators.XOR, y.lanewise(VectorOperators.LSHR, 32));
    }

    /** detection.py's {@code xs-mul-xs} on one piece. */
    static long xsMulXs(long x) {
        x ^= x >>> 32;
        x *= C_MUL;
        return x ^ x >>> 32;
    }

    /** {@link #xsMulXs(long)} on every lane. */
    static LongVector xsMulXs(LongVector x) {
        x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 32)).mul(C_MUL);
        return x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 32));
    }

    /**
     * {@code MixedVectorSliceKernel.mix}: each half of the result carried in its own vector, no fold masked before its
     * xor, every multiply {@code vpmuludq}. A copy, checked in set-up: the kernel's is package-private in
     * {@code io.kvchecksum.internal}, which no other module may use, and the public API ({@link MixedModeBench}) times
     * the whole pass, not the mixer alone in L1. Its forms against each other: {@code jmh/ab/mixer-forms-ab.sh}.
     */
    static LongVector mix(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
        LongVector y = x.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
        p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
        LongVector lo = x.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
        p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
        return y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo);
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
    public long mixedTwo() {
        LongVector a = LongVector.zero(S);
        LongVector t = LongVector.zero(S);
        LongVector b = LongVector.zero(S);
        LongVector u = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 16L * L) {
            a = a.add(mix(LongVector.fromMemorySegment(S, seg, o, LE)));
            b = b.add(mix(LongVector.fromMemorySegment(S, seg, o + 8L * L, LE)));
            t = t.add(a);
            u = u.add(b);
        }
        return a.add(t).add(b).add(u).reduceLanes(VectorOperators.ADD);
    }

    @Benchmark
    public long fmix64() {
        LongVector a = LongVector.zero(S);
        LongVector t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(fmix64(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    @Benchmark
    public long mulXs32() {
        LongVector a = LongVector.zero(S);
        LongVector t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(mulXs32(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    @Benchmark
    public long xsMulXs() {
        LongVector a = LongVector.zero(S);
        LongVector t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(xsMulXs(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    /** The same 16 KiB through AES-128 (10 rounds per 16-byte block); the sums would come on top. */
    @Benchmark
    public int aesEcb() throws GeneralSecurityException {
        return aes.update(bytes, 0, bytes.length, encrypted, 0) + encrypted[bytes.length - 1];
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
