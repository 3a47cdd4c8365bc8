package io.kvchecksum.jmh;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * {@link MixedModeBench}'s three operations in turn, in one JVM, on a machine too loaded for separate forks to be
 * compared: per shape and size, each reader of the read bound, the standard mode and the mixed mode run one after
 * another, {@code reps} rounds, so a load spike hits all of them; prints min and median times and the ratios
 * mixed/standard and mixed/bound (the bound: the fastest reader) of mins and of medians. Results are checked first
 * (mixed against the reference backend on the first blocks, and different from standard). A diagnostic beside the
 * JMH benchmark, not a replacement for it. Usage:
 *
 * <pre>java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector [-XX:UseAVX=2] \
 *     -cp jmh/target/benchmarks.jar io.kvchecksum.jmh.MixedModeTurns llama3-8b-tp1,deepseek-mla-fp8 1MiB,256MiB 31</pre>
 */
public final class MixedModeTurns {
    private MixedModeTurns() {
    }

    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: MixedModeTurns SHAPE[,SHAPE..] SIZE[,SIZE..] REPS");
            System.exit(2);
        }
        int reps = Integer.parseInt(args[2]);
        KvChecksum cpu = Backends.open("cpu");
        System.out.println(cpu.description() + ": loop " + Backends.loop(cpu.description()) + "; " + Runtime.version() + "; "
                + reps + " rounds");
        for (String shape : args[0].split(",")) {
            for (String size : args[1].split(",")) {
                try (KvFixture fx = KvFixture.of(shape, size);
                     MemoryBound bound = new MemoryBound(fx.segments(), Runtime.getRuntime().availableProcessors())) {
                    run(cpu, fx, bound, shape + " " + size, reps);
                }
            }
        }
    }

    /** The timed calls' results, so that none is dead code; the reports print its low bit. */
    static long sink;

    /**
     * Runs each of {@code ops} in turn, {@code batch} calls per timing, {@code reps} rounds, so that a load spike hits
     * all of them alike. {@return each op's time per call in each round, in nanoseconds: {@code [op][round]}}
     */
    static long[][] inTurns(List<LongSupplier> ops, int reps, int batch) {
        long[][] t = new long[ops.size()][reps];
        for (int r = 0; r < reps; r++) {
            for (int op = 0; op < ops.size(); op++) {
                long start = System.nanoTime();
                for (int b = 0; b < batch; b++) {
                    sink += ops.get(op).getAsLong();
                }
                t[op][r] = (System.nanoTime() - start) / batch;
            }
        }
        return t;
    }

    private static void run(KvChecksum cpu, KvFixture fx, MemoryBound bound, String label, int reps) {
        SlicePlan standard = SlicePlan.of(fx.group(), fx.request());
        SlicePlan mixed = SlicePlan.of(fx.group(), fx.request(), ChecksumMode.MIXED);
        Oracle.verifyMixed(cpu, fx, standard, cpu.blockChecksums(mixed));
        List<MemoryBound.Reader> readers = MemoryBound.readers();
        List<String> names = new ArrayList<>();
        List<LongSupplier> ops = new ArrayList<>();
        for (MemoryBound.Reader reader : readers) {
            names.add("read:" + reader.id());
            ops.add(() -> bound.read(reader));
        }
        names.addAll(List.of("standard", "mixed"));
        ops.add(() -> cpu.blockChecksums(standard)[0]);
        ops.add(() -> cpu.blockChecksums(mixed)[0]);
        // Warm-up (every op compiled), then calls per timing so that one timing is at least ~2 ms.
        long fastest = Arrays.stream(inTurns(ops, 20, 1)).flatMapToLong(Arrays::stream).min().orElseThrow();
        int batch = (int) Math.max(1, Math.min(2000, 2_000_000 / Math.max(1, fastest)));
        long[][] t = inTurns(ops, reps, batch);
        for (long[] x : t) {
            Arrays.sort(x);
        }
        int best = 0;
        for (int op = 1; op < readers.size(); op++) {
            if (t[op][0] < t[best][0]) {
                best = op;
            }
        }
        double mb = fx.kvBytes() / 1e6;
        System.out.printf("%s (%.2f MB, batch %d, checksum bit %d)%n", label, mb, batch, sink & 1);
        for (int op = 0; op < ops.size(); op++) {
            System.out.printf("  %-12s min %10.1f us  median %10.1f us  %6.1f GB/s (min)%n",
                    names.get(op), t[op][0] / 1e3, t[op][reps / 2] / 1e3, fx.kvBytes() / (double) t[op][0]);
        }
        int std = readers.size();
        int mix = std + 1;
        System.out.printf("  mixed/standard %.2f (mins) %.2f (medians); mixed/bound %.2f / %.2f; standard/bound %.2f / %.2f;"
                        + " bound by %s%n",
                (double) t[std][0] / t[mix][0], (double) t[std][reps / 2] / t[mix][reps / 2],
                (double) t[best][0] / t[mix][0], (double) t[best][reps / 2] / t[mix][reps / 2],
                (double) t[best][0] / t[std][0], (double) t[best][reps / 2] / t[std][reps / 2], readers.get(best).id());
    }
}
