package io.kvchecksum.cuda;

import com.sun.jna.Native;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
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

    private final PrintWriter file;
    private final CudaBackend b;
    private final CudaDriver d;
    private int failures;

    private DeviceCheck(PrintWriter file, CudaBackend b) {
        this.file = file;
        this.b = b;
        this.d = b.driver();
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
        String fake = System.getProperty("kvchecksum.deviceCheck.fake");
        long maxTokens = Long.getLong("kvchecksum.deviceCheck.maxTokens", 131072);
        int rc;
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
            CudaBackend backend;
            String mode;
            if (fake != null) {
                FakeCudaDriver f = new FakeCudaDriver(Native.load(Path.of(fake).toAbsolutePath().toString(), HostLibrary.class));
                f.smCount = 132;
                backend = new CudaBackend(f, 0, Cuda.fatbin(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
                mode = "DRY RUN on the CPU-simulated driver (timings are meaningless)";
            } else {
                Availability a = CudaBackend.availability();
                if (!a.available()) {
                    w.println("CUDA unavailable: " + a.reason());
                    System.out.println("CUDA unavailable: " + a.reason());
                    System.exit(2);
                    return;
                }
                backend = CudaBackend.open();
                mode = "real GPU: " + a.reason();
            }
            DeviceCheck c = new DeviceCheck(w, backend);
            rc = c.run(mode, maxTokens);
            backend.close();
        }
        System.exit(rc);
    }

    private int run(String mode, long maxTokens) {
        int[] v = new int[1];
        check(d, d.cuDriverGetVersion(v), "cuDriverGetVersion");
        line("# kvchecksum CUDA device check, " + Instant.now());
        line("mode: " + mode);
        line("backend: " + b.description());
        line("driver: CUDA " + v[0] / 1000 + "." + v[0] % 1000 / 10 + "; java " + Runtime.version() + "; seed " + SEED);
        golden();
        random();
        recorded();
        for (Model m : MODELS) {
            try {
                sweep(m, maxTokens);
            } catch (RuntimeException e) {
                failures++;
                line("sweep " + m.name() + " FAILED: " + e);
            }
        }
        line("RESULT: " + (failures == 0 ? "PASS" : "FAIL (" + failures + " failures)"));
        return failures == 0 ? 0 : 1;
    }

    // ---- correctness ------------------------------------------------------------------------------------------

    private void golden() {
        List<Long> uploads = new ArrayList<>();
        int[] host = execute(GoldenSuite.tests(b));
        int[] dev = execute(GoldenSuite.tests(b, c -> GpuTest.onDevice(b, c.group(), uploads)));
        b.primaryResources();
        uploads.forEach(d::cuMemFree);
        line(String.format(Locale.ROOT, "golden suite, host memory:   %d passed, %d failed, %d skipped", host[0], host[1], host[2]));
        line(String.format(Locale.ROOT, "golden suite, device memory: %d passed, %d failed, %d skipped", dev[0], dev[1], dev[2]));
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
        int cases = 300;
        for (int i = 0; i < cases; i++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCase c = RandomCase.make(rnd, arena, i % 2 == 0);
                long[] want = KvChecksums.reference().blockChecksums(c.group(), c.request());
                long[] got = b.blockChecksums(c.group(), c.request());
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
            try (PendingChecksums warm = rb.enqueue(dev, c.request(), s[0])) {
                warm.get();
            }
            rec.take();
            PendingChecksums p = rb.enqueue(dev, c.request(), s[0]);
            List<RecordingDriver.Call> calls = rec.take();
            long[] got = p.get();
            List<RecordingDriver.Call> waits = rec.take();
            boolean ok = calls.stream().allMatch(x -> RecordedCallsTest.STEADY.contains(x.name()))
                    && waits.size() == 1 && waits.get(0).name().equals("cuEventSynchronize") && Arrays.equals(want, got);
            line("recorded enqueue on this driver: " + (ok ? "PASS" : "FAIL") + "; enqueue calls " + calls + "; get() calls " + waits);
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
            KernelAbi.fill(params, 0, base, bytesAll / 8, SEED);
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
            for (long tokens : SIZES) {
                if (tokens > tokensCap) {
                    continue;
                }
                RequestBlocks req = RequestBlocks.of(Arrays.copyOf(table, (int) (tokens / PAGE)), tokens, BLOCK);
                long bytes = tokens * g.bytesPerToken();
                long[] fused;
                try (PendingChecksums pc = b.enqueue(g, req, stream)) {
                    fused = pc.get();
                }
                long[] viaSlices = b.sliceSums(g, req).combine();
                boolean ok = Arrays.equals(fused, viaSlices);
                if (!ok) {
                    failures++;
                }
                int reps = bytes < (256L << 20) ? 50 : 10;
                List<PendingChecksums> inFlight = new ArrayList<>();
                for (int pass = 0; pass < 2; pass++) {  // pass 0 warms up (and sizes the slot pool)
                    check(d, d.cuEventRecord(start, stream), "cuEventRecord");
                    for (int i = 0; i < reps; i++) {
                        inFlight.add(b.enqueue(g, req, stream));
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
                for (int i = 0; i < hostNs.length; i++) {
                    long t0 = System.nanoTime();
                    PendingChecksums pc = b.enqueue(g, req, stream);
                    hostNs[i] = System.nanoTime() - t0;
                    pc.get();
                }
                Arrays.sort(hostNs);
                KernelAbi.sum(params, 0, base, bytes / 16, partials);
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
                LaunchPlanner.BlockLaunch f = cr.planner.blocks(g.numSlices(), req.numBlocks()).launches().get(0);
                line(String.format(Locale.ROOT, "%8d %12d %10.1f %10.1f %10.1f %12.1f %8.3f %8.3f %11.1f %dx%d%s", tokens, bytes,
                        fusedUs, fusedGbs, sumGbs, copyGbs, fusedGbs / sumGbs, fusedGbs / copyGbs, hostNs[hostNs.length / 2] / 1e3,
                        f.numBlocks(), f.numParts(), ok ? "" : "  MISMATCH fused vs slices+combine"));
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
}
