package io.kvchecksum.internal;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import io.kvchecksum.jmh.KvFixture;

import java.lang.reflect.Constructor;
import java.util.Arrays;
import java.util.List;

/**
 * A/B of the width of DeepSeek MLA's contiguous streams read from memory, in one JVM (not a benchmark; built and run by
 * {@code jmh/ab/mla-streams-ab.sh}): {@code w512}, every loop at the preferred width
 * ({@link KernelSpecies.Streams#PREFERRED}: MLA has no 2 KiB head rows, so for it the choice on AMD family 26 before
 * this measurement), against {@code n256}, MLA's streams at 256 bits ({@link KernelSpecies.Streams#NARROW}, the
 * choice on AMD families 25 and 26), and {@code bound}, the project's read
 * bound; one call each in turn with the order rotating. Prints best and median GB/s and each side over the bound. The
 * sides' block checksums are compared first (exit on a difference).
 *
 * <p>Arguments: shape ({@code deepseek-mla-bf16}), size, threads, rounds.
 */
public final class MlaStreamsAb {
    public static void main(String[] args) throws Exception {
        String shape = args[0];
        String size = args[1];
        int threads = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        try (KvFixture fx = KvFixture.of(shape, size)) {
            SlicePlan plan = SlicePlan.of(fx.group(), fx.request());
            Constructor<FastCpuBackend> c = FastCpuBackend.class.getDeclaredConstructor(int.class, SliceKernel.class, long.class);
            c.setAccessible(true);
            List<String> names = List.of("w512", "n256", "bound");
            List<KvChecksum> kcs = List.of(
                    KvChecksum.of(c.newInstance(threads, new VectorSliceKernel(KernelSpecies.Streams.PREFERRED), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new VectorSliceKernel(KernelSpecies.Streams.NARROW), FastCpuBackend.PARALLEL_BYTES)));
            if (!Arrays.equals(kcs.get(0).blockChecksums(plan), kcs.get(1).blockChecksums(plan))) {
                throw new AssertionError("w512 and n256 differ");
            }
            int sides = names.size();
            int b = sides - 1;
            try (MemoryBound bound = new MemoryBound(fx.segments(), threads)) {
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    for (KvChecksum kc : kcs) {
                        sink += kc.blockChecksums(plan)[0];
                    }
                    sink += bound.read();
                }
                double[][] t = new double[sides][rounds];
                for (int r = 0; r < rounds; r++) {
                    for (int j = 0; j < sides; j++) {
                        int w = (j + r) % sides;
                        long s = System.nanoTime();
                        sink += w == b ? bound.read() : kcs.get(w).blockChecksums(plan)[0];
                        t[w][r] = System.nanoTime() - s;
                    }
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder(String.format("%s %s, %d threads, %d rounds:", shape, size, threads, rounds));
                for (int w = 0; w < sides; w++) {
                    Arrays.sort(t[w]);
                }
                for (int w = 0; w < sides; w++) {
                    sb.append(String.format("%n  %-5s best %6.1f GB/s, median %6.1f GB/s, best / w512's best %.3f,"
                            + " / bound's best %.3f, median / bound's median %.3f", names.get(w), bytes / t[w][0],
                            bytes / t[w][rounds / 2], t[0][0] / t[w][0], t[b][0] / t[w][0], t[b][rounds / 2] / t[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }
}
