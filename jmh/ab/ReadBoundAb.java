package io.kvchecksum.bench;

import io.kvchecksum.jmh.KvFixture;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The read bound's vector loops in cache, in one JVM, interleaved (not a benchmark; run by
 * {@code jmh/ab/read-bound-ab.sh}): issue 28's in-cache bound on Intel (docs/bench-cpu.md, "On Intel (Emerald Rapids):
 * the in-cache bound"). Sides, each reading the case's layer segments whole: {@code old}, a copy of
 * {@code VectorRead.read} before that step (two parts in lockstep, four loads from each, {@code int} steps);
 * {@code bound}/{@code b256}, {@code MemoryBound}'s {@code vector}/{@code vector256} as this CPU gets them;
 * {@code amd}/{@code intel}/{@code amd256}, {@code MemoryBound}'s readers with the loops of either vendor;
 * {@code scalar}, {@code native}; {@code contig}/{@code cont1}, {@code old}'s and {@code each8}'s loops over one
 * contiguous copy of the bytes (another 1 MiB: run them alone, or they push the case out of L2); the rest scratch forms
 * (their Javadoc). A sample is {@code passes} whole reads back to back (1: single reads, as the JMH fork samples the
 * bound); passes 0 samples as {@code ChecksumBench}'s fork does: the cpu backend's pass warmed 0.5 s, each side 0.3 s,
 * then per round the pass and every side once, in turn. Every side's sum is checked against the scalar sum first
 * ({@code native} returns 0 and is reported as differing).
 *
 * <p>Arguments: shape, size, rounds, passes, sides (comma list; default all).
 */
