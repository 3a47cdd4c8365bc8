package io.kvchecksum.internal;

import io.kvchecksum.Definition;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * Exact forms of the mixed mode's mixer ({@link Definition#feistel3} on every lane) in L1, one JVM, called in turn (not
 * a benchmark; built and run by {@code jmh/ab/mixer-forms-ab.sh}): each form is one loop over 16 KiB with one
 * running-sum pair (as {@code MixerBench.mixed}), its mixer written in the loop's own method. Every form is checked lane
 * by lane against {@link Definition#feistel3} first (random pieces and edge values; exit on a difference). Prints best
 * and median GB/s per form and the ratio to the first form run (in the order of {@code names}; by default {@code prev}, the
 * mixer before 2026-12-07 21:00 UTC, {@link MixerPrevKernel#mix}; {@code shipped} is {@link MixedVectorSliceKernel#mix}).
 * docs/bench-cpu.md, "Mixed mode cost", "The mixer's multiplies at 512 bits".
 *
 * <p>Arguments: rounds (default 2001), passes per turn (default 20); system property {@code forms} (the forms to run,
 * by name).
 */
public final class MixerFormsAb {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;
    private static final long C1 = 0x9E3779B9L, C2 = 0x85EBCA6BL, C3 = 0xC2B2AE35L;
    static final long BYTES = 16 << 10;
    static volatile long blackhole;

    /** The shipped mixer. */
    static LongVector shipped(LongVector x) {
        return MixedVectorSliceKernel.mix(x);
    }

    /** The mixer before 2026-12-07 21:00 UTC (each fold masked before its xor; round 3's multiply {@code vpmullq}). */
    static LongVector prev(LongVector x) {
        return MixerPrevKernel.mix(x);
    }

    // r3rot, r3shl, r3split and r3early: the mixer before, with round 3's multiply operand written otherwise.

    /**
     * Round 3's multiply operand {@code x & M32} as {@code ror(x, 32) >>> 32}: a shift right by 32, which C2 still
     * recognizes as 32-bit inputs ({@code vpmuludq}) where the and, folded into a {@code vpternlog}, is not.
     */
    static LongVector r3rot(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, C1).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, C2).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
        p = x.lanewise(VectorOperators.ROR, 32).lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, C3).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
    }

    /** Round 3's operand as {@code (x << 32) >>> 32}. */
    static LongVector r3shl(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, C1).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, C2).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
        p = x.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, C3).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
    }

    /**
     * Round 3 on the halves: {@code lo = x & M32} feeds the multiply and the result ({@code lo | ((x ^ fold) & HI)}), so
     * the and has a bitwise use, is no logic-cone root and stays an and before the multiply.
     */
    static LongVector r3split(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, C1).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, C2).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
        LongVector lo = x.and(M32);
        p = lo.mul(LongVector.broadcast(S, C3).and(M32));
        return lo.or(x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).lanewise(VectorOperators.XOR, p).and(HI));
    }

    /**
     * Round 3's operand from round 2's quantities: the low half of {@code x ^ p ^ (p >>> 32)} is round 2's result's
     * low half, computed beside it.
     */
    static LongVector r3early(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, C1).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, C2).and(M32));
        LongVector ph = p.lanewise(VectorOperators.LSHR, 32);
        LongVector q = x.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, ph).and(M32);
        x = x.and(HI).or(q);
        p = q.mul(LongVector.broadcast(S, C3).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
    }

    /** The shipped mixer with its closing select written {@code z ^ ((z ^ w) & HI)} (three inputs, one logic op). */
    static LongVector halves2(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S, C1).and(M32));
        LongVector y = x.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
        p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, C2).and(M32));
        LongVector z = x.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
        p = z.and(M32).mul(LongVector.broadcast(S, C3).and(M32));
        LongVector w = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
        return z.lanewise(VectorOperators.XOR, z.lanewise(VectorOperators.XOR, w).and(HI));
    }

    static long loopHalves2(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(halves2(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    // One loop per form, each mixer called once in its own loop (inlined: small, and a callee of one site).
    static long loopPrev(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(prev(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long loopShipped(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(shipped(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long loopR3rot(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(r3rot(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long loopR3shl(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(r3shl(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long loopR3split(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(r3split(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long loopR3early(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 8L * L) {
            a = a.add(r3early(LongVector.fromMemorySegment(S, seg, o, LE)));
            t = t.add(a);
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    /** Two vectors per iteration, two running-sum pairs (the shipped mixer). */
    static long loopTwo(MemorySegment seg) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S), b = LongVector.zero(S), u = LongVector.zero(S);
        for (long o = 0; o < BYTES; o += 16L * L) {
            a = a.add(shipped(LongVector.fromMemorySegment(S, seg, o, LE)));
            b = b.add(shipped(LongVector.fromMemorySegment(S, seg, o + 8L * L, LE)));
            t = t.add(a);
            u = u.add(b);
        }
        return a.add(t).add(b).add(u).reduceLanes(VectorOperators.ADD);
    }

    interface Form {
        LongVector mix(LongVector x);
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 2001;
        int passes = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        String only = System.getProperty("forms", "prev shipped r3rot r3shl r3split r3early halves2 two");
        MemorySegment seg = Arena.global().allocate(BYTES, 64);
        SplittableRandom rnd = new SplittableRandom(20261207L);
        long[] edge = {0, -1, M32, HI, 1L << 63, 1L << 31, 1L << 32, 0x8000000080000000L, 0x7FFFFFFF7FFFFFFFL};
        for (long o = 0, i = 0; o < BYTES; o += 8, i++) {
            seg.set(ValueLayout.JAVA_LONG, o, i < edge.length ? edge[(int) i] : rnd.nextLong());
        }
        String[] names = {"prev", "shipped", "r3rot", "r3shl", "r3split", "r3early", "halves2", "two"};
        Form[] mixers = {MixerFormsAb::prev, MixerFormsAb::shipped, MixerFormsAb::r3rot, MixerFormsAb::r3shl,
                MixerFormsAb::r3split, MixerFormsAb::r3early, MixerFormsAb::halves2, MixerFormsAb::shipped};
        LongSupplier[] loops = {() -> loopPrev(seg), () -> loopShipped(seg), () -> loopR3rot(seg), () -> loopR3shl(seg),
                () -> loopR3split(seg), () -> loopR3early(seg), () -> loopHalves2(seg), () -> loopTwo(seg)};
        // exactness: every form, lane by lane, then every loop's result against the scalar definition
        long a = 0, t = 0;
        for (long o = 0; o < BYTES; o += 8L * L) {
            for (int l = 0; l < L; l++) {
                a += Definition.feistel3(seg.get(ValueLayout.JAVA_LONG, o + 8L * l));
            }
            t += a;
        }
        for (int f = 0; f < names.length; f++) {
            for (long o = 0; o < BYTES; o += 8L * L) {
                LongVector x = LongVector.fromMemorySegment(S, seg, o, LE);
                LongVector m = mixers[f].mix(x);
                for (int l = 0; l < L; l++) {
                    if (m.lane(l) != Definition.feistel3(x.lane(l))) {
                        throw new AssertionError(names[f] + " differs from Definition.feistel3 at byte " + (o + 8L * l));
                    }
                }
            }
        }
        java.util.List<Integer> use = new java.util.ArrayList<>();
        for (int f = 0; f < names.length; f++) {
            if ((" " + only + " ").contains(" " + names[f] + " ")) {
                use.add(f);
            }
        }
        int n = use.size();
        long[][] ns = new long[n][rounds];
        long sink = 0;
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < n; k++) {
                int i = (r + k) % n;
                LongSupplier loop = loops[use.get(i)];
                long t0 = System.nanoTime();
                for (int p = 0; p < passes; p++) {
                    sink += loop.getAsLong();
                }
                ns[i][r] = System.nanoTime() - t0;
            }
        }
        blackhole = sink;
        System.out.printf("vector width %d bits, %d rounds of %d passes over %d KiB, load %s%n", S.vectorBitSize(), rounds,
                passes, BYTES >> 10, loadavg());
        double[] best = new double[n], med = new double[n];
        for (int i = 0; i < n; i++) {
            long[] s = ns[i].clone();
            Arrays.sort(s);
            best[i] = (double) BYTES * passes / s[0];
            med[i] = (double) BYTES * passes / s[rounds / 2];
        }
        for (int i = 0; i < n; i++) {
            System.out.printf("%-8s best %6.2f GB/s  median %6.2f GB/s   / %s: best %.3f median %.3f%n", names[use.get(i)],
                    best[i], med[i], names[use.get(0)], best[i] / best[0], med[i] / med[0]);
        }
        // every loop's checksum-like result agrees (the same sums of the same mixed pieces)
        long want = loops[use.get(0)].getAsLong();
        for (int i : use) {
            if (i != 7 && loops[i].getAsLong() != want) {
                throw new AssertionError(names[i] + " loop result differs");
            }
        }
    }

    private static String loadavg() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "?";
        }
    }
}
