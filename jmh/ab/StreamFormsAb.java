package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Forms of a contiguous stream's loop alone, in cache, one thread, in turn in one JVM (not a benchmark; built and run
 * by {@code jmh/ab/stream-forms-ab.sh}): what a Java loop reads on this CPU at the JVM's preferred width and at 256
 * bits, with and without the checksum's running sums (docs/bench-cpu.md, "On Intel (Emerald Rapids): the fused pass").
 * {@code read4}, {@code read8}: plain reads, four or eight accumulators (the project's bound's form); {@code stream4}:
 * {@code VectorSliceKernel.stream}'s loop (two adds per load); {@code stream8}: the same sums, eight loads a body;
 * {@code streamInt}: {@code stream4} with an int trip count; {@code pairSum}: NOT a checksum, {@code stream4}'s sums
 * over pairs of vectors without the correction that would make it exact (one and a half adds per load: how much the
 * adds cost); {@code read256}, {@code stream256}: {@code read4} and {@code stream4} at 256 bits whatever the preferred
 * width; {@code pairExact}: an exact form with the pairs summed first (two adds per load, eight loads a body). Prints
 * best and median GB/s per form.
 *
 * <p>Arguments: bytes (one native segment, 4 KiB aligned), rounds, calls per sample (each over bytes/calls, front to
 * back: a call's own cost).
 */
public final class StreamFormsAb {
    static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    static final int L = S.length();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    static long read4(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S), a0 = z, a1 = z, a2 = z, a3 = z;
        long vb = 8L * L, end = base + bytes;
        for (long a = base; a < end; a += 4 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
    }

    static long read8(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S), a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
        long vb = 8L * L, end = base + bytes;
        for (long a = base; a < end; a += 8 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            a4 = a4.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
            a5 = a5.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
            a6 = a6.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
            a7 = a7.add(LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE));
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }

    /** VectorSliceKernel.stream's loop. */
    static long stream4(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S), a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z;
        long vb = 8L * L, end = base + bytes;
        for (long a = base; a < end; a += 4 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return a0.add(a1).add(a2.add(a3)).add(s0.add(s1).add(s2.add(s3))).reduceLanes(VectorOperators.ADD);
    }

    /** Eight loads per iteration into the same eight accumulators. */
    static long stream8(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S), a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z;
        long vb = 8L * L, end = base + bytes;
        for (long a = base; a < end; a += 8 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return a0.add(a1).add(a2.add(a3)).add(s0.add(s1).add(s2.add(s3))).reduceLanes(VectorOperators.ADD);
    }

    /** stream4 with an int trip count. */
    static long streamInt(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S), a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z;
        long vb = 8L * L;
        int groups = (int) (bytes / (4 * vb));
        for (int g = 0; g < groups; g++) {
            long a = base + g * 4 * vb;
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return a0.add(a1).add(a2.add(a3)).add(s0.add(s1).add(s2.add(s3))).reduceLanes(VectorOperators.ADD);
    }

    /** Pairs of vectors summed first: y = x_j + x_{j+4}; a += y; s += a; o += x_{j+4} (odd-half correction). */
    static long streamPairSum(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S), a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z;
        long vb = 8L * L, end = base + bytes;
        for (long a = base; a < end; a += 8 * vb) {
            LongVector x0 = LongVector.fromMemorySegment(S, seg, a, LE);
            LongVector x1 = LongVector.fromMemorySegment(S, seg, a + vb, LE);
            LongVector x2 = LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE);
            LongVector x3 = LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE);
            LongVector y0 = LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE);
            LongVector y1 = LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE);
            LongVector y2 = LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE);
            LongVector y3 = LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE);
            a0 = a0.add(x0.add(y0));
            a1 = a1.add(x1.add(y1));
            a2 = a2.add(x2.add(y2));
            a3 = a3.add(x3.add(y3));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return a0.add(a1).add(a2.add(a3)).add(s0.add(s1).add(s2.add(s3))).reduceLanes(VectorOperators.ADD);
    }

    static final VectorSpecies<Long> S256 = LongVector.SPECIES_256;

    /** read4 in 256-bit vectors whatever the preferred width. */
    static long read256(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S256), a0 = z, a1 = z, a2 = z, a3 = z;
        long vb = 32, end = base + bytes;
        for (long a = base; a < end; a += 4 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S256, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S256, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S256, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S256, seg, a + 3 * vb, LE));
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
    }

    /** stream4 in 256-bit vectors whatever the preferred width. */
    static long stream256(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S256), a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z;
        long vb = 32, end = base + bytes;
        for (long a = base; a < end; a += 4 * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(S256, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S256, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S256, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S256, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return a0.add(a1).add(a2.add(a3)).add(s0.add(s1).add(s2.add(s3))).reduceLanes(VectorOperators.ADD);
    }

    /**
     * An exact form (its closing left out, as for every form here: the loop alone): group u of eight vectors,
     * y_k = x_k + x_{k+4}: a_k += y_k, s_k += a_k, o += (x4 + x5) + (x6 + x7): sum j*x = sum_k (8(U a_k - s_k) + k a_k)
     * + 4 o, lane by lane. Sixteen adds per eight loads as stream4, nine accumulators.
     */
    static long pairExact(MemorySegment seg, long base, long bytes) {
        LongVector z = LongVector.zero(S), a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z, o = z;
        long vb = 8L * L, end = base + bytes;
        for (long a = base; a < end; a += 8 * vb) {
            LongVector y0 = LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE);
            LongVector y1 = LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE);
            LongVector y2 = LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE);
            LongVector y3 = LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE);
            o = o.add(y0.add(y1).add(y2.add(y3)));
            a0 = a0.add(y0.add(LongVector.fromMemorySegment(S, seg, a, LE)));
            a1 = a1.add(y1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE)));
            a2 = a2.add(y2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE)));
            a3 = a3.add(y3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE)));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return a0.add(a1).add(a2.add(a3)).add(s0.add(s1).add(s2.add(s3))).add(o).reduceLanes(VectorOperators.ADD);
    }

    interface F { long f(MemorySegment s, long b, long n); }

    public static void main(String[] args) {
        long bytes = Long.parseLong(args[0]);
        int rounds = Integer.parseInt(args[1]);
        int calls = Integer.parseInt(args.length > 2 ? args[2] : "1");   // calls per sample: bytes/calls each
        String[] names = {"read4", "read8", "stream4", "stream8", "streamInt", "pairSum", "read256", "stream256",
                "pairExact"};
        F[] fs = {StreamFormsAb::read4, StreamFormsAb::read8, StreamFormsAb::stream4, StreamFormsAb::stream8,
                StreamFormsAb::streamInt, StreamFormsAb::streamPairSum, StreamFormsAb::read256, StreamFormsAb::stream256,
                StreamFormsAb::pairExact};
        try (Arena arena = Arena.ofShared()) {
            MemorySegment seg = arena.allocate(bytes, 4096);
            for (long i = 0; i < bytes; i += 8) {
                seg.set(java.lang.foreign.ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            }
            long per = bytes / calls;
            long sink = 0;
            long until = System.nanoTime() + 3_000_000_000L;
            while (System.nanoTime() < until) {
                for (F f : fs) {
                    for (int c = 0; c < calls; c++) {
                        sink += f.f(seg, c * per, per);
                    }
                }
            }
            double[][] t = new double[fs.length][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int j = 0; j < fs.length; j++) {
                    int w = (j + r) % fs.length;
                    long s = System.nanoTime();
                    for (int c = 0; c < calls; c++) {
                        sink += fs[w].f(seg, c * per, per);
                    }
                    t[w][r] = System.nanoTime() - s;
                }
            }
            System.out.printf("%d bytes, %d calls, %d-bit, %d rounds%n", bytes, calls, S.vectorBitSize(), rounds);
            for (int w = 0; w < fs.length; w++) {
                Arrays.sort(t[w]);
                System.out.printf("  %-9s best %6.1f GB/s, median %6.1f GB/s%n", names[w], bytes / t[w][0],
                        bytes / t[w][rounds / 2]);
            }
            if (sink == 42) {
                System.out.println();
            }
        }
    }
}
