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
 * preferred width; {@code two}, two mixers per step (the shipped loop at 256 bits until 2026-12-07). Each JVM runs its
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
    private static final String[] VARIANTS = {"rows", "touch", "pagetouch", "narrow", "two"};
    /** The variant of this JVM, a constant so that C2 compiles only its loop (several mixers in one compile unit box). */
    private static final int VARIANT = Arrays.asList(VARIANTS).indexOf(System.getProperty("variant", "rows"));
    private static final ThreadLocal<long[][]> SUMS = ThreadLocal.withInitial(() -> new long[2][0]);
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static volatile long blackhole;

    /** The shipped mixed kernel, its side-by-side heads from memory through this JVM's variant of the row pass. */
    private static final class Kernel implements SliceKernel {
        private final MixedVectorSliceKernel mixed = new MixedVectorSliceKernel();

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
            if (VARIANT == 0 || !fromMemory || !rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)) {
                mixed.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces,
                        heads, n, t0, fromMemory, out);
                return;
            }
            int cell = kPieces + (vSeg == null ? 0 : vPieces);
            Arrays.fill(out, 0, heads, 0);
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
