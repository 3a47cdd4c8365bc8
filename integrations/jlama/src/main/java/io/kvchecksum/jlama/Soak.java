package io.kvchecksum.jlama;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.worker.PayloadSender;
import java.io.PrintStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Many concurrent requests through {@link Disaggregated}, with faults at a set rate, fail-closed with recompute;
 * counts what the library detected, missed and got wrong. Every thread shares one pair of Jlama instances, one
 * checksum backend and one verify-once registry.
 */
public final class Soak {

    /**
     * What to run.
     *
     * @param seconds how long to send requests
     * @param threads concurrent requests
     * @param faultRate share of requests with a fault, drawn uniformly from {@link KvTransfer.Fault}'s classes
     * @param maxTokens longest prompt (lengths are uniform in {@code 1 .. maxTokens})
     * @param prefixHitRate share of requests whose consumer already holds some leading blocks
     * @param decodeTokens tokens decoded per request
     * @param blockSize tokens per checksum block
     * @param seed the run's seed; each thread splits its own generator from it
     */
    public record Settings(double seconds, int threads, double faultRate, int maxTokens, double prefixHitRate,
            int decodeTokens, int blockSize, long seed) {
    }

    /** The counts. Thread-safe while the run goes on. */
    public static final class Report {
        public final AtomicLong requests = new AtomicLong();
        public final Map<KvTransfer.Fault, AtomicLong> injected = counters(KvTransfer.Fault.class);
        public final Map<KvTransfer.Fault, AtomicLong> detected = counters(KvTransfer.Fault.class);
        public final Map<KvTransfer.Fault, AtomicLong> missed = counters(KvTransfer.Fault.class);
        /** A mismatch on a clean transfer. */
        public final AtomicLong falseMismatches = new AtomicLong();
        /** A mismatch, but not at exactly the faulted blocks. */
        public final AtomicLong wrongBlocks = new AtomicLong();
        /** Unverified loads by reason, whatever their cause. */
        public final Map<UnverifiedReason, AtomicLong> unverified = counters(UnverifiedReason.class);
        /** Unverified loads of a clean transfer, or of a KV fault: nothing but a payload fault should be unverified. */
        public final AtomicLong unexpectedUnverified = new AtomicLong();
        /** Requests whose served tokens differ from one instance's. */
        public final AtomicLong wrongTokens = new AtomicLong();
        /** Exceptions thrown out of a request (the engine's step). */
        public final AtomicLong thrown = new AtomicLong();
        public final AtomicLong recomputed = new AtomicLong();
        public final AtomicLong checksumNanos = new AtomicLong();
        public final AtomicLong requestNanos = new AtomicLong();
        public final AtomicLong checksummedBytes = new AtomicLong();
        public volatile long wallNanos;
        public volatile long peakHeapBytes;
        public volatile long peakDirectBytes;
        public final List<Long> liveHeapAtQuarters = new ArrayList<>();
        public volatile int pendingAtEnd;
        public volatile String firstThrown;
        /**
         * Lines the policy and the sender logged, by level: the soak hands them a counting logger (a fail-closed
         * policy logs every mismatch as an error, thousands of expected lines here; the counts are the log).
         */
        public final Map<System.Logger.Level, AtomicLong> logged = counters(System.Logger.Level.class);

        Report() {
        }

        /** A logger that counts each line at its level into {@link #logged} and writes nothing. */
        System.Logger countingLogger() {
            return new System.Logger() {
                @Override
                public String getName() {
                    return "soak";
                }

                @Override
                public boolean isLoggable(Level level) {
                    return level.getSeverity() >= Level.INFO.getSeverity();
                }

                @Override
                public void log(Level level, java.util.ResourceBundle bundle, String msg, Throwable thrown) {
                    logged.get(level).incrementAndGet();
                }

                @Override
                public void log(Level level, java.util.ResourceBundle bundle, String format, Object... params) {
                    logged.get(level).incrementAndGet();
                }
            };
        }

        /** A zero counter for each constant of {@code type}. */
        private static <E extends Enum<E>> Map<E, AtomicLong> counters(Class<E> type) {
            Map<E, AtomicLong> m = new EnumMap<>(type);
            for (E e : type.getEnumConstants()) {
                m.put(e, new AtomicLong());
            }
            return m;
        }

        long sum(Map<KvTransfer.Fault, AtomicLong> m) {
            return m.entrySet().stream().filter(e -> e.getKey() != KvTransfer.Fault.NONE).mapToLong(e -> e.getValue().get()).sum();
        }

