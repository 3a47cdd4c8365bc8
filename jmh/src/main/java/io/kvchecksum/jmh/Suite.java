package io.kvchecksum.jmh;

import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatFactory;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Runs the benchmarks programmatically and reports them against the read bound.
 *
 * <pre>
 * java -cp jmh/target/benchmarks.jar io.kvchecksum.jmh.Suite short|full [--backends cpu,cuda] [--out jmh/results]
 *      [--chart docs/bench-cpu.png] [--md docs/bench-cpu.md] [--max-bytes 8GiB] [--label NAME]
 * </pre>
 *
 * <p>Every available backend is run (reference, cpu, opencl, cuda); an unavailable one is listed with the reason and
 * skipped, never replaced. Writes the JMH JSON of the whole run, prints a table (backend, op, shape, size, GB/s,
 * read-bound GB/s, ratio), and draws a chart of GB/s against size per backend with the bounds drawn in.
 * Exits 1 if any benchmark failed (a wrong result fails its benchmark).
 */
public final class Suite {
    private static final String PKG = Suite.class.getPackageName() + ".";
    private static final List<String> SHAPES = ModelShape.ALL.stream().map(ModelShape::id).toList();
    /** The forks' flags, but for the CPU variants' ({@link Backends#CPU_VARIANTS}). */
    private static final List<String> FORK = List.of(Bench.VECTOR, Bench.NATIVE, Bench.HEAP);

    /**
     * One JMH run: the benchmarks matching {@code include} with the parameter {@code key} over {@code values}, on one
     * shape at each of {@code sizes}, in forks started with {@code jvmArgs}.
     */
    private record Plan(String include, String key, List<String> values, String shape, List<String> sizes,
            List<String> jvmArgs) {
        /** {@return the results the run should give: one per method, value and size} */
        int count() {
            return include.split("\\|").length * values.size() * sizes.size();
        }
    }

    /** Iterations and times per mode. */
    private record Timing(int warmups, TimeValue warmupTime, int measurements, TimeValue measurementTime) {
    }

    private Suite() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = parse(args);
        String mode = opt.get("mode");
        boolean full = mode.equals("full");
        Path out = Path.of(opt.getOrDefault("out", Files.isDirectory(Path.of("jmh")) ? "jmh/results" : "results"));
        Path chart = Path.of(opt.getOrDefault("chart", "docs/bench-cpu.png"));
        Path md = Path.of(opt.getOrDefault("md", chart.toString().replaceFirst("\\.(png|svg)$", "") + ".md"));
        long maxBytes = opt.containsKey("max-bytes") ? parseBytes(opt.get("max-bytes")) : defaultMaxBytes();

        System.out.println("kvchecksum benchmark suite: " + mode + " on " + machine());
        System.out.println("  caches: " + io.kvchecksum.bench.Caches.machine() + "; read bound: "
                + io.kvchecksum.bench.MemoryBound.DEFINITION);
        Map<String, String> status = Backends.probe();
        // every backend and CPU variant unless --backends names some
        List<String> wanted = opt.containsKey("backends") ? List.of(opt.get("backends").split(",")) : Backends.ROWS;
        List<String> backends = new ArrayList<>();
        for (Map.Entry<String, String> e : status.entrySet()) {
            if (!wanted.contains(e.getKey())) {
                continue;
            }
            if (e.getValue() != null) {
                System.out.println("  backend " + e.getKey() + ": skipped: " + e.getValue());
                continue;
            }
            backends.add(e.getKey());
            System.out.println("  backend " + e.getKey() + ": available");
            if (e.getKey().equals("cpu")) {
                for (String v : Backends.CPU_VARIANTS.keySet().stream().sorted().filter(wanted::contains).toList()) {
                    backends.add(v);
                    System.out.println("  backend " + v + ": forks with " + Backends.CPU_VARIANTS.get(v));
                }
            }
        }

