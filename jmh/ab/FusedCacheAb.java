package io.kvchecksum.internal;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import io.kvchecksum.jmh.KvFixture;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A/B of the CPU backend's in-cache path in one JVM (not a benchmark; built and run by {@code jmh/ab/fused-cache-ab.sh}):
 * {@code old}, every call through the plan's objects layer by layer ({@code FastCpuBackend.compute}) and K's and V's
 * eight-vector cells in one loop (the path before issue 28's in-cache work), against {@code fused}, the backend as it
 * ships (the plan's prepared form; two loops), {@code bound}, the project's read bound, and {@code kernel}, the kernel's
 * calls alone on the fixture's segments as the prepared plans make them ({@code headsInCache}; MLA's layers two per
 * {@code streamPair} where the kernel pairs streams) (Llama-3-8B TP1 or DeepSeek MLA bf16 at one block; arguments read
 * from an array, not constants): what the loops cost without the backend around them; and {@code prev}, the prepared form with
 * the kernel's calls before the in-cache forms of issue 28's last step ({@code headsAffine} per layer instead of
 * {@code headsInCache}, one MLA layer per loop instead of {@code streamPair}'s two); and {@code krows}, the kernel alone
 * as {@code kernel} but with Llama-3-8B's rows read by the row pass ({@code headsAffine} as from memory:
 * {@code rowEight} at 512 bits, {@code rowPass256} at 256) and MLA one stream per layer (docs/bench-cpu.md, "On Intel
 * (Emerald Rapids): the fused pass"). One call each in turn with the order
 * rotating, so a loaded machine's noise hits all alike; prints best and median GB/s and each side's over the bound's.
 * The two backends' block checksums are compared first (exit on a difference).
 *
 * <p>Arguments: shape ({@code llama3-8b-tp1} or {@code deepseek-mla-bf16}), size ({@code 1MiB}), rounds. One thread,
 * as the backend reads requests below 4 MiB.
 */
public final class FusedCacheAb {
    public static void main(String[] args) throws Exception {
        String shape = args[0];
        String size = args[1];
        int rounds = Integer.parseInt(args[2]);
        String[] names = {"old", "fused", "bound", "kernel", "prev", "krows"};
        try (KvFixture fx = KvFixture.of(shape, size)) {
            SlicePlan plan = SlicePlan.of(fx.group(), fx.request());
            Constructor<FastCpuBackend> c = FastCpuBackend.class.getDeclaredConstructor(int.class, SliceKernel.class, long.class,
                    boolean.class, boolean.class);
            c.setAccessible(true);
            List<KvChecksum> kcs = new ArrayList<>();
            kcs.add(KvChecksum.of(c.newInstance(1, new VectorSliceKernel(KernelSpecies.CHOSEN, true, false),
                    FastCpuBackend.PARALLEL_BYTES, false, false)));
            kcs.add(KvChecksum.of(c.newInstance(1, new VectorSliceKernel(KernelSpecies.CHOSEN, true, true),
                    FastCpuBackend.PARALLEL_BYTES, true, false)));
            KvChecksum prev = KvChecksum.of(c.newInstance(1, new PreviousInCache(new VectorSliceKernel(KernelSpecies.CHOSEN, true,
                    true)), FastCpuBackend.PARALLEL_BYTES, true, false));
            if (!Arrays.equals(kcs.get(0).blockChecksums(plan), kcs.get(1).blockChecksums(plan))
                    || !Arrays.equals(prev.blockChecksums(plan), kcs.get(1).blockChecksums(plan))) {
                throw new AssertionError("old, prev and fused differ");
            }
            try (MemoryBound bound = new MemoryBound(fx.segments(), 1)) {
                // at 256 bits the bound's faster reader there (vector256's four streams), as the suite's bound takes it
                java.util.function.LongSupplier boundRead = KernelSpecies.S.vectorBitSize() == 256
                        ? () -> bound.read(MemoryBound.Reader.VECTOR256) : bound::read;
                int nv = names.length;
                VectorSliceKernel kern = new VectorSliceKernel(KernelSpecies.CHOSEN, true, true);
                boolean mla = shape.contains("mla");
                long[] hs = new long[8];
                // MLA: base, stride, tokens, t0, cell, piece base, region; Llama: K base, token and head stride, pieces,
                // V base, heads (the fixture's layout: one page, K then V)
                long[] dyn = {0, 1152, 16, 0, 144, 0, 144, 0, 2048, 256, 32, 32768, 8};
                java.lang.foreign.MemorySegment[] segs = fx.segments().toArray(new java.lang.foreign.MemorySegment[0]);
                java.util.function.LongSupplier kernelOnly = () -> {
                    long z = 0;
                    for (int r = 0; r < segs.length; r++) {
                        java.lang.foreign.MemorySegment seg = segs[r];
                        if (mla && kern.pairsStreams() && r + 1 < segs.length) {
                            // the prepared plans' MLA call: two layers per loop, each sum times its factor (here 1 and 3)
                            z += kern.streamPair(seg, dyn[0], 1, segs[++r], dyn[0], 3, (int) dyn[2], dyn[3], (int) dyn[4]);
                        } else if (mla) {
                            z += kern.sumAffine(seg, dyn[0], dyn[1], (int) dyn[2], dyn[3], (int) dyn[4], (int) dyn[5], (int) dyn[6]);
                        } else {
                            kern.headsInCache(seg, dyn[7], dyn[8], dyn[9], (int) dyn[10], seg, dyn[11], dyn[8], dyn[9], (int) dyn[10],
                                    (int) dyn[12], (int) dyn[2], dyn[3], hs);
                            z += hs[0] + hs[7];
                        }
                    }
                    return z;
                };
                // krows: the kernel alone, Llama-3-8B's rows read by the row pass (headsAffine from memory: rowEight at
                // 512 bits, rowPass256 at 256), MLA one stream per layer (no streamPair)
                java.util.function.LongSupplier kernelRows = () -> {
                    long z = 0;
                    for (int r = 0; r < segs.length; r++) {
                        java.lang.foreign.MemorySegment seg = segs[r];
                        if (mla) {
                            z += kern.sumAffine(seg, dyn[0], dyn[1], (int) dyn[2], dyn[3], (int) dyn[4], (int) dyn[5], (int) dyn[6]);
                        } else {
                            kern.headsAffine(seg, dyn[7], dyn[8], dyn[9], (int) dyn[10], seg, dyn[11], dyn[8], dyn[9], (int) dyn[10],
                                    (int) dyn[12], (int) dyn[2], dyn[3], true, hs);
                            z += hs[0] + hs[7];
                        }
                    }
                    return z;
                };
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    sink += kcs.get(0).blockChecksums(plan)[0] + kcs.get(1).blockChecksums(plan)[0] + boundRead.getAsLong() + kernelOnly.getAsLong()
                            + prev.blockChecksums(plan)[0] + kernelRows.getAsLong();
                }
                if (args.length > 3) {   // profiling (perf): the shipped pass alone for args[3] seconds
                    long end = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000_000L;
                    while (System.nanoTime() < end) {
                        sink += kcs.get(1).blockChecksums(plan)[0];
                    }
                    System.out.println(sink);
                    return;
                }
                double[][] t = new double[nv][rounds];
                for (int r = 0; r < rounds; r++) {
                    for (int j = 0; j < nv; j++) {
                        int w = (j + r) % nv;
                        long s = System.nanoTime();
                        sink += w == 5 ? kernelRows.getAsLong() : w == 4 ? prev.blockChecksums(plan)[0] : w == 3 ? kernelOnly.getAsLong() : w == 2 ? boundRead.getAsLong()
                                : kcs.get(w).blockChecksums(plan)[0];
                        t[w][r] = System.nanoTime() - s;
                    }
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder(String.format("%s %s (%d bytes), 1 thread, %d rounds, %s:", shape, size,
                        bytes, rounds, kcs.get(1).description()));
                for (double[] x : t) {
                    Arrays.sort(x);
                }
                for (int w = 0; w < nv; w++) {
                    sb.append(String.format("%n  %-5s best %6.1f GB/s, median %6.1f GB/s, best / bound's best %.3f, median / bound's median %.3f",
                            names[w], bytes / t[w][0], bytes / t[w][rounds / 2], t[2][0] / t[w][0], t[2][rounds / 2] / t[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }

    /**
     * The shipped kernel with {@link SliceKernel}'s defaults for the prepared plans' calls: {@code headsInCache} is
     * {@code headsAffine} in cache, and no two streams in one loop.
     */
    private record PreviousInCache(VectorSliceKernel k) implements SliceKernel {
        @Override
        public long sum(java.lang.foreign.MemorySegment s, long[] off, long extra, int n, long t0, int cell, int base, int region) {
            return k.sum(s, off, extra, n, t0, cell, base, region);
        }

        @Override
        public void sumRows(java.lang.foreign.MemorySegment s, long[] off, int n, long t0, int cell, int base, int region,
                int heads, long[] a, long[] t, long[] out) {
            k.sumRows(s, off, n, t0, cell, base, region, heads, a, t, out);
        }

        @Override
        public boolean affine(int region, long stride, int cell) {
            return k.affine(region, stride, cell);
        }

        @Override
        public long sumAffine(java.lang.foreign.MemorySegment s, long base, long stride, int n, long t0, int cell, int pieceBase,
                int region) {
            return k.sumAffine(s, base, stride, n, t0, cell, pieceBase, region);
        }

        @Override
        public void headsAffine(java.lang.foreign.MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces,
                java.lang.foreign.MemorySegment vSeg, long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n,
                long t0, boolean fromMemory, long[] out) {
            k.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces, heads, n, t0,
                    fromMemory, out);
        }

        @Override
        public String describe() {
            return k.describe();
        }
    }
}