public final class ReadBoundAb {
    static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    public static void main(String[] args) throws Exception {
        String shape = args[0];
        String size = args[1];
        int rounds = Integer.parseInt(args[2]);
        int passes = Integer.parseInt(args[3]);
        try (KvFixture fx = KvFixture.of(shape, size); Arena arena = Arena.ofShared()) {
            List<MemorySegment> segs = fx.segments();
            int n = segs.size();
            MemorySegment[] src = segs.toArray(MemorySegment[]::new);
            long[] off = new long[n];
            long[] len = new long[n];
            long total = 0;
            for (int i = 0; i < n; i++) {
                len[i] = src[i].byteSize();
                total += len[i];
            }
            MemorySegment one = arena.allocate(total, 4096);
            long at = 0;
            for (MemorySegment s : src) {
                MemorySegment.copy(s, 0, one, at, s.byteSize());
                at += s.byteSize();
            }
            MemorySegment[] oneSrc = {one.asSlice(0, total / 2), one.asSlice(total / 2)};
            long[] oneOff = {0, 0};
            long[] oneLen = {total / 2, total - total / 2};
            MemorySegment all = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
            long[] addr = new long[n];
            for (int i = 0; i < n; i++) {
                addr[i] = src[i].address();
            }
            MemoryBound bound = new MemoryBound(segs, 1);
            java.util.Map<String, LongSupplier> sides = new java.util.LinkedHashMap<>();
            sides.put("old", () -> old(src, off, len));
            sides.put("bound", () -> bound.read(MemoryBound.Reader.VECTOR));
            sides.put("b256", () -> bound.read(MemoryBound.Reader.VECTOR256));
            sides.put("contig", () -> old(oneSrc, oneOff, oneLen));
            sides.put("each8", () -> each8(src, len));
            sides.put("abs2", () -> abs2(all, addr, len));
            sides.put("inc2", () -> inc2(src, len));
            sides.put("s16", () -> s16(src, len));
            sides.put("four", () -> four(src, len));
            MemorySegment[] oneAll = {one};
            long[] oneAllLen = {total};
            sides.put("cont1", () -> each8(oneAll, oneAllLen));
            List<MemoryBound.Range> ranges = segs.stream().map(m -> new MemoryBound.Range(m, 0, m.byteSize())).toList();
            MemoryBound amd = new MemoryBound(1, ranges, false);
            MemoryBound intel = new MemoryBound(1, ranges, true);
            sides.put("amd", () -> amd.read(MemoryBound.Reader.VECTOR));
            sides.put("scalar", () -> amd.read(MemoryBound.Reader.SCALAR));
            sides.put("native", () -> amd.read(MemoryBound.Reader.NATIVE));
            sides.put("amd256", () -> amd.read(MemoryBound.Reader.VECTOR256));
            sides.put("intel", () -> intel.read(MemoryBound.Reader.VECTOR));
            sides.put("inc4", () -> inc4(src));
            sides.put("inc4x4", () -> inc4x4(src));
            sides.put("inc8", () -> inc8(src));
            sides.put("inc2x8", () -> inc2x8(src));
            sides.put("each8i", () -> each8i(src));
            sides.put("inc8x2", () -> inc8x2(src));
            sides.put("int8", () -> int8(src));
            List<String> names = new ArrayList<>(sides.keySet());
            if (args.length > 4) {
                names = List.of(args[4].split(","));
            }
            long want = bound.readScalar();
            for (String s : names) {
                long got = sides.get(s).getAsLong();
                if (got != want) {
                    System.out.println("DIFFERS: " + s + " " + got + " != " + want);
                }
            }
            int k = names.size();
            LongSupplier[] v = names.stream().map(sides::get).toArray(LongSupplier[]::new);
            long sink = 0;
            if (passes == 0) {
                // as ChecksumBench's fork samples the bound: the cpu backend's pass warmed first (0.5 s), each side 0.3 s,
                // then per round the pass and every side once, in turn
                io.kvchecksum.KvChecksum kc = io.kvchecksum.jmh.Backends.open("cpu");
                io.kvchecksum.SlicePlan plan = io.kvchecksum.SlicePlan.of(fx.group(), fx.request());
                LongSupplier pass = () -> kc.blockChecksums(plan)[0];
                long until = System.nanoTime() + 500_000_000L;
                while (System.nanoTime() < until) {
                    sink += pass.getAsLong();
                }
                for (LongSupplier x : v) {
                    until = System.nanoTime() + 300_000_000L;
                    while (System.nanoTime() < until) {
                        sink += x.getAsLong();
                    }
                }
                double[][] t = new double[k + 1][rounds];
                for (int r = 0; r < rounds; r++) {
                    long s0 = System.nanoTime();
                    sink += pass.getAsLong();
                    t[k][r] = System.nanoTime() - s0;
                    for (int w = 0; w < k; w++) {
                        s0 = System.nanoTime();
                        sink += v[w].getAsLong();
                        t[w][r] = System.nanoTime() - s0;
                    }
                }
                StringBuilder sb = new StringBuilder(String.format("%s %s, fork-like, %d rounds, %d-bit:", shape, size, rounds,
                        S.vectorBitSize()));
                for (double[] x : t) {
                    Arrays.sort(x);
                }
                for (int w = 0; w <= k; w++) {
                    sb.append(String.format("%n  %-8s best %6.1f GB/s, median %6.1f GB/s", w == k ? "pass" : names.get(w),
                            total / t[w][0], total / t[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
                kc.close();
                return;
            }
            long until = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < until) {
                for (LongSupplier x : v) {
                    sink += x.getAsLong();
                }
            }
            double[][] t = new double[k][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int j = 0; j < k; j++) {
                    int w = (j + r) % k;
                    long s0 = System.nanoTime();
                    for (int p = 0; p < passes; p++) {
                        sink += v[w].getAsLong();
                    }
                    t[w][r] = (System.nanoTime() - s0) / (double) passes;
                }
            }
            StringBuilder sb = new StringBuilder(String.format("%s %s (%d bytes, %d parts), %d rounds of %d passes, %d-bit:",
                    shape, size, total, n, rounds, passes, S.vectorBitSize()));
            for (double[] x : t) {
                Arrays.sort(x);
            }
            for (int w = 0; w < k; w++) {
                sb.append(String.format("%n  %-7s best %6.1f GB/s, median %6.1f GB/s, best / old's %.3f", names.get(w),
                        total / t[w][0], total / t[w][rounds / 2], t[0][0] / t[w][0]));
            }
            System.out.println(sb + (sink == 42 ? " " : ""));
        }
    }

    /** VectorRead.read as it was before issue 28's Intel step. */
    static long old(MemorySegment[] src, long[] offset, long[] length) {
        final long vb = S.vectorByteSize();
        final long half = 4 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        LongVector a4 = a0;
        LongVector a5 = a0;
        LongVector a6 = a0;
        LongVector a7 = a0;
        long words = 0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (int p = 0; p + 1 < src.length; p += 2) {
            MemorySegment s = src[p];
            MemorySegment t = src[p + 1];
            long o = offset[p];
            long u = offset[p + 1];
            int n = Math.toIntExact(Math.min(length[p], length[p + 1]) / half);
            for (int i = 0; i < n; i++) {
                long q = o + i * half;
                long r = u + i * half;
                a0 = a0.add(LongVector.fromMemorySegment(S, s, q, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, q + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s, q + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s, q + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, t, r, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, t, r + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, t, r + 2 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, t, r + 3 * vb, le));
            }
            long done = n * half;
            words += tail(s, o + done, o + length[p]) + tail(t, u + done, u + length[p + 1]);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }

    static long tail(MemorySegment s, long o, long end) {
        long sum = 0;
        for (; o + 8 <= end; o += 8) {
            sum += s.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, o);
        }
        return sum;
    }

    /** One part at a time, eight loads per step into eight sums (the C reader's one stream); whole parts, no tail. */
    static long each8(MemorySegment[] src, long[] length) {
        final long vb = S.vectorByteSize();
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        LongVector a4 = a0;
        LongVector a5 = a0;
        LongVector a6 = a0;
        LongVector a7 = a0;
        ByteOrder le = LE;
        long words = 0;
        for (int p = 0; p < src.length; p++) {
            MemorySegment s = src[p];
            int n = (int) (length[p] / (8 * vb));
            for (int i = 0; i < n; i++) {
                long q = i * 8 * vb;
                a0 = a0.add(LongVector.fromMemorySegment(S, s, q, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, q + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s, q + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s, q + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, s, q + 4 * vb, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, s, q + 5 * vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, s, q + 6 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, s, q + 7 * vb, le));
            }
            words += tail(s, n * 8 * vb, length[p]);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }

    /** {@code old} through one segment over all memory at the parts' absolute addresses (pairs of whole parts). */
    static long abs2(MemorySegment all, long[] addr, long[] length) {
        final long vb = S.vectorByteSize();
        final long half = 4 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        LongVector a4 = a0;
        LongVector a5 = a0;
        LongVector a6 = a0;
        LongVector a7 = a0;
        ByteOrder le = LE;
        long words = 0;
        for (int p = 0; p + 1 < addr.length; p += 2) {
            long o = addr[p];
            long u = addr[p + 1];
            int n = (int) (Math.min(length[p], length[p + 1]) / half);
            for (int i = 0; i < n; i++) {
                long q = o + i * half;
                long r = u + i * half;
                a0 = a0.add(LongVector.fromMemorySegment(S, all, q, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, all, q + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, all, q + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, all, q + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, all, r, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, all, r + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, all, r + 2 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, all, r + 3 * vb, le));
            }
            long done = n * half;
            words += tail(all, o + done, o + length[p]) + tail(all, u + done, u + length[p + 1]);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }

    /** {@code old} over pairs of whole parts with a long offset stepped by the loop (no int counter). */
    static long inc2(MemorySegment[] src, long[] length) {
        final long vb = S.vectorByteSize();
        final long half = 4 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        LongVector a4 = a0;
        LongVector a5 = a0;
        LongVector a6 = a0;
        LongVector a7 = a0;
        ByteOrder le = LE;
        long words = 0;
        for (int p = 0; p + 1 < src.length; p += 2) {
            MemorySegment s = src[p];
            MemorySegment t = src[p + 1];
            long end = Math.min(length[p], length[p + 1]) / half * half;
            long q = 0;
            for (; q < end; q += half) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, q, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, q + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s, q + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s, q + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, t, q, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, t, q + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, t, q + 2 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, t, q + 3 * vb, le));
            }
            words += tail(s, q, length[p]) + tail(t, q, length[p + 1]);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }

    /** Two whole parts in lockstep, eight loads from each per step (16 per step, 16 sums). */
    static long s16(MemorySegment[] src, long[] length) {
        final long vb = S.vectorByteSize();
        final long step = 8 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        LongVector b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;
        ByteOrder le = LE;
        long words = 0;
        for (int p = 0; p + 1 < src.length; p += 2) {
            MemorySegment s = src[p];
            MemorySegment t = src[p + 1];
            int n = (int) (Math.min(length[p], length[p + 1]) / step);
            for (int i = 0; i < n; i++) {
                long q = i * step;
                a0 = a0.add(LongVector.fromMemorySegment(S, s, q, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, q + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s, q + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s, q + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, s, q + 4 * vb, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, s, q + 5 * vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, s, q + 6 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, s, q + 7 * vb, le));
                b0 = b0.add(LongVector.fromMemorySegment(S, t, q, le));
                b1 = b1.add(LongVector.fromMemorySegment(S, t, q + vb, le));
                b2 = b2.add(LongVector.fromMemorySegment(S, t, q + 2 * vb, le));
                b3 = b3.add(LongVector.fromMemorySegment(S, t, q + 3 * vb, le));
                b4 = b4.add(LongVector.fromMemorySegment(S, t, q + 4 * vb, le));
                b5 = b5.add(LongVector.fromMemorySegment(S, t, q + 5 * vb, le));
                b6 = b6.add(LongVector.fromMemorySegment(S, t, q + 6 * vb, le));
                b7 = b7.add(LongVector.fromMemorySegment(S, t, q + 7 * vb, le));
            }
            long done = n * step;
            words += tail(s, done, length[p]) + tail(t, done, length[p + 1]);
        }
        a0 = a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7)));
        b0 = b0.add(b1).add(b2.add(b3)).add(b4.add(b5).add(b6.add(b7)));
        return a0.add(b0).reduceLanes(VectorOperators.ADD) + words;
    }

    /** Four whole parts in lockstep, two loads from each per step (read256's form at the preferred width). */
    static long four(MemorySegment[] src, long[] length) {
        final long vb = S.vectorByteSize();
        final long step = 2 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        long words = 0;
        int p = 0;
        for (; p + 3 < src.length; p += 4) {
            MemorySegment s = src[p];
            MemorySegment t = src[p + 1];
            MemorySegment v = src[p + 2];
            MemorySegment w = src[p + 3];
            int n = (int) (Math.min(Math.min(length[p], length[p + 1]), Math.min(length[p + 2], length[p + 3])) / step);
            for (int i = 0; i < n; i++) {
                long d = i * step;
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, t, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, t, d + vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, v, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, v, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, w, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, w, d + vb, le));
            }
            long done = n * step;
            words += tail(s, done, length[p]) + tail(t, done, length[p + 1]) + tail(v, done, length[p + 2])
                    + tail(w, done, length[p + 3]);
        }
        for (; p < src.length; p++) {
            words += tail(src[p], 0, length[p]);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }
    /** Four whole parts in lockstep (equal lengths, multiples of the step), two loads from each, a long offset stepped. */
    static long inc4(MemorySegment[] src) {
        final long vb = S.vectorByteSize();
        final long step = 2 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        for (int p = 0; p + 3 < src.length; p += 4) {
            MemorySegment s = src[p], t = src[p + 1], v = src[p + 2], w = src[p + 3];
            long end = s.byteSize();
            for (long d = 0; d < end; d += step) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, t, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, t, d + vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, v, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, v, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, w, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, w, d + vb, le));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }

    /** Four whole parts in lockstep, four loads from each (16 per step), a long offset stepped. */
    static long inc4x4(MemorySegment[] src) {
        final long vb = S.vectorByteSize();
        final long step = 4 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        for (int p = 0; p + 3 < src.length; p += 4) {
            MemorySegment s = src[p], t = src[p + 1], v = src[p + 2], w = src[p + 3];
            long end = s.byteSize() / step * step;
            long d = 0;
            for (; d < end; d += step) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, t, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, t, d + vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, v, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, v, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, w, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, w, d + vb, le));
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d + 2 * vb, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + 3 * vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, t, d + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, t, d + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, v, d + 2 * vb, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, v, d + 3 * vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, w, d + 2 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, w, d + 3 * vb, le));
            }
            for (; d < s.byteSize(); d += 2 * vb) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, t, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, t, d + vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, v, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, v, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, w, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, w, d + vb, le));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }

    /** Eight whole parts in lockstep, one load from each, a long offset stepped. */
    static long inc8(MemorySegment[] src) {
        final long vb = S.vectorByteSize();
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        for (int p = 0; p + 7 < src.length; p += 8) {
            MemorySegment s0 = src[p], s1 = src[p + 1], s2 = src[p + 2], s3 = src[p + 3];
            MemorySegment s4 = src[p + 4], s5 = src[p + 5], s6 = src[p + 6], s7 = src[p + 7];
            long end = s0.byteSize();
            for (long d = 0; d < end; d += vb) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s0, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s1, d, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s2, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s3, d, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, s4, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, s5, d, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, s6, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, s7, d, le));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }

    /** Two whole parts in lockstep, eight loads from each (16 per step, 8 sums), a long offset stepped. */
    static long inc2x8(MemorySegment[] src) {
        final long vb = S.vectorByteSize();
        final long step = 8 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        for (int p = 0; p + 1 < src.length; p += 2) {
            MemorySegment s = src[p], t = src[p + 1];
            long end = s.byteSize() / step * step;
            long d = 0;
            for (; d < end; d += step) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s, d + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s, d + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, t, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, t, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, t, d + 2 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, t, d + 3 * vb, le));
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d + 4 * vb, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + 5 * vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s, d + 6 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s, d + 7 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, t, d + 4 * vb, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, t, d + 5 * vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, t, d + 6 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, t, d + 7 * vb, le));
            }
            for (; d < s.byteSize(); d += vb) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, t, d, le));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }

    /** One whole part at a time, eight loads per step, a long offset stepped (the C reader's one-stream loop). */
    static long each8i(MemorySegment[] src) {
        final long vb = S.vectorByteSize();
        final long step = 8 * vb;
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        for (int p = 0; p < src.length; p++) {
            MemorySegment s = src[p];
            long end = s.byteSize() / step * step;
            long d = 0;
            for (; d < end; d += step) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s, d + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s, d + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, s, d + 4 * vb, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, s, d + 5 * vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, s, d + 6 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, s, d + 7 * vb, le));
            }
            for (; d < s.byteSize(); d += vb) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s, d, le));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }
    /** Eight whole parts in lockstep, two loads from each (16 per step, 8 sums), a long offset stepped. */
    static long inc8x2(MemorySegment[] src) {
        final long vb = S.vectorByteSize();
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        for (int p = 0; p + 7 < src.length; p += 8) {
            MemorySegment s0 = src[p], s1 = src[p + 1], s2 = src[p + 2], s3 = src[p + 3];
            MemorySegment s4 = src[p + 4], s5 = src[p + 5], s6 = src[p + 6], s7 = src[p + 7];
            long end = s0.byteSize() / (2 * vb) * (2 * vb);
            for (long d = 0; d < end; d += 2 * vb) {
                a0 = a0.add(LongVector.fromMemorySegment(S, s0, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s1, d, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s2, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s3, d, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, s4, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, s5, d, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, s6, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, s7, d, le));
                a0 = a0.add(LongVector.fromMemorySegment(S, s0, d + vb, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s1, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s2, d + vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s3, d + vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, s4, d + vb, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, s5, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, s6, d + vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, s7, d + vb, le));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }

    /** Eight whole parts in lockstep, one load from each, an int step count. */
    static long int8(MemorySegment[] src) {
        final long vb = S.vectorByteSize();
        LongVector a0 = LongVector.zero(S);
        LongVector a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        ByteOrder le = LE;
        for (int p = 0; p + 7 < src.length; p += 8) {
            MemorySegment s0 = src[p], s1 = src[p + 1], s2 = src[p + 2], s3 = src[p + 3];
            MemorySegment s4 = src[p + 4], s5 = src[p + 5], s6 = src[p + 6], s7 = src[p + 7];
            int n = (int) (s0.byteSize() / vb);
            for (int i = 0; i < n; i++) {
                long d = i * vb;
                a0 = a0.add(LongVector.fromMemorySegment(S, s0, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S, s1, d, le));
                a2 = a2.add(LongVector.fromMemorySegment(S, s2, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S, s3, d, le));
                a4 = a4.add(LongVector.fromMemorySegment(S, s4, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S, s5, d, le));
                a6 = a6.add(LongVector.fromMemorySegment(S, s6, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S, s7, d, le));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }
}