        /** The run's table, for the log and the README. */
        public void print(PrintStream out, Settings s, String backend) {
            double secs = wallNanos / 1e9;
            out.printf("Jlama P/D soak: %d threads, %.0f s, fault rate %.2f, prompts 1..%d tokens, prefix hits %.2f, block %d,"
                            + " backend %s, seed %d%n", s.threads(), secs, s.faultRate(), s.maxTokens(), s.prefixHitRate(),
                    s.blockSize(), backend, s.seed());
            out.printf("| %-22s | %8s | %8s | %6s |%n", "fault", "injected", "detected", "missed");
            out.printf("|%s|%s|%s|%s|%n", "-".repeat(24), "-".repeat(10), "-".repeat(10), "-".repeat(8));
            for (KvTransfer.Fault f : KvTransfer.Fault.values()) {
                if (f != KvTransfer.Fault.NONE) {
                    out.printf("| %-22s | %8d | %8d | %6d |%n", f, injected.get(f).get(), detected.get(f).get(), missed.get(f).get());
                }
            }
            out.printf("| %-22s | %8d | %8d | %6d |%n", "all", sum(injected), sum(detected), sum(missed));
            Map<String, Long> unv = new TreeMap<>();
            unverified.forEach((r, c) -> {
                if (c.get() > 0) {
                    unv.put(r.name(), c.get());
                }
            });
            out.printf("requests %d (%.1f/s), clean %d, false mismatches %d, mismatches at other blocks %d, unverified %s"
                            + " (unexpected %d), recomputed %d, wrong tokens served %d, thrown into the step %d%n",
                    requests.get(), requests.get() / secs, injected.get(KvTransfer.Fault.NONE).get(), falseMismatches.get(),
                    wrongBlocks.get(), unv, unexpectedUnverified.get(), recomputed.get(), wrongTokens.get(), thrown.get());
            out.printf("checksummed %.2f GB: %.3f GB/s of wall time, %.2f GB/s inside the checksum and verify calls; their share"
                            + " of request time %.2f%%%n", checksummedBytes.get() / 1e9, checksummedBytes.get() / 1e9 / secs,
                    checksummedBytes.get() / Math.max(1.0, checksumNanos.get()), 100.0 * checksumNanos.get() / Math.max(1, requestNanos.get()));
            out.printf("logged by the policy and the sender: %d errors, %d warnings%n",
                    logged.get(System.Logger.Level.ERROR).get(), logged.get(System.Logger.Level.WARNING).get());
            out.printf("peak heap %.1f MiB, peak direct %.1f MiB, live heap after GC at each quarter %s MiB, pending"
                            + " expectations at end %d%n", peakHeapBytes / 1048576.0, peakDirectBytes / 1048576.0,
                    liveHeapAtQuarters.stream().map(b -> String.format("%.1f", b / 1048576.0)).toList(), pendingAtEnd);
        }
    }

    private Soak() {
    }

    /** Runs the soak; prints a progress line every {@code progressSeconds} (0: none) to {@code progress}. */
    public static Report run(JlamaInstance producer, JlamaInstance consumer, KvChecksum backend, Settings s,
            PrintStream progress, double progressSeconds) throws InterruptedException {
        return run(producer, consumer, backend, s, progress, progressSeconds, false);
    }

