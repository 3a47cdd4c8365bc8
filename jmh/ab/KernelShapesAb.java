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
 * Loop shapes for Llama-3-8B TP1 at 1MiB in cache, in one JVM, interleaved (not a benchmark; run by
 * {@code jmh/ab/in-cache-shapes-ab.sh}): {@code ship}, the kernel's {@code headsAffine} in cache, as the prepared plans
 * called it before issue 28's last in-cache step (at 512 bits {@code headFour}, at 256 K then V in {@code eightAffine});
 * {@code two}, two tokens per iteration, a call per region (512 bits: K then V of each head; 256 bits:
 * {@code eightAffine}'s loop so unrolled, every K then every V); {@code alt}, at 512 bits as {@code two} with every
 * head's K before any V (with {@code -Dalt=four}: four tokens per iteration, K then V of each head), at 256 each
 * eight-vector cell as two units of {@code rowPass}'s two running sums, two tokens per iteration; {@code nested}, at 512
 * bits {@code alt} with the loop over heads inside one method, as {@code VectorSliceKernel.fourHeadsByTwo} ships it (at
 * 256 bits likewise, {@code eightAffine}'s loop, {@link #eightHeads}); {@code bound}, the project's read bound. Every variant's sums are checked against
 * {@code ship}'s first (a line says DIFFERS otherwise); even token counts only (the fixture's blocks are 16). Prints best
 * and median GB/s over the rounds and each over the bound's.
 */
public final class KernelShapesAb {
    static final VectorSpecies<Long> S = KernelSpecies.S;
    static final int L = S.length();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** {@code alt} at 512 bits: four tokens per iteration (-Dalt=four), else two with every head's K before any V. */
    static final boolean FOUR = "four".equals(System.getProperty("alt"));

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        String[] names = {"ship", "two", "alt", "nested", "bound"};
        try (KvFixture fx = KvFixture.of("llama3-8b-tp1", "1MiB")) {
            List<MemorySegment> segs = fx.segments();
            VectorSliceKernel kern = new VectorSliceKernel(KernelSpecies.CHOSEN, true, true);
            long[] dyn = {0, 2048, 256, 32, 32768, 8, 16, 0};
            long[] hs = new long[8];
            try (MemoryBound bound = new MemoryBound(segs, 1)) {
                java.util.function.LongSupplier[] v = new java.util.function.LongSupplier[5];
                v[0] = () -> {
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
                v[1] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        headsU2(seg, dyn[0], dyn[1], dyn[2], seg, dyn[4], (int) dyn[5], (int) dyn[6], dyn[7], hs);
                        for (int h = 0; h < 8; h++) {
                            z += hs[h] * (h + 1);
                        }
                    }
                    return z;
                };
                v[2] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        headsAlt(seg, dyn[0], dyn[1], dyn[2], seg, dyn[4], (int) dyn[5], (int) dyn[6], dyn[7], hs);
                        for (int h = 0; h < 8; h++) {
                            z += hs[h] * (h + 1);
                        }
                    }
                    return z;
                };
                v[3] = () -> {
                    long z = 0;
                    for (MemorySegment seg : segs) {
                        headsNested(seg, dyn[0], dyn[1], dyn[2], seg, dyn[4], (int) dyn[5], (int) dyn[6], dyn[7], hs);
                        for (int h = 0; h < 8; h++) {
                            z += hs[h] * (h + 1);
                        }
                    }
                    return z;
                };
                v[4] = bound::read;
                long ref = v[0].getAsLong();
                for (int j = 1; j < 4; j++) {
                    long got = v[j].getAsLong();
                    if (got != ref) {
                        System.out.println(names[j] + " DIFFERS from ship: " + got + " vs " + ref);
                    }
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
                StringBuilder sb = new StringBuilder("llama3-8b-tp1 1MiB, " + S.vectorBitSize() + "-bit, " + rounds + " rounds:");
                for (int w = 0; w < nv; w++) {
                    sb.append(String.format("%n  %-6s best %6.1f GB/s, median %6.1f GB/s, best/bound %.3f, median/bound %.3f",
                            names[w], bytes / t[w][0], bytes / t[w][rounds / 2], t[nv - 1][0] / t[w][0], t[nv - 1][rounds / 2] / t[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }

    /** Two tokens per iteration: 512 bits K then V of each head, 256 bits every head's K, then every V. */
    static void headsU2(MemorySegment kSeg, long kBase, long stride, long headStride, MemorySegment vSeg, long vBase, int heads,
            int n, long t0, long[] out) {
        if (L == 8) {
            for (int h = 0; h < heads; h++) {
                out[h] = fourU2(kSeg, kBase + h * headStride, stride, n, t0, 64, 0)
                        + fourU2(vSeg, vBase + h * headStride, stride, n, t0, 64, 32);
            }
        } else {
            for (int h = 0; h < heads; h++) {
                out[h] = eightU2(kSeg, kBase + h * headStride, stride, n, t0, 64, 0);
            }
            for (int h = 0; h < heads; h++) {
                out[h] += eightU2(vSeg, vBase + h * headStride, stride, n, t0, 64, 32);
            }
        }
    }

    static long fourU2(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 8L * L;
        int i = 0;
        for (; i + 2 <= n; i += 2) {
            long a = base + i * stride;
            long b = a + stride;
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, b, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, b + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, b + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, b + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return VectorSliceKernel.closeTokens(a0, a1, a2, a3, s0.add(s1).add(s2.add(s3)), n, t0, cellPieces, pieceBase);
    }

    static long fourU4(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        final long vb = 8L * L;
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            long a = base + i * stride;
            long b = a + stride;
            long c = b + stride;
            long d = c + stride;
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, b, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, b + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, b + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, b + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, c, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, c + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, c + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, c + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, d, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, d + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, d + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, d + 3 * vb, LE));
            s0 = s0.add(a0);
            s1 = s1.add(a1);
            s2 = s2.add(a2);
            s3 = s3.add(a3);
        }
        return VectorSliceKernel.closeTokens(a0, a1, a2, a3, s0.add(s1).add(s2.add(s3)), n, t0, cellPieces, pieceBase);
    }

    static long eightU2(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
        LongVector s0 = zero;
        final long vb = 8L * L;
        int i = 0;
        for (; i + 2 <= n; i += 2) {
            long a = base + i * stride;
            long c = a + stride;
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
            b0 = b0.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
            b1 = b1.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
            b2 = b2.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
            b3 = b3.add(LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE));
            s0 = s0.add(a0.add(b0).add(a1.add(b1)).add(a2.add(b2).add(a3.add(b3))));
            a0 = a0.add(LongVector.fromMemorySegment(S, seg, c, LE));
            a1 = a1.add(LongVector.fromMemorySegment(S, seg, c + vb, LE));
            a2 = a2.add(LongVector.fromMemorySegment(S, seg, c + 2 * vb, LE));
            a3 = a3.add(LongVector.fromMemorySegment(S, seg, c + 3 * vb, LE));
            b0 = b0.add(LongVector.fromMemorySegment(S, seg, c + 4 * vb, LE));
            b1 = b1.add(LongVector.fromMemorySegment(S, seg, c + 5 * vb, LE));
            b2 = b2.add(LongVector.fromMemorySegment(S, seg, c + 6 * vb, LE));
            b3 = b3.add(LongVector.fromMemorySegment(S, seg, c + 7 * vb, LE));
            s0 = s0.add(a0.add(b0).add(a1.add(b1)).add(a2.add(b2).add(a3.add(b3))));
        }
        long hi = b0.add(b1).add(b2.add(b3)).reduceLanes(VectorOperators.ADD) << VectorSliceKernel.SHIFT_8L;
        return hi + VectorSliceKernel.closeTokens(a0.add(b0), a1.add(b1), a2.add(b2), a3.add(b3), s0, n,
                t0, cellPieces, pieceBase);
    }

    /** 512 bits: see {@link #FOUR}; 256 bits: {@link #unitsEight}, K then V. */
    static void headsAlt(MemorySegment kSeg, long kBase, long stride, long headStride, MemorySegment vSeg, long vBase, int heads,
            int n, long t0, long[] out) {
        if (L == 8) {
            for (int h = 0; h < heads; h++) {
                out[h] = (FOUR ? fourU4(kSeg, kBase + h * headStride, stride, n, t0, 64, 0) : fourU2(kSeg, kBase + h * headStride, stride, n, t0, 64, 0))
                        + (FOUR ? fourU4(vSeg, vBase + h * headStride, stride, n, t0, 64, 32) : 0);
            }
            for (int h = 0; !FOUR && h < heads; h++) {
                out[h] += fourU2(vSeg, vBase + h * headStride, stride, n, t0, 64, 32);
            }
        } else {
            for (int h = 0; h < heads; h++) {
                out[h] = unitsEight(kSeg, kBase + h * headStride, stride, n, t0, 64, 0);
            }
            for (int h = 0; h < heads; h++) {
                out[h] += unitsEight(vSeg, vBase + h * headStride, stride, n, t0, 64, 32);
            }
        }
    }

    /** Eight vectors per token as two units of four, two running sums each (rowPass's form), two tokens per iteration. */
    static long unitsEight(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase) {
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * L;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / L);
        LongVector a0 = zero, a1 = zero, w0 = zero, w1 = zero;
        for (int i = 0; i < n; i += 2) {
            long p = base + i * stride;
            long q = p + stride;
            LongVector x0, x1, x2, x3, r1, r2;
            x0 = LongVector.fromMemorySegment(S, seg, p, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p + 4 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, p + 5 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, p + 6 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, p + 7 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, q, LE);
            x1 = LongVector.fromMemorySegment(S, seg, q + vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, q + 2 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, q + 3 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, q + 4 * vb, LE);
            x1 = LongVector.fromMemorySegment(S, seg, q + 5 * vb, LE);
            x2 = LongVector.fromMemorySegment(S, seg, q + 6 * vb, LE);
            x3 = LongVector.fromMemorySegment(S, seg, q + 7 * vb, LE);
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        return a0.mul(k).add(a1.mul(k.add(8L * L))).sub(w0.add(w1).lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L))
                .reduceLanes(VectorOperators.ADD);
    }

    /** Every head's region of four vectors, two tokens per iteration, the loop over heads inside. */
    static void fourHeads(MemorySegment seg, long base0, long stride, long headStride, int heads, int n, long t0, int cellPieces,
            int pieceBase, long[] out, boolean add) {
        final long vb = 8L * L;
        for (int h = 0; h < heads; h++) {
            final LongVector zero = LongVector.zero(S);
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            long base = base0 + h * headStride;
            for (int i = 0; i < n; i += 2) {
                long a = base + i * stride;
                long b = a + stride;
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, b, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, b + vb, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, b + 2 * vb, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, b + 3 * vb, LE));
                s0 = s0.add(a0);
                s1 = s1.add(a1);
                s2 = s2.add(a2);
                s3 = s3.add(a3);
            }
            long r = VectorSliceKernel.closeTokens(a0, a1, a2, a3, s0.add(s1).add(s2.add(s3)), n, t0, cellPieces, pieceBase);
            out[h] = add ? out[h] + r : r;
        }
    }

    /** {@code nested}: 512 bits as {@code alt} with the loop over heads inside one method ({@link #fourHeads}); 256 bits as {@code ship}. */
    static void headsNested(MemorySegment kSeg, long kBase, long stride, long headStride, MemorySegment vSeg, long vBase, int heads,
            int n, long t0, long[] out) {
        if (L == 8) {
            fourHeads(kSeg, kBase, stride, headStride, heads, n, t0, 64, 0, out, false);
            fourHeads(vSeg, vBase, stride, headStride, heads, n, t0, 64, 32, out, true);
        } else {
            eightHeads(kSeg, kBase, stride, headStride, heads, n, t0, 64, 0, out, false);
            eightHeads(vSeg, vBase, stride, headStride, heads, n, t0, 64, 32, out, true);
        }
    }

    /** Every head's region of eight vectors ({@code eightAffine}'s loop), the loop over heads inside. */
    static void eightHeads(MemorySegment seg, long base0, long stride, long headStride, int heads, int n, long t0, int cellPieces,
            int pieceBase, long[] out, boolean add) {
        final long vb = 8L * L;
        for (int h = 0; h < heads; h++) {
            final LongVector zero = LongVector.zero(S);
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector b0 = zero, b1 = zero, b2 = zero, b3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            long base = base0 + h * headStride;
            for (int i = 0; i < n; i++) {
                long a = base + i * stride;
                a0 = a0.add(LongVector.fromMemorySegment(S, seg, a, LE));
                a1 = a1.add(LongVector.fromMemorySegment(S, seg, a + vb, LE));
                a2 = a2.add(LongVector.fromMemorySegment(S, seg, a + 2 * vb, LE));
                a3 = a3.add(LongVector.fromMemorySegment(S, seg, a + 3 * vb, LE));
                b0 = b0.add(LongVector.fromMemorySegment(S, seg, a + 4 * vb, LE));
                b1 = b1.add(LongVector.fromMemorySegment(S, seg, a + 5 * vb, LE));
                b2 = b2.add(LongVector.fromMemorySegment(S, seg, a + 6 * vb, LE));
                b3 = b3.add(LongVector.fromMemorySegment(S, seg, a + 7 * vb, LE));
                s0 = s0.add(a0).add(b0);
                s1 = s1.add(a1).add(b1);
                s2 = s2.add(a2).add(b2);
                s3 = s3.add(a3).add(b3);
            }
            long hi = b0.add(b1).add(b2.add(b3)).reduceLanes(VectorOperators.ADD) << VectorSliceKernel.SHIFT_8L;
            long r = hi + VectorSliceKernel.closeTokens(a0.add(b0), a1.add(b1), a2.add(b2), a3.add(b3), s0.add(s1).add(s2.add(s3)),
                    n, t0, cellPieces, pieceBase);
            out[h] = add ? out[h] + r : r;
        }
    }
}
