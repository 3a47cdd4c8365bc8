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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * A/B of the mixed mode's side-by-side-heads loops in one JVM (not a benchmark; built and run by
 * {@code jmh/ab/mixed-rows-ab.sh}): {@code old}, heads from memory head by head with the next block touched ahead (the
 * mixed kernel before its row pass), {@code scratch} (the row pass with every row vector's running sums in a per-thread
 * scratch array, as shipped until 2026-12-07; the shipped kernel keeps 2 KiB rows' sums in registers at 512 bits),
 * {@code standard} (the standard mode as it ships), {@code mixed} (the mixed mode as it ships, through the public
 * backend and a mixed plan), {@code prevmix} (the shipped kernel with its row passes from memory through the mixer
 * before 2026-12-07 21:00 UTC, {@link MixerPrevKernel}), {@code two} (the shipped kernel with its scratch row pass
 * mixing two vectors per step, {@link MixerTwoKernel}; at 512 bits 2 KiB rows take the shipped {@code rowRegs}) and {@code newmix} (the shipped kernel through
 * the same route as {@code prevmix} and {@code two}: a standard-mode plan on a backend whose kernel is the mixed one),
 * {@code regs1}, {@code two2h} and {@code four4} (the shipped kernel with its 2 KiB rows forced to one stream,
 * {@code rowRegs}, two, {@code rowTwo}, or four, {@code rowFour}, the shipped choice on Intel:
 * docs/bench-cpu.md, "On Intel (Emerald Rapids): four streams"; {@code four8r}: {@link MixerTouchKernel}'s
 * {@code rowFourRegs}, not taken), {@code pass2}, {@code four} and {@code four8} ({@link MixerTouchKernel}: two streams through
 * the scratch row pass at 256 bits; four streams at 512; docs/bench-cpu.md, "On Intel (Emerald Rapids): two streams
 * every tier compiles"),
 * {@code touch1k}, {@code touch2k}, {@code touch4k}, {@code pairs2k}, {@code streams2} and {@code halves2s}
 * ({@link MixerTouchKernel}: the 2 KiB row pass touching ahead, or reading two streams of the block at once; docs/bench-cpu.md, "On Intel (Emerald
 * Rapids): the mixer"; system property {@code turns}, the forms to run besides {@code standard} and the readers) and every reader of the project's read bound (the bound is the fastest of them, as in the
 * suite: the 512-bit reader alone reads memory slower than the standard checksum on Zen 4), one call each in turn with
 * the order rotating, so a loaded machine's noise hits all alike; prints best and median GB/s and the ratios to
 * the standard mode's best and median. {@code old} and {@code scratch} run through a backend whose kernel is the mixed
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
        List<MemoryBound.Reader> readers = MemoryBound.readers();
        List<String> names = new ArrayList<>(List.of("old", "scratch", "standard", "mixed", "prevmix", "two", "newmix",
                "touch1k", "touch2k", "touch4k", "pairs2k", "streams2", "halves2s", "regs1", "two2h", "pass2", "four", "four8", "four4", "four8r"));
        final int forms = names.size();
        readers.forEach(r -> names.add("read-" + r.id()));
        int n = names.size();
        try (KvFixture fx = KvFixture.of(shape, size)) {
            SlicePlan plan = SlicePlan.of(fx.group(), fx.request());
            SlicePlan mixedPlan = SlicePlan.of(fx.group(), fx.request(), ChecksumMode.MIXED);
            Constructor<FastCpuBackend> c = FastCpuBackend.class.getDeclaredConstructor(int.class, SliceKernel.class, long.class);
            c.setAccessible(true);
            KvChecksum old = KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(false), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum rows = KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(true, false), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum prev = KvChecksum.of(c.newInstance(threads, new MixerPrevKernel(), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum two = KvChecksum.of(c.newInstance(threads, new MixerTwoKernel(), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum newmix = KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(), FastCpuBackend.PARALLEL_BYTES));
            KvChecksum[] touch = {
                    KvChecksum.of(c.newInstance(threads, new MixerTouchKernel(1024, false), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new MixerTouchKernel(2048, false), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new MixerTouchKernel(4096, false), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new MixerTouchKernel(2048, true), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new MixerTouchKernel(0, false, true), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, MixerTouchKernel.halves(), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(true, true, 1), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(true, true, 2), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, MixerTouchKernel.passTwo(), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, MixerTouchKernel.four(), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, MixerTouchKernel.fourHalves(), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, new MixedVectorSliceKernel(true, true, 4), FastCpuBackend.PARALLEL_BYTES)),
                    KvChecksum.of(c.newInstance(threads, MixerTouchKernel.fourRegs(), FastCpuBackend.PARALLEL_BYTES))};
            KvChecksum cpu = KvChecksums.cpu(threads);
            long[] shipped = cpu.blockChecksums(mixedPlan);
            if (!Arrays.equals(shipped, old.blockChecksums(plan)) || !Arrays.equals(shipped, rows.blockChecksums(plan))
                    || !Arrays.equals(shipped, prev.blockChecksums(plan)) || !Arrays.equals(shipped, two.blockChecksums(plan))
                    || !Arrays.equals(shipped, newmix.blockChecksums(plan))) {
                throw new AssertionError("old, scratch, prevmix, two, newmix and the shipped mixed mode differ");
            }
            for (KvChecksum k : touch) {
                if (!Arrays.equals(shipped, k.blockChecksums(plan))) {
                    throw new AssertionError("a touch kernel and the shipped mixed mode differ");
                }
            }
            try (MemoryBound bound = new MemoryBound(fx.segments(), threads)) {
                LongSupplier[] turn = new LongSupplier[n];
                turn[0] = () -> old.blockChecksums(plan)[0];
                turn[1] = () -> rows.blockChecksums(plan)[0];
                turn[2] = () -> cpu.blockChecksums(plan)[0];
                turn[3] = () -> cpu.blockChecksums(mixedPlan)[0];
                turn[4] = () -> prev.blockChecksums(plan)[0];
                turn[5] = () -> two.blockChecksums(plan)[0];
                turn[6] = () -> newmix.blockChecksums(plan)[0];
                for (int i = 0; i < touch.length; i++) {
                    KvChecksum k = touch[i];
                    turn[7 + i] = () -> k.blockChecksums(plan)[0];
                }
                for (int i = 0; i < readers.size(); i++) {
                    MemoryBound.Reader r = readers.get(i);
                    turn[forms + i] = () -> bound.read(r);
                }
                // the turns to run: system property "turns" (names; standard and the readers always run)
                String only = System.getProperty("turns");
                boolean[] on = new boolean[n];
                for (int w = 0; w < n; w++) {
                    on[w] = only == null || w == 2 || w >= forms || (" " + only + " ").contains(" " + names.get(w) + " ");
                }
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    for (int w = 0; w < n; w++) {
                        if (on[w]) {
                            sink += turn[w].getAsLong();
                        }
                    }
                }
                double[][] t = new double[n][rounds];
                double[][] cpuT = new double[n][rounds];
                for (int r = 0; r < rounds; r++) {
                    for (int j = 0; j < n; j++) {
                        int w = (j + r) % n;
                        if (!on[w]) {
                            continue;
                        }
                        long c0 = cpuNanos();
                        long s = System.nanoTime();
                        sink += turn[w].getAsLong();
                        t[w][r] = System.nanoTime() - s;
                        cpuT[w][r] = cpuNanos() - c0;
                    }
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder(String.format("%s %s, %d threads, %d rounds, %s:", shape, size, threads,
                        rounds, cpu.description()));
                for (int w = 0; w < n; w++) {
                    Arrays.sort(t[w]);
                    Arrays.sort(cpuT[w]);
                }
                for (int w = 0; w < n; w++) {
                    if (!on[w]) {
                        continue;
                    }
                    sb.append(String.format("%n  %-12s best %6.1f GB/s, median %6.1f GB/s, / standard: best %.3f, median %.3f",
                            names.get(w), bytes / t[w][0], bytes / t[w][rounds / 2], t[2][0] / t[w][0],
                            t[2][rounds / 2] / t[w][rounds / 2]));
                    sb.append(String.format("; standard CPU time / this: best %.3f, median %.3f", cpuT[2][0] / cpuT[w][0],
                            cpuT[2][rounds / 2] / cpuT[w][rounds / 2]));
                }
                // The bound is the fastest reader, by the same statistic: a checksum faster than it condemns the bound.
                double boundBest = Double.MAX_VALUE;
                double boundMedian = Double.MAX_VALUE;
                for (int w = forms; w < n; w++) {
                    boundBest = Math.min(boundBest, t[w][0]);
                    boundMedian = Math.min(boundMedian, t[w][rounds / 2]);
                }
                for (int w = 0; w < forms; w++) {
                    if (!on[w]) {
                        continue;
                    }
                    double best = boundBest / t[w][0];
                    double median = boundMedian / t[w][rounds / 2];
                    sb.append(String.format("%n  %-12s / bound (fastest reader): best %.3f, median %.3f%s", names.get(w), best,
                            median, best > 1.0 || median > 1.0 ? "  BROKEN BOUND: faster than every reader" : ""));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }
}