    /**
     * As {@link #run(JlamaInstance, JlamaInstance, KvChecksum, Settings, PrintStream, double)}, choosing where the
     * consumer verifies: {@code verifyInCopy} loads through a staging buffer and verifies inside the copy into the
     * session ({@link Disaggregated#Disaggregated(JlamaInstance, JlamaInstance, KvChecksum, int, FailurePolicy,
     * PayloadSender, int[], boolean)}).
     */
    public static Report run(JlamaInstance producer, JlamaInstance consumer, KvChecksum backend, Settings s,
            PrintStream progress, double progressSeconds, boolean verifyInCopy) throws InterruptedException {
        Report rep = new Report();
        System.Logger log = rep.countingLogger();
        SplittableRandom master = new SplittableRandom(s.seed());
        KvTransfer.Fault[] classes = Arrays.stream(KvTransfer.Fault.values()).filter(f -> f != KvTransfer.Fault.NONE)
                .toArray(KvTransfer.Fault[]::new);
        long start = System.nanoTime();
        long end = start + (long) (s.seconds() * 1e9);
        try (Disaggregated pd = new Disaggregated(producer, consumer, backend, s.blockSize(),
                FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, ChecksumMetrics.NONE, log),
                new PayloadSender(ChecksumMetrics.NONE, log), prompt(master.split(), producer.model().getConfig().contextLength - 64),
                verifyInCopy)) {
            ExecutorService pool = Executors.newFixedThreadPool(s.threads());
            List<Future<?>> workers = new ArrayList<>();
            AtomicLong ids = new AtomicLong();
            for (int w = 0; w < s.threads(); w++) {
                SplittableRandom rnd = master.split();
                workers.add(pool.submit(() -> {
                    while (System.nanoTime() < end) {
                        one(pd, rep, s, rnd, classes, "req-" + ids.incrementAndGet());
                    }
                }));
            }
            pool.shutdown();
            int quarter = 1;
            long lastProgress = System.nanoTime();
            while (!pool.awaitTermination(100, TimeUnit.MILLISECONDS)) {
                sampleMemory(rep);
                long now = System.nanoTime();
                if (quarter <= 3 && now - start >= quarter * (end - start) / 4) {
                    rep.liveHeapAtQuarters.add(liveHeapAfterGc());
                    quarter++;
                }
                if (progressSeconds > 0 && now - lastProgress >= progressSeconds * 1e9) {
                    lastProgress = now;
                    progress.printf("soak %.0f/%.0f s: %d requests, %d faults, %d detected, %d missed, %d false mismatches,"
                                    + " %d thrown%n", (now - start) / 1e9, s.seconds(), rep.requests.get(), rep.sum(rep.injected),
                            rep.sum(rep.detected), rep.sum(rep.missed), rep.falseMismatches.get(), rep.thrown.get());
                }
            }
            for (Future<?> f : workers) {
                try {
                    f.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new IllegalStateException("soak worker died", e.getCause());
                }
            }
            rep.wallNanos = System.nanoTime() - start;
            sampleMemory(rep);
            rep.liveHeapAtQuarters.add(liveHeapAfterGc());
            rep.pendingAtEnd = pd.pendingExpectations();
        }
        return rep;
    }

    private static void one(Disaggregated pd, Report rep, Settings s, SplittableRandom rnd, KvTransfer.Fault[] classes,
            String id) {
        int n = 1 + rnd.nextInt(s.maxTokens());
        int blocks = Math.ceilDiv(n, s.blockSize());
        int prefix = blocks > 1 && rnd.nextDouble() < s.prefixHitRate() ? 1 + rnd.nextInt(blocks - 1) : 0;
        KvTransfer.Fault drawn = rnd.nextDouble() < s.faultRate() ? classes[rnd.nextInt(classes.length)] : KvTransfer.Fault.NONE;
        Disaggregated.Outcome o;
        try {
            o = pd.serve(id, prompt(rnd, n), prefix, s.decodeTokens(), drawn, rnd);
        } catch (RuntimeException | Error e) {
            rep.thrown.incrementAndGet();
            if (rep.firstThrown == null) {
                rep.firstThrown = e.toString();
            }
            return;
        }
        rep.requests.incrementAndGet();
        rep.checksumNanos.addAndGet(o.checksumNanos());
        rep.requestNanos.addAndGet(o.totalNanos());
        rep.checksummedBytes.addAndGet(o.checksummedBytes());
        KvTransfer.Fault f = o.fault();
        rep.injected.get(f).incrementAndGet();
        Status st = o.verdict().status();
        if (st == Status.UNVERIFIED) {
            for (UnverifiedReason r : o.verdict().reasons()) {
                rep.unverified.get(r).incrementAndGet();
            }
        }
        if (f == KvTransfer.Fault.NONE) {
            if (st == Status.MISMATCH) {
                rep.falseMismatches.incrementAndGet();
            } else if (st == Status.UNVERIFIED) {
                rep.unexpectedUnverified.incrementAndGet();
            }
        } else if (f.payloadFault()) {
            (st == Status.UNVERIFIED ? rep.detected : rep.missed).get(f).incrementAndGet();
        } else {
            if (st == Status.MISMATCH) {
                rep.detected.get(f).incrementAndGet();
                if (!Arrays.equals(o.faultedBlocks(), o.verdict().group(PdChecks.GROUP).mismatchedBlocks())) {
                    rep.wrongBlocks.incrementAndGet();
                }
            } else if (st == Status.MATCH) {
                rep.missed.get(f).incrementAndGet();
            } else {
                rep.unexpectedUnverified.incrementAndGet();
            }
        }
        if (o.action() == Action.RECOMPUTE) {
            rep.recomputed.incrementAndGet();
        }
        if (!o.identicalTokens()) {
            rep.wrongTokens.incrementAndGet();
        }
    }

    /** A prompt of {@code n} tokens: BOS, then uniform ids past the special and byte tokens' range start. */
    static int[] prompt(SplittableRandom rnd, int n) {
        int[] p = new int[n];
        p[0] = TinyLlama.BOS;
        for (int i = 1; i < n; i++) {
            p[i] = 3 + rnd.nextInt(TinyLlama.VOCAB - 3);
        }
        return p;
    }

    private static void sampleMemory(Report rep) {
        long heap = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP) {
                heap += p.getUsage().getUsed();
            }
        }
        rep.peakHeapBytes = Math.max(rep.peakHeapBytes, heap);
        for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (b.getName().equals("direct")) {
                rep.peakDirectBytes = Math.max(rep.peakDirectBytes, b.getMemoryUsed());
            }
        }
    }

    private static long liveHeapAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
