package io.kvchecksum.jmh;

import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
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
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

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
    private static final List<String> SHAPES = List.of("llama3-8b-tp1", "llama3-70b-tp8", "deepseek-mla-bf16",
            "deepseek-mla-fp8");

    /**
     * One JMH run: the benchmarks matching {@code include} over the cross product of {@code params}, in forks started
     * with {@code jvmArgs}.
     */
    private record Plan(String include, Map<String, List<String>> params, List<String> jvmArgs) {
        Plan(String include, Map<String, List<String>> params) {
            this(include, params, List.of(Jvm.VECTOR, Jvm.NATIVE, Jvm.HEAP));
        }

        int count(int methods) {
            int n = methods;
            for (List<String> v : params.values()) {
                n *= v.size();
            }
            return n;
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

        System.out.println("kvchecksum benchmark suite: " + mode + " on " + Machine.describe());
        System.out.println("  caches: " + io.kvchecksum.bench.Caches.machine() + "; read bound: "
                + io.kvchecksum.bench.MemoryBound.DEFINITION);
        Map<String, String> status = Backends.probe();
        List<String> wanted = opt.containsKey("backends") ? List.of(opt.get("backends").split(",")) : Backends.ALL;
        List<String> backends = new ArrayList<>();
        for (Map.Entry<String, String> e : status.entrySet()) {
            if (!wanted.contains(e.getKey())) {
                continue;
            }
            if (e.getValue() == null) {
                backends.add(e.getKey());
                System.out.println("  backend " + e.getKey() + ": available");
                if (e.getKey().equals("cpu")) {
                    for (String v : Backends.CPU_VARIANTS.keySet().stream().sorted().toList()) {
                        if (wanted.contains(v) || !opt.containsKey("backends")) {
                            backends.add(v);
                            System.out.println("  backend " + v + ": forks with " + Backends.CPU_VARIANTS.get(v));
                        }
                    }
                }
            } else {
                System.out.println("  backend " + e.getKey() + ": skipped: " + e.getValue());
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
        // within a fork's iterations (docs/bench-cpu.md), so a row is its best fork's ratio, with the range beside it
        int passForks = Integer.parseInt(opt.getOrDefault("forks", full ? "1" : "3"));
        if (passForks < 1) {
            usage("--forks must be at least 1");
        }
        List<Plan> plans = plans(full, backends, sizes, asyncSizes, maxBytes, fusedOnly);

        Files.createDirectories(out);
        String date = LocalDate.now().toString();
        Path json = out.resolve(date + "-" + mode + (opt.containsKey("label") ? "-" + opt.get("label") : "") + ".json");
        List<RunResult> results = new ArrayList<>();
        List<String> jsonParts = new ArrayList<>();
        int expected = 0;
        for (Plan p : plans) {
            int methods = p.include.contains("|") ? p.include.split("\\|").length : 1;
            expected += p.count(methods);
            Path part = Files.createTempFile("kvchecksum-jmh-", ".json");
            ChainedOptionsBuilder b = new OptionsBuilder()
                    .include(p.include)
                    .forks(p.include.contains("ChecksumBench") ? passForks : 1)
                    .threads(1)
                    .warmupIterations(timing.warmups).warmupTime(timing.warmupTime)
                    .measurementIterations(timing.measurements).measurementTime(timing.measurementTime)
                    // nothing inherited from this JVM, and the plan's flags replace the annotations' (a scalar fork
                    // must not get the vector module)
                    .jvmArgs()
                    .jvmArgsAppend(p.jvmArgs.toArray(String[]::new))
                    .resultFormat(ResultFormatType.JSON).result(part.toString())
                    .shouldFailOnError(false)
                    .verbosity(VerboseMode.NORMAL);
            for (Map.Entry<String, List<String>> e : p.params.entrySet()) {
                b.param(e.getKey(), e.getValue().toArray(String[]::new));
            }
            try {
                Collection<RunResult> r = new Runner(b.build()).run();
                results.addAll(r);
            } catch (RunnerException e) {
                System.err.println("benchmark run failed: " + e);
            }
            String text = Files.exists(part) ? Files.readString(part).strip() : "";
            if (text.length() > 2) {
                jsonParts.add(text.substring(1, text.length() - 1).strip());
            }
            Files.deleteIfExists(part);
        }
        Files.writeString(json, "[\n" + String.join(",\n", jsonParts) + "\n]\n", StandardCharsets.UTF_8);

        Report report = new Report(results);
        String table = report.table();
        String header = "Machine: " + Machine.describe() + "\nJDK: " + Runtime.version() + " (" + System.getProperty("java.vm.name")
                + ")\nDate: " + ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME) + "\nSuite: " + mode
                + ", " + timing.warmups + "x" + timing.warmupTime + " warm-up, " + timing.measurements + "x"
                + timing.measurementTime + " measurement, " + passForks + " fork" + (passForks == 1 ? "" : "s")
                + " per pass, 1 per bound\nCaches: " + io.kvchecksum.bench.Caches.machine()
                + "\nRead bound: " + io.kvchecksum.bench.MemoryBound.DEFINITION + "\nRatio, same fork: against the same "
                + "bound measured in the pass's own fork before each iteration (targets and verdicts use it)\n";
        System.out.println();
        System.out.print(header);
        System.out.println(table);
        System.out.println(report.summary());
        System.out.println("JSON: " + json);
        if (chart.getParent() != null) {
            Files.createDirectories(chart.getParent());
        }
        Chart.draw(report, chart, "kvchecksum fused block checksums vs memory bounds: " + Machine.shortName() + ", JDK "
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
            System.out.println("FAILED MEASUREMENT: faster than the read bound of the same bytes, so not a result: "
                    + String.join("; ", impossible));
            failed = true;
        }
        if (failed) {
            System.exit(1);
        }
    }

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
        String separate = PKG + "ChecksumBench.(sliceSums|combine|rechunk)$";
        String all = PKG + "ChecksumBench.(blockChecksums|sliceSums|combine|rechunk)$";
        List<Plan> plans = new ArrayList<>();
        for (String shape : SHAPES) {
            ModelShape s = ModelShape.of(shape);
            List<String> fits = fit(s, sizes, maxBytes, "");
            List<String> small = fit(s, sizes, Math.min(maxBytes, ChecksumBench.REFERENCE_MAX_BYTES), "reference backend ");
            boolean separateHere = !fusedOnly && (full || shape.equals("llama3-8b-tp1"));
            if (!fits.isEmpty()) {
                plans.add(new Plan(PKG + "BoundsBench.read$", params("reader", readers, "shape", List.of(shape), "size", fits)));
                plans.add(new Plan(PKG + "BoundsBench.copy$", params("reader", List.of("vector"), "shape", List.of(shape),
                        "size", fits)));
            }
            if (!fast.isEmpty() && !fits.isEmpty()) {
                plans.add(new Plan(separateHere ? all : fused, params("backend", fast, "shape", List.of(shape), "size", fits)));
            }
            if (fast.contains("cpu") && !fits.isEmpty() && !fusedOnly) {
                plans.add(new Plan(PKG + "ChecksumBench.plan$", params("backend", List.of("cpu"), "shape", List.of(shape),
                        "size", fits)));
            }
            for (String v : fits.isEmpty() ? List.<String>of() : variants) {
                plans.add(new Plan(fused, params("backend", List.of(v), "shape", List.of(shape), "size", fits),
                        Backends.CPU_VARIANTS.get(v)));
            }
            if (reference && !small.isEmpty()) {
                plans.add(new Plan(separateHere ? all : fused,
                        params("backend", List.of("reference"), "shape", List.of(shape), "size", small)));
            }
            if (!async.isEmpty() && (full || shape.equals("llama3-8b-tp1"))) {
                List<String> as = fit(s, asyncSizes, maxBytes, "");
                if (!as.isEmpty()) {
                    plans.add(new Plan(PKG + "SubmitBench.submit$", params("backend", async, "shape", List.of(shape), "size", as)));
                }
            }
        }
        if (async.isEmpty()) {
            System.out.println("  host-sync-free benchmark skipped: no asynchronous backend (opencl, cuda) is available");
        }
        return plans;
    }

    private static List<String> fit(ModelShape s, List<String> sizes, long maxBytes, String who) {
        List<String> out = new ArrayList<>();
        for (String size : sizes) {
            long bytes = s.kvBytes(size);
            if (bytes <= maxBytes) {
                out.add(size);
            } else if (who.isEmpty()) {
                System.out.println("  " + s.id() + " at " + size + " skipped: " + (bytes >> 20) + " MiB of KV exceeds the "
                        + (maxBytes >> 20) + " MiB limit (--max-bytes; default 60% of physical memory)");
            }
        }
        return out;
    }

    private static Map<String, List<String>> params(Object... kv) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            @SuppressWarnings("unchecked")
            List<String> v = (List<String>) kv[i + 1];
            m.put((String) kv[i], v);
        }
        return m;
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

    static long parseBytes(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        long mul = t.endsWith("gib") ? 1L << 30 : t.endsWith("mib") ? 1L << 20 : t.endsWith("kib") ? 1L << 10 : 1;
        return Long.parseLong(mul == 1 ? t : t.substring(0, t.length() - 3)) * mul;
    }

    /** 60% of physical memory: the KV, the copy destination (up to 1 GiB) and the JVMs must fit. */
    private static long defaultMaxBytes() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return Math.max(256L << 20, (long) (os.getTotalMemorySize() * 0.6) - (1L << 30));
        }
        return 4L << 30;
    }

    /** Rows of the run, joined with the read and copy bounds of the same shape and size. */
    static final class Report {
        /** One measured benchmark. */
        record Row(String backend, String op, String shape, String size, long tokens, long kvBytes, double nsPerOp,
                double nsError, Map<String, Double> aux, List<Double> forkRatios) {
            double gbps() {
                return kvBytes / nsPerOp;
            }
        }

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
                Result<?> p = r.getPrimaryResult();
                Map<String, Double> aux = new LinkedHashMap<>();
                for (Map.Entry<String, Result> e : r.getSecondaryResults().entrySet()) {
                    aux.put(e.getKey(), e.getValue().getScore());
                }
                Row row = new Row(backend, cls.equals("SubmitBench") ? "submit" : op, shape, size, s.tokens(size),
                        s.kvBytes(size), p.getScore(), p.getScoreError(), aux, forkRatios(r));
                rows.add(row);
                if (backend.equals("bound") && op.equals("copy")) {
                    copies.put(shape + "/" + size, row);
                } else if (backend.equals("bound")) {
                    // the read bound is the fastest reader of the same bytes
                    reads.merge(shape + "/" + size, row, (x, y) -> x.nsPerOp <= y.nsPerOp ? x : y);
                }
            }
            rows.sort((a, b) -> {
                int c = Integer.compare(order(a.backend), order(b.backend));
                c = c != 0 ? c : Integer.compare(opOrder(a.op), opOrder(b.op));
                c = c != 0 ? c : Integer.compare(SHAPES.indexOf(a.shape), SHAPES.indexOf(b.shape));
                return c != 0 ? c : Long.compare(a.kvBytes, b.kvBytes);
            });
        }

        List<Row> rows() {
            return rows;
        }

        /** The read bound of a row's shape and size: the fastest reader's row. */
        Row read(Row r) {
            return reads.get(r.shape + "/" + r.size);
        }

        /** The reader that set the read bound of a row's shape and size, or {@code n/a}. */
        String reader(Row r) {
            Row b = read(r);
            return b == null ? "n/a" : b.op.substring("read:".length());
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
            List<String> out = new ArrayList<>();
            for (Row r : rows) {
                if (failed(r)) {
                    out.add(String.format(Locale.ROOT, "%s %s %s %s at %.3f of the read bound", r.backend, r.op, r.shape,
                            r.size, verdictRatio(r)));
                }
            }
            return out;
        }

        /**
         * Per fork, the bound measured in that fork before each iteration ({@link ChecksumBench.SameForkBound}) over the
         * fork's time per operation; empty for benchmarks without one.
         */
        private static List<Double> forkRatios(RunResult r) {
            List<Double> out = new ArrayList<>();
            for (org.openjdk.jmh.results.BenchmarkResult fork : r.getBenchmarkResults()) {
                Result<?> nanos = fork.getSecondaryResults().get("boundNanos");
                Result<?> iterations = fork.getSecondaryResults().get("boundIterations");
                if (nanos == null || iterations == null || iterations.getScore() == 0) {
                    return List.of();
                }
                out.add(nanos.getScore() / iterations.getScore() / fork.getPrimaryResult().getScore());
            }
            return out;
        }

        /**
         * Ratio of a row's GB/s to the read bound measured in its own fork before each iteration: the best of the row's
         * forks (the bound too is a best time), or NaN for rows without a same-fork bound. The table shows the range.
         */
        double sameForkRatio(Row r) {
            return r.forkRatios.stream().mapToDouble(x -> x).max().orElse(Double.NaN);
        }

        /**
         * The ratio targets and verdicts use: against the same fork's bound where the row has one (the bound and the pass
         * seconds apart), else against the bound's own forks.
         */
        double verdictRatio(Row r) {
            double same = sameForkRatio(r);
            return Double.isNaN(same) ? ratio(r) : same;
        }

        Row copy(Row r) {
            return copies.get(r.shape + "/" + r.size);
        }

        /** Ratio of a row's GB/s to the read bound of the same bytes, or NaN when the bound is missing. */
        double ratio(Row r) {
            Row b = read(r);
            return b == null ? Double.NaN : r.gbps() / b.gbps();
        }

        private static int order(String backend) {
            int i = Backends.ROWS.indexOf(backend);
            return i < 0 ? -1 : i;
        }

        private static int opOrder(String op) {
            return List.of("read:vector", "read:vector256", "read:scalar", "read:native", "copy", "blockChecksums", "sliceSums", "plan",
                    "combine", "rechunk", "submit").indexOf(op);
        }

        private List<String[]> cells() {
            List<String[]> out = new ArrayList<>();
            out.add(new String[] {"backend", "op", "shape", "size", "tokens", "KV MiB", "time/op", "GB/s", "read GB/s",
                "bound by", "ratio", "ratio, same fork (best [range] of forks)", "copy GB/s"});
            for (Row r : rows) {
                Row rd = read(r);
                Row cp = copy(r);
                String time = r.nsPerOp >= 1e6 ? String.format(Locale.ROOT, "%.2f ms", r.nsPerOp / 1e6)
                        : r.nsPerOp >= 1e3 ? String.format(Locale.ROOT, "%.1f us", r.nsPerOp / 1e3)
                        : String.format(Locale.ROOT, "%.0f ns", r.nsPerOp);
                if (r.op.equals("submit")) {
                    Double syncs = r.aux.get("syncCalls");
                    Double recorded = r.aux.get("recordedSubmits");
                    String perOp = recorded == null || recorded == 0 ? "syncs/op n/a (no recorder)"
                            : String.format(Locale.ROOT, "syncs/op %.3f", syncs / recorded);
                    out.add(new String[] {r.backend, "submit (host)", r.shape, r.size, Long.toString(r.tokens), mib(r.kvBytes),
                        time, "-", "-", "-", perOp, "-", "-"});
                    continue;
                }
                String ratio = rd == null ? "n/a" : String.format(Locale.ROOT, "%.3f", ratio(r));
                double same = sameForkRatio(r);
                String sameRatio = Double.isNaN(same) ? "-" : String.format(Locale.ROOT, "%.3f", same);
                if (r.forkRatios.size() > 1) {
                    sameRatio += String.format(Locale.ROOT, " [%.3f-%.3f]", r.forkRatios.stream().mapToDouble(x -> x).min()
                            .orElse(Double.NaN), r.forkRatios.stream().mapToDouble(x -> x).max().orElse(Double.NaN));
                }
                if (failed(r)) {
                    sameRatio += " FAILED (faster than the bound)";
                }
                out.add(new String[] {r.backend, r.op, r.shape, r.size, Long.toString(r.tokens), mib(r.kvBytes), time,
                    gb(r.gbps()), rd == null ? "n/a" : gb(rd.gbps()), reader(r), ratio, sameRatio,
                    cp == null ? "n/a" : gb(cp.gbps())});
            }
            return out;
        }

        String table() {
            List<String[]> c = cells();
            int[] w = new int[c.get(0).length];
            for (String[] row : c) {
                for (int i = 0; i < row.length; i++) {
                    w[i] = Math.max(w[i], row[i].length());
                }
            }
            StringBuilder sb = new StringBuilder();
            for (String[] row : c) {
                for (int i = 0; i < row.length; i++) {
                    sb.append(i < 4 ? String.format("%-" + w[i] + "s", row[i]) : String.format("%" + w[i] + "s", row[i]));
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
            StringBuilder sb = new StringBuilder("Targets (fused blockChecksums, ratio to the read bound measured in the same "
                    + "fork):\n");
            for (String backend : Backends.ROWS) {
                List<Row> fused = rows.stream().filter(r -> r.backend.equals(backend) && r.op.equals("blockChecksums"))
                        .toList();
                if (fused.isEmpty()) {
                    continue;
                }
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

    /** The machine in words, for the table and the chart. */
    static final class Machine {
        private Machine() {
        }

        static String shortName() {
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

        static String describe() {
            long mem = 0;
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                mem = os.getTotalMemorySize();
            }
            return shortName() + ", " + (mem >> 30) + " GiB, " + System.getProperty("os.name") + " " + System.getProperty("os.version");
        }
    }
}
