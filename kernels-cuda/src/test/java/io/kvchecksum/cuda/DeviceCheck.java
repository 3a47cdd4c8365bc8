package io.kvchecksum.cuda;

import com.sun.jna.Native;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.golden.GoldenSuite;
import io.kvchecksum.spi.BackendProvider.Availability;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.opentest4j.TestAbortedException;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.Stream;

import static io.kvchecksum.cuda.Cuda.check;

/**
 * The device check for a machine with a GPU but no JDK or Maven (see kernels-cuda/device-check.sh and README):
 * the golden suite through the real CUDA backend (host and device memory), random layouts against the reference,
 * a recorded enqueue on the real driver, then a throughput sweep of the fused kernel on real model shapes with the
 * read bound (a plain reduction over the same number of bytes, and a device-to-device copy) measured in the same
 * run, plus the host time of one enqueue. Writes a report to the file named by the first argument.
 *
 * <p>{@code -Dkvchecksum.deviceCheck.fake=/path/libkvchecksum_host.so} runs it all on the CPU-simulated driver
 * instead (a dry run of this program; its timings mean nothing). {@code -Dkvchecksum.deviceCheck.maxTokens=N}
 * caps the sweep (default 131072).
 *
 * <p>Arguments: {@code REPORT [STEP...] [--quick]}; steps {@code golden random recorded sweep interference} (all when
 * none is named), so device-check.sh runs each under its own timeout and whatever finished stays in the report.
 * Every measurement is also appended, as one JSON object per line, to {@code REPORT} with {@code .jsonl} in place of
 * {@code .txt}, and as a markdown table row to {@code .md.rows}; the script assembles the dated JSON and markdown.
 * The backend's driver counts synchronizing calls (SyncCounting), so the sweep reports those an enqueue made.
 */
public final class DeviceCheck {
    private static final long SEED = 20251129L;
    private static final int PAGE = 16;
    private static final int BLOCK = 16;
    private static final long[] SIZES = {16, 256, 4096, 32768, 131072};

    record Model(String name, int layers, int heads, int headDim, int elemBytes, boolean mla) {
    }

    static final List<Model> MODELS = List.of(
            new Model("llama3-8b-tp1 (32 layers, 8 KV heads, d128, bf16, vLLM flash)", 32, 8, 128, 2, false),
            new Model("llama3-70b-tp8 (80 layers, 1 KV head, d128, bf16, vLLM flash)", 80, 1, 128, 2, false),
            new Model("deepseek-v3-mla-bf16 (61 layers, 576, bf16, vLLM MLA)", 61, 1, 576, 2, true),
            new Model("deepseek-v3-mla-fp8 (61 layers, 576, fp8, vLLM MLA)", 61, 1, 576, 1, true));

    private static final long[] QUICK_SIZES = {16, 4096, 32768};

    /** sizeof(KvcFillParams) and sizeof(KvcSumParams) ({@code kvchecksum.cuh}; checked by {@code KernelAbiTest}). */
    static final int FILL_PARAMS_BYTES = 24;
    static final int SUM_PARAMS_BYTES = 24;

    /** KvcFillParams of {@code kvc_fill_u64}: {@code n} words at {@code p} set to splitmix64(seed + i). */
    static void fill(MemorySegment m, long at, long p, long n, long seed) {
        m.set(KernelAbi.U64, at, p);
        m.set(KernelAbi.U64, at + 8, n);
        m.set(KernelAbi.U64, at + 16, seed);
    }

    /** KvcSumParams of {@code kvc_sum_u64}: {@code n16} 16-byte units at {@code p} read, partial sums to {@code partials}. */
    static void sum(MemorySegment m, long at, long p, long n16, long partials) {
        m.set(KernelAbi.U64, at, p);
        m.set(KernelAbi.U64, at + 8, n16);
        m.set(KernelAbi.U64, at + 16, partials);
    }

    private final PrintWriter file;
    private final PrintWriter json;
    private final PrintWriter md;
    private final CudaBackend b;
    /** The front over {@link #b}: what every checksum goes through, as an engine's would. */
    private final KvChecksum k;
    private final CudaDriver d;
    private final java.util.concurrent.atomic.LongAdder syncs;
    private boolean quick;
    private int failures;

