package io.kvchecksum.cli;

import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.bench.MemoryBound;
import io.kvchecksum.spi.BackendProvider.Availability;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bench}: a quick throughput table of every backend on a Llama-3-8B-shaped paged cache, next to the rate of a
 * plain read of the same bytes (a sum of 64-bit words over the same pages, with the backend's thread count) measured
 * in the same run, so the ratio says how close to memory speed the checksum runs on this machine.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"A quick throughput table of every backend, against a plain read of the same bytes.",
                "Unavailable backends are listed with the reason; the read rate is measured in the same run."})
final class BenchCommand implements java.util.concurrent.Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--sizes", paramLabel = "MIB", split = ",", defaultValue = "4,32,128",
            description = "KV sizes in MiB (default ${DEFAULT-VALUE}).")
    List<Integer> sizesMiB;

    @Option(names = "--seconds", paramLabel = "S", defaultValue = "0.15",
            description = "Timed seconds per measurement (default ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--json", description = "Print one JSON object on stdout.")
    boolean json;

    @Option(names = {"-q", "--quiet"}, description = "No progress lines on stderr.")
    boolean quiet;

    private static final int LAYERS = 32;
    private static final int HEADS = 8;
    private static final int HEAD_DIM = 128;
    private static final int PAGE = 16;
    private static final Pattern THREADS = Pattern.compile("(\\d+) threads?");

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        for (int s : sizesMiB) {
            if (s <= 0 || s > 16384) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--sizes: " + s + " MiB is out of range 1..16384");
            }
        }
        if (!(seconds > 0 && seconds <= 10)) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--seconds must be in (0, 10]");
        }
        long perToken = (long) LAYERS * HEADS * 2 * HEAD_DIM * 2;
        int maxTokens = sizesMiB.stream().mapToInt(s -> tokens(s, perToken)).max().orElse(0);
        int pages = Math.ceilDiv(maxTokens, PAGE);
        KvLayouts.PagedShape shape = new KvLayouts.PagedShape(pages, PAGE, HEADS, HEAD_DIM, 2);
        SplittableRandom rng = new SplittableRandom(DemoCommand.DEFAULT_SEED);
        int[] table = Demo.permutation(pages, rng);
        Map<String, Object> report = new LinkedHashMap<>();
        List<Object> rows = new ArrayList<>();
        if (!json) {
            out.printf(Locale.ROOT, "kvchecksum bench · %d CPUs · Java %s · Llama-3-8B shape (%d layers x %d KV heads x %d,"
                    + " bf16), vllm-flash page %d, random block table%n", Runtime.getRuntime().availableProcessors(),
                    Runtime.version(), LAYERS, HEADS, HEAD_DIM, PAGE);
            out.println("read = plain sum of the same bytes as 64-bit words, with the backend's threads, in this run;"
                    + " ratio \"doubt\": the checksum outran that read, so the bound, not the ratio, is wrong");
            out.printf(Locale.ROOT, "%n%-10s %10s %9s %16s %7s  %s%n", "backend", "size", "GB/s", "read GB/s (thr)", "ratio",
                    "description");
            out.flush();
        }
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> layers = new ArrayList<>();
            List<KvMemory> mems = new ArrayList<>();
            for (int l = 0; l < LAYERS; l++) {
                MemorySegment m = arena.allocate(2L * pages * PAGE * HEADS * HEAD_DIM * 2, 64);
                Demo.fill(m, rng.nextLong());
                layers.add(m);
                mems.add(KvMemory.host(m));
            }
            KvCacheGroup group = KvLayouts.vllmFlash(shape, 0, null, mems);
            Map<String, MemoryBound.Measurement> readCache = new HashMap<>();
            RequestBlocks small = RequestBlocks.of(table, Math.min(maxTokens, 64), 16);
            // the CPU backend's loops compile before the bound's readers do: with the readers' Vector API loops compiled
            // first, some JVMs compiled the backend's with bounds checks inside, 1.3-1.4x slower (docs/bench-cpu.md,
            // "Warm-up order"); an engine's JVM has no readers
            try (KvChecksum cpu = KvChecksums.cpu()) {
                warm(cpu, group, small);
            }
            // then every reader, before any is timed: an interpreted loop would flatter every ratio
            try (MemoryBound warm = new MemoryBound(parts(layers, table, Math.min(maxTokens, 64)), 1)) {
                for (MemoryBound.Reader reader : MemoryBound.readers()) {
                    long warmEnd = System.nanoTime() + 100_000_000L;
                    while (System.nanoTime() < warmEnd) {
                        blackhole += warm.read(reader);
                    }
                }
            }
            for (Map.Entry<String, Availability> e : KvChecksums.status().entrySet()) {
                String name = e.getKey();
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("backend", name);
                row.put("available", e.getValue().available());
                if (!e.getValue().available()) {
                    row.put("reason", e.getValue().reason());
                    rows.add(row);
                    if (!json) {
                        out.printf(Locale.ROOT, "%-10s unavailable: %s%n", name, Main.oneLine(e.getValue().reason()));
                        out.flush();
                    }
                    continue;
                }
                List<Object> results = new ArrayList<>();
                try (KvChecksum k = KvChecksums.byName(name)) {
                    row.put("backend_description", k.description());
                    int threads = threads(k);
                    warm(k, group, small);
                    for (int s : sizesMiB) {
                        int n = tokens(s, perToken);
                        RequestBlocks r = RequestBlocks.of(table, n, 16);
                        long bytes = perToken * n;
                        if (!quiet) {
                            err.printf("bench %s %d MiB...%n", name, s);
                            err.flush();
                        }
                        Map<String, Object> res = new LinkedHashMap<>();
                        res.put("bytes", bytes);
                        try {
                            double gbps = bytes / best(() -> k.blockChecksums(group, r)[0]);
                            // the read bound: the fastest of the bound's readers on the same bytes and threads
                            MemoryBound.Measurement bound = readCache.computeIfAbsent(n + "/" + threads, x -> {
                                try (MemoryBound b = new MemoryBound(parts(layers, table, n), threads)) {
                                    return b.measure(this::best);
                                }
                            });
                            double read = bound.gbps();
                            res.put("read_reader", bound.reader().id());
                            res.put("gbps", gbps);
                            res.put("read_gbps", read);
                            res.put("read_threads", threads);
                            res.put("ratio", boundInDoubt(gbps, read) ? null : gbps / read);
                            res.put("bound_in_doubt", boundInDoubt(gbps, read));
                            if (!json) {
                                out.printf(Locale.ROOT, "%-10s %10s %9.1f %11.1f (%2d) %7s  %s%n", name, Units.bytes(bytes), gbps,
                                        read, threads, ratioText(gbps, read), k.description());
                            }
                        } catch (InvalidLayoutException ex) {
                            res.put("error", ex.getMessage());
                            if (!json) {
                                out.printf(Locale.ROOT, "%-10s %10s n/a: %s%n", name, Units.bytes(bytes), ex.getMessage());
                            }
                        }
                        out.flush();
                        results.add(res);
                    }
                } catch (RuntimeException ex) {
                    row.put("error", ex.getMessage());
                    if (!json) {
                        out.printf(Locale.ROOT, "%-10s failed: %s%n", name, Main.oneLine(ex.getMessage()));
                    }
                }
                row.put("results", results);
                rows.add(row);
            }
        }
        if (json) {
            report.put("cpus", Runtime.getRuntime().availableProcessors());
            report.put("java", Runtime.version().toString());
            report.put("shape", Map.of("layers", LAYERS, "kv_heads", HEADS, "head_dim", HEAD_DIM, "dtype", "bf16",
                    "layout", "vllm-flash", "page_size", PAGE, "block_size", 16));
            report.put("backends", rows);
            Json.print(out, report);
        }
        return Main.OK;
    }

    /**
     * Whether the read bound of this run cannot be trusted: the checksum, which reads every byte the plain read reads,
     * ran faster than it. The plain read here is a simple loop, not yet the honest bound (see the CPU issue), so a
     * ratio above 1 says the bound is wrong, not that the checksum beat memory.
     */
    static boolean boundInDoubt(double gbps, double readGbps) {
        return !(readGbps > 0) || gbps > readGbps;
    }

    /** The ratio to print: two decimals, or "doubt" when the bound is in doubt. */
    static String ratioText(double gbps, double readGbps) {
        return boundInDoubt(gbps, readGbps) ? "doubt" : String.format(Locale.ROOT, "%.2f", gbps / readGbps);
    }

    private static int tokens(int mib, long perToken) {
        return (int) Math.max(16, ((long) mib << 20) / perToken);
    }

    private static int threads(KvChecksum k) {
        Matcher m = THREADS.matcher(k.description());
        return m.find() ? Integer.parseInt(m.group(1))
                : k.name().equals("reference") ? 1 : Runtime.getRuntime().availableProcessors();
    }

    /** JIT-compiles (or builds the device program of) a backend's pass on a small request before it is timed. */
    private static void warm(KvChecksum k, KvCacheGroup group, RequestBlocks small) {
        long warmUntil = System.nanoTime() + 400_000_000L;
        for (int w = 0; w < 3 || (System.nanoTime() < warmUntil && w < 100_000); w++) {
            blackhole += k.blockChecksums(group, small)[0];
        }
    }

    /** The best time in nanoseconds of {@code work} after warming it up, repeated for {@link #seconds}. */
    private double best(java.util.function.LongSupplier work) {
        long sink = 0;
        long warmEnd = System.nanoTime() + (long) (seconds * 0.5e9);
        int warm = 0;
        while (warm < 1 || System.nanoTime() < warmEnd) {
            sink += work.getAsLong();
            warm++;
        }
        long best = Long.MAX_VALUE;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        int reps = 0;
        while (reps < 2 || (System.nanoTime() < end && reps < 1000)) {
            long t = System.nanoTime();
            sink += work.getAsLong();
            best = Math.min(best, System.nanoTime() - t);
            reps++;
        }
        blackhole = sink;
        return best;
    }

    static volatile long blackhole;

    /** The request's pages (K and V halves of each layer): the bytes the checksum reads. */
    private static List<MemorySegment> parts(List<MemorySegment> layers, int[] table, int tokens) {
        int pages = Math.ceilDiv(tokens, PAGE);
        long pageBytes = (long) PAGE * HEADS * HEAD_DIM * 2;
        long lastBytes = (long) (tokens - (pages - 1) * PAGE) * HEADS * HEAD_DIM * 2;
        List<MemorySegment> parts = new ArrayList<>();
        for (MemorySegment m : layers) {
            long half = m.byteSize() / 2;
            for (int i = 0; i < pages; i++) {
                long len = i == pages - 1 ? lastBytes : pageBytes;
                parts.add(m.asSlice(table[i] * pageBytes, len));
                parts.add(m.asSlice(half + table[i] * pageBytes, len));
            }
        }
        return parts;
    }
}
