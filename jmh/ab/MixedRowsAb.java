package io.kvchecksum.internal;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import io.kvchecksum.jmh.KvFixture;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Constructor;
import java.util.Arrays;

/**
 * A/B of the mixed mode's side-by-side-heads loops in one JVM (not a benchmark; built and run by
 * {@code jmh/ab/mixed-rows-ab.sh}): {@code old}, heads from memory head by head with the next block touched ahead (the
 * mixed kernel before its row pass), {@code rows} (the mixed kernel as it ships: a row of heads per pass from memory),
 * {@code standard} (the standard mode as it ships) and {@code bound} (the project's read bound), one call each in turn
 * with the order rotating, so a loaded machine's noise hits all alike; prints best and median GB/s and the ratios to
 * the standard mode's best and median. {@code old} and {@code rows} run through a backend whose kernel is the mixed
 * one (a standard-mode plan then computes mixed sums); their block checksums are compared with the shipped mixed mode's
 * first (exit on a difference). Each call's CPU time (all of the JVM's threads, {@link ThreadMXBean}) is recorded too:
 * on a machine shared with other work, wall time counts the cycles other processes took, while the ratio of CPU time
 * per call ({@code standard / x}, best and median) counts only this JVM's cycles, stalls on memory included, and so
 * moves far less between runs (docs/bench-cpu.md, "Mixed mode cost").
 *
 * <p>Arguments: shape ({@code llama3-8b-tp1}), size ({@code 1MiB}, {@code 128MiB}), threads (the machine's processors
 * as the backend ships), rounds.
 */
public final class MixedRowsAb {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** The CPU time of all of the JVM's live threads, in nanoseconds (threads that ended are not counted). */
    private static long cpuNanos() {
        long sum = 0;
        for (long id : THREADS.getAllThreadIds()) {
            sum += Math.max(0, THREADS.getThreadCpuTime(id));
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        String shape = args[0];
        String size = args[1];
        int threads = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        String[] names = {"old", "rows", "standard", "bound"};
        try (KvFixture fx = KvFixture.of(shape, size)) {
            SlicePlan plan = SlicePlan.of(fx.group(), fx.request());
            SlicePlan mixedPlan = SlicePlan.of(fx.group(), fx.request(), ChecksumMode.MIXED);
            Constructor<FastCpuBackend> c = FastCpuBackend.class.getDeclaredConstructor(int.class, SliceKernel.class, long.class);
            c.setAccessible(true);
            KvChecksum old = KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(false), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum rows = KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(true), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum cpu = KvChecksums.cpu(threads);
            long[] shipped = cpu.blockChecksums(mixedPlan);
            if (!Arrays.equals(shipped, old.blockChecksums(plan)) || !Arrays.equals(shipped, rows.blockChecksums(plan))) {
                throw new AssertionError("old, rows and the shipped mixed mode differ");
            }
            try (MemoryBound bound = new MemoryBound(fx.segments(), threads)) {
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    sink += old.blockChecksums(plan)[0] + rows.blockChecksums(plan)[0] + cpu.blockChecksums(plan)[0] + bound.read();
                }
                double[][] t = new double[4][rounds];
                double[][] cpuT = new double[4][rounds];
                for (int r = 0; r < rounds; r++) {
                    for (int j = 0; j < 4; j++) {
                        int w = (j + r) % 4;
                        long c0 = cpuNanos();
                        long s = System.nanoTime();
                        sink += switch (w) {
                            case 0 -> old.blockChecksums(plan)[0];
                            case 1 -> rows.blockChecksums(plan)[0];
                            case 2 -> cpu.blockChecksums(plan)[0];
                            default -> bound.read();
                        };
                        t[w][r] = System.nanoTime() - s;
                        cpuT[w][r] = cpuNanos() - c0;
                    }
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder(String.format("%s %s, %d threads, %d rounds, %s:", shape, size, threads,
                        rounds, cpu.description()));
                for (int w = 0; w < 4; w++) {
                    Arrays.sort(t[w]);
                    Arrays.sort(cpuT[w]);
                }
                for (int w = 0; w < 4; w++) {
                    sb.append(String.format("%n  %-8s best %6.1f GB/s, median %6.1f GB/s, / standard: best %.3f, median %.3f",
                            names[w], bytes / t[w][0], bytes / t[w][rounds / 2], t[2][0] / t[w][0],
                            t[2][rounds / 2] / t[w][rounds / 2]));
                    sb.append(String.format("; standard CPU time / this: best %.3f, median %.3f", cpuT[2][0] / cpuT[w][0],
                            cpuT[2][rounds / 2] / cpuT[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }
}