    private DeviceCheck(PrintWriter file, PrintWriter json, PrintWriter md, CudaBackend b, java.util.concurrent.atomic.LongAdder syncs) {
        this.file = file;
        this.json = json;
        this.md = md;
        this.b = b;
        this.k = KvChecksum.of(b);
        this.d = b.driver();
        this.syncs = syncs;
    }

    /** One measurement: a JSON object (numbers and strings only) on its own line, flushed at once. */
    private void record(String kind, Object... kv) {
        StringBuilder s = new StringBuilder("{\"kind\":\"").append(kind).append('"');
        for (int i = 0; i + 1 < kv.length; i += 2) {
            s.append(",\"").append(kv[i]).append("\":");
            Object v = kv[i + 1];
            if (v instanceof Number n) {
                double x = n.doubleValue();
                s.append(Double.isFinite(x) ? (n instanceof Double || n instanceof Float ? String.format(Locale.ROOT, "%.4g", x) : n.toString()) : "null");
            } else {
                s.append('"').append(String.valueOf(v).replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            }
        }
        json.println(s.append('}'));
        json.flush();
    }

    private void line(String s) {
        System.out.println(s);
        file.println(s);
        file.flush();
    }

    public static void main(String[] args) throws IOException {
        Path out = Path.of(args.length > 0 ? args[0] : "device-check.txt");
        if (out.getParent() != null) {
            Files.createDirectories(out.getParent());
        }
        List<String> steps = new ArrayList<>();
        boolean quick = false;
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--quick")) {
                quick = true;
            } else {
                steps.add(args[i]);
            }
        }
        if (steps.isEmpty()) {
            steps = List.of("golden", "random", "recorded", "sweep", "interference");
        }
        String base = out.toString().endsWith(".txt") ? out.toString().substring(0, out.toString().length() - 4) : out.toString();
        String fake = System.getProperty("kvchecksum.deviceCheck.fake");
        long maxTokens = Long.getLong("kvchecksum.deviceCheck.maxTokens", 131072);
        int rc;
        java.nio.file.OpenOption[] append = {java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND};
        java.util.concurrent.atomic.LongAdder syncs = new java.util.concurrent.atomic.LongAdder();
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out, append));
             PrintWriter json = new PrintWriter(Files.newBufferedWriter(Path.of(base + ".jsonl"), append));
             PrintWriter md = new PrintWriter(Files.newBufferedWriter(Path.of(base + ".md.rows"), append))) {
            CudaBackend backend;
            String mode;
            if (fake != null) {
                FakeCudaDriver f = new FakeCudaDriver(Native.load(Path.of(fake).toAbsolutePath().toString(), HostLibrary.class));
                f.smCount = 132;
                backend = new CudaBackend(SyncCounting.counting(f, syncs), 0, Cuda.fatbin(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
                mode = "DRY RUN on the CPU-simulated driver (timings are meaningless)";
            } else {
                Availability a = CudaBackend.availability();
                if (!a.available()) {
                    w.println("CUDA unavailable: " + a.reason());
                    System.out.println("CUDA unavailable: " + a.reason());
                    w.flush(); // System.exit skips the try-with-resources close: the reason must reach the report
                    System.exit(2);
                    return;
                }
                backend = (CudaBackend) SyncCounting.open(0, syncs).backend();
                mode = "real GPU: " + a.reason();
            }
            DeviceCheck c = new DeviceCheck(w, json, md, backend, syncs);
            c.quick = quick;
            rc = c.run(mode, maxTokens, steps);
            backend.close();
        }
        System.exit(rc);
    }

    private int run(String mode, long maxTokens, List<String> steps) {
        int[] v = new int[1];
        check(d, d.cuDriverGetVersion(v), "cuDriverGetVersion");
        line("# step " + steps + (quick ? " (quick)" : "") + ", " + Instant.now() + "; mode: " + mode);
        line("backend: " + b.description() + "; driver: CUDA " + v[0] / 1000 + "." + v[0] % 1000 / 10 + "; java "
                + Runtime.version() + "; seed " + SEED);
        record("run", "date", Instant.now().toString(), "mode", mode, "backend", b.description(), "cudaDriver", v[0], "steps",
                String.join(" ", steps), "quick", quick ? 1 : 0);
        for (String step : steps) {
            switch (step) {
                case "golden" -> golden();
                case "random" -> random();
                case "recorded" -> recorded();
                case "sweep" -> {
                    for (Model m : MODELS) {
                        try {
                            sweep(m, maxTokens);
                        } catch (RuntimeException e) {
                            failures++;
                            line("sweep " + m.name() + " FAILED: " + e);
                        }
                    }
                }
                case "interference" -> {
                    try {
                        interference(MODELS.get(0), Math.min(maxTokens, quick ? 8192 : 32768));
                    } catch (RuntimeException e) {
                        failures++;
                        line("interference FAILED: " + e);
                    }
                }
                default -> {
                    failures++;
                    line("unknown step " + step);
                }
            }
        }
        line("RESULT " + steps + ": " + (failures == 0 ? "PASS" : "FAIL (" + failures + " failures)"));
        record("result", "steps", String.join(" ", steps), "failures", failures);
        return failures == 0 ? 0 : 1;
    }

    // ---- correctness ------------------------------------------------------------------------------------------

    private void golden() {
        List<Long> uploads = new ArrayList<>();
        int[] host = execute(GoldenSuite.tests(k));
        int[] dev = execute(GoldenSuite.tests(k, c -> GpuTest.onDevice(b, c.group(), uploads)));
        // SGLang's page digest: NumPy's zlib.adler32 vectors, buffers in host and in device memory
        int[] dHost = execute(io.kvchecksum.golden.DigestSuite.tests(k));
        int[] dDev = execute(io.kvchecksum.golden.DigestSuite.tests(k, m -> {
            java.lang.foreign.MemorySegment s = ((io.kvchecksum.KvMemory.Host) m).segment();
            long p = GpuTest.upload(b, s);
            uploads.add(p);
            return io.kvchecksum.KvMemory.device(p, s.byteSize());
        }));
        b.primaryResources();
        uploads.forEach(d::cuMemFree);
        line(String.format(Locale.ROOT, "golden suite, host memory:   %d passed, %d failed, %d skipped", host[0], host[1], host[2]));
        line(String.format(Locale.ROOT, "golden suite, device memory: %d passed, %d failed, %d skipped", dev[0], dev[1], dev[2]));
        line(String.format(Locale.ROOT, "golden suite, page digest, host memory:   %d passed, %d failed, %d skipped", dHost[0], dHost[1], dHost[2]));
        line(String.format(Locale.ROOT, "golden suite, page digest, device memory: %d passed, %d failed, %d skipped", dDev[0], dDev[1], dDev[2]));
        record("golden", "hostPassed", host[0], "hostFailed", host[1], "devicePassed", dev[0], "deviceFailed", dev[1],
                "digestHostPassed", dHost[0], "digestHostFailed", dHost[1], "digestDevicePassed", dDev[0], "digestDeviceFailed", dDev[1]);
    }

    private int[] execute(Stream<DynamicNode> nodes) {
        int[] n = new int[3];
        nodes.forEach(node -> visit(node, n));
        return n;
    }

    private void visit(DynamicNode node, int[] n) {
        if (node instanceof DynamicContainer c) {
            c.getChildren().forEach(child -> visit(child, n));
        } else if (node instanceof DynamicTest t) {
            try {
                t.getExecutable().execute();
                n[0]++;
            } catch (TestAbortedException e) {
                n[2]++;
            } catch (Throwable e) {
                n[1]++;
                failures++;
                if (n[1] <= 20) {
                    line("  FAIL " + t.getDisplayName() + ": " + e);
                }
            }
        }
    }

    private void random() {
        Random rnd = new Random(SEED);
        int bad = 0;
        int cases = quick ? 60 : 300;
        for (int i = 0; i < cases; i++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCase c = RandomCase.make(rnd, arena, i % 2 == 0);
                long[] want = KvChecksums.reference().blockChecksums(c.group(), c.request());
                long[] got = k.blockChecksums(c.group(), c.request());
                if (!Arrays.equals(want, got)) {
                    bad++;
                    if (bad <= 10) {
                        line("  FAIL random case " + i + ": " + c.label());
                    }
                }
            }
        }
        failures += bad;
        line("random layouts vs reference (seed " + SEED + "): " + (cases - bad) + "/" + cases + " exact");
        record("random", "cases", cases, "exact", cases - bad);
        // Offsets and strides 1..15 bytes off the load width: on a GPU a wrong load width is a misaligned-address fault.
        int badSkew = 0;
        for (int skew = 1; skew <= 15; skew++) {
            try (Arena arena = Arena.ofConfined()) {
                KvCacheGroup g = UnalignedLayoutTest.skewed(rnd, arena, skew, 1 + rnd.nextInt(6), rnd.nextInt(4), 1 + rnd.nextInt(3), 8, 5);
                RequestBlocks r = UnalignedLayoutTest.request(rnd, 8, 5, 1 + rnd.nextInt(20));
                long[] want = KvChecksums.reference().blockChecksums(g, r);
                List<Long> mine = new ArrayList<>();
                KvCacheGroup dev = GpuTest.onDevice(b, g, mine);
                boolean ok;
                try (PendingChecksums p = k.submit(dev, r)) {
                    ok = Arrays.equals(want, k.blockChecksums(g, r)) && Arrays.equals(want, p.get());
                } catch (RuntimeException e) {
                    ok = false;
                    line("  FAIL unaligned layout, skew " + skew + ": " + e);
                }
                b.primaryResources();
                mine.forEach(d::cuMemFree);
                if (!ok) {
                    badSkew++;
                }
            }
        }
        failures += badSkew;
        line("unaligned layouts (offsets and strides 1..15 bytes off), host and device memory: " + (15 - badSkew) + "/15 exact");
        record("unaligned", "cases", 15, "exact", 15 - badSkew);
    }

    private void recorded() {
        RecordingDriver rec = new RecordingDriver(d);
        try (Arena arena = Arena.ofConfined(); CudaBackend rb = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            RandomCase c = RandomCase.make(new Random(9), arena, true);
            List<Long> mine = new ArrayList<>();
            KvCacheGroup dev = GpuTest.onDevice(rb, c.group(), mine);
            long[] want = KvChecksums.reference().blockChecksums(c.group(), c.request());
            long[] s = new long[1];
            check(d, d.cuStreamCreate(s, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
            KvChecksum rk = KvChecksum.of(rb);
            try (PendingChecksums warm = rk.submit(dev, c.request(), s[0])) {
                warm.get();
            }
            rec.take();
            PendingChecksums p = rk.submit(dev, c.request(), s[0]);
            List<RecordingDriver.Call> calls = rec.take();
            long[] got = p.get();
            List<RecordingDriver.Call> waits = rec.take();
            boolean ok = calls.stream().allMatch(x -> RecordedCallsTest.STEADY.contains(x.name()))
                    && waits.size() == 1 && waits.get(0).name().equals("cuEventSynchronize") && Arrays.equals(want, got);
            line("recorded enqueue on this driver: " + (ok ? "PASS" : "FAIL") + "; enqueue calls " + calls + "; get() calls " + waits);
            record("recorded", "pass", ok ? 1 : 0, "enqueueCalls", calls.toString(), "getCalls", waits.toString());
            if (!ok) {
                failures++;
            }
            d.cuStreamDestroy(s[0]);
            mine.forEach(d::cuMemFree);
        }
    }

    // ---- throughput -------------------------------------------------------------------------------------------

    private float elapsed(long start, long end) {
        check(d, d.cuEventSynchronize(end), "cuEventSynchronize");
        float[] ms = new float[1];
        check(d, d.cuEventElapsedTime(ms, start, end), "cuEventElapsedTime");
        return ms[0];
    }

    private void sweep(Model m, long maxTokens) {
        ContextResources cr = b.primaryResources();
        long cell = (long) m.headDim() * m.elemBytes();
        long pages = Math.ceilDiv(maxTokens, PAGE);
        long layerBytes = (m.mla() ? 1 : 2) * pages * PAGE * m.heads() * cell;
        long[] free = new long[1];
        long[] total = new long[1];
        check(d, d.cuMemGetInfo(free, total), "cuMemGetInfo");
        while (pages > 1 && 2 * m.layers() * layerBytes + (1L << 30) > free[0]) {
            pages /= 2;
            layerBytes /= 2;
        }
        long tokensCap = pages * PAGE;
        long bytesAll = m.layers() * layerBytes;
        long[] p = new long[1];
        check(d, d.cuMemAlloc(p, bytesAll), "cuMemAlloc(KV " + bytesAll + ")");
        long base = p[0];
        check(d, d.cuMemAlloc(p, bytesAll), "cuMemAlloc(copy target)");
        long copy = p[0];
        int sumGrid = cr.planner.smCount() * 8;
        check(d, d.cuMemAlloc(p, 8L * sumGrid), "cuMemAlloc(partials)");
        long partials = p[0];
        check(d, d.cuStreamCreate(p, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
        long stream = p[0];
        check(d, d.cuEventCreate(p, Cuda.EVENT_DEFAULT), "cuEventCreate");
        long start = p[0];
        check(d, d.cuEventCreate(p, Cuda.EVENT_DEFAULT), "cuEventCreate");
        long end = p[0];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(256, 16);
            params.set(KernelAbi.U64, 128, params.address());
            long argv = params.address() + 128;
            fill(params, 0, base, bytesAll / 8, SEED);
            check(d, d.cuLaunchKernel(b.kernel(CudaBackend.FILL), sumGrid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, stream, argv, 0),
                    "cuLaunchKernel(fill)");
            check(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");

            KvLayouts.PagedShape shape = new KvLayouts.PagedShape(pages, PAGE, m.heads(), m.headDim(), m.elemBytes());
            List<CacheLayer> layers = new ArrayList<>();
            for (int l = 0; l < m.layers(); l++) {
                KvMemory mem = KvMemory.device(base + l * layerBytes, layerBytes);
                layers.add(m.mla() ? KvLayouts.vllmMlaLayer(l, 0, mem, shape) : KvLayouts.vllmFlashLayer(l, 0, mem, shape));
            }
            KvCacheGroup g = KvCacheGroup.of(PAGE, pages, layers);
            int[] table = new int[(int) pages];
            Arrays.setAll(table, i -> i);
            Random rnd = new Random(SEED);
            for (int i = table.length - 1; i > 0; i--) {  // scattered pages, as a busy engine's are
                int j = rnd.nextInt(i + 1);
                int t = table[i];
                table[i] = table[j];
                table[j] = t;
            }
            line("");
            line("## " + m.name() + ": " + g.bytesPerToken() + " bytes/token, " + g.numSlices() + " slices, page " + PAGE
                    + ", block " + BLOCK + (tokensCap < maxTokens ? ", capped at " + tokensCap + " tokens by free memory" : ""));
            line(String.format(Locale.ROOT, "%8s %12s %10s %10s %10s %12s %8s %8s %11s %s", "tokens", "KV bytes", "fused us",
                    "fused GB/s", "sum GB/s", "copy GB/s*", "f/sum", "f/copy", "enqueue us", "grid"));
            for (long tokens : quick ? QUICK_SIZES : SIZES) {
                if (tokens > tokensCap) {
                    continue;
                }
                RequestBlocks req = RequestBlocks.of(Arrays.copyOf(table, (int) (tokens / PAGE)), tokens, BLOCK);
                long bytes = tokens * g.bytesPerToken();
                long[] fused;
                try (PendingChecksums pc = k.submit(g, req, stream)) {
                    fused = pc.get();
                }
                long[] viaSlices = k.sliceSums(g, req).combine();
                boolean ok = Arrays.equals(fused, viaSlices);
                if (!ok) {
                    failures++;
                }
                int reps = bytes < (256L << 20) ? 50 : 10;
                List<PendingChecksums> inFlight = new ArrayList<>();
                for (int pass = 0; pass < 2; pass++) {  // pass 0 warms up (and sizes the slot pool)
                    check(d, d.cuEventRecord(start, stream), "cuEventRecord");
                    for (int i = 0; i < reps; i++) {
                        inFlight.add(k.submit(g, req, stream));
                    }
                    check(d, d.cuEventRecord(end, stream), "cuEventRecord");
                    for (PendingChecksums pc : inFlight) {
                        if (!Arrays.equals(fused, pc.get())) {
                            ok = false;
                            failures++;
                        }
                    }
                    inFlight.clear();
                }
                double fusedUs = elapsed(start, end) * 1000.0 / reps;
                long[] hostNs = new long[21];
                long enqueueSyncs = 0;
                io.kvchecksum.SlicePlan plan = io.kvchecksum.SlicePlan.of(g, req);
                long[] planNs = new long[21];
                for (int i = 0; i < hostNs.length; i++) {
                    long s0 = syncs.sum();
                    long t0 = System.nanoTime();
                    PendingChecksums pc = k.submit(g, req, stream);
                    hostNs[i] = System.nanoTime() - t0;
                    enqueueSyncs += syncs.sum() - s0;
                    pc.get();
                    s0 = syncs.sum();
                    t0 = System.nanoTime();
                    pc = k.submit(plan, stream);  // an engine reusing its plan: compiled once, nothing uploaded
                    planNs[i] = System.nanoTime() - t0;
                    enqueueSyncs += syncs.sum() - s0;
                    pc.get();
                }
                Arrays.sort(hostNs);
                Arrays.sort(planNs);
                sum(params, 0, base, bytes / 16, partials);
                check(d, d.cuEventRecord(start, stream), "cuEventRecord");
                for (int i = 0; i < reps; i++) {
                    check(d, d.cuLaunchKernel(b.kernel(CudaBackend.SUM), sumGrid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, stream, argv, 0),
                            "cuLaunchKernel(sum)");
                }
                check(d, d.cuEventRecord(end, stream), "cuEventRecord");
                double sumUs = elapsed(start, end) * 1000.0 / reps;
                check(d, d.cuEventRecord(start, stream), "cuEventRecord");
                for (int i = 0; i < reps; i++) {
                    check(d, d.cuMemcpyDtoDAsync(copy, base, bytes, stream), "cuMemcpyDtoDAsync");
                }
                check(d, d.cuEventRecord(end, stream), "cuEventRecord");
                double copyUs = elapsed(start, end) * 1000.0 / reps;
                double fusedGbs = bytes / fusedUs / 1e3;
                double sumGbs = bytes / sumUs / 1e3;
                double copyGbs = 2.0 * bytes / copyUs / 1e3;
                LaunchPlanner.BlockLaunch f = cr.planner.blocks(g.numSlices(), req.numBlocks()).get(0);
                line(String.format(Locale.ROOT, "%8d %12d %10.1f %10.1f %10.1f %12.1f %8.3f %8.3f %11.1f %dx%d%s", tokens, bytes,
                        fusedUs, fusedGbs, sumGbs, copyGbs, fusedGbs / sumGbs, fusedGbs / copyGbs, hostNs[hostNs.length / 2] / 1e3,
                        f.numBlocks(), f.numParts(), ok ? "" : "  MISMATCH fused vs slices+combine"));
                line(String.format(Locale.ROOT, "%8s enqueue of a reused plan: %.1f us (median of 21); synchronizing calls in 42 enqueues: %d",
                        "", planNs[planNs.length / 2] / 1e3, enqueueSyncs));
                if (enqueueSyncs != 0) {
                    failures++;
                }
                record("sweep", "shape", m.name(), "tokens", tokens, "bytes", bytes, "fusedUs", fusedUs, "fusedGBs", fusedGbs,
                        "readGBs", sumGbs, "copyGBs", copyGbs, "fusedOverRead", fusedGbs / sumGbs, "fusedOverCopy", fusedGbs / copyGbs,
                        "enqueueUs", hostNs[hostNs.length / 2] / 1e3, "enqueuePlanUs", planNs[planNs.length / 2] / 1e3,
                        "enqueueSyncCalls", enqueueSyncs, "grid", f.numBlocks() + "x" + f.numParts(), "exact", ok ? 1 : 0);
                md.println(String.format(Locale.ROOT, "| %s | %d | %s | %.1f | %.1f | %.1f | %.1f | **%.3f** | %.3f | %.1f | %.1f | %d |",
                        m.name().replaceAll(" \\(.*", ""), tokens, BandwidthModel.human(bytes), fusedUs, fusedGbs, sumGbs, copyGbs,
                        fusedGbs / sumGbs, fusedGbs / copyGbs, hostNs[hostNs.length / 2] / 1e3, planNs[planNs.length / 2] / 1e3, enqueueSyncs));
                md.flush();
            }
            line("(* copy GB/s counts bytes read plus bytes written; f/copy compares with that total.)");
        } finally {
            d.cuEventDestroy(start);
            d.cuEventDestroy(end);
            d.cuStreamDestroy(stream);
            d.cuMemFree(partials);
            d.cuMemFree(copy);
            d.cuMemFree(base);
        }
    }

    /**
     * The checksum next to an engine: a memory-bound kernel (the read kernel over its own 1 GiB, or less in a dry
     * run) on one stream while the checksum of {@code tokens} tokens of {@code m} runs on another, each timed alone
     * and then together; the slowdown of each is together / alone.
     */
    private void interference(Model m, long tokens) {
        ContextResources cr = b.primaryResources();
        boolean dry = System.getProperty("kvchecksum.deviceCheck.fake") != null;
        long engineBytes = dry ? 1L << 20 : 1L << 30;
        long cell = (long) m.headDim() * m.elemBytes();
        long pages = Math.ceilDiv(tokens, PAGE);
        long layerBytes = (m.mla() ? 1 : 2) * pages * PAGE * m.heads() * cell;
        long bytesAll = m.layers() * layerBytes;
        long[] p = new long[1];
        List<Long> mem = new ArrayList<>();
        List<Long> streams = new ArrayList<>();
        List<Long> events = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            check(d, d.cuMemAlloc(p, bytesAll), "cuMemAlloc(KV)");
            long kv = p[0];
            mem.add(kv);
            check(d, d.cuMemAlloc(p, engineBytes), "cuMemAlloc(engine)");
            long engine = p[0];
            mem.add(engine);
            int grid = cr.planner.smCount() * 8;
            check(d, d.cuMemAlloc(p, 8L * grid), "cuMemAlloc(partials)");
            mem.add(p[0]);
            long partials = p[0];
            for (int i = 0; i < 2; i++) {
                check(d, d.cuStreamCreate(p, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
                streams.add(p[0]);
            }
            for (int i = 0; i < 4; i++) {
                check(d, d.cuEventCreate(p, Cuda.EVENT_DEFAULT), "cuEventCreate");
                events.add(p[0]);
            }
            long es = streams.get(0);
            long cs = streams.get(1);
            MemorySegment params = arena.allocate(256, 16);
            params.set(KernelAbi.U64, 128, params.address());
            long argv = params.address() + 128;
            fill(params, 0, kv, bytesAll / 8, SEED);
            check(d, d.cuLaunchKernel(b.kernel(CudaBackend.FILL), grid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, es, argv, 0), "fill");
            fill(params, 0, engine, engineBytes / 8, SEED + 1);
            check(d, d.cuLaunchKernel(b.kernel(CudaBackend.FILL), grid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, es, argv, 0), "fill");
            check(d, d.cuStreamSynchronize(es), "cuStreamSynchronize");
            KvLayouts.PagedShape shape = new KvLayouts.PagedShape(pages, PAGE, m.heads(), m.headDim(), m.elemBytes());
            List<CacheLayer> layers = new ArrayList<>();
            for (int l = 0; l < m.layers(); l++) {
                KvMemory km = KvMemory.device(kv + l * layerBytes, layerBytes);
                layers.add(m.mla() ? KvLayouts.vllmMlaLayer(l, 0, km, shape) : KvLayouts.vllmFlashLayer(l, 0, km, shape));
            }
            KvCacheGroup g = KvCacheGroup.of(PAGE, pages, layers);
            int[] table = new int[(int) pages];
            Arrays.setAll(table, i -> i);
            io.kvchecksum.SlicePlan plan = io.kvchecksum.SlicePlan.of(g, RequestBlocks.of(table, tokens, BLOCK));
            sum(params, 0, engine, engineBytes / 16, partials);
            int engineReps = dry ? 2 : 40;
            int sumReps = dry ? 2 : 40;
            double[] alone = new double[2];
            double[] together = new double[2];
            for (int pass = 0; pass < 3; pass++) {  // 0: warm-up; 1: each alone; 2: both at once
                List<PendingChecksums> pend = new ArrayList<>();
                if (pass == 1) {
                    // engine alone, then checksum alone
                    check(d, d.cuEventRecord(events.get(0), es), "cuEventRecord");
                    for (int i = 0; i < engineReps; i++) {
                        check(d, d.cuLaunchKernel(b.kernel(CudaBackend.SUM), grid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, es, argv, 0), "sum");
                    }
                    check(d, d.cuEventRecord(events.get(1), es), "cuEventRecord");
                    alone[0] = elapsed(events.get(0), events.get(1)) / engineReps;
                    check(d, d.cuEventRecord(events.get(2), cs), "cuEventRecord");
                    for (int i = 0; i < sumReps; i++) {
                        pend.add(k.submit(plan, cs));
                    }
                    check(d, d.cuEventRecord(events.get(3), cs), "cuEventRecord");
                    alone[1] = elapsed(events.get(2), events.get(3)) / sumReps;
                } else {
                    check(d, d.cuEventRecord(events.get(0), es), "cuEventRecord");
                    check(d, d.cuEventRecord(events.get(2), cs), "cuEventRecord");
                    for (int i = 0; i < Math.max(engineReps, sumReps); i++) {
                        if (i < engineReps) {
                            check(d, d.cuLaunchKernel(b.kernel(CudaBackend.SUM), grid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, es, argv, 0), "sum");
                        }
                        if (i < sumReps) {
                            pend.add(k.submit(plan, cs));
                        }
                    }
                    check(d, d.cuEventRecord(events.get(1), es), "cuEventRecord");
                    check(d, d.cuEventRecord(events.get(3), cs), "cuEventRecord");
                    together[0] = elapsed(events.get(0), events.get(1)) / engineReps;
                    together[1] = elapsed(events.get(2), events.get(3)) / sumReps;
                }
                for (PendingChecksums pc : pend) {
                    pc.get();
                }
            }
            line("");
            line(String.format(Locale.ROOT, "## interference: %s, %d tokens (%s) on one stream, a read kernel over %s on another",
                    m.name(), tokens, BandwidthModel.human(bytesAll), BandwidthModel.human(engineBytes)));
            line(String.format(Locale.ROOT, "engine kernel: %.1f us alone, %.1f us next to the checksum (slowdown %.2f)",
                    alone[0] * 1000, together[0] * 1000, together[0] / alone[0]));
            line(String.format(Locale.ROOT, "checksum:      %.1f us alone, %.1f us next to the engine (slowdown %.2f)",
                    alone[1] * 1000, together[1] * 1000, together[1] / alone[1]));
            record("interference", "shape", m.name(), "tokens", tokens, "bytes", bytesAll, "engineBytes", engineBytes,
                    "engineAloneUs", alone[0] * 1000, "engineTogetherUs", together[0] * 1000, "checksumAloneUs", alone[1] * 1000,
                    "checksumTogetherUs", together[1] * 1000);
        } finally {
            events.forEach(d::cuEventDestroy);
            streams.forEach(d::cuStreamDestroy);
            mem.forEach(d::cuMemFree);
        }
    }
}