        // The full sweep: 16 tokens to 128k tokens by factors of 4 plus the cache-relative sizes (capped by memory);
        // the short suite: 1 MiB (in cache) and four times the last-level cache (from memory).
        List<String> sizes = full ? List.of("16", "64", "256", "1024", "4096", "16384", "65536", "131072", "1MiB", "L2", "LLC",
                "4xLLC") : List.of("1MiB", "4xLLC");
        List<String> asyncSizes = full ? sizes : List.of("16", "1MiB", "4xLLC");
        // --timing short: the full sweep with the short suite's iterations (a sweep in well under an hour on 2 cores)
        boolean longTiming = opt.getOrDefault("timing", mode).equals("full");
        Timing timing = longTiming
                ? new Timing(3, TimeValue.seconds(1), 5, TimeValue.seconds(1))
                : new Timing(2, TimeValue.seconds(1), 3, TimeValue.milliseconds(500));
        // --ops fused: only the fused op (and the bounds) at every size, the separate ops and the plan not at all
        boolean fusedOnly = opt.getOrDefault("ops", "all").equals("fused");
        // --forks N: forks per pass benchmark (the short suite 3, the full sweep 1). From memory the bandwidth drifts
        // within a fork's iterations (docs/bench-cpu.md); a row pools the interleaved samples of all its forks (best of
        // each side), with the forks' range beside it
        int passForks = Integer.parseInt(opt.getOrDefault("forks", full ? "1" : "3"));
        if (passForks < 1) {
            usage("--forks must be at least 1");
        }
        List<Plan> plans = plans(full, backends, sizes, asyncSizes, maxBytes, fusedOnly);

        Files.createDirectories(out);
        String date = LocalDate.now().toString();
        Path json = out.resolve(date + "-" + mode + (opt.containsKey("label") ? "-" + opt.get("label") : "") + ".json");
        List<RunResult> results = new ArrayList<>();
        int expected = 0;
        for (Plan p : plans) {
            expected += p.count();
            Options o = new OptionsBuilder()
                    .include(p.include)
                    .param(p.key, p.values.toArray(String[]::new))
                    .param("shape", p.shape)
                    .param("size", p.sizes.toArray(String[]::new))
                    .forks(p.include.contains("ChecksumBench") ? passForks : 1)
                    .threads(1)
                    .warmupIterations(timing.warmups).warmupTime(timing.warmupTime)
                    .measurementIterations(timing.measurements).measurementTime(timing.measurementTime)
                    // nothing inherited from this JVM, and the plan's flags replace the annotations' (a scalar fork
                    // must not get the vector module)
                    .jvmArgs()
                    .jvmArgsAppend(p.jvmArgs.toArray(String[]::new))
                    .shouldFailOnError(false)
                    .verbosity(VerboseMode.NORMAL)
                    .build();
            try {
                results.addAll(new Runner(o).run());
            } catch (RunnerException e) {
                System.err.println("benchmark run failed: " + e);
            }
        }
        // the whole run in one file, as JMH writes one run's (-rf json)
        ResultFormatFactory.getInstance(ResultFormatType.JSON, json.toString()).writeOut(results);

