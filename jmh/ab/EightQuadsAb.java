package io.kvchecksum.internal;

import io.kvchecksum.bench.MemoryBound;
import io.kvchecksum.jmh.KvFixture;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * Llama-3-8B TP1's eight-vector cells at 256 bits in cache, in one JVM, interleaved (not a benchmark; run by
 * {@code jmh/ab/in-cache-shapes-ab.sh} with {@code -XX:UseAVX=2}): {@code ship}, the kernel's {@code headsInCache} (four
 * heads per iteration, {@code VectorSliceKernel.eightQuads}); {@code prev}, {@code headsAffine} in cache (every K then
 * every V head by head, {@code eightHeads}: what {@code headsInCache} called before); {@code pairs}, two heads per
 * iteration with the same three sums per head; {@code strided} and {@code rows}, plain sums of the same words (no
 * weights) head by head and in row order: what the order alone costs; {@code bound}, the project's 256-bit read bound.
 * The checksums of {@code ship} and {@code pairs} are checked against {@code prev}'s (exit 1 on a difference). Prints
 * best and median GB/s over the rounds and each over the bound's.
 */
public final class EightQuadsAb {
    static final VectorSpecies<Long> S = LongVector.SPECIES_256;
    static final int L = 4;
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    static final LongVector TWO_IOTA = LongVector.fromArray(S, new long[] {0, 2, 4, 6}, 0);

