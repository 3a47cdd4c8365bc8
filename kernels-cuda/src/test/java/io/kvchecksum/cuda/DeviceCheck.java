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
import java.lang.foreign.ValueLayout;
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
 * a recorded enqueue on the real driver, then the throughput sweep and the interference check, measured as a reviewer
 * would (docs/gpu-performance.md, "How the device check measures"). Writes a report to the file named by the first
 * argument.
 *
 * <p>Sweep, per shape (including vLLM's 656-byte {@code fp8_ds_mla} cell) and size (small requests, then KV of at
 * least 8x and 16x the L2): the fused kernel alone (the launches of a reused plan's enqueue, captured on a recording
 * driver and replayed: no upload, memset or result copy in the timed region), the engine's calls with a reused plan
 * and with a new page table each call (host enqueue time, synchronizing calls per enqueue, launches per call), the
 * read bound over the same page tables (scattered and identity; {@code kvcb_gather_sum}, a test-side kernel in
 * {@code src/test/cuda/kvchecksum_bench.cu}), a contiguous read ({@code kvc_sum_u64}) and a device-to-device copy;
 * each occupancy variant the backend offers ({@code -Dkvchecksum.cuda.variant}). Every series: CUDA events around
 * {@code launches} launches per sample (20), a warm-up sample, {@code samples} samples (5), median and minimum. Every
 * result is checked against the host's sum or checksum of the same bytes, downloaded from the device.
 *
 * <p>{@code -Dkvchecksum.deviceCheck.fake=/path/libkvchecksum_host.so} runs it all on the CPU-simulated driver
 * instead (a dry run of this program; its timings mean nothing). {@code -Dkvchecksum.deviceCheck.maxTokens=N}
 * caps the sizes (default 1048576: no cap on an H100/H200); {@code -Dkvchecksum.deviceCheck.launches=N} and
 * {@code -Dkvchecksum.deviceCheck.samples=N} (20, 5) are lowered by the dry run only.
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

    record Model(String name, int layers, int heads, int headDim, int elemBytes, boolean mla) {
    }

    static final List<Model> MODELS = List.of(
            new Model("llama3-8b-tp1 (32 layers, 8 KV heads, d128, bf16, vLLM flash)", 32, 8, 128, 2, false),
            new Model("llama3-70b-tp8 (80 layers, 1 KV head, d128, bf16, vLLM flash)", 80, 1, 128, 2, false),
            new Model("deepseek-v3-mla-bf16 (61 layers, 576, bf16, vLLM MLA)", 61, 1, 576, 2, true),
            new Model("deepseek-v3-mla-fp8 (61 layers, 576, fp8, vLLM MLA)", 61, 1, 576, 1, true),
            // vLLM's fp8_ds_mla cell: 512 fp8 latent bytes, 4 float32 scales, 64 bf16 rope values = 656 bytes
            new Model("deepseek-v3-fp8_ds_mla (61 layers, 656-byte cell, vLLM fp8_ds_mla)", 61, 1, 656, 1, true));

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
            if (v == null) {
                s.append("null");
            } else if (v instanceof Number n) {
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
        long maxTokens = Long.getLong("kvchecksum.deviceCheck.maxTokens", 1 << 20);
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
                    try {
                        sweepAll(maxTokens);
                    } catch (RuntimeException e) {
                        failures++;
                        line("sweep FAILED: " + e);
                    }
                }
                case "interference" -> {
                    try {
                        interference(MODELS.get(0), maxTokens);
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
        closeTiming();
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

    // ---- throughput: method ------------------------------------------------------------------------------------
    //
    // Every timed kernel (fused, read, copy, the decode-like load): CUDA events around `launches` back-to-back launches
    // (>= 20 on a device) per sample, one untimed warm-up sample first, then `samples` samples (>= 5); the median and
    // the minimum per launch are reported, GB/s from the median. Every result is checked against the host's own sum
    // or checksum of the same bytes, downloaded from the device (see each kernel).

    /** The system property the backend reads at construction to pick its occupancy variant. */
    static final String VARIANT_PROPERTY = CudaBackend.VARIANT_PROPERTY;
    static final List<String> VARIANTS = List.of("default", "occupancy3");
    /** Test-side reference kernels (src/test/cuda/kvchecksum_bench.cu), in the device-check jar. */
    static final String BENCH_FATBIN = "kvchecksum_bench.fatbin";
    static final String GATHER = "kvcb_gather_sum";
    /** The batched page copy the verifying copy is compared with (kvchecksum_bench.cuh). */
    static final String PAGE_COPY = "kvcb_page_copy";
    static final java.util.Set<String> BENCH_KERNELS = java.util.Set.of(GATHER, PAGE_COPY);
    /** sizeof(KvcbGatherParams) (kvchecksum_bench.cuh; the .cu static_asserts it). */
    static final int GATHER_PARAMS_BYTES = 56;
    static final int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
    /** The nominal L2 of H100/H200 (50 MiB), where the driver reports none (the simulated one). */
    static final long NOMINAL_L2 = 50L << 20;

    /** One timed series: per-launch microseconds, median and minimum over the samples. */
    record Timing(double medianUs, double minUs) {
        double gbs(long bytes) {
            return bytes / medianUs / 1e3;
        }

        double bestGbs(long bytes) {
            return bytes / minUs / 1e3;
        }
    }

    /** Enqueues the launch or call of index {@code i}: 0.. for the timed ones, -launches..-1 in the warm-up sample. */
    @FunctionalInterface
    interface Enqueue {
        void enqueue(int i);
    }

    /** What the sweep and the interference step need to know about the GPU. */
    record Device(String name, int smCount, long l2Bytes, boolean l2Reported, Double specGBs, String spec) {
    }

    /**
     * The spec HBM bandwidth from the device name (NVIDIA's datasheets: H200 SXM and NVL 4.8 TB/s, H100 SXM 3.35,
     * H100 NVL 3.9, H100 PCIe 2.0); null for another GPU, whose fraction of spec is then not reported.
     */
    static Double specGBs(String name) {
        String n = name.toUpperCase(Locale.ROOT);
        if (n.contains("H200")) {
            return 4800.0;
        }
        if (n.contains("H100")) {
            return n.contains("NVL") ? 3900.0 : n.contains("PCIE") ? 2000.0 : 3350.0;  // "H100 80GB HBM3" is the SXM part
        }
        return null;
    }

    private long evStart;
    private long evEnd;
    private long benchLibrary;
    private long gatherKernel;
    private long pageCopyKernel;
    private Device device;
    /** Launches per sample and samples: 20 and 5 on a device; the dry run lowers them (timings mean nothing there). */
    private final int launches = Integer.getInteger("kvchecksum.deviceCheck.launches", 20);
    private final int samples = Integer.getInteger("kvchecksum.deviceCheck.samples", 5);
    private KvChecksum cpu;

    private Timing time(long stream, Enqueue e, Runnable afterSample) {
        double[] us = new double[samples];
        for (int s = -1; s < samples; s++) {  // -1: the warm-up sample
            check(d, d.cuEventRecord(evStart, stream), "cuEventRecord");
            for (int i = 0; i < launches; i++) {
                e.enqueue(s * launches + i);
            }
            check(d, d.cuEventRecord(evEnd, stream), "cuEventRecord");
            float ms = elapsed(evStart, evEnd);
            afterSample.run();
            if (s >= 0) {
                us[s] = ms * 1000.0 / launches;
            }
        }
        Arrays.sort(us);
        return new Timing(median(us), us[0]);
    }

    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    static double medianOf(long[] values) {
        double[] v = Arrays.stream(values).asDoubleStream().sorted().toArray();
        return median(v);
    }

    private float elapsed(long start, long end) {
        check(d, d.cuEventSynchronize(end), "cuEventSynchronize");
        float[] ms = new float[1];
        check(d, d.cuEventElapsedTime(ms, start, end), "cuEventElapsedTime");
        return ms[0];
    }

    /** Events, the reference kernels, the device facts and the CPU reference: once per step that times anything. */
    private void prepareTiming() {
        if (evStart != 0) {
            return;
        }
        b.primaryResources();
        long[] p = new long[1];
        check(d, d.cuEventCreate(p, Cuda.EVENT_DEFAULT), "cuEventCreate");
        evStart = p[0];
        check(d, d.cuEventCreate(p, Cuda.EVENT_DEFAULT), "cuEventCreate");
        evEnd = p[0];
        byte[] fatbin;
        try (java.io.InputStream in = DeviceCheck.class.getResourceAsStream(BENCH_FATBIN)) {
            if (in == null) {
                throw new IllegalStateException(BENCH_FATBIN + " is not among the test classes (built by src/build/build-bench.sh)");
            }
            fatbin = in.readAllBytes();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        com.sun.jna.Memory image = new com.sun.jna.Memory(fatbin.length);  // lazy loading may read it later: kept
        image.write(0, fatbin, 0, fatbin.length);
        benchImage = image;
        check(d, d.cuLibraryLoadData(p, image, null, null, 0, null, null, 0), "cuLibraryLoadData(" + BENCH_FATBIN + ")");
        benchLibrary = p[0];
        check(d, d.cuLibraryGetKernel(p, benchLibrary, GATHER), "cuLibraryGetKernel(" + GATHER + ")");
        check(d, d.cuKernelGetFunction(p, p[0]), "cuKernelGetFunction(" + GATHER + ")");
        gatherKernel = p[0];
        check(d, d.cuLibraryGetKernel(p, benchLibrary, PAGE_COPY), "cuLibraryGetKernel(" + PAGE_COPY + ")");
        check(d, d.cuKernelGetFunction(p, p[0]), "cuKernelGetFunction(" + PAGE_COPY + ")");
        pageCopyKernel = p[0];
        byte[] nameBytes = new byte[256];
        check(d, d.cuDeviceGetName(nameBytes, nameBytes.length, 0), "cuDeviceGetName");
        int len = 0;
        while (len < nameBytes.length && nameBytes[len] != 0) {
            len++;
        }
        String name = new String(nameBytes, 0, len, java.nio.charset.StandardCharsets.UTF_8);
        int[] v = new int[1];
        check(d, d.cuDeviceGetAttribute(v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0), "cuDeviceGetAttribute(L2)");
        Double spec = specGBs(name);
        device = new Device(name, b.primaryResources().planner.smCount(), v[0] > 0 ? v[0] : NOMINAL_L2, v[0] > 0, spec,
                spec == null ? "unknown for this GPU" : "NVIDIA datasheet for the device name");
        cpu = KvChecksums.cpu();
    }

    private com.sun.jna.Memory benchImage;

    private void closeTiming() {
        if (evStart != 0) {
            d.cuEventDestroy(evStart);
            d.cuEventDestroy(evEnd);
            d.cuLibraryUnload(benchLibrary);
            evStart = 0;
        }
    }

    // ---- occupancy variants -----------------------------------------------------------------------------------

    /** A backend of one occupancy variant, its front, and a second backend on a recording driver to capture launches. */
    record Variant(String name, CudaBackend backend, KvChecksum front, RecordingDriver rec, CudaBackend capture, KvChecksum captureFront) {
    }

    /**
     * The variants this build offers: {@code default} always; {@code occupancy3} when the backend, built with
     * {@code -Dkvchecksum.cuda.variant=occupancy3}, reports that variant (a {@code variant()} method, or its name in
     * {@code description()}). A build whose backend ignores the property times the default only, and says so.
     */
    private List<Variant> variants(List<String> notes) {
        List<Variant> out = new ArrayList<>();
        for (String v : VARIANTS) {
            String old = System.getProperty(VARIANT_PROPERTY);
            System.setProperty(VARIANT_PROPERTY, v);
            CudaBackend main = null;
            CudaBackend cap = null;
            try {
                main = v.equals("default") ? b : new CudaBackend(d, 0, Cuda.fatbin(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
                RecordingDriver rec = new RecordingDriver(d);
                cap = new CudaBackend(rec.driver, 0, Cuda.fatbin(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
                String reported = reportedVariant(main);
                if (!v.equals("default") && !v.equals(normalized(reported))) {
                    notes.add("variant " + v + " unavailable: this build's CudaBackend does not report " + VARIANT_PROPERTY + "=" + v
                            + " (reports " + (reported == null ? "no variant" : reported) + "); timed: default only");
                    cap.close();
                    main.close();
                    continue;
                }
                out.add(new Variant(v, main, main == b ? k : KvChecksum.of(main), rec, cap, KvChecksum.of(cap)));
            } catch (RuntimeException e) {
                notes.add("variant " + v + " unavailable: " + e.getMessage());
                if (cap != null) {
                    cap.close();
                }
                if (main != null && main != b) {
                    main.close();
                }
            } finally {
                if (old == null) {
                    System.clearProperty(VARIANT_PROPERTY);
                } else {
                    System.setProperty(VARIANT_PROPERTY, old);
                }
            }
        }
        return out;
    }

    /** {@code OCCUPANCY_3}, {@code Occupancy3} and {@code occupancy3} name the same variant (an enum's name, a property value). */
    static String normalized(String variant) {
        return variant == null ? null : variant.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
    }

    /** The variant a backend says it runs ({@link CudaBackend#VARIANT_PROPERTY}). */
    static String reportedVariant(CudaBackend backend) {
        return backend.variant();
    }

    private void closeVariants(List<Variant> vs) {
        for (Variant v : vs) {
            v.capture().close();
            if (v.backend() != b) {
                v.backend().close();
            }
        }
    }

    /**
     * The launches one enqueue of {@code plan} makes, captured on the variant's recording backend, with their
     * parameter structs copied out: replayed, they are exactly the engine's reused-plan launches without the output
     * memset, upload or result copy around them. The first launch's output (the block checksums, which the kernel adds
     * into) already holds one checksum when this returns.
     */
    private record Captured(List<long[]> launches, MemorySegment argv, long out, long[] values) {
    }

    @SuppressWarnings("restricted") // the launch parameters live in the capturing backend's pinned memory, 96 bytes each
    private Captured capture(Variant v, io.kvchecksum.SlicePlan plan, long stream, Arena arena) {
        v.rec().take();
        long[] values;
        List<long[]> launches = new ArrayList<>();
        MemorySegment argv;
        try (PendingChecksums pc = v.captureFront().submit(plan, stream)) {
            List<RecordingDriver.Call> calls = v.rec().take().stream().filter(c -> c.name().equals("cuLaunchKernel")).toList();
            argv = arena.allocate(16L + calls.size() * (8L + KernelAbi.CHECKSUM_PARAMS_BYTES), 16);
            long paramsAt = 8L * calls.size() + 8;
            for (int i = 0; i < calls.size(); i++) {
                RecordingDriver.Call c = calls.get(i);
                long srcArgv = c.longArg(9);
                long src = MemorySegment.ofAddress(srcArgv).reinterpret(8).get(KernelAbi.U64, 0);
                long at = paramsAt + (long) i * KernelAbi.CHECKSUM_PARAMS_BYTES;
                MemorySegment.copy(MemorySegment.ofAddress(src).reinterpret(KernelAbi.CHECKSUM_PARAMS_BYTES), 0, argv, at,
                        KernelAbi.CHECKSUM_PARAMS_BYTES);
                argv.set(KernelAbi.U64, 8L * i, argv.address() + at);
                launches.add(new long[] {c.longArg(0), c.longArg(1), c.longArg(2), c.longArg(3), c.longArg(4), c.longArg(5),
                    c.longArg(6), c.longArg(7)});
            }
            values = pc.get();  // done: the replays below cannot race the result copy of the captured call
        }
        long out = argv.get(KernelAbi.U64, 8L * launches.size() + 8 + KernelAbi.PARAMS_OUT);
        return new Captured(launches, argv, out, values);
    }

    private void replay(Captured c, long stream) {
        for (int j = 0; j < c.launches().size(); j++) {
            long[] l = c.launches().get(j);
            check(d, d.cuLaunchKernel(l[0], (int) l[1], (int) l[2], (int) l[3], (int) l[4], (int) l[5], (int) l[6], (int) l[7], stream,
                    c.argv().address() + 8L * j, 0), "cuLaunchKernel(replayed fused kernel)");
        }
    }

    /** The {@code n} words at device address {@code p}, copied to the host (outside every timed region). */
    private long[] download(long p, int n, long stream) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment h = a.allocate(8L * n, 16);
            check(d, d.cuMemcpyDtoHAsync(h.address(), p, 8L * n, stream), "cuMemcpyDtoHAsync");
            check(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");
            return h.toArray(KernelAbi.U64);
        }
    }

    private long partialsTotal(long partials, int grid, long stream) {
        long s = 0;
        for (long x : download(partials, grid, stream)) {
            s += x;
        }
        return s;
    }

    /** The wrapping sum of the words of host memory {@code [from, from + bytes)}, in parallel. */
    static long hostSum(MemorySegment m, long from, long bytes) {
        long chunk = 8L << 20;
        return java.util.stream.LongStream.range(0, Math.ceilDiv(bytes, chunk)).parallel()
                .map(c -> wordSum(m, from + c * chunk, Math.min(chunk, bytes - c * chunk))).sum();
    }

    static long wordSum(MemorySegment m, long from, long bytes) {
        long s = 0;
        for (long i = from; i < from + bytes; i += 8) {
            s += m.get(ValueLayout.JAVA_LONG, i);  // little-endian host: the device's byte order
        }
        return s;
    }

    /** A seeded permutation of 0..n-1: pages scattered, as a busy engine's are. */
    static int[] shuffled(int n, long seed) {
        int[] t = new int[n];
        Arrays.setAll(t, i -> i);
        Random rnd = new Random(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int x = t[i];
            t[i] = t[j];
            t[j] = x;
        }
        return t;
    }

    /** KvcbGatherParams (kvchecksum_bench.cuh) at {@code at}. */
    static void gather(MemorySegment m, long at, long base, long table, long partials, long regionStride, long pageStride,
            long pageBytes, long pages, long regions) {
        m.set(KernelAbi.U64, at, base);
        m.set(KernelAbi.U64, at + 8, table);
        m.set(KernelAbi.U64, at + 16, partials);
        m.set(KernelAbi.U64, at + 24, regionStride);
        m.set(KernelAbi.U64, at + 32, pageStride);
        m.set(KernelAbi.U32, at + 40, Math.toIntExact(pageBytes / 16));
        m.set(KernelAbi.U32, at + 44, Math.toIntExact(pages));
        m.set(KernelAbi.U32, at + 48, Math.toIntExact(regions));
        m.set(KernelAbi.U32, at + 52, 0);
    }

    /** A kernel's launch arguments: the parameter struct at 0 (up to 128 bytes), argv at 128 pointing at it. */
    private static MemorySegment launchArgs(Arena arena) {
        MemorySegment m = arena.allocate(256, 16);
        m.set(KernelAbi.U64, 128, m.address());
        return m;
    }

    private void launch(long f, int grid, long stream, MemorySegment args, String what) {
        check(d, d.cuLaunchKernel(f, grid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, stream, args.address() + 128, 0), "cuLaunchKernel(" + what + ")");
    }

    /** A device buffer holding {@code table}. */
    private long uploadTable(int[] table, long stream, List<Long> mem) {
        long[] p = new long[1];
        check(d, d.cuMemAlloc(p, 4L * Math.max(1, table.length)), "cuMemAlloc(table)");
        mem.add(p[0]);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment h = a.allocate(4L * Math.max(1, table.length), 16);
            MemorySegment.copy(table, 0, h, KernelAbi.U32, 0, table.length);
            check(d, d.cuMemcpyHtoDAsync(p[0], h.address(), 4L * table.length, stream), "cuMemcpyHtoDAsync(table)");
            check(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");
        }
        return p[0];
    }

    /** A model's KV on the device, filled, and its copy on the host for the host's sums and checksums. */
    private record Kv(long base, long bytesAll, long pages, long regionStride, long pageBytes, long regions, KvCacheGroup device,
            KvCacheGroup host, MemorySegment hostCopy) {
    }

    private Kv kv(Model m, long pages, long seed, long stream, List<Long> mem, Arena arena, MemorySegment args, int grid) {
        long cell = (long) m.headDim() * m.elemBytes();
        long pageBytes = PAGE * m.heads() * cell;
        long regions = (long) m.layers() * (m.mla() ? 1 : 2);
        long regionStride = pages * pageBytes;
        long bytesAll = regions * regionStride;
        long layerBytes = bytesAll / m.layers();
        long[] p = new long[1];
        check(d, d.cuMemAlloc(p, bytesAll), "cuMemAlloc(KV " + bytesAll + ")");
        long base = p[0];
        mem.add(base);
        fill(args, 0, base, bytesAll / 8, seed);
        launch(b.kernel(CudaBackend.FILL), grid, stream, args, "fill");
        MemorySegment host = arena.allocate(bytesAll, 16);
        check(d, d.cuMemcpyDtoHAsync(host.address(), base, bytesAll, stream), "cuMemcpyDtoHAsync(KV to host)");
        check(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");
        KvLayouts.PagedShape shape = new KvLayouts.PagedShape(pages, PAGE, m.heads(), m.headDim(), m.elemBytes());
        List<CacheLayer> dl = new ArrayList<>();
        List<CacheLayer> hl = new ArrayList<>();
        for (int l = 0; l < m.layers(); l++) {
            KvMemory dm = KvMemory.device(base + l * layerBytes, layerBytes);
            KvMemory hm = KvMemory.host(host.asSlice(l * layerBytes, layerBytes));
            dl.add(m.mla() ? KvLayouts.vllmMlaLayer(l, 0, dm, shape) : KvLayouts.vllmFlashLayer(l, 0, dm, shape));
            hl.add(m.mla() ? KvLayouts.vllmMlaLayer(l, 0, hm, shape) : KvLayouts.vllmFlashLayer(l, 0, hm, shape));
        }
        return new Kv(base, bytesAll, pages, regionStride, pageBytes, regions, KvCacheGroup.of(PAGE, pages, dl),
                KvCacheGroup.of(PAGE, pages, hl), host);
    }

    /** The host's sum of every word the gather kernel reads: each region's pages {@code table[0..n)}. */
    static long gatherSum(Kv kv, long[][] pageSums, int[] table, int n) {
        long s = 0;
        for (long[] region : pageSums) {
            for (int i = 0; i < n; i++) {
                s += region[table[i]];
            }
        }
        return s;
    }

    static long[][] pageSums(Kv kv) {
        long[][] s = new long[(int) kv.regions()][(int) kv.pages()];
        java.util.stream.IntStream.range(0, s.length).parallel().forEach(r -> {
            for (int q = 0; q < s[r].length; q++) {
                s[r][q] = wordSum(kv.hostCopy(), r * kv.regionStride() + q * kv.pageBytes(), kv.pageBytes());
            }
        });
        return s;
    }

    /**
     * The token counts of a shape's rows: small requests (launch floor), then the smallest power of two whose KV is at
     * least 8x L2 and twice that (the bandwidth rows); quick: the smallest and the first bandwidth row. Capped at
     * {@code maxTokens}.
     */
    static List<Long> sizes(long bytesPerToken, long maxTokens, long l2Bytes, boolean quick) {
        long t8 = PAGE;
        while (t8 * bytesPerToken < 8 * l2Bytes) {
            t8 *= 2;
        }
        List<Long> want = quick ? List.of(16L, t8) : List.of(16L, 256L, 2048L, t8, 2 * t8);
        return want.stream().map(t -> Math.min(t, maxTokens / PAGE * PAGE)).filter(t -> t >= PAGE).distinct().sorted().toList();
    }

    // ---- the sweep ----------------------------------------------------------------------------------------------

    private void sweepAll(long maxTokens) {
        prepareTiming();
        List<String> notes = new ArrayList<>();
        List<Variant> vs = variants(notes);
        try {
            line("");
            line(String.format(Locale.ROOT, "device: %s, %d SMs, L2 %s%s; spec HBM %s; %d launches per sample, %d samples (+1 warm-up)",
                    device.name(), device.smCount(), BandwidthModel.human(device.l2Bytes()), device.l2Reported() ? "" : " (not reported: nominal)",
                    device.specGBs() == null ? "unknown" : String.format(Locale.ROOT, "%.0f GB/s", device.specGBs()), launches, samples));
            line("variants timed: " + vs.stream().map(Variant::name).toList() + (notes.isEmpty() ? "" : "; " + String.join("; ", notes)));
            record("device", "gpu", device.name(), "smCount", device.smCount(), "l2Bytes", device.l2Bytes(), "l2Reported",
                    device.l2Reported() ? 1 : 0, "specHbmGBs", device.specGBs(), "specSource", device.spec(), "launchesPerSample", launches,
                    "samples", samples, "variants", String.join(" ", vs.stream().map(Variant::name).toList()), "variantNotes",
                    String.join("; ", notes));
            for (Model m : MODELS) {
                try {
                    sweep(m, maxTokens, vs);
                } catch (RuntimeException e) {
                    failures++;
                    line("sweep " + m.name() + " FAILED: " + e);
                }
            }
        } finally {
            closeVariants(vs);
        }
    }

    private void sweep(Model m, long maxTokens, List<Variant> vs) {
        ContextResources cr = b.primaryResources();
        long cell = (long) m.headDim() * m.elemBytes();
        long bytesPerToken = (long) m.layers() * (m.mla() ? 1 : 2) * m.heads() * cell;
        List<Long> sizes = sizes(bytesPerToken, maxTokens, device.l2Bytes(), quick);
        long pages = sizes.getLast() / PAGE;
        long[] free = new long[1];
        long[] total = new long[1];
        check(d, d.cuMemGetInfo(free, total), "cuMemGetInfo");
        long reserve = Math.min(1L << 30, free[0] / 8);
        while (pages > 1 && 2 * pages * PAGE * bytesPerToken + reserve > free[0]) {  // the KV and the copy's target
            pages /= 2;
        }
        long cap = pages * PAGE;
        sizes = sizes.stream().filter(t -> t <= cap).toList();
        int grid = cr.planner.smCount() * 8;
        List<Long> mem = new ArrayList<>();
        long[] p = new long[1];
        check(d, d.cuStreamCreate(p, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
        long stream = p[0];
        PinnedHostMemory staging = null;
        try (Arena arena = Arena.ofShared()) {  // shared: the host's sums run in parallel
            MemorySegment args = launchArgs(arena);
            Kv kv = kv(m, pages, SEED + m.layers() * 1000L + cell, stream, mem, arena, args, grid);
            check(d, d.cuMemAlloc(p, kv.bytesAll()), "cuMemAlloc(copy target)");
            long copy = p[0];
            mem.add(copy);
            check(d, d.cuMemAlloc(p, 8L * grid), "cuMemAlloc(partials)");
            long partials = p[0];
            mem.add(partials);
            int[] identity = new int[(int) pages];
            Arrays.setAll(identity, i -> i);
            int[] tableA = shuffled((int) pages, SEED);
            int[] tableB = shuffled((int) pages, SEED + 1);
            long dIdentity = uploadTable(identity, stream, mem);
            long dTableA = uploadTable(tableA, stream, mem);
            long[][] pageSums = pageSums(kv);
            KvCacheGroup g = kv.device();
            // the KV's bytes in pinned host memory, in the same layout: the staging buffer of the host-to-device
            // verifying copy (issue 29), read in place by the copy kernels through its mapped device address
            staging = b.allocatePinned(kv.bytesAll());
            staging.segment().copyFrom(kv.hostCopy());
            line("");
            line("## " + m.name() + ": " + g.bytesPerToken() + " bytes/token, " + g.numSlices() + " slices, page " + PAGE + ", block "
                    + BLOCK + ", pages scattered by a seeded permutation (seed " + SEED + ")"
                    + (cap < sizes(bytesPerToken, maxTokens, device.l2Bytes(), quick).getLast() ? ", capped at " + cap + " tokens by free memory" : ""));
            line(String.format(Locale.ROOT, "%7s %9s %6s %-10s %9s %9s %9s %7s %7s %9s %9s %9s %9s %6s %6s %6s %8s %8s %5s %5s %s", "tokens", "KV", "xL2",
                    "variant", "fused", "fused new", "read tbl", "f/read", "f/rd id", "read seq", "copy r+w", "pages r+w", "vcopy r+w", "v/copy",
                    "v/pags", "ofHBM",
                    "enq us", "enq new", "syncs", "launch", "(GB/s from medians; enqueue us: host median)"));
            for (long tokens : sizes) {
                row(m, kv, tokens, pageSums, identity, tableA, tableB, dIdentity, dTableA, copy, partials, grid, stream, vs, arena,
                        staging);
            }
            line("(fused: the kernel alone, replayed from a reused plan's enqueue; fused new: engine calls with a new page table each;"
                    + " read tbl: kvcb_gather_sum over the same scattered table; f/rd id: both over the identity table; copy counts r+w;"
                    + " pages: kvcb_page_copy of the scattered pages into the copy target in table order, r+w; vcopy: the verifying copy of"
                    + " the same pages to the same places, engine calls, r+w; v/copy, v/pags: its GB/s over cuMemcpyDtoDAsync's and over"
                    + " the page copy's; pinned host -> device, up to " + BandwidthModel.human(PINNED_MAX_BYTES) + ": cuMemcpyHtoDAsync"
                    + " of the first bytes of the KV from pinned host memory, and the verifying copy of the same scattered pages from"
                    + " the KV's pinned host copy into the copy target, its kernels reading the host pages in place; GB/s of the bytes"
                    + " moved, read once)");
        } finally {
            if (staging != null) {
                check(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize(before freeing the staging buffer)");
                staging.close();
            }
            d.cuStreamDestroy(stream);
            mem.forEach(d::cuMemFree);
        }
    }

    /**
     * The largest row whose host-to-device copies are timed: enough to reach the bus's rate (PCIe or C2C, an order below
     * HBM's), small enough that the sweep's budget holds.
     */
    static final long PINNED_MAX_BYTES = 64L << 20;

    private void row(Model m, Kv kv, long tokens, long[][] pageSums, int[] identity, int[] tableA, int[] tableB, long dIdentity,
            long dTableA, long copy, long partials, int grid, long stream, List<Variant> vs, Arena arena, PinnedHostMemory staging) {
        KvCacheGroup g = kv.device();
        int n = (int) (tokens / PAGE);
        long bytes = tokens * g.bytesPerToken();
        RequestBlocks reqA = RequestBlocks.of(Arrays.copyOf(tableA, n), tokens, BLOCK);
        RequestBlocks reqB = RequestBlocks.of(Arrays.copyOf(tableB, n), tokens, BLOCK);
        RequestBlocks reqI = RequestBlocks.of(Arrays.copyOf(identity, n), tokens, BLOCK);
        long[] wantA = cpu.blockChecksums(kv.host(), reqA);
        long[] wantB = cpu.blockChecksums(kv.host(), reqB);
        long[] wantI = cpu.blockChecksums(kv.host(), reqI);
        long wantSeq = hostSum(kv.hostCopy(), 0, bytes);
        long wantGatherI = gatherSum(kv, pageSums, identity, n);
        long wantGatherA = gatherSum(kv, pageSums, tableA, n);
        MemorySegment args = launchArgs(arena);
        List<String> bad = new ArrayList<>();

        // the read bounds: contiguous, and over the fused kernel's own page tables; the copy
        sum(args, 0, kv.base(), bytes / 16, partials);
        Timing seq = time(stream, i -> launch(b.kernel(CudaBackend.SUM), grid, stream, args, "kvc_sum_u64"), () -> { });
        expect(bad, "kvc_sum_u64", partialsTotal(partials, grid, stream), wantSeq);
        gather(args, 0, kv.base(), dIdentity, partials, kv.regionStride(), kv.pageBytes(), kv.pageBytes(), n, kv.regions());
        Timing readI = time(stream, i -> launch(gatherKernel, grid, stream, args, GATHER), () -> { });
        expect(bad, GATHER + " (identity table)", partialsTotal(partials, grid, stream), wantGatherI);
        gather(args, 0, kv.base(), dTableA, partials, kv.regionStride(), kv.pageBytes(), kv.pageBytes(), n, kv.regions());
        Timing readA = time(stream, i -> launch(gatherKernel, grid, stream, args, GATHER), () -> { });
        expect(bad, GATHER + " (scattered table)", partialsTotal(partials, grid, stream), wantGatherA);
        check(d, d.cuMemsetD8Async(copy, 0, bytes, stream), "cuMemsetD8Async(copy target)");
        Timing cp = time(stream, i -> check(d, d.cuMemcpyDtoDAsync(copy, kv.base(), bytes, stream), "cuMemcpyDtoDAsync"), () -> { });
        sum(args, 0, copy, bytes / 16, partials);
        launch(b.kernel(CudaBackend.SUM), grid, stream, args, "kvc_sum_u64 of the copy");
        expect(bad, "cuMemcpyDtoDAsync (its target summed)", partialsTotal(partials, grid, stream), wantSeq);
        // the verifying copy (issue 29): table A's scattered pages into the copy target in page order (the identity table),
        // as an engine calls it (upload cached, output zeroed, the copy kernel, the result copy); its values checked
        // against the host's, then the target checksummed by the fused kernel (the copied bytes, checked the same way)
        KvCacheGroup target = Relocation.relocate(g, x -> {  // each layer's memory at its offset in the copy target
            KvMemory.Device dx = (KvMemory.Device) x;
            return KvMemory.device(copy + (dx.address() - kv.base()), dx.byteSize());
        });
        KvChecksum copier = vs.getFirst().front();
        // the batched page copy of the same pages to the same places first, its target checked the same way; then the
        // target zeroed, so that the verifying copy's target check sees only what the verifying copy wrote
        gather(args, 0, kv.base(), dTableA, copy, kv.regionStride(), kv.pageBytes(), kv.pageBytes(), n, kv.regions());
        Timing pcp = time(stream, i -> launch(pageCopyKernel, grid, stream, args, PAGE_COPY), () -> { });
        try (PendingChecksums pc = copier.submit(target, reqI, stream)) {
            expect(bad, PAGE_COPY + "'s target (fused kernel, identity table)", pc.get(), wantA);
        }
        check(d, d.cuMemsetD8Async(copy, 0, kv.bytesAll(), stream), "cuMemsetD8Async(copy target)");
        io.kvchecksum.CopyPlan copyPlan = copier.compileCopy(g, reqA, target, reqI, io.kvchecksum.ChecksumSpec.STANDARD);
        List<PendingChecksums> copies = new ArrayList<>();
        Timing vcp = time(stream, i -> copies.add(copier.submitCopy(copyPlan, stream)), () -> {
            for (PendingChecksums pc : copies) {
                expect(bad, "verifying copy", pc.get(), wantA);
                pc.close();
            }
            copies.clear();
        });
        try (PendingChecksums pc = copier.submit(target, reqI, stream)) {
            expect(bad, "the verifying copy's target (fused kernel, identity table)", pc.get(), wantA);
        }
        double vcopyOverCopy = vcp.gbs(2 * bytes) / cp.gbs(2 * bytes);
        double vcopyOverPageCopy = vcp.gbs(2 * bytes) / pcp.gbs(2 * bytes);

        // the staged (in-place) verifying copy (issue 29): the target's pages copied onto themselves, the same bytes as
        // cuMemcpyDtoDAsync's, each (layer, page) unit read whole into shared memory before it is written
        // (kvc_copy_staged); every call's values and then the target checked as above. Refused (a unit above the
        // device's staging limit): said, not measured.
        Double stagedUs = null;
        Double stagedGBs = null;
        Double stagedOverCopy = null;
        io.kvchecksum.CopyPlan stagedPlan = null;
        try {
            stagedPlan = copier.compileCopy(target, reqI, target, reqI, io.kvchecksum.ChecksumSpec.STANDARD);
        } catch (io.kvchecksum.InvalidLayoutException e) {
            line(String.format(Locale.ROOT, "%7d %9s staged in-place copy refused: %s", tokens, BandwidthModel.human(bytes),
                    e.getMessage()));
        }
        if (stagedPlan != null) {
            io.kvchecksum.CopyPlan sp = stagedPlan;
            if (!sp.staged()) {
                bad.add("the in-place copy of the target onto itself is not staged");
            }
            Timing vst = time(stream, i -> copies.add(copier.submitCopy(sp, stream)), () -> {
                for (PendingChecksums pc : copies) {
                    expect(bad, "staged in-place verifying copy", pc.get(), wantA);
                    pc.close();
                }
                copies.clear();
            });
            try (PendingChecksums pc = copier.submit(target, reqI, stream)) {
                expect(bad, "the staged copy's target (fused kernel, identity table)", pc.get(), wantA);
            }
            stagedUs = vst.medianUs();
            stagedGBs = vst.gbs(2 * bytes);
            stagedOverCopy = stagedGBs / cp.gbs(2 * bytes);
            line(String.format(Locale.ROOT, "%7d %9s staged in-place verifying copy (%d B units): %.1f GB/s r+w, over"
                    + " cuMemcpyDtoDAsync %.3f", tokens, BandwidthModel.human(bytes), sp.stagingUnitBytes(), stagedGBs,
                    stagedOverCopy));
        }

        // host to device (issue 29): cuMemcpyHtoDAsync of the bytes from pinned host memory, then the verifying copy of the
        // same scattered pages from the KV's pinned host copy into the copy target (PINNED_HOST_TO_DEVICE: the kernels
        // read the host pages in place through the mapped address), its values and its target checked as above
        Double htodGBs = null;
        Double vcopyPinnedGBs = null;
        Double vcopyPinnedOverHtod = null;
        if (bytes <= PINNED_MAX_BYTES) {
            check(d, d.cuMemsetD8Async(copy, 0, kv.bytesAll(), stream), "cuMemsetD8Async(copy target)");
            Timing htod = time(stream, i -> check(d, d.cuMemcpyHtoDAsync(copy, staging.segment().address(), bytes, stream),
                    "cuMemcpyHtoDAsync(pinned)"), () -> { });
            sum(args, 0, copy, bytes / 16, partials);
            launch(b.kernel(CudaBackend.SUM), grid, stream, args, "kvc_sum_u64 of the host-to-device copy");
            expect(bad, "cuMemcpyHtoDAsync from pinned host memory (its target summed)", partialsTotal(partials, grid, stream), wantSeq);
            check(d, d.cuMemsetD8Async(copy, 0, kv.bytesAll(), stream), "cuMemsetD8Async(copy target)");
            KvCacheGroup onHost = Relocation.relocate(g, x -> {  // each layer's memory at its offset in the pinned copy
                KvMemory.Device dx = (KvMemory.Device) x;
                return KvMemory.pinnedHost(staging.segment().asSlice(dx.address() - kv.base(), dx.byteSize()));
            });
            io.kvchecksum.CopyPlan pinnedPlan = copier.compileCopy(onHost, reqA, target, reqI, io.kvchecksum.ChecksumSpec.STANDARD);
            Timing vh = time(stream, i -> copies.add(copier.submitCopy(pinnedPlan, stream)), () -> {
                for (PendingChecksums pc : copies) {
                    expect(bad, "verifying copy from pinned host memory", pc.get(), wantA);
                    pc.close();
                }
                copies.clear();
            });
            try (PendingChecksums pc = copier.submit(target, reqI, stream)) {
                expect(bad, "the pinned verifying copy's target (fused kernel, identity table)", pc.get(), wantA);
            }
            htodGBs = htod.gbs(bytes);
            vcopyPinnedGBs = vh.gbs(bytes);
            vcopyPinnedOverHtod = vcopyPinnedGBs / htodGBs;
            line(String.format(Locale.ROOT, "%7d %9s pinned host -> device: cuMemcpyHtoDAsync %.1f GB/s, verifying copy %.1f GB/s,"
                    + " v/HtoD %.3f", tokens, BandwidthModel.human(bytes), htodGBs, vcopyPinnedGBs, vcopyPinnedOverHtod));
        }

        io.kvchecksum.SlicePlan planA = io.kvchecksum.SlicePlan.of(g, reqA);
        io.kvchecksum.SlicePlan planI = io.kvchecksum.SlicePlan.of(g, reqI);
        int calls = (samples + 1) * launches;
        for (Variant v : vs) {
            // the kernel alone, as a reused plan launches it: captured once, replayed; each replay adds one checksum
            Captured cA = capture(v, planA, stream, arena);
            expect(bad, v.name() + " fused (captured call)", cA.values(), wantA);
            Timing fusedA = time(stream, i -> replay(cA, stream), () -> { });
            expect(bad, v.name() + " fused replays (out = calls x checksum)", download(cA.out(), wantA.length, stream), times(wantA, calls + 1));
            Captured cI = capture(v, planI, stream, arena);
            expect(bad, v.name() + " fused, identity table (captured call)", cI.values(), wantI);
            Timing fusedI = time(stream, i -> replay(cI, stream), () -> { });
            expect(bad, v.name() + " fused replays, identity table", download(cI.out(), wantI.length, stream), times(wantI, calls + 1));
            v.rec().take();
            try (PendingChecksums pc = v.captureFront().submit(g, reqB, stream)) {
                expect(bad, v.name() + " engine call, new table (captured)", pc.get(), wantB);
            }
            int launchesNew = (int) v.rec().take().stream().filter(c -> c.name().equals("cuLaunchKernel")).count();

            // the engine's calls: a reused plan, and a new page table each call (alternating A and B), host time and syncs
            long[] hostReused = new long[samples * launches];
            long[] hostNew = new long[samples * launches];
            long[] syncsReused = new long[1];
            long[] syncsNew = new long[1];
            List<PendingChecksums> inFlight = new ArrayList<>();
            List<long[]> wants = new ArrayList<>();
            Runnable drain = () -> {
                for (int j = 0; j < inFlight.size(); j++) {
                    expect(bad, v.name() + " engine call", inFlight.get(j).get(), wants.get(j));
                }
                inFlight.clear();
                wants.clear();
            };
            Timing reused = time(stream, i -> {
                long s0 = syncs.sum();
                long t0 = System.nanoTime();
                PendingChecksums pc = v.front().submit(planA, stream);
                long t = System.nanoTime() - t0;
                if (i >= 0) {
                    hostReused[i] = t;
                    syncsReused[0] += syncs.sum() - s0;
                }
                inFlight.add(pc);
                wants.add(wantA);
            }, drain);
            RequestBlocks[] fresh = new RequestBlocks[launches];
            Timing newTable = time(stream, i -> {
                int j = Math.floorMod(i, launches);
                if (j == 0) {  // a new RequestBlocks (table) for each call of the sample, built before its first call
                    for (int x = 0; x < launches; x++) {
                        fresh[x] = RequestBlocks.of(Arrays.copyOf(x % 2 == 0 ? tableA : tableB, n), tokens, BLOCK);
                    }
                }
                long s0 = syncs.sum();
                long t0 = System.nanoTime();
                PendingChecksums pc = v.front().submit(g, fresh[j], stream);
                long t = System.nanoTime() - t0;
                if (i >= 0) {
                    hostNew[i] = t;
                    syncsNew[0] += syncs.sum() - s0;
                }
                inFlight.add(pc);
                wants.add(j % 2 == 0 ? wantA : wantB);
            }, drain);
            int launchesReused = cA.launches().size();
            double syncsPerEnqueue = (syncsReused[0] + syncsNew[0]) / (2.0 * samples * launches);
            if (syncsReused[0] + syncsNew[0] != 0) {
                bad.add(v.name() + ": " + (syncsReused[0] + syncsNew[0]) + " synchronizing calls in " + 2 * samples * launches + " enqueues");
            }
            double fusedGbs = fusedA.gbs(bytes);
            double ratio = fusedGbs / readA.gbs(bytes);
            double ratioI = fusedI.gbs(bytes) / readI.gbs(bytes);
            Double ofSpec = device.specGBs() == null ? null : fusedGbs / device.specGBs();
            double xL2 = (double) bytes / device.l2Bytes();
            LaunchPlanner.BlockLaunch f = CudaBackend.fusedGrids(b.primaryResources().planner, planA, reqA.numBlocks(),
                    CudaBackend.alignmentOf(planA, mem -> mem instanceof KvMemory.Device dm ? dm.address() : 0)).get(0);
            boolean exact = bad.isEmpty();
            line(String.format(Locale.ROOT, "%7d %9s %6.1f %-10s %9.1f %9.1f %9.1f %7.3f %7.3f %9.1f %9.1f %9.1f %9.1f %6.3f %6.3f %6s %8.1f %8.1f %5.2f %5d%s", tokens,
                    BandwidthModel.human(bytes), xL2, v.name(), fusedGbs, newTable.gbs(bytes), readA.gbs(bytes), ratio, ratioI, seq.gbs(bytes),
                    cp.gbs(2 * bytes), pcp.gbs(2 * bytes), vcp.gbs(2 * bytes), vcopyOverCopy, vcopyOverPageCopy, ofSpec == null ? "-" : String.format(Locale.ROOT, "%.3f", ofSpec), medianOf(hostReused) / 1e3,
                    medianOf(hostNew) / 1e3, syncsPerEnqueue, launchesReused, exact ? "" : "  MISMATCH: " + String.join("; ", bad)));
            record("sweep", "shape", m.name(), "tokens", tokens, "bytes", bytes, "l2Multiple", xL2, "bandwidthRow", xL2 >= 8 ? 1 : 0,
                    "variant", v.name(), "grid", f.numBlocks() + "x" + f.numParts(),
                    "fusedUsMedian", fusedA.medianUs(), "fusedUsMin", fusedA.minUs(), "fusedGBs", fusedGbs, "fusedGBsBest", fusedA.bestGbs(bytes),
                    "fusedNewTableUsMedian", newTable.medianUs(), "fusedNewTableUsMin", newTable.minUs(), "fusedNewTableGBs", newTable.gbs(bytes),
                    "fusedReusedCallUsMedian", reused.medianUs(), "fusedReusedCallGBs", reused.gbs(bytes),
                    "fusedIdentityUsMedian", fusedI.medianUs(), "fusedIdentityGBs", fusedI.gbs(bytes),
                    "readTableUsMedian", readA.medianUs(), "readTableUsMin", readA.minUs(), "readGBs", readA.gbs(bytes),
                    "readIdentityUsMedian", readI.medianUs(), "readIdentityGBs", readI.gbs(bytes),
                    "readContiguousUsMedian", seq.medianUs(), "readContiguousGBs", seq.gbs(bytes),
                    "copyUsMedian", cp.medianUs(), "copyGBs", cp.gbs(2 * bytes),
                    "pageCopyUsMedian", pcp.medianUs(), "pageCopyGBs", pcp.gbs(2 * bytes),
                    "verifyingCopyUsMedian", vcp.medianUs(), "verifyingCopyGBs", vcp.gbs(2 * bytes), "verifyingCopyOverCopy", vcopyOverCopy,
                    "verifyingCopyOverPageCopy", vcopyOverPageCopy,
                    "stagedCopyUsMedian", stagedUs, "stagedCopyGBs", stagedGBs, "stagedCopyOverCopy", stagedOverCopy,
                    "pinnedHtoDGBs", htodGBs, "verifyingCopyFromPinnedGBs", vcopyPinnedGBs,
                    "verifyingCopyFromPinnedOverHtoD", vcopyPinnedOverHtod,
                    "fusedOverRead", ratio, "fusedOverReadIdentity", ratioI, "fusedOverReadContiguous", fusedGbs / seq.gbs(bytes),
                    "fractionOfSpecHbm", ofSpec,
                    "enqueueUsReused", medianOf(hostReused) / 1e3, "enqueueUsNewTable", medianOf(hostNew) / 1e3,
                    "syncsPerEnqueue", syncsPerEnqueue, "launchesPerCall", launchesReused, "launchesPerCallNewTable", launchesNew,
                    "launchesPerSample", launches, "samples", samples, "exact", exact ? 1 : 0);
            md.println(String.format(Locale.ROOT, "| %s | %d | %s | %.1f | %s | %.1f | %.1f | %.1f | **%.3f** | %.3f | %.1f | %.1f | %.1f | %.1f | **%.3f** | **%.3f** | %s | %.1f | %.1f | %s | %d | %s |",
                    m.name().replaceAll(" \\(.*", ""), tokens, BandwidthModel.human(bytes), xL2, v.name(), fusedGbs, newTable.gbs(bytes),
                    readA.gbs(bytes), ratio, ratioI, seq.gbs(bytes), cp.gbs(2 * bytes), pcp.gbs(2 * bytes), vcp.gbs(2 * bytes), vcopyOverCopy,
                    vcopyOverPageCopy, ofSpec == null ? "-" : String.format(Locale.ROOT, "%.3f", ofSpec),
                    medianOf(hostReused) / 1e3, medianOf(hostNew) / 1e3, syncsPerEnqueue == 0 ? "0" : String.format(Locale.ROOT, "%.3f", syncsPerEnqueue),
                    launchesReused, exact ? "yes" : "**NO**"));
            md.flush();
            if (!exact) {
                failures++;
                bad.clear();
            }
        }
    }

    static long[] times(long[] v, long k) {
        long[] out = new long[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = v[i] * k;
        }
        return out;
    }

    private static void expect(List<String> bad, String what, long got, long want) {
        if (got != want) {
            bad.add(what + ": " + Long.toUnsignedString(got) + ", host " + Long.toUnsignedString(want));
        }
    }

    private static void expect(List<String> bad, String what, long[] got, long[] want) {
        if (!Arrays.equals(got, want)) {
            bad.add(what + " differs from the host's checksum");
        }
    }

    // ---- interference -------------------------------------------------------------------------------------------

    /** cuCtxGetStreamPriorityRange and cuStreamCreateWithPriority, straight from libcuda (not in CudaDriver). */
    private int[] priorityRange() {
        if (System.getProperty("kvchecksum.deviceCheck.fake") != null) {
            return null;
        }
        int[] least = new int[1];
        int[] greatest = new int[1];
        int rc = com.sun.jna.NativeLibrary.getInstance(Cuda.DRIVER_LIBRARY).getFunction("cuCtxGetStreamPriorityRange")
                .invokeInt(new Object[] {least, greatest});
        check(d, rc, "cuCtxGetStreamPriorityRange");
        return new int[] {least[0], greatest[0]};
    }

    private long stream(Integer priority) {
        long[] s = new long[1];
        if (priority == null) {
            check(d, d.cuStreamCreate(s, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
        } else {
            int rc = com.sun.jna.NativeLibrary.getInstance(Cuda.DRIVER_LIBRARY).getFunction("cuStreamCreateWithPriority")
                    .invokeInt(new Object[] {s, Cuda.STREAM_NON_BLOCKING, priority});
            check(d, rc, "cuStreamCreateWithPriority(" + priority + ")");
        }
        return s[0];
    }

    /**
     * The checksum next to an engine's decode: a decode-like kernel (the gather read over a buffer of its own with a
     * scattered page table, as paged attention reads its KV) on the engine's stream, the checksum of {@code tokens}
     * tokens of {@code m} (a reused plan) on a stream of the least priority; the decode kernel's time alone and with
     * the checksum in flight, so its slowdown, with the decode stream at the greatest and at the default priority.
     */
    private void interference(Model m, long maxTokens) {
        prepareTiming();
        ContextResources cr = b.primaryResources();
        boolean dry = System.getProperty("kvchecksum.deviceCheck.fake") != null;
        long cell = (long) m.headDim() * m.elemBytes();
        long bytesPerToken = (long) m.layers() * (m.mla() ? 1 : 2) * m.heads() * cell;
        long tokens = sizes(bytesPerToken, maxTokens, device.l2Bytes(), quick).getLast();
        long decodePage = 32 << 10;
        long decodeBytes = dry ? 1L << 20 : 1L << 30;
        int grid = cr.planner.smCount() * 8;
        List<Long> mem = new ArrayList<>();
        List<Long> streams = new ArrayList<>();
        long[] p = new long[1];
        try (Arena arena = Arena.ofShared()) {  // shared: the host's sums run in parallel
            long setup = stream(null);
            streams.add(setup);
            MemorySegment fillArgs = launchArgs(arena);
            Kv kv = kv(m, tokens / PAGE, SEED + 7, setup, mem, arena, fillArgs, grid);
            check(d, d.cuMemAlloc(p, decodeBytes), "cuMemAlloc(decode buffer)");
            long dec = p[0];
            mem.add(dec);
            fill(fillArgs, 0, dec, decodeBytes / 8, SEED + 8);
            launch(b.kernel(CudaBackend.FILL), grid, setup, fillArgs, "fill");
            MemorySegment decHost = arena.allocate(decodeBytes, 16);
            check(d, d.cuMemcpyDtoHAsync(decHost.address(), dec, decodeBytes, setup), "cuMemcpyDtoHAsync(decode buffer)");
            check(d, d.cuStreamSynchronize(setup), "cuStreamSynchronize");
            long wantDecode = hostSum(decHost, 0, decodeBytes);
            long dTable = uploadTable(shuffled((int) (decodeBytes / decodePage), SEED + 9), setup, mem);
            check(d, d.cuMemAlloc(p, 8L * grid), "cuMemAlloc(partials)");
            long partials = p[0];
            mem.add(partials);
            MemorySegment decArgs = launchArgs(arena);
            gather(decArgs, 0, dec, dTable, partials, 0, decodePage, decodePage, decodeBytes / decodePage, 1);
            int[] table = shuffled((int) (tokens / PAGE), SEED);
            RequestBlocks req = RequestBlocks.of(table, tokens, BLOCK);
            long[] want = cpu.blockChecksums(kv.host(), req);
            io.kvchecksum.SlicePlan plan = io.kvchecksum.SlicePlan.of(kv.device(), req);
            long checksumBytes = tokens * bytesPerToken;
            // about half the decode window's bytes in checksums: one every other decode step
            int every = 2;
            int[] range = priorityRange();
            line("");
            line(String.format(Locale.ROOT, "## interference: a decode-like kernel (%s read through a scattered page table) on the engine's"
                    + " stream, the checksum of %s (%d tokens, reused plan) on a least-priority stream every %d decode steps;"
                    + " stream priorities %s", BandwidthModel.human(decodeBytes), m.name(), tokens, every,
                    range == null ? "simulated (the dry run's driver has none)" : "least " + range[0] + ", greatest " + range[1]));
            String[] configs = {"decode at the greatest priority", "decode at the default priority"};
            for (int c = 0; c < configs.length; c++) {
                Integer decodePriority = range == null ? null : c == 0 ? range[1] : 0;
                Integer checksumPriority = range == null ? null : range[0];
                long ds = stream(decodePriority);
                streams.add(ds);
                long cs = stream(checksumPriority);
                streams.add(cs);
                List<String> bad = new ArrayList<>();
                List<PendingChecksums> pend = new ArrayList<>();
                Runnable drain = () -> {
                    for (PendingChecksums pc : pend) {
                        expect(bad, "checksum", pc.get(), want);
                    }
                    pend.clear();
                };
                Timing decodeAlone = time(ds, i -> launch(gatherKernel, grid, ds, decArgs, "decode-like"), () -> { });
                expect(bad, "decode-like kernel alone", partialsTotal(partials, grid, ds), wantDecode);
                Timing checksumAlone = time(cs, i -> pend.add(k.submit(plan, cs)), drain);
                // together: the decode window timed on its stream, the checksums enqueued between its steps
                double[] together = new double[samples];
                double[] window = new double[samples];
                long[] ev = new long[2];
                check(d, d.cuEventCreate(p, Cuda.EVENT_DEFAULT), "cuEventCreate");
                ev[0] = p[0];
                check(d, d.cuEventCreate(p, Cuda.EVENT_DEFAULT), "cuEventCreate");
                ev[1] = p[0];
                try {
                    for (int s = -1; s < samples; s++) {
                        check(d, d.cuEventRecord(evStart, ds), "cuEventRecord");
                        check(d, d.cuEventRecord(ev[0], cs), "cuEventRecord");
                        for (int i = 0; i < launches; i++) {
                            launch(gatherKernel, grid, ds, decArgs, "decode-like");
                            if (i % every == 0) {
                                pend.add(k.submit(plan, cs));
                            }
                        }
                        check(d, d.cuEventRecord(evEnd, ds), "cuEventRecord");
                        check(d, d.cuEventRecord(ev[1], cs), "cuEventRecord");
                        float decodeMs = elapsed(evStart, evEnd);
                        float checksumMs = elapsed(ev[0], ev[1]);
                        drain.run();
                        if (s >= 0) {
                            together[s] = decodeMs * 1000.0 / launches;
                            window[s] = checksumMs * 1000.0 / Math.ceilDiv(launches, every);
                        }
                    }
                } finally {
                    d.cuEventDestroy(ev[0]);
                    d.cuEventDestroy(ev[1]);
                }
                expect(bad, "decode-like kernel next to the checksum", partialsTotal(partials, grid, ds), wantDecode);
                Arrays.sort(together);
                Arrays.sort(window);
                double slowdown = (median(together) / decodeAlone.medianUs() - 1) * 100;
                boolean exact = bad.isEmpty();
                if (!exact) {
                    failures++;
                }
                line(String.format(Locale.ROOT, "%s: decode step %.1f us alone, %.1f us with the checksum in flight: slowdown %.1f %%"
                        + " (min %.1f / %.1f us); checksum %.1f us alone, %.1f us per call alongside; results %s", configs[c],
                        decodeAlone.medianUs(), median(together), slowdown, decodeAlone.minUs(), together[0], checksumAlone.medianUs(),
                        median(window), exact ? "exact" : "MISMATCH: " + String.join("; ", bad)));
                record("interference", "config", configs[c], "shape", m.name(), "tokens", tokens, "checksumBytes", checksumBytes,
                        "decodeBytes", decodeBytes, "decodePriority", decodePriority, "checksumPriority", checksumPriority,
                        "priorityLeast", range == null ? null : range[0], "priorityGreatest", range == null ? null : range[1],
                        "checksumEveryDecodeSteps", every, "decodeAloneUsMedian", decodeAlone.medianUs(), "decodeAloneUsMin", decodeAlone.minUs(),
                        "decodeTogetherUsMedian", median(together), "decodeTogetherUsMin", together[0], "decodeSlowdownPct", slowdown,
                        "checksumAloneUsMedian", checksumAlone.medianUs(), "checksumTogetherUsMedian", median(window),
                        "launchesPerSample", launches, "samples", samples, "exact", exact ? 1 : 0);
            }
        } finally {
            streams.forEach(d::cuStreamDestroy);
            mem.forEach(d::cuMemFree);
        }
    }
}
