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
 * A/B of the CPU backend's side-by-side-heads loops in one JVM (not a benchmark; built and run by
 * {@code jmh/ab/rows-ab.sh}): {@code old}, heads read head by head with the next block touched ahead (the loops before
 * the row pass), against {@code rows}, the backend as it ships (whole rows per pass from memory where
 * {@code VectorSliceKernel.rowsAffine} says so), and {@code bound}, the project's read bound (its default reader), one
 * call each in turn with the order rotating, so a loaded machine's noise hits all alike; prints best and median GB/s
 * and each side's best over the first's. Both kernels' block checksums are compared first (exit on a difference).
 *
 * <p>Arguments: shape ({@code llama3-8b-tp1}), size ({@code 1MiB}, {@code 256MiB}, {@code 1GiB}), threads (the
 * backend's and the bound's; the machine's processors as the backend ships), rounds.
 */
public final class RowsAb {
    public static void main(String[] args) throws Exception {
        String shape = args[0];
        String size = args[1];
        int threads = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        String[] names = {"old", "rows", "bound"};
        try (KvFixture fx = KvFixture.of(shape, size)) {
            SlicePlan plan = SlicePlan.of(fx.group(), fx.request());
            Constructor<FastCpuBackend> c = FastCpuBackend.class.getDeclaredConstructor(int.class, SliceKernel.class, long.class);
            c.setAccessible(true);
            List<KvChecksum> kcs = new ArrayList<>();
            kcs.add(KvChecksum.of(c.newInstance(threads, new VectorSliceKernel(KernelSpecies.CHOSEN, false), FastCpuBackend.PARALLEL_BYTES)));
            kcs.add(KvChecksum.of(c.newInstance(threads, new VectorSliceKernel(KernelSpecies.CHOSEN, true), FastCpuBackend.PARALLEL_BYTES)));
            if (!Arrays.equals(kcs.get(0).blockChecksums(plan), kcs.get(1).blockChecksums(plan))) {
                throw new AssertionError("old and rows differ");
            }
            try (MemoryBound bound = new MemoryBound(fx.segments(), threads)) {
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    sink += kcs.get(0).blockChecksums(plan)[0] + kcs.get(1).blockChecksums(plan)[0] + bound.read();
                }
                double[][] t = new double[3][rounds];
                for (int r = 0; r < rounds; r++) {
                    for (int j = 0; j < 3; j++) {
                        int w = (j + r) % 3;
                        long s = System.nanoTime();
                        sink += w == 2 ? bound.read() : kcs.get(w).blockChecksums(plan)[0];
                        t[w][r] = System.nanoTime() - s;
                    }
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder(String.format("%s %s, %d threads, %d rounds, %s:", shape, size, threads,
                        rounds, kcs.get(1).description()));
                for (int w = 0; w < 3; w++) {
                    Arrays.sort(t[w]);
                    sb.append(String.format("%n  %-5s best %6.1f GB/s, median %6.1f GB/s, best / old's best %.3f", names[w],
                            bytes / t[w][0], bytes / t[w][rounds / 2], t[0][0] / t[w][0]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }
}
