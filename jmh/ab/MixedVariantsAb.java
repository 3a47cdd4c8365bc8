package io.kvchecksum.internal;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.jmh.KvFixture;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Constructor;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A/B of loop forms for the mixed mode's row pass from memory (not a benchmark; built and run by
 * {@code jmh/ab/mixed-variants-ab.sh}, one JVM per variant, the JVMs alternating): the shipped row pass
 * ({@code rows}); {@code touch}, one byte read {@value #TOUCH} bytes ahead per vector (a demand load standing in for
 * the prefetch instruction Java lacks); {@code pagetouch}, two bytes read {@value #TOUCH} bytes ahead per row (the next
 * 4 KiB page, where the hardware prefetchers stop); {@code narrow}, the row pass in 256-bit vectors at 512-bit
 * preferred width; {@code two}, two mixers per step (the shipped loop at 256 bits until 2026-12-07); {@code regs}, the standard row
 * pass's algebra (units of four vectors, two sums each) on mixed vectors with the sums in registers, half a row per
 * loop body ({@link #rowRegs}; 2 KiB rows at 512 bits); {@code units}, the same algebra a unit per step with the
 * unit's sums in a thread's scratch ({@link #rowUnitScratch}); {@code halves} and {@code quarters}, the register form
 * with half and quarter rows per loop body; {@code scratch}, the row pass with every row vector's sums in a thread's
 * scratch (shipped until 2026-12-07; since then {@code rows}, the shipped kernel, reads 2 KiB rows at 512 bits as
 * {@code rot8} does); {@code qcalls}, {@code quarters} with the mixer called; {@code rot8}, a unit per loop body and
 * the eight units' sums rotated ({@code MixedVectorSliceKernel.rowRegs}). docs/bench-cpu.md, "Row sums in registers". Each JVM runs its
 * variant and the shipped standard mode in rotating turns and prints the mixed/standard ratios of wall time and of CPU
 * time (all of the JVM's threads), best and median; the variant's block checksums are compared with the shipped mixed
 * mode's first (exit on a difference). docs/bench-cpu.md, "Mixed mode cost".
 *
 * <p>System property {@code variant} (default {@code rows}); arguments: shape, size, threads, rounds.
 */
public final class MixedVariantsAb {
    private static final VectorSpecies<Long> S = KernelSpecies.S;
    private static final VectorSpecies<Long> S256 = LongVector.SPECIES_256;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long M32 = 0xFFFFFFFFL;
    private static final long HI = ~M32;
    private static final long TOUCH = 4096;
    private static final String[] VARIANTS = {"rows", "touch", "pagetouch", "narrow", "two", "regs", "units", "halves", "quarters", "scratch", "qcalls", "rot8"};
    /** The variant of this JVM, a constant so that C2 compiles only its loop (several mixers in one compile unit box). */
    private static final int VARIANT = Arrays.asList(VARIANTS).indexOf(System.getProperty("variant", "rows"));
    private static final ThreadLocal<long[][]> SUMS = ThreadLocal.withInitial(() -> new long[2][0]);
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static volatile long blackhole;

    /** The shipped mixed kernel, its side-by-side heads from memory through this JVM's variant of the row pass. */
    private static final class Kernel implements SliceKernel {
        private final MixedVectorSliceKernel mixed = VARIANT == 9 ? new MixedVectorSliceKernel(true, false)
                : new MixedVectorSliceKernel();

        @Override
        public long sum(MemorySegment seg, long[] off, long extra, int n, long t0, int cellPieces, int pieceBase,
                int regionPieces) {
            return mixed.sum(seg, off, extra, n, t0, cellPieces, pieceBase, regionPieces);
        }

        @Override
        public void sumRows(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int regionPieces,
                int heads, long[] a, long[] t, long[] out) {
            mixed.sumRows(seg, off, n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
        }

        @Override
        public boolean affine(int regionPieces, long tokenStride, int cellPieces) {
            return mixed.affine(regionPieces, tokenStride, cellPieces);
        }

        @Override
        public long sumAffine(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
                int regionPieces) {
            return mixed.sumAffine(seg, base, stride, n, t0, cellPieces, pieceBase, regionPieces);
        }

        @Override
        public boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
            return mixed.rowsAffine(heads, kPieces, kHeadStride, vPieces, vHeadStride);
        }

        @Override
        public void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces,
                MemorySegment vSeg, long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0,
                boolean fromMemory, long[] out) {
            if (VARIANT == 0 || VARIANT == 9 || !fromMemory || !rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)) {
                mixed.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                        heads, n, t0, fromMemory, out);
                return;
            }
            int cell = kPieces + (vSeg == null ? 0 : vPieces);
            Arrays.fill(out, 0, heads, 0);
            if (VARIANT >= 5) {
                if (!unitRow(heads, kPieces, cell) || (vSeg != null && !unitRow(heads, vPieces, cell))) {
                    mixed.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride,
                            vPieces, heads, n, t0, fromMemory, out);
                    return;
                }
                rowUnits(kSeg, kBase, kStride, n, t0, cell, 0, kPieces, heads, out);
                if (vSeg != null) {
                    rowUnits(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces, heads, out);
                }
                return;
            }
            rowPass(kSeg, kBase, kStride, n, t0, cell, 0, kPieces, heads, out);
            if (vSeg != null) {
                rowPass(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces, heads, out);
            }
        }

        @Override
        public String describe() {
            return "mixed, row pass variant " + VARIANTS[VARIANT];
        }
    }

    /** {@code MixedVectorSliceKernel.rowPass} in this JVM's variant. */
    static void rowPass(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] out) {
        int total = heads * regionPieces;
        long[][] sums = SUMS.get();
        if (sums[0].length < total) {
            sums[0] = new long[total];
            sums[1] = new long[total];
        }
        long[] a = sums[0];
        long[] t = sums[1];
        Arrays.fill(a, 0, total, 0);
        Arrays.fill(t, 0, total, 0);
        long last = seg.byteSize() - 1;
        long touched = 0;
        int lanes = S.length();
        for (int i = 0; i < n; i++) {
            long at = base + i * stride;
            if (VARIANT == 1) {
                for (int q = 0; q < total; q += lanes) {
                    touched += seg.get(ValueLayout.JAVA_BYTE, Math.min(at + 8L * q + TOUCH, last));
                    LongVector sum = LongVector.fromArray(S, a, q)
                            .add(MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE)));
                    sum.intoArray(a, q);
                    LongVector.fromArray(S, t, q).add(sum).intoArray(t, q);
                }
            } else if (VARIANT == 4) {
                int q = 0;
                for (; q + 2 * lanes <= total; q += 2 * lanes) {
                    LongVector x0 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE));
                    LongVector x1 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * (q + lanes), LE));
                    LongVector s0 = LongVector.fromArray(S, a, q).add(x0);
                    LongVector s1 = LongVector.fromArray(S, a, q + lanes).add(x1);
                    s0.intoArray(a, q);
                    s1.intoArray(a, q + lanes);
                    LongVector.fromArray(S, t, q).add(s0).intoArray(t, q);
                    LongVector.fromArray(S, t, q + lanes).add(s1).intoArray(t, q + lanes);
                }
                for (; q < total; q += lanes) {
                    LongVector sum = LongVector.fromArray(S, a, q)
                            .add(MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE)));
                    sum.intoArray(a, q);
                    LongVector.fromArray(S, t, q).add(sum).intoArray(t, q);
                }
            } else if (VARIANT == 2) {
                touched += seg.get(ValueLayout.JAVA_BYTE, Math.min(at + TOUCH, last))
                        + seg.get(ValueLayout.JAVA_BYTE, Math.min(at + TOUCH + 64, last));
                for (int q = 0; q < total; q += lanes) {
                    LongVector sum = LongVector.fromArray(S, a, q)
                            .add(MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, at + 8L * q, LE)));
                    sum.intoArray(a, q);
                    LongVector.fromArray(S, t, q).add(sum).intoArray(t, q);
                }
            } else {
                for (int q = 0; q < total; q += 4) {
                    LongVector sum = LongVector.fromArray(S256, a, q)
                            .add(mix256(LongVector.fromMemorySegment(S256, seg, at + 8L * q, LE)));
                    sum.intoArray(a, q);
                    LongVector.fromArray(S256, t, q).add(sum).intoArray(t, q);
                }
            }
        }
        if (touched == 42) {
            blackhole = touched;
        }
        SliceKernel.finishRows(n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
    }

    /**
     * Whether a row of {@code heads} regions of {@code pieces} is whole units of four vectors with a cell of a power of
     * two vectors (the standard row pass's algebra); {@code regs} also needs eight units (a 2 KiB row at 512 bits).
     */
    static boolean unitRow(int heads, int pieces, int cellPieces) {
        int lanes = S.length();
        return pieces % (4 * lanes) == 0 && cellPieces % lanes == 0 && Integer.bitCount(cellPieces / lanes) == 1
                && (VARIANT == 6 || heads * pieces == 32 * lanes);
    }

    /** {@code regs}: {@link #rowRegs}; {@code units}: {@link #rowUnitScratch}. */
    static void rowUnits(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, int heads, long[] out) {
        int perHead = regionPieces / (4 * S.length());
        if (VARIANT == 5) {
            rowRegs(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
        } else if (VARIANT == 11) {
            rowRotate(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
        } else if (VARIANT == 10) {
            rowQuarterCalls(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
        } else if (VARIANT == 8) {
            rowQuarters(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, out);
        } else if (VARIANT == 7) {
            rowHalf(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, 0, out);
            rowHalf(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, 4, out);
        } else {
            rowUnitScratch(seg, base, stride, n, t0, cellPieces, pieceBase, perHead, heads * perHead, out);
        }
    }

    /**
     * The standard row pass's algebra on mixed vectors, sums in registers ({@code VectorSliceKernel.rowEight}): eight
     * units of four vectors, per unit {@code A += X}, {@code T += (A << s) - K} ({@code X} the unit's mixed vectors
     * summed, {@code K = x1 + 2x2 + 3x3}); the loop body reads half a row (sixteen mixers) and swaps the halves' sums.
     * The mixer is written out ({@code MixedVectorSliceKernel.mix} operation for operation): called sixteen times, C2
     * stopped inlining it at NodeCountInliningCutoff (14 of 16 sites, -XX:+PrintInlining) and boxed the vectors.
     */
    static void rowRegs(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int lanes = S.length();
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * lanes;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / lanes);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 2 * n; k++) {
            long p0 = base + (k >> 1) * stride + (k & 1) * 16 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p, q;
            x0 = LongVector.fromMemorySegment(S, seg, p0, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 1 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p0 + 4 * vb, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 5 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 6 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 7 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p0 + 8 * vb, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 9 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 10 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 11 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a2 = a2.add(x0.add(r1));
            w2 = w2.add(a2.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p0 + 12 * vb, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 13 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 14 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 15 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a3 = a3.add(x0.add(r1));
            w3 = w3.add(a3.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            q = a0; a0 = a4; a4 = q;
            q = w0; w0 = w4; w4 = q;
            q = a1; a1 = a5; a5 = q;
            q = w1; w1 = w5; w5 = q;
            q = a2; a2 = a6; a6 = q;
            q = w2; w2 = w6; w6 = q;
            q = a3; a3 = a7; a7 = q;
            q = w3; w3 = w7; w7 = q;
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        // written out: an array of the sums boxed them, once per call (a block)
        out[0 / perHead] += a0.mul(k.add(8L * lanes * (0 % perHead)))
                .sub(w0.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[1 / perHead] += a1.mul(k.add(8L * lanes * (1 % perHead)))
                .sub(w1.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[2 / perHead] += a2.mul(k.add(8L * lanes * (2 % perHead)))
                .sub(w2.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[3 / perHead] += a3.mul(k.add(8L * lanes * (3 % perHead)))
                .sub(w3.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[4 / perHead] += a4.mul(k.add(8L * lanes * (4 % perHead)))
                .sub(w4.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[5 / perHead] += a5.mul(k.add(8L * lanes * (5 % perHead)))
                .sub(w5.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[6 / perHead] += a6.mul(k.add(8L * lanes * (6 % perHead)))
                .sub(w6.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[7 / perHead] += a7.mul(k.add(8L * lanes * (7 % perHead)))
                .sub(w7.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@code quarters}: as {@link #rowRegs}, a quarter row (two units, eight mixers) per loop body and the four
     * quarters' sums rotated ({@code VectorSliceKernel.rowPass256}'s shape).
     */
    static void rowQuarters(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int lanes = S.length();
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * lanes;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / lanes);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 4 * n; k++) {
            long p0 = base + (k >> 2) * stride + (k & 3) * 8 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p, q;
            x0 = LongVector.fromMemorySegment(S, seg, p0, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 1 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p0 + 4 * vb, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 5 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 6 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 7 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            q = a0; a0 = a2; a2 = a4; a4 = a6; a6 = q;
            q = a1; a1 = a3; a3 = a5; a5 = a7; a7 = q;
            q = w0; w0 = w2; w2 = w4; w4 = w6; w6 = q;
            q = w1; w1 = w3; w3 = w5; w5 = w7; w7 = q;
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        // written out: an array of the sums boxed them, once per call (a block)
        out[0 / perHead] += a0.mul(k.add(8L * lanes * (0 % perHead)))
                .sub(w0.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[1 / perHead] += a1.mul(k.add(8L * lanes * (1 % perHead)))
                .sub(w1.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[2 / perHead] += a2.mul(k.add(8L * lanes * (2 % perHead)))
                .sub(w2.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[3 / perHead] += a3.mul(k.add(8L * lanes * (3 % perHead)))
                .sub(w3.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[4 / perHead] += a4.mul(k.add(8L * lanes * (4 % perHead)))
                .sub(w4.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[5 / perHead] += a5.mul(k.add(8L * lanes * (5 % perHead)))
                .sub(w5.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[6 / perHead] += a6.mul(k.add(8L * lanes * (6 % perHead)))
                .sub(w6.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[7 / perHead] += a7.mul(k.add(8L * lanes * (7 % perHead)))
                .sub(w7.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
    }

    /** {@code rot8}: {@link #rowRegs} a unit (four mixers) per loop body, the eight units' sums rotated. */
    static void rowRotate(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int lanes = S.length();
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * lanes;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / lanes);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 8 * n; k++) {
            long p0 = base + (k >> 3) * stride + (k & 7) * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p, q;
            x0 = LongVector.fromMemorySegment(S, seg, p0, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 1 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            q = a0; a0 = a1; a1 = a2; a2 = a3; a3 = a4; a4 = a5; a5 = a6; a6 = a7; a7 = q;
            q = w0; w0 = w1; w1 = w2; w2 = w3; w3 = w4; w4 = w5; w5 = w6; w6 = w7; w7 = q;
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        // written out: an array of the sums boxed them, once per call (a block)
        out[0 / perHead] += a0.mul(k.add(8L * lanes * (0 % perHead)))
                .sub(w0.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[1 / perHead] += a1.mul(k.add(8L * lanes * (1 % perHead)))
                .sub(w1.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[2 / perHead] += a2.mul(k.add(8L * lanes * (2 % perHead)))
                .sub(w2.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[3 / perHead] += a3.mul(k.add(8L * lanes * (3 % perHead)))
                .sub(w3.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[4 / perHead] += a4.mul(k.add(8L * lanes * (4 % perHead)))
                .sub(w4.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[5 / perHead] += a5.mul(k.add(8L * lanes * (5 % perHead)))
                .sub(w5.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[6 / perHead] += a6.mul(k.add(8L * lanes * (6 % perHead)))
                .sub(w6.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[7 / perHead] += a7.mul(k.add(8L * lanes * (7 % perHead)))
                .sub(w7.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
    }

    /** {@code qcalls}: {@link #rowQuarters} with the mixer called, not written out (eight call sites). */
    static void rowQuarterCalls(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, long[] out) {
        final int lanes = S.length();
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * lanes;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / lanes);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero;
        for (int k = 0; k < 4 * n; k++) {
            long p0 = base + (k >> 2) * stride + (k & 3) * 8 * vb;
            LongVector x0, x1, x2, x3, r1, r2, q;
            x0 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0, LE));
            x1 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0 + 1 * vb, LE));
            x2 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0 + 2 * vb, LE));
            x3 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0 + 3 * vb, LE));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0 + 4 * vb, LE));
            x1 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0 + 5 * vb, LE));
            x2 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0 + 6 * vb, LE));
            x3 = MixedVectorSliceKernel.mix(LongVector.fromMemorySegment(S, seg, p0 + 7 * vb, LE));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            q = a0; a0 = a2; a2 = a4; a4 = a6; a6 = q;
            q = a1; a1 = a3; a3 = a5; a5 = a7; a7 = q;
            q = w0; w0 = w2; w2 = w4; w4 = w6; w6 = q;
            q = w1; w1 = w3; w3 = w5; w5 = w7; w7 = q;
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        // written out: an array of the sums boxed them, once per call (a block)
        out[0 / perHead] += a0.mul(k.add(8L * lanes * (0 % perHead)))
                .sub(w0.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[1 / perHead] += a1.mul(k.add(8L * lanes * (1 % perHead)))
                .sub(w1.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[2 / perHead] += a2.mul(k.add(8L * lanes * (2 % perHead)))
                .sub(w2.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[3 / perHead] += a3.mul(k.add(8L * lanes * (3 % perHead)))
                .sub(w3.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[4 / perHead] += a4.mul(k.add(8L * lanes * (4 % perHead)))
                .sub(w4.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[5 / perHead] += a5.mul(k.add(8L * lanes * (5 % perHead)))
                .sub(w5.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[6 / perHead] += a6.mul(k.add(8L * lanes * (6 % perHead)))
                .sub(w6.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[7 / perHead] += a7.mul(k.add(8L * lanes * (7 % perHead)))
                .sub(w7.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@code halves}: the row in two passes over the block of four units each (units {@code u..u+3}, as
     * {@code VectorSliceKernel.rowFour}): eight accumulators instead of sixteen, sixteen mixers per loop body, no swaps.
     */
    static void rowHalf(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, int u, long[] out) {
        final int lanes = S.length();
        final LongVector zero = LongVector.zero(S);
        final long vb = 8L * lanes;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / lanes);
        LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        LongVector w0 = zero, w1 = zero, w2 = zero, w3 = zero;
        for (int i = 0; i < n; i++) {
            long p0 = base + i * stride + u * 4 * vb;
            LongVector x0, x1, x2, x3, r1, r2, p;
            x0 = LongVector.fromMemorySegment(S, seg, p0, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 1 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 2 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 3 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a0 = a0.add(x0.add(r1));
            w0 = w0.add(a0.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p0 + 4 * vb, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 5 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 6 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 7 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a1 = a1.add(x0.add(r1));
            w1 = w1.add(a1.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p0 + 8 * vb, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 9 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 10 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 11 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a2 = a2.add(x0.add(r1));
            w2 = w2.add(a2.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
            x0 = LongVector.fromMemorySegment(S, seg, p0 + 12 * vb, LE);
            p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x1 = LongVector.fromMemorySegment(S, seg, p0 + 13 * vb, LE);
            p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x2 = LongVector.fromMemorySegment(S, seg, p0 + 14 * vb, LE);
            p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            x3 = LongVector.fromMemorySegment(S, seg, p0 + 15 * vb, LE);
            p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
            p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
            x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
            r2 = x2.add(x3);
            r1 = x1.add(r2);
            a3 = a3.add(x0.add(r1));
            w3 = w3.add(a3.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)));
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        out[(u + 0) / perHead] += a0.mul(k.add(8L * lanes * ((u + 0) % perHead)))
                .sub(w0.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[(u + 1) / perHead] += a1.mul(k.add(8L * lanes * ((u + 1) % perHead)))
                .sub(w1.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[(u + 2) / perHead] += a2.mul(k.add(8L * lanes * ((u + 2) % perHead)))
                .sub(w2.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
        out[(u + 3) / perHead] += a3.mul(k.add(8L * lanes * ((u + 3) % perHead)))
                .sub(w3.lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L)).reduceLanes(VectorOperators.ADD);
    }

    /**
     * The same algebra a unit per step (four mixers), each unit's two sums in a thread's scratch: one load and one
     * store of the scratch per vector instead of the shipped row pass's two and two.
     */
    static void rowUnitScratch(MemorySegment seg, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int perHead, int units, long[] out) {
        final int lanes = S.length();
        final long vb = 8L * lanes;
        final int shift = Integer.numberOfTrailingZeros(cellPieces / lanes);
        int total = units * lanes;
        long[][] sums = SUMS.get();
        if (sums[0].length < total) {
            sums[0] = new long[total];
            sums[1] = new long[total];
        }
        long[] a = sums[0];
        long[] w = sums[1];
        Arrays.fill(a, 0, total, 0);
        Arrays.fill(w, 0, total, 0);
        // one loop over (token, unit) steps: with an inner loop over a row's units C2 trapped at that loop's profiled
        // predicate and recompiled without end (-Xlog:deoptimization: profile_predicate), the vectors boxed meanwhile
        long row = base;
        int q = 0;
        for (int k = n * units; k > 0; k--) {
            {
                long at = row + 32L * q;
                LongVector p;
                LongVector x0 = LongVector.fromMemorySegment(S, seg, at, LE);
                p = x0.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                p = x0.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                x0 = x0.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
                p = x0.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                x0 = x0.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                LongVector x1 = LongVector.fromMemorySegment(S, seg, at + vb, LE);
                p = x1.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                p = x1.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                x1 = x1.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
                p = x1.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                x1 = x1.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                LongVector x2 = LongVector.fromMemorySegment(S, seg, at + 2 * vb, LE);
                p = x2.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                p = x2.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                x2 = x2.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
                p = x2.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                x2 = x2.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                LongVector x3 = LongVector.fromMemorySegment(S, seg, at + 3 * vb, LE);
                p = x3.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                p = x3.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                x3 = x3.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
                p = x3.and(M32).mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                x3 = x3.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
                LongVector r2 = x2.add(x3);
                LongVector r1 = x1.add(r2);
                LongVector s = LongVector.fromArray(S, a, q).add(x0.add(r1));
                s.intoArray(a, q);
                LongVector.fromArray(S, w, q).add(s.lanewise(VectorOperators.LSHL, shift).sub(r1.add(r2).add(x3)))
                        .intoArray(w, q);
            }
            q += lanes;
            if (q == total) {
                q = 0;
                row += stride;
            }
        }
        long c0 = 2 * (t0 * cellPieces + pieceBase) + 1 + ((long) n << shift << VectorSliceKernel.SHIFT_2L);
        LongVector k = VectorSliceKernel.TWO_IOTA.add(c0);
        // a head's units summed as vectors, one reduction per head (the shipped row pass's closing; a reduction per
        // unit with out[u / perHead] trapped and recompiled without end: profile_predicate, -Xlog:deoptimization)
        q = 0;
        for (int h = 0; q < total; h++) {
            LongVector g = LongVector.zero(S);
            for (int j = 0; j < perHead; j++, q += lanes) {
                g = g.add(LongVector.fromArray(S, a, q).mul(k.add(8L * lanes * j)))
                        .sub(LongVector.fromArray(S, w, q).lanewise(VectorOperators.LSHL, VectorSliceKernel.SHIFT_2L));
            }
            out[h] += g.reduceLanes(VectorOperators.ADD);
        }
    }

    /** {@code MixedVectorSliceKernel.mix} in 256-bit vectors. */
    static LongVector mix256(LongVector x) {
        LongVector p = x.and(M32).mul(LongVector.broadcast(S256, 0x9E3779B9L).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
        p = x.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S256, 0x85EBCA6BL).and(M32));
        x = x.lanewise(VectorOperators.XOR, p.and(M32)).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32));
        p = x.and(M32).mul(LongVector.broadcast(S256, 0xC2B2AE35L).and(M32));
        return x.lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32).lanewise(VectorOperators.XOR, p).and(HI));
    }

    private static long cpuNanos() {
        long sum = 0;
        for (long id : THREADS.getAllThreadIds()) {
            sum += Math.max(0, THREADS.getThreadCpuTime(id));
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        if (VARIANT < 0) {
            throw new IllegalArgumentException("-Dvariant= one of " + Arrays.toString(VARIANTS));
        }
        String shape = args[0];
        String size = args[1];
        int threads = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        try (KvFixture fx = KvFixture.of(shape, size)) {
            SlicePlan plan = SlicePlan.of(fx.group(), fx.request());
            SlicePlan mixedPlan = SlicePlan.of(fx.group(), fx.request(), ChecksumMode.MIXED);
            Constructor<FastCpuBackend> c = FastCpuBackend.class.getDeclaredConstructor(int.class, SliceKernel.class, long.class);
            c.setAccessible(true);
            KvChecksum variant = KvChecksum.of(c.newInstance(threads, new Kernel(), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum cpu = KvChecksums.cpu(threads);
            if (!Arrays.equals(cpu.blockChecksums(mixedPlan), variant.blockChecksums(plan))) {
                throw new AssertionError(VARIANTS[VARIANT] + " and the shipped mixed mode differ");
            }
            long sink = 0;
            long until = System.nanoTime() + 3_000_000_000L;
            while (System.nanoTime() < until) {
                sink += variant.blockChecksums(plan)[0] + cpu.blockChecksums(plan)[0];
            }
            double[][] wall = new double[2][rounds];
            double[][] cpuT = new double[2][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int j = 0; j < 2; j++) {
                    int w = (j + r) % 2;
                    long c0 = cpuNanos();
                    long s = System.nanoTime();
                    sink += (w == 0 ? variant : cpu).blockChecksums(plan)[0];
                    wall[w][r] = System.nanoTime() - s;
                    cpuT[w][r] = cpuNanos() - c0;
                }
            }
            for (int w = 0; w < 2; w++) {
                Arrays.sort(wall[w]);
                Arrays.sort(cpuT[w]);
            }
            System.out.printf("%-9s %s %s, %d threads, %d rounds, %d-bit: mixed/standard wall best %.3f, median %.3f; "
                    + "CPU time best %.3f, median %.3f (standard best %.1f GB/s)%s%n", VARIANTS[VARIANT], shape, size,
                    threads, rounds, S.vectorBitSize(), wall[1][0] / wall[0][0], wall[1][rounds / 2] / wall[0][rounds / 2],
                    cpuT[1][0] / cpuT[0][0], cpuT[1][rounds / 2] / cpuT[0][rounds / 2], fx.kvBytes() / wall[1][0],
                    sink == 42 ? " " : "");
        }
    }
}