    /** Two heads per iteration, three sums per head as {@code VectorSliceKernel.eightQuads} keeps them. */
    static void eightPairs(MemorySegment seg, long base, long stride, long headStride, int heads, int n, long t0,
            int cellPieces, int pieceBase, long[] out, boolean add) {
        final long vb = 32;
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1;
        long twoP = 2L * cellPieces;
        for (int h = 0; h + 1 < heads; h += 2) {
            LongVector zero = LongVector.zero(S);
            LongVector q0 = zero, r0 = zero, t0v = zero, q1 = zero, r1 = zero, t1v = zero;
            long a0 = base + h * headStride;
            long a1 = a0 + headStride;
            for (int i = 0; i < n; i++) {
                long a = a0 + i * stride;
                long b = a1 + i * stride;
                LongVector p = LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE);
                LongVector qq = p;
                p = p.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
                qq = qq.add(p);
                p = p.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
                qq = qq.add(p);
                p = p.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
                qq = qq.add(p);
                p = p.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
                qq = qq.add(p);
                p = p.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
                qq = qq.add(p);
                p = p.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
                qq = qq.add(p);
                p = p.add(LongVector.fromMemorySegment(S, seg, a, LE));
                q0 = q0.add(qq);
                r0 = r0.add(p);
                t0v = t0v.add(r0);
                LongVector u = LongVector.fromMemorySegment(S, seg, b + 7 * vb, LE);
                LongVector uu = u;
                u = u.add(LongVector.fromMemorySegment(S, seg, b + 6 * vb, LE));
                uu = uu.add(u);
                u = u.add(LongVector.fromMemorySegment(S, seg, b + 5 * vb, LE));
                uu = uu.add(u);
                u = u.add(LongVector.fromMemorySegment(S, seg, b + 4 * vb, LE));
                uu = uu.add(u);
                u = u.add(LongVector.fromMemorySegment(S, seg, b + 3 * vb, LE));
                uu = uu.add(u);
                u = u.add(LongVector.fromMemorySegment(S, seg, b + 2 * vb, LE));
                uu = uu.add(u);
                u = u.add(LongVector.fromMemorySegment(S, seg, b + vb, LE));
                uu = uu.add(u);
                u = u.add(LongVector.fromMemorySegment(S, seg, b, LE));
                q1 = q1.add(uu);
                r1 = r1.add(u);
                t1v = t1v.add(r1);
            }
            LongVector w = TWO_IOTA.add(c0 + twoP * n);
            long s0 = r0.mul(w).add(q0.lanewise(VectorOperators.LSHL, 3)).sub(t0v.mul(twoP)).reduceLanes(VectorOperators.ADD);
            long s1 = r1.mul(w).add(q1.lanewise(VectorOperators.LSHL, 3)).sub(t1v.mul(twoP)).reduceLanes(VectorOperators.ADD);
            out[h] = add ? out[h] + s0 : s0;
            out[h + 1] = add ? out[h + 1] + s1 : s1;
        }
    }

    /** the same strided order, plain sums only (no weights): what the access pattern costs. */
    static long plainStrided(MemorySegment seg, long base, long stride, long headStride, int heads, int n) {
        final long vb = 32;
        LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        for (int h = 0; h < heads; h++) {
            long head = base + h * headStride;
            for (int i = 0; i < n; i++) {
                long a = head + i * stride;
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
                a4 = a4.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
                a5 = a5.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
                a6 = a6.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
                a7 = a7.add(LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE));
            }
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD);
    }

    /** sequential order over the block (rows), plain sums. */
    static long plainSeq(MemorySegment seg, long base, long bytes) {
        final long vb = 32;
        LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        int n = (int) (bytes / 256);
        for (int i = 0; i < n; i++) {
            long a = base + i * 256L;
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

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        String[] names = {"ship", "prev", "pairs", "strided", "rows", "bound"};
        try (KvFixture fx = KvFixture.of("llama3-8b-tp1", "1MiB")) {
            List<MemorySegment> segs = fx.segments();
            if (KernelSpecies.S.vectorBitSize() != 256) {
                System.out.println("EightQuadsAb measures the 256-bit loops: run it with -XX:UseAVX=2");
                return;
            }
            VectorSliceKernel kern = new VectorSliceKernel(KernelSpecies.CHOSEN, true, true);
            // K at 0, V at 32 KiB of each layer's block; 8 heads of 256-byte cells side by side, rows of 2 KiB, 16 tokens
            long[] dyn = {0, 2048, 256, 32, 32768, 8, 16, 0};
            long[] hs = new long[8];
            try (MemoryBound bound = new MemoryBound(segs, 1)) {
                java.util.function.LongSupplier[] v = new java.util.function.LongSupplier[6];
                v[0] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        kern.headsInCache(seg, dyn[0], dyn[1], dyn[2], (int) dyn[3], seg, dyn[4], dyn[1], dyn[2], (int) dyn[3],
                                (int) dyn[5], (int) dyn[6], dyn[7], hs);
                        for (int h = 0; h < 8; h++) {
                            z += hs[h] * (h + 1);
                        }
                    }
                    return z;
                };
                v[1] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        kern.headsAffine(seg, dyn[0], dyn[1], dyn[2], (int) dyn[3], seg, dyn[4], dyn[1], dyn[2], (int) dyn[3],
                                (int) dyn[5], (int) dyn[6], dyn[7], false, hs);
                        for (int h = 0; h < 8; h++) {
                            z += hs[h] * (h + 1);
                        }
                    }
                    return z;
                };
                v[2] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        eightPairs(seg, dyn[0], dyn[1], dyn[2], 8, 16, dyn[7], 64, 0, hs, false);
                        eightPairs(seg, dyn[4], dyn[1], dyn[2], 8, 16, dyn[7], 64, 32, hs, true);
                        for (int h = 0; h < 8; h++) {
                            z += hs[h] * (h + 1);
                        }
                    }
                    return z;
                };
                v[3] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        z += plainStrided(seg, 0, 2048, 256, 8, 16) + plainStrided(seg, 32768, 2048, 256, 8, 16);
                    }
                    return z;
                };
                v[4] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        z += plainSeq(seg, 0, 32768) + plainSeq(seg, 32768, 32768);
                    }
                    return z;
                };
                v[5] = () -> bound.read(MemoryBound.Reader.VECTOR256);
                long ref = v[1].getAsLong();
                for (int j : new int[] {0, 2}) {
                    long got = v[j].getAsLong();
                    if (got != ref) {
                        System.out.println(names[j] + " DIFFERS from prev: " + got + " vs " + ref);
                        System.exit(1);
                    }
                }
                if (v[3].getAsLong() != v[4].getAsLong()) {
                    System.out.println("strided and rows read different words");
                    System.exit(1);
                }
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    for (var s : v) {
                        sink += s.getAsLong();
                    }
                }
                int nv = v.length;
                double[][] t = new double[nv][rounds];
                for (int r = 0; r < rounds; r++) {
                    for (int j = 0; j < nv; j++) {
                        int w = (j + r) % nv;
                        long s = System.nanoTime();
                        sink += v[w].getAsLong();
                        t[w][r] = System.nanoTime() - s;
                    }
                }
                for (double[] x : t) {
                    Arrays.sort(x);
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder("llama3-8b-tp1 1MiB, 256-bit, " + rounds + " rounds:");
                for (int w = 0; w < nv; w++) {
                    sb.append(String.format("%n  %-7s best %6.1f GB/s, median %6.1f GB/s, best/bound %.3f, median/bound %.3f",
                            names[w], bytes / t[w][0], bytes / t[w][rounds / 2], t[nv - 1][0] / t[w][0],
                            t[nv - 1][rounds / 2] / t[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }
}
