package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.spi.Backend;

import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * {@link CopyBench}'s operations in turn, in one JVM, for a machine too loaded for separate forks to be compared:
 * per shape, size and conversion, the baselines ({@link java.lang.foreign.MemorySegment#copy} of the same page runs,
 * same threads, and a Vector API copy loop of them, each in two orders: {@code memcopy} and {@code vectorcopy} a
 * page's K then its V, {@code memcopyL} and {@code vectorL} a layer's K pages then its V pages, the verifying copy's
 * split by layers, and {@code vector256L}, the vector loop at 256 bits in that order; {@link CopyFixture}) and the verifying copy run one after another, {@code reps} rounds; prints min
 * and median times and the ratio of the fastest baseline (by its min) to the copy, of mins and of medians (issue 29's
 * goal: at least 0.9; above 1.0 the baselines miss a faster plain copy). Results are checked first. Usage:
 *
 * <pre>java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector \
 *     -cp jmh/target/benchmarks.jar io.kvchecksum.jmh.CopyTurns llama3-8b-tp1,deepseek-mla-bf16 1MiB,256MiB perm,hnd 21</pre>
 */
public final class CopyTurns {
    /**
     * {@code -Dcopy.cpuTime=true}: time the calling thread's CPU time instead of the wall clock (with
     * {@code -Dcopy.threads=1}), so that time the thread spends descheduled on a loaded machine does not count.
     */
    static final boolean CPU_TIME = Boolean.getBoolean("copy.cpuTime");
    /**
     * {@code -Dcopy.processCpuTime=true}: time the whole process's CPU time (every thread's, the pool's included) instead
     * of the wall clock, so that on a loaded machine the time the copying threads spend descheduled does not count while
     * several threads copy (time stalled on memory does count: it is the copy's). A thread that ends within an
     * operation takes its time with it (the pools' threads live on). About the threads times the wall clock
     * on a quiet machine; read the ratios, not the GB/s. JIT and GC threads count too (after the warm-up, little).
     */
    static final boolean PROCESS_CPU_TIME = Boolean.getBoolean("copy.processCpuTime");

    /**
     * The CPU time of every live thread, summed ({@code OperatingSystemMXBean.getProcessCpuTime} counts in 10 ms ticks
     * here; each thread's time is read to the nanosecond).
     */
    private static long processCpuTime() {
        long sum = 0;
        for (long id : THREADS.getAllThreadIds()) {
            sum += Math.max(0, THREADS.getThreadCpuTime(id));
        }
        return sum;
    }
    /** Warm-up per case: {@code -Dcopy.warmupSeconds}, 5 by default. */
    static final long WARMUP_NANOS = Long.getLong("copy.warmupSeconds", 5) * 1_000_000_000L;
    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();

    /**
     * {@code -Dcopy.variant=CLASS#METHOD}: a static factory of another CPU backend, {@code METHOD(int threads)} returning
     * a {@link Backend} (package-private ones too, e.g. {@code io.kvchecksum.internal.FastCpuBackend#runRangeCopy}: the
     * verifying copy's split over the pool before the split by layers), whose copy is a fourth operation, {@code variant},
     * in the same turns as the others: both in one JVM and one memory state, which on this loaded machine moved by up
     * to 1.7x between processes. Each backend's choice is its own and fixed, nothing is switched between copies. Null
     * without the property.
     */
    static final java.lang.reflect.Method VARIANT = variant(System.getProperty("copy.variant"));

    private static java.lang.reflect.Method variant(String spec) {
        if (spec == null) {
            return null;
        }
        try {
            int hash = spec.indexOf('#');
            java.lang.reflect.Method m = Class.forName(spec.substring(0, hash)).getDeclaredMethod(spec.substring(hash + 1),
                    int.class);
            if (!java.lang.reflect.Modifier.isStatic(m.getModifiers()) || !Backend.class.isAssignableFrom(m.getReturnType())) {
                throw new IllegalArgumentException("not static or not returning a Backend");
            }
            m.setAccessible(true);
            return m;
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalArgumentException("-Dcopy.variant=" + spec + ": not a static factory CLASS#METHOD(int threads)"
                    + " of a Backend", e);
        }
    }

    private static KvChecksum variant(int threads) {
        try {
            return KvChecksum.of((Backend) VARIANT.invoke(null, threads));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The baselines' operations, first in each turn: {@code memcopy}, {@code vectorcopy}, the two in layer order, and
     * {@code vector256L} (the vector loop at 256 bits in layer order).
     */
    private static final int BASELINES = 5;
    /** The verifying copy's operation, after the baselines. */
    private static final int COPY = BASELINES;

    private CopyTurns() {
    }

    private static long now() {
        return CPU_TIME ? THREADS.getCurrentThreadCpuTime() : PROCESS_CPU_TIME ? processCpuTime() : System.nanoTime();
    }

    /** {@link MixedModeTurns#inTurns} with this class's clock. */
    static long[][] inTurns(List<LongSupplier> ops, int reps, int batch) {
        long[][] t = new long[ops.size()][reps];
        for (int r = 0; r < reps; r++) {
            for (int op = 0; op < ops.size(); op++) {
                long start = now();
                for (int b = 0; b < batch; b++) {
                    MixedModeTurns.sink += ops.get(op).getAsLong();
                }
                t[op][r] = (now() - start) / batch;
            }
        }
        return t;
    }

    public static void main(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: CopyTurns SHAPE[,SHAPE..] SIZE[,SIZE..] CONVERSION[,..] REPS");
            System.exit(2);
        }
        int reps = Integer.parseInt(args[3]);
        int threads = Integer.getInteger("copy.threads", Runtime.getRuntime().availableProcessors());
        KvChecksum cpu = Backends.cpu(threads);
        KvChecksum other = VARIANT == null ? null : variant(threads);
        if (CPU_TIME && threads != 1) {
            throw new IllegalArgumentException("-Dcopy.cpuTime=true times the calling thread: use -Dcopy.threads=1");
        }
        System.out.println(cpu.description() + ": loop " + Backends.loop(cpu.description()) + "; " + Runtime.version() + "; "
                + reps + " rounds; "
                + (CPU_TIME ? "the calling thread's CPU time" : PROCESS_CPU_TIME ? "the process's CPU time" : "wall clock")
                + (other == null ? "" : "; variant " + other.description()));
        for (String shape : args[0].split(",")) {
            for (String size : args[1].split(",")) {
                for (String conversion : args[2].split(",")) {
                    if (ModelShape.of(shape).mla() && conversion.equals("hnd")) {
                        continue;
                    }
                    try (CopyFixture fx = CopyFixture.of(cpu, shape, size, conversion, threads)) {
                        fx.verify(cpu, cpu.copyAndChecksum(fx.plan()));
                        List<LongSupplier> ops = new java.util.ArrayList<>(List.of(fx::baseline, fx::baselineVector,
                                fx::baselineGroups, fx::baselineVectorGroups, fx::baselineVector256Groups, () -> cpu.copyAndChecksum(fx.plan())[0]));
                        if (other != null) {   // the same plan: a plan is backend-neutral
                            fx.verify(cpu, other.copyAndChecksum(fx.plan()));
                            ops.add(() -> other.copyAndChecksum(fx.plan())[0]);
                        }
                        // Warm-up by time, not by count: C2 compiles the copy's loops only after a few seconds of calls
                        // (measured: before that the loops run C1's code, half as fast).
                        long until = System.nanoTime() + WARMUP_NANOS;
                        while (System.nanoTime() < until) {
                            inTurns(ops, 1, 1);
                        }
                        long fastest = Arrays.stream(inTurns(ops, 10, 1)).flatMapToLong(Arrays::stream)
                                .min().orElseThrow();
                        int batch = (int) Math.max(1, Math.min(2000, 2_000_000 / Math.max(1, fastest)));
                        long[][] t = inTurns(ops, reps, batch);
                        for (long[] x : t) {
                            Arrays.sort(x);
                        }
                        long bytes = fx.source().kvBytes();
                        System.out.printf("%s %s %s (%.2f MB copied, batch %d)%n", shape, size, conversion, bytes / 1e6, batch);
                        String[] names = {"memcopy", "vectorcopy", "memcopyL", "vectorL", "vector256L", "copy", "variant"};
                        for (int op = 0; op < ops.size(); op++) {
                            System.out.printf("  %-10s min %10.1f us  median %10.1f us  %6.1f GB/s (min)%n", names[op],
                                    t[op][0] / 1e3, t[op][reps / 2] / 1e3, bytes / (double) t[op][0]);
                        }
                        int best = 0;   // the fastest baseline by its min; medians of that one
                        for (int op = 1; op < BASELINES; op++) {
                            best = t[op][0] < t[best][0] ? op : best;
                        }
                        System.out.printf("  copy/baseline throughput %.3f (mins) %.3f (medians), baseline %s;"
                                        + " copy/memcopy %.3f (mins)%n", (double) t[best][0] / t[COPY][0],
                                (double) t[best][reps / 2] / t[COPY][reps / 2], names[best], (double) t[0][0] / t[COPY][0]);
                        if (other != null) {
                            System.out.printf("  variant/baseline throughput %.3f (mins) %.3f (medians); variant %s: copy/variant"
                                            + " %.3f (mins) %.3f (medians)%n", (double) t[best][0] / t[COPY + 1][0],
                                    (double) t[best][reps / 2] / t[COPY + 1][reps / 2], VARIANT.getName(),
                                    (double) t[COPY + 1][0] / t[COPY][0], (double) t[COPY + 1][reps / 2] / t[COPY][reps / 2]);
                        }
                    }
                }
            }
        }
    }
}
