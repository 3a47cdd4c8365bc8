package io.kvchecksum.jmh;

import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The project's read bound and fused pass held to an independent C reader ({@code ../shared/tools/readbound}) at the
 * same bytes and threads as {@link ChecksumBench#blockChecksums}' cases. Run by {@code jmh/readbound-compare.sh},
 * which builds what is missing:
 *
 * <pre>
 * java -cp jmh/target/benchmarks.jar io.kvchecksum.jmh.ReadBoundCompare --readbound PATH [--shapes a,b] [--sizes 1MiB,1GiB]
 *      [--rounds 2] [--repeats 15] [--min-ms 25] [--iterations 3] [--jvm-args "-XX:UseAVX=2"]
 * </pre>
 *
 * <p>Per case and round: {@code readbound --no-huge --json} (the JVM's arenas are not huge-page advised), then one
 * short JMH fork of the CPU backend's fused pass, whose {@link ChecksumBench.Interleaved} samples give the project's
 * bound and the pass (best of each, sampled in turn). Over the rounds, the best of each. Printed per case: the three
 * rates, fused ÷ C and project bound ÷ C, flagged where the project's bound is below {@value #HONEST} of the C
 * reader's (its bound is then no bound) or where anything is above the C reader (the C reader then read too slowly
 * this time: a broken bound, not a result). Exits 1 when anything was flagged or failed.
 */
public final class ReadBoundCompare {
    /** The least project-bound ÷ C-bound that counts as an honest bound. */
    static final double HONEST = 0.95;

    private ReadBoundCompare() {
    }

    /** The rates of one case over the rounds, in GB/s (10^9 bytes per second). */
    record Rates(List<Double> c, List<Double> c256, List<Double> bound, List<Double> fused) {
        static double best(List<Double> v) {
            return v.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                usage("unexpected argument '" + args[i] + "'");
            }
            opt.put(args[i].substring(2), args[i + 1]);
        }
        if (args.length % 2 != 0) {
            usage("option " + args[args.length - 1] + " needs a value");
        }
        String readbound = opt.get("readbound");
        if (readbound == null) {
            usage("--readbound PATH is required (jmh/readbound-compare.sh builds it and passes it)");
        }
        List<String> shapes = List.of(opt.getOrDefault("shapes", "llama3-8b-tp1,deepseek-mla-bf16").split(","));
        List<String> sizes = List.of(opt.getOrDefault("sizes", "1MiB,1GiB").split(","));
        int rounds = Integer.parseInt(opt.getOrDefault("rounds", "2"));
        String repeats = opt.getOrDefault("repeats", "15");
        String minMs = opt.getOrDefault("min-ms", "25");
        int iterations = Integer.parseInt(opt.getOrDefault("iterations", "3"));
        List<String> jvmArgs = new ArrayList<>(List.of(Bench.VECTOR, Bench.NATIVE, Bench.HEAP));
        if (opt.containsKey("jvm-args")) {
            jvmArgs.addAll(Arrays.asList(opt.get("jvm-args").trim().split("\\s+")));
        }
        int cores = Runtime.getRuntime().availableProcessors();
        System.out.println("readbound-compare: " + Suite.machine() + "; caches " + io.kvchecksum.bench.Caches.machine());
        System.out.println("  C reader: " + readbound + " --no-huge, " + repeats + " samples, >= " + minMs
                + " ms each; project: ChecksumBench.blockChecksums -p backend=cpu, 1 fork, " + iterations
                + " iterations, each after " + ChecksumBench.SAMPLES + " interleaved samples of bound and pass; forks with "
                + jvmArgs + "; " + rounds + " rounds, best of each");

        Map<String, Rates> all = new LinkedHashMap<>();
        Map<String, String> labels = new LinkedHashMap<>();
        Map<String, Integer> threadsOf = new LinkedHashMap<>();
        boolean failed = false;
        for (String shape : shapes) {
            for (String size : sizes) {
                ModelShape.Case c = ModelShape.of(shape).at(size);
                long bytes = c.kvBytes();
                // the threads the CPU backend and MemoryBound use at that size: all cores from 4 MiB, one below
                int threads = bytes >= io.kvchecksum.bench.MemoryBound.PARALLEL_BYTES ? cores : 1;
                String key = shape + " " + size;
                labels.put(key, shape + " " + c.label(size));
                threadsOf.put(key, threads);
                Rates r = new Rates(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
                all.put(key, r);
                for (int round = 1; round <= rounds; round++) {
                    try {
                        double[] cr = cReader(readbound, bytes, threads, repeats, minMs);
                        double cg = cr[0];
                        double[] p = project(shape, size, iterations, jvmArgs, bytes);
                        r.c.add(cg);
                        r.c256.add(cr[1]);
                        r.bound.add(p[0]);
                        r.fused.add(p[1]);
                        System.out.printf(Locale.ROOT, "  round %d %s, %d thread%s: C %.1f, project bound %.1f, fused %.1f"
                                + " GB/s (C's 256-bit kernel %.1f)%n", round, labels.get(key), threads, threads == 1 ? "" : "s", cg, p[0],
                                p[1], cr[1]);
                    } catch (IOException | RuntimeException | RunnerException e) {
                        System.out.println("  round " + round + " " + key + ": FAILED: " + e.getMessage());
                        failed = true;
                    }
                }
            }
        }

        System.out.println();
        System.out.println("| case | bytes | threads | C bound GB/s (rounds) | project bound GB/s (rounds) "
                + "| fused GB/s (rounds) | fused ÷ C | project bound ÷ C | C 256-bit GB/s | fused, bound ÷ C 256-bit (-XX:UseAVX=2 "
                + "only) |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|");
        List<String> flags = new ArrayList<>();
        boolean narrow = jvmArgs.stream().anyMatch(a -> a.matches("-XX:UseAVX=[0-2]"));
        for (Map.Entry<String, Rates> e : all.entrySet()) {
            Rates r = e.getValue();
            if (r.c.isEmpty()) {
                continue;
            }
            double c = Rates.best(r.c);
            double fusedRatio = Rates.best(r.fused) / c;
            double boundRatio = Rates.best(r.bound) / c;
            String fused = ratio(fusedRatio);
            String bound = ratio(boundRatio);
            if (boundRatio < HONEST) {
                bound += " BELOW " + HONEST;
                flags.add(e.getKey() + ": the project's bound reads at " + String.format(Locale.ROOT, "%.3f", boundRatio)
                        + " of the C reader (below " + HONEST + ")");
            }
            if (fusedRatio > 1 || boundRatio > 1) {
                flags.add(e.getKey() + ": above the C reader, so the C bound was measured too slow this time: rerun");
            }
            double c256 = Rates.best(r.c256);
            // against the 256-bit kernel only where the forks ran 256-bit loads: at 512 bits it is no bound
            String at256 = narrow ? ratio(Rates.best(r.fused) / c256) + ", " + ratio(Rates.best(r.bound) / c256) : "-";
            System.out.printf(Locale.ROOT, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |%n",
                    labels.get(e.getKey()), ModelShape.of(e.getKey().split(" ")[0]).kvBytes(e.getKey().split(" ")[1]),
                    threadsOf.get(e.getKey()), rates(r.c), rates(r.bound), rates(r.fused), fused, bound, rates(r.c256),
                    at256);
        }
        for (String f : flags) {
            System.out.println("FLAGGED: " + f);
        }
        if (failed || !flags.isEmpty()) {
            System.exit(1);
        }
    }

    /** A ratio to the C reader; above 1 it is a broken bound, never a result. */
    private static String ratio(double v) {
        String s = String.format(Locale.ROOT, "%.3f", v);
        return v > 1 ? "BROKEN BOUND (" + s + ")" : s;
    }

    private static String rates(List<Double> v) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%.1f", Rates.best(v)));
        sb.append(" (");
        for (int i = 0; i < v.size(); i++) {
            sb.append(i == 0 ? "" : " / ").append(String.format(Locale.ROOT, "%.1f", v.get(i)));
        }
        return sb.append(")").toString();
    }

    private static final Pattern BEST = Pattern.compile("\"best_gbps\"\\s*:\\s*([0-9.eE+-]+)");
    private static final Pattern BYTES = Pattern.compile("\"bytes\"\\s*:\\s*([0-9]+)");

    /**
     * One run of the C reader: its best variant's best sample and its 256-bit kernel's best (NaN where it has none),
     * in GB/s. The first is the bound every ratio is held to; the second says what the same loads at the width of a
     * {@code -XX:UseAVX=2} JVM read (on Intel Emerald Rapids 0.75 of the 512-bit figure from L2: docs/bench-cpu.md),
     * printed beside it, never in its place. Every stream count it has (1, 2 and 4 per
     * thread): the project's 256-bit reader reads four streams in lockstep, and against the C reader's default 1 and 2
     * it read 1 GiB up to 1.2x as fast as the C reader (a broken check, not a better bound).
     */
    static double[] cReader(String readbound, long bytes, int threads, String repeats, String minMs) throws IOException,
            InterruptedException {
        List<String> cmd = List.of(readbound, "--bytes", Long.toString(bytes), "--threads", Integer.toString(threads),
                "--repeats", repeats, "--min-ms", minMs, "--no-huge", "--streams", "all", "--json");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException(String.join(" ", cmd) + " exited " + p.exitValue() + ": " + out.strip());
        }
        return new double[] {parseBest(out, bytes), parseBest256(out)};
    }

    private static final Pattern AVX2 = Pattern.compile(
            "\\{\"kernel\"\\s*:\\s*\"avx2\"[^}]*?\"best_gbps\"\\s*:\\s*([0-9.eE+-]+)");

    /** The best {@code best_gbps} of readbound's {@code avx2} variants (every stream count), or NaN without one. */
    static double parseBest256(String json) {
        Matcher m = AVX2.matcher(json);
        double best = Double.NaN;
        while (m.find()) {
            double v = Double.parseDouble(m.group(1));
            best = Double.isNaN(best) ? v : Math.max(best, v);
        }
        return best;
    }

    /** The fastest variant's {@code best_gbps} of readbound's JSON, checking that it read {@code bytes}. */
    static double parseBest(String json, long bytes) throws IOException {
        Matcher b = BYTES.matcher(json);
        if (!b.find() || Long.parseLong(b.group(1)) != bytes) {
            throw new IOException("readbound did not report reading " + bytes + " bytes: " + json.strip());
        }
        // the top-level best_gbps (the fastest variant) comes before the variants' list
        Matcher m = BEST.matcher(json);
        if (!m.find()) {
            throw new IOException("no best_gbps in readbound's output: " + json.strip());
        }
        return Double.parseDouble(m.group(1));
    }

    /** One short JMH fork of the fused pass: {project bound GB/s, fused GB/s}, best samples of the interleaved pair. */
    private static double[] project(String shape, String size, int iterations, List<String> jvmArgs, long bytes)
            throws RunnerException {
        Options o = new OptionsBuilder()
                .include(ChecksumBench.class.getName() + ".blockChecksums$")
                .param("backend", "cpu").param("shape", shape).param("size", size)
                .forks(1).threads(1)
                .warmupIterations(1).warmupTime(TimeValue.milliseconds(500))
                .measurementIterations(iterations).measurementTime(TimeValue.milliseconds(500))
                .jvmArgs().jvmArgsAppend(jvmArgs.toArray(String[]::new))
                .shouldFailOnError(true)
                .verbosity(VerboseMode.SILENT)
                .build();
        RunResult r = new Runner(o).runSingle();
        double bound = Double.NaN;
        double pass = Double.NaN;
        for (var fork : r.getBenchmarkResults()) {
            for (var it : fork.getIterationResults()) {
                var b = it.getSecondaryResults().get("boundBestNanos");
                var f = it.getSecondaryResults().get("passBestNanos");
                if (b != null && b.getScore() > 0 && !(b.getScore() >= bound)) {
                    bound = b.getScore();
                }
                if (f != null && f.getScore() > 0 && !(f.getScore() >= pass)) {
                    pass = f.getScore();
                }
            }
        }
        if (Double.isNaN(bound) || Double.isNaN(pass)) {
            throw new IllegalStateException(shape + " " + size + ": the JMH run gave no interleaved samples");
        }
        return new double[] {bytes / bound, bytes / pass};
    }

    private static void usage(String problem) {
        System.err.println(problem + "\nusage: java -cp jmh/target/benchmarks.jar io.kvchecksum.jmh.ReadBoundCompare "
                + "--readbound PATH [--shapes llama3-8b-tp1,deepseek-mla-bf16] [--sizes 1MiB,1GiB] [--rounds 2] "
                + "[--repeats 15] [--min-ms 25] [--iterations 3] [--jvm-args \"-XX:UseAVX=2\"]");
        System.exit(2);
    }
}