        Report report = new Report(results);
        String table = report.table();
        String header = "Machine: " + machine() + "\nJDK: " + Runtime.version() + " (" + System.getProperty("java.vm.name")
                + ")\nDate: " + ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME) + "\nSuite: " + mode
                + ", " + timing.warmups + "x" + timing.warmupTime + " warm-up, " + timing.measurements + "x"
                + timing.measurementTime + " measurement, " + passForks + " fork" + (passForks == 1 ? "" : "s")
                + " per pass, 1 per bound\nCaches: " + io.kvchecksum.bench.Caches.machine()
                + "\nRead bound: " + io.kvchecksum.bench.MemoryBound.DEFINITION + "\nRatio, interleaved: " + INTERLEAVED
                + " (targets and verdicts use it)\nIn cache: sizes up to the L2 are rounded down, to fewer layers of the "
                + "same layout where one block is larger (the size column names the bytes and layers)\n";
        System.out.println();
        System.out.print(header);
        System.out.println(table);
        System.out.println(report.summary());
        System.out.println("JSON: " + json);
        if (chart.getParent() != null) {
            Files.createDirectories(chart.getParent());
        }
        Chart.draw(report, chart, "kvchecksum fused block checksums vs memory bounds: " + machineName() + ", JDK "
                + Runtime.version().feature() + ", " + date);
        System.out.println("chart: " + chart);
        String generated = "```\n" + header + "Command: java -cp jmh/target/benchmarks.jar io.kvchecksum.jmh.Suite "
                + String.join(" ", args) + "\nJSON: " + json + "\n```\n\n" + report.markdown() + "\n```\n" + report.summary()
                + "```\n\n![chart](" + chart.getFileName() + ")\n";
        Files.writeString(md, markdownFile(md, mode, generated), StandardCharsets.UTF_8);
        System.out.println("table: " + md);
        boolean failed = false;
        if (results.size() < expected) {
            System.out.println("FAILED: " + (expected - results.size()) + " of " + expected
                    + " benchmarks produced no result (wrong result, unavailable reader or error; see the log above)");
            failed = true;
        }
        List<String> impossible = report.implausible();
        if (!impossible.isEmpty()) {
            System.out.println("FAILED MEASUREMENT (BROKEN BOUND): faster than the read bound of the same bytes, so not "
                    + "a result: "
                    + String.join("; ", impossible));
            failed = true;
        }
        if (failed) {
            System.exit(1);
        }
    }

    /**
     * How the ratio that targets and verdicts use is measured ({@link ChecksumBench.Interleaved}); compare.py's v5
     * bound.
     */
    static final String INTERLEAVED = "best of " + ChecksumBench.SAMPLES + " reads of the fastest reader over best of "
            + ChecksumBench.SAMPLES + " passes per iteration, sampled in turn in the pass's own fork, best over every "
            + "iteration and fork on each side";

    static final String BEGIN = "<!-- suite:begin (written by io.kvchecksum.jmh.Suite; edit outside the markers) -->";
    static final String END = "<!-- suite:end -->";

    /**
     * The markdown file with the run's table: where the file already has the suite's markers, only the text between
     * them is replaced, so hand-written findings around the table survive a rerun.
     */
    static String markdownFile(Path md, String mode, String generated) throws IOException {
        String old = Files.exists(md) ? Files.readString(md) : "";
        int b = old.indexOf(BEGIN);
        int e = old.indexOf(END);
        if (b >= 0 && e > b) {
            return old.substring(0, b + BEGIN.length()) + "\n" + generated + old.substring(e);
        }
        return "# kvchecksum benchmark (" + mode + " suite)\n\n" + BEGIN + "\n" + generated + END + "\n";
    }

    private static List<Plan> plans(boolean full, List<String> backends, List<String> sizes, List<String> asyncSizes,
            long maxBytes, boolean fusedOnly) {
        List<String> fast = backends.stream().filter(b -> !b.equals("reference") && !Backends.CPU_VARIANTS.containsKey(b))
                .toList();
        List<String> variants = backends.stream().filter(Backends.CPU_VARIANTS::containsKey).toList();
        // the forks have the Vector API module, which this JVM need not have: every reader but an unavailable native one
        List<String> readers = io.kvchecksum.bench.MemoryBound.Reader.NATIVE.unavailable() == null
                ? List.of("vector", "vector256", "scalar", "native") : List.of("vector", "vector256", "scalar");
        List<String> async = backends.stream().filter(Backends.ASYNC::contains).toList();
        boolean reference = backends.contains("reference");
        String fused = PKG + "ChecksumBench.blockChecksums$";
        String all = PKG + "ChecksumBench.(blockChecksums|sliceSums|combine|rechunk)$";
        List<Plan> plans = new ArrayList<>();
        for (String shape : SHAPES) {
            ModelShape s = ModelShape.of(shape);
            List<String> fits = fit(s, sizes, maxBytes);
            List<String> small = fits.stream().filter(size -> s.kvBytes(size) <= Oracle.REFERENCE_BYTES).toList();
            String passes = !fusedOnly && (full || shape.equals("llama3-8b-tp1")) ? all : fused;
            plans.add(new Plan(PKG + "BoundsBench.read$", "reader", readers, shape, fits, FORK));
            plans.add(new Plan(PKG + "BoundsBench.copy$", "reader", List.of("vector"), shape, fits, FORK));
            plans.add(new Plan(passes, "backend", fast, shape, fits, FORK));
            if (fast.contains("cpu") && !fusedOnly) {
                plans.add(new Plan(PKG + "ChecksumBench.plan$", "backend", List.of("cpu"), shape, fits, FORK));
            }
            for (String v : variants) {
                plans.add(new Plan(fused, "backend", List.of(v), shape, fits, Backends.CPU_VARIANTS.get(v)));
            }
            if (reference) {
                plans.add(new Plan(passes, "backend", List.of("reference"), shape, small, FORK));
            }
            if (!async.isEmpty() && (full || shape.equals("llama3-8b-tp1"))) {
                plans.add(new Plan(PKG + "SubmitBench.submit$", "backend", async, shape, fit(s, asyncSizes, maxBytes),
                        FORK));
            }
        }
        // nothing to run where no size fits or no backend runs
        plans.removeIf(p -> p.values.isEmpty() || p.sizes.isEmpty());
        if (async.isEmpty()) {
            System.out.println("  host-sync-free benchmark skipped: no asynchronous backend (opencl, cuda) is available");
        }
        return plans;
    }

    /** The sizes whose KV fits {@code maxBytes}; each one that does not is listed as skipped. */
    private static List<String> fit(ModelShape s, List<String> sizes, long maxBytes) {
        List<String> out = new ArrayList<>();
        for (String size : sizes) {
            long bytes = s.kvBytes(size);
            if (bytes <= maxBytes) {
                out.add(size);
            } else {
                System.out.println("  " + s.id() + " at " + size + " skipped: " + (bytes >> 20) + " MiB of KV exceeds the "
                        + (maxBytes >> 20) + " MiB limit (--max-bytes; default 60% of physical memory)");
            }
        }
        return out;
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opt = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("--") && i + 1 < args.length) {
                opt.put(a.substring(2), args[++i]);
            } else if (a.equals("short") || a.equals("full")) {
                opt.put("mode", a);
            } else {
                usage("unexpected argument '" + a + "'");
            }
        }
        if (!opt.containsKey("mode")) {
            usage("say short or full");
        }
        return opt;
    }

    private static void usage(String problem) {
        System.err.println(problem + "\nusage: java -cp jmh/target/benchmarks.jar io.kvchecksum.jmh.Suite short|full "
                + "[--backends reference,cpu,opencl,cuda] [--out DIR] [--chart FILE.png] [--md FILE.md] "
                + "[--max-bytes 8GiB] [--label NAME] [--timing short|full] [--ops fused|all] [--forks N]");
        System.exit(2);
    }

    /** {@code 8GiB}, {@code 512MiB}, {@code 64KiB} or a count of bytes. */
    static long parseBytes(String s) {
        long b = ModelShape.bytes(s);
        return b != -1 ? b : Long.parseLong(s.trim());
    }

    /** 60% of physical memory: the KV, the copy destination (up to 1 GiB) and the JVMs must fit. */
    private static long defaultMaxBytes() {
        long mem = totalMemory();
        return mem == 0 ? 4L << 30 : Math.max(256L << 20, (long) (mem * 0.6) - (1L << 30));
    }

    /** Rows of the run, joined with the read and copy bounds of the same shape and size. */
    static final class Report {
        /** One measured benchmark, with JMH's secondary results ({@code aux}). */
        record Row(String backend, String op, String shape, String size, long tokens, long kvBytes, double nsPerOp,
                Map<String, Result> aux, List<Double> forkRatios, double pooledRatio, String loop, String label) {
            double gbps() {
                return kvBytes / nsPerOp;
            }
        }

        /** Ops in table order. */
        private static final List<String> OPS = List.of("read:vector", "read:vector256", "read:scalar", "read:native",
                "copy", "blockChecksums", "sliceSums", "plan", "combine", "rechunk", "submit");
        private final List<Row> rows = new ArrayList<>();
        private final Map<String, Row> reads = new LinkedHashMap<>();
        private final Map<String, Row> copies = new LinkedHashMap<>();

        Report(List<RunResult> results) {
            for (RunResult r : results) {
                String bench = r.getParams().getBenchmark();
                String cls = bench.substring(PKG.length(), bench.lastIndexOf('.'));
                String op = bench.substring(bench.lastIndexOf('.') + 1);
                String shape = r.getParams().getParam("shape");
                String size = r.getParams().getParam("size");
                ModelShape s = ModelShape.of(shape);
                String backend = cls.equals("BoundsBench") ? "bound" : r.getParams().getParam("backend");
                if (cls.equals("BoundsBench") && op.equals("read")) {
                    op = "read:" + r.getParams().getParam("reader");
                }
                ModelShape.Case c = s.at(size);
                Row row = new Row(backend, cls.equals("SubmitBench") ? "submit" : op, shape, size, c.tokens(),
                        c.kvBytes(), r.getPrimaryResult().getScore(), r.getSecondaryResults(), forkRatios(r),
                        pooledRatio(r), loop(r), c.label(size));
                rows.add(row);
                if (backend.equals("bound") && op.equals("copy")) {
                    copies.put(shape + "/" + size, row);
                } else if (backend.equals("bound")) {
                    // the read bound is the fastest reader of the same bytes
                    reads.merge(shape + "/" + size, row, (x, y) -> x.nsPerOp <= y.nsPerOp ? x : y);
                }
            }
            // the bounds first (no backend), then the backends' rows in table order
            rows.sort(Comparator.comparingInt((Row r) -> Backends.ROWS.indexOf(r.backend)).thenComparingInt(r -> OPS.indexOf(r.op))
                    .thenComparingInt(r -> SHAPES.indexOf(r.shape)).thenComparingLong(Row::kvBytes));
        }

        List<Row> rows() {
            return rows;
        }

        /** The read bound of a row's shape and size: the fastest reader's row. */
        Row read(Row r) {
            return reads.get(r.shape + "/" + r.size);
        }

        /** The read bounds, one per shape and size, for the chart. */
        List<Row> readBounds() {
            return List.copyOf(reads.values());
        }

        /** Whether a row is a pass over every KV byte (so the read bound limits it), not a bound or a step on sums. */
        private static boolean readsKv(Row r) {
            return !r.backend.equals("bound") && (r.op.equals("blockChecksums") || r.op.equals("sliceSums"));
        }

        /** Whether a pass over the KV was measured faster than the read bound of the same bytes: a failed measurement. */
        private boolean failed(Row r) {
            return readsKv(r) && !Double.isNaN(verdictRatio(r))
                    && !io.kvchecksum.bench.MemoryBound.plausible(verdictRatio(r), 0);
        }

        /** The checksum rows measured faster than the read bound of the same bytes: failed measurements. */
        List<String> implausible() {
            return rows.stream().filter(this::failed).map(r -> String.format(Locale.ROOT, "%s %s %s %s at %.3f of the read "
                    + "bound", r.backend, r.op, r.shape, r.size, verdictRatio(r))).toList();
        }

        /** The best (least) value of a secondary result over every iteration of the given forks, or NaN. */
        private static double best(List<org.openjdk.jmh.results.BenchmarkResult> forks, String name) {
            double best = Double.NaN;
            for (org.openjdk.jmh.results.BenchmarkResult fork : forks) {
                for (org.openjdk.jmh.results.IterationResult it : fork.getIterationResults()) {
                    Result<?> v = it.getSecondaryResults().get(name);
                    if (v != null && v.getScore() > 0 && !(v.getScore() >= best)) {
                        best = v.getScore();
                    }
                }
            }
            return best;
        }

        /**
         * Per fork, the interleaved ratio ({@link ChecksumBench.Interleaved}): the bound's best sample over the pass's
         * best sample, both over that fork's iterations; empty for benchmarks without one.
         */
        private static List<Double> forkRatios(RunResult r) {
            List<Double> out = new ArrayList<>();
            for (org.openjdk.jmh.results.BenchmarkResult fork : r.getBenchmarkResults()) {
                double ratio = best(List.of(fork), "boundBestNanos") / best(List.of(fork), "passBestNanos");
                if (Double.isNaN(ratio)) {
                    return List.of();
                }
                out.add(ratio);
            }
            return out;
        }

        /**
         * The interleaved ratio over the whole row: the bound's best sample over every iteration of every fork, over the
         * pass's best sample over the same (as many samples on each side, taken in turn); NaN without one.
         */
        private static double pooledRatio(RunResult r) {
            List<org.openjdk.jmh.results.BenchmarkResult> forks = new ArrayList<>(r.getBenchmarkResults());
            return best(forks, "boundBestNanos") / best(forks, "passBestNanos");
        }

        /** The loop a row ran, from its secondary result {@code loopBits}; {@code -} where the benchmark names none. */
        private static String loop(RunResult r) {
            String bench = r.getParams().getBenchmark();
            if (bench.endsWith("BoundsBench.read") && "native".equals(r.getParams().getParam("reader"))) {
                return "C memcmp";
            }
            for (org.openjdk.jmh.results.BenchmarkResult fork : r.getBenchmarkResults()) {
                for (org.openjdk.jmh.results.IterationResult it : fork.getIterationResults()) {
                    Result<?> v = it.getSecondaryResults().get("loopBits");
                    if (v != null) {
                        return Backends.loopName(v.getScore());
                    }
                }
            }
            return "-";
        }

        /** The interleaved ratio of a row (best sample of the bound over best sample of the pass), or NaN. */
        double sameForkRatio(Row r) {
            return r.pooledRatio;
        }

        /**
         * The ratio targets and verdicts use: against the same fork's bound where the row has one (the bound and the pass
         * seconds apart), else against the bound's own forks.
         */
        double verdictRatio(Row r) {
            double same = sameForkRatio(r);
            return Double.isNaN(same) ? ratio(r) : same;
        }

        /** Ratio of a row's GB/s to the read bound of the same bytes, or NaN when the bound is missing. */
        double ratio(Row r) {
            Row b = read(r);
            return b == null ? Double.NaN : r.gbps() / b.gbps();
        }

        private List<String[]> cells() {
            List<String[]> out = new ArrayList<>();
            out.add(new String[] {"backend", "loop", "op", "shape", "size", "tokens", "KV MiB", "time/op", "GB/s",
                "read GB/s", "bound by", "ratio", "ratio, interleaved (best/best, all forks [range of forks])", "copy GB/s"});
            for (Row r : rows) {
                Row rd = read(r);
                Row cp = copies.get(r.shape + "/" + r.size);
                String time = r.nsPerOp >= 1e6 ? String.format(Locale.ROOT, "%.2f ms", r.nsPerOp / 1e6)
                        : r.nsPerOp >= 1e3 ? String.format(Locale.ROOT, "%.1f us", r.nsPerOp / 1e3)
                        : String.format(Locale.ROOT, "%.0f ns", r.nsPerOp);
                if (r.op.equals("submit")) {
                    Result<?> syncs = r.aux.get("syncCalls");
                    Result<?> recorded = r.aux.get("recordedSubmits");
                    String perOp = recorded == null || recorded.getScore() == 0 ? "syncs/op n/a (no recorder)"
                            : String.format(Locale.ROOT, "syncs/op %.3f", syncs.getScore() / recorded.getScore());
                    out.add(new String[] {r.backend, r.loop, "submit (host)", r.shape, r.label, Long.toString(r.tokens),
                        mib(r.kvBytes),
                        time, "-", "-", "-", perOp, "-", "-"});
                    continue;
                }
                String ratio = rd == null ? "n/a" : shown(ratio(r), readsKv(r));
                double same = sameForkRatio(r);
                String sameRatio = Double.isNaN(same) ? "-" : shown(same, true);
                if (r.forkRatios.size() > 1) {
                    sameRatio += String.format(Locale.ROOT, " [%.3f-%.3f]", Collections.min(r.forkRatios),
                            Collections.max(r.forkRatios));
                }
                out.add(new String[] {r.backend, r.loop, r.op, r.shape, r.label, Long.toString(r.tokens), mib(r.kvBytes), time,
                    gb(r.gbps()), rd == null ? "n/a" : gb(rd.gbps()),
                    rd == null ? "n/a" : rd.op.substring("read:".length()), ratio, sameRatio,
                    cp == null ? "n/a" : gb(cp.gbps())});
            }
            return out;
        }

        /**
         * A ratio as the table shows it: a pass over the KV measured faster than the read bound of the same bytes is
         * not a result but a broken bound (the bound measured too slow, or the pass skipped bytes), so it is printed as
         * such, never as a bare number.
         */
        static String shown(double ratio, boolean pass) {
            String v = String.format(Locale.ROOT, "%.3f", ratio);
            return pass && !io.kvchecksum.bench.MemoryBound.plausible(ratio, 0) ? "BROKEN BOUND (" + v + ", pass faster "
                    + "than the read bound)" : v;
        }

        String table() {
            List<String[]> c = cells();
            // each column as wide as its widest cell
            int[] w = IntStream.range(0, c.get(0).length).map(i -> c.stream().mapToInt(row -> row[i].length()).max().orElse(0))
                    .toArray();
            StringBuilder sb = new StringBuilder();
            for (String[] row : c) {
                for (int i = 0; i < row.length; i++) {
                    sb.append(i < 5 ? String.format("%-" + w[i] + "s", row[i]) : String.format("%" + w[i] + "s", row[i]));
                    sb.append(i + 1 < row.length ? "  " : "\n");
                }
            }
            return sb.toString();
        }

        String markdown() {
            List<String[]> c = cells();
            StringBuilder sb = new StringBuilder();
            sb.append("| ").append(String.join(" | ", c.get(0))).append(" |\n");
            sb.append("|").append("---|".repeat(c.get(0).length)).append("\n");
            for (String[] row : c.subList(1, c.size())) {
                sb.append("| ").append(String.join(" | ", row)).append(" |\n");
            }
            return sb.toString();
        }

        /** The target lines: fast CPU against the read bound at 256 MiB and 1 MiB, the reference alongside. */
        String summary() {
            StringBuilder sb = new StringBuilder("Targets (fused blockChecksums, interleaved ratio to the read "
                    + "bound, best/best):\n");
            for (String backend : Backends.ROWS) {
                List<Row> fused = rows.stream().filter(r -> r.backend.equals(backend) && r.op.equals("blockChecksums"))
                        .toList();
                Map<String, List<Row>> bySize = fused.stream().collect(Collectors.groupingBy(Row::size, LinkedHashMap::new,
                        Collectors.toList()));
                for (Map.Entry<String, List<Row>> e : bySize.entrySet()) {
                    double min = e.getValue().stream().mapToDouble(this::verdictRatio).min().orElse(Double.NaN);
                    double mean = e.getValue().stream().mapToDouble(this::verdictRatio).average().orElse(Double.NaN);
                    double goal = !backend.startsWith("cpu") ? Double.NaN : e.getKey().equals("4xLLC") ? 0.95
                            : e.getKey().equals("1MiB") ? 0.90 : Double.NaN;
                    String target = Double.isNaN(goal) ? ""
                            : String.format(Locale.ROOT, "  (target >= %.2f: %s)", goal, min >= goal ? "met" : "NOT met");
                    sb.append(String.format(Locale.ROOT, "  %-10s %-7s min %.3f mean %.3f over %d shapes%s%n", backend,
                            e.getKey(), min, mean, e.getValue().size(), target));
                }
            }
            return sb.toString();
        }

        private static String mib(long bytes) {
            return String.format(Locale.ROOT, "%.2f", bytes / 1048576.0);
        }

        private static String gb(double v) {
            return v >= 10 ? String.format(Locale.ROOT, "%.1f", v) : String.format(Locale.ROOT, "%.3f", v);
        }
    }

    /** The machine in short, for the chart: the CPU and its cores. */
    static String machineName() {
        String cpu = "unknown CPU";
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    cpu = line.substring(line.indexOf(':') + 1).strip();
                    break;
                }
            }
        } catch (IOException | RuntimeException e) {
            cpu = System.getProperty("os.arch");
        }
        return cpu + ", " + Runtime.getRuntime().availableProcessors() + " cores";
    }

    /** The machine in words, for the table: the CPU, its cores, the memory and the OS. */
    static String machine() {
        return machineName() + ", " + (totalMemory() >> 30) + " GiB, " + System.getProperty("os.name") + " "
                + System.getProperty("os.version");
    }

    /** {@return the physical memory, or 0 where the JVM does not say} */
    private static long totalMemory() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getTotalMemorySize() : 0;
    }
}
