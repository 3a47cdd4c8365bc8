package io.kvchecksum.cuda;

import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Little's-law model of docs/gpu-performance.md: what fraction of HBM bandwidth the fused kernel can reach, from
 * the bytes its threads keep in flight, before any GPU has run it. Expectations, not measurements.
 *
 * <p>Two kinds of input, neither tuned to pass:
 * <ul>
 *   <li><b>The GPUs, from cited sources</b> ({@link #GPUS}, {@link #LATENCIES}): SM counts and HBM bandwidth from
 *       NVIDIA's datasheets and whitepaper; the loaded DRAM latency as a bracket above the unloaded latency that
 *       microbenchmark studies measure (see the constants).
 *   <li><b>The kernel, from the compiled module</b> ({@link #evidence}): the bytes of global loads a thread issues
 *       before it uses the first of them, read from the compute_90 PTX the build writes (the worst basic block that
 *       loads KV data, counted by the same parser as the PTX evidence gate, {@code PtxEvidenceTest}), and the CTAs per SM that the kernel's register count
 *       in the sm_90 {@code ptxas -v} report allows.
 * </ul>
 * The lane mapping of kvchecksum.cuh ({@code kvc_lane_slices_walk}): a warp walks its slices of a block one after the
 * other, each slice's (token, unit) items dealt to the 32 lanes in turn (units of the kernel's widest load), so every
 * lane has {@code ceil(items / 32)} items of each slice (the last ones off where the slice's items end); a lane issues
 * its items in batches of {@code bytesInFlight / unit} loads, one DRAM round trip each, and a batch runs on into the
 * warp's next slice. A warp's bytes per round trip are the bytes of its walk over its round trips
 * ({@link #warpBytesPerRoundTrip}). The walk: the fused kernel's warps take every 8th slice of a chunk of 64 staged
 * descriptors (up to 8 slices a walk; the planner's parts are large enough that the walk fills a lane's batch where
 * the slices allow); the slices kernels' warps {@link LaunchPlanner#sliceSumsSlicesPerWarp} consecutive slices. Grid from {@link LaunchPlanner} with the GPU's SM count; wave efficiency = waves / ceil(waves) of
 * the CTAs over the resident slots. Staging: before its first data load a CTA stages the block's page ids and its
 * first chunk of slice descriptors in shared memory at once (one round trip; a fused CTA one more per further chunk of
 * 64 slices), counted pessimistically at the full DRAM latency. A
 * warp's loads are in flight for its work round trips out of work + staging.
 */
final class BandwidthModel {
    static final int BLOCK = 16;
    static final double GOAL = 0.9;

    /**
     * A GPU as its vendor specifies it.
     *
     * @param sms streaming multiprocessors
     * @param bytesPerSecond peak HBM bandwidth
     * @param source where the two numbers come from
     */
    record Gpu(String name, int sms, double bytesPerSecond, String source) {
    }

    /**
     * H100 SXM5: 132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022, "H100 SXM5": 66 TPCs, 132 SMs),
     * 3.35 TB/s HBM3 (NVIDIA H100 Tensor Core GPU datasheet, SXM column). H200 SXM: 4.8 TB/s HBM3e (NVIDIA H200 Tensor
     * Core GPU datasheet, SXM column) on the same GH100 die in the same SXM5 configuration, hence 132 SMs. The device
     * check reads the real SM count with cuDeviceGetAttribute and reports fractions of the bandwidth it measures.
     */
    static final List<Gpu> GPUS = List.of(
            new Gpu("H100", 132, 3.35e12, "NVIDIA H100 whitepaper (132 SMs, SXM5) and datasheet (3.35 TB/s, SXM)"),
            new Gpu("H200", 132, 4.8e12, "NVIDIA H200 datasheet (4.8 TB/s, SXM; GH100 SXM5: 132 SMs)"));

    /**
     * A DRAM latency the model is evaluated at.
     *
     * @param seconds the latency a load sees under the kernel's own full-bandwidth load
     */
    record Latency(double seconds, String label) {
    }

    /**
     * Loaded latency. NVIDIA publishes none. Microbenchmarks measure the unloaded one by pointer chasing (Luo et al.,
     * "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", IPDPS 2024, arXiv:2402.13499; Chips and Cheese,
     * "Nvidia's H100: Funny L2, and Tons of Bandwidth", 2023): a lower bound, since queueing at full bandwidth adds to
     * it. The model takes 1.0 us as the pessimistic loaded latency (the gate) and 0.65 us as the optimistic one, and
     * prints the latency at which each row would fall below the goal, so a reader with another figure can judge.
     */
    static final Latency LATENCY = new Latency(1.0e-6, "1.0us");
    static final Latency LATENCY_OPTIMISTIC = new Latency(0.65e-6, "0.65us");
    static final List<Latency> LATENCIES = List.of(LATENCY, LATENCY_OPTIMISTIC);

    /** sm_90 limits (CUDA C++ Programming Guide, compute capability 9.0): registers and threads per SM. */
    static final int REGISTERS_PER_SM = 65536;
    static final int THREADS_PER_SM = 2048;

    /**
     * What the compiled kernel gives the model.
     *
     * @param bytesInFlight bytes of global loads a thread issues before it uses the first (PTX)
     * @param unit the widest single global load in that run, in bytes: the kernel's unit of a cell
     * @param residentCtas CTAs of {@link LaunchPlanner#THREADS} threads per SM its registers allow (ptxas)
     */
    record Kernel(String name, int bytesInFlight, int unit, int residentCtas, int registers) {
        /** Loads of a lane's batch: its items per round trip. */
        int batchSlots() {
            return Math.max(1, bytesInFlight / unit);
        }

        /** A slices kernel ({@code kvc_slice_sums_*}: a warp walks consecutive slices, one output per slice). */
        boolean sliceSums() {
            return name.contains("slice_sums");
        }
    }

    /** A KV cache group as one GPU holds it: slices = layers x KV heads on this GPU, bytes of K and V per token and head. */
    record Shape(String name, int layers, int heads, int kBytes, int vBytes) {
        int slices() {
            return layers * heads;
        }

        long bytesPerToken() {
            return (long) slices() * (kBytes + vBytes);
        }
    }

    static final List<Shape> SHAPES = List.of(
            new Shape("Llama-3-8B TP1 bf16", 32, 8, 256, 256),
            new Shape("Llama-3-70B TP8 bf16", 80, 1, 256, 256),
            new Shape("DeepSeek-V3 MLA bf16", 61, 1, 1152, 0),
            new Shape("DeepSeek-V3 MLA fp8", 61, 1, 656, 0),
            new Shape("Qwen2.5-0.5B fp8 (head 64)", 24, 2, 64, 64));

    // ---- the compiled evidence ------------------------------------------------------------------------------------

    /** Registers of {@code kernel} in a {@code ptxas -v} report. */
    static int registers(String report, String kernel) {
        int at = report.indexOf("Function properties for " + kernel + "\n");
        Matcher regs = Pattern.compile("Used (\\d+) registers").matcher(report);
        if (at < 0 || !regs.find(at)) {
            throw new IllegalArgumentException("no ptxas register count for " + kernel);
        }
        return Integer.parseInt(regs.group(1));
    }

    /** CTAs of 256 threads that fit one SM by registers (allocated per warp in units of 256, per thread in 8s) and threads. */
    static int ctasPerSm(int registers) {
        int perThread = (registers + 7) / 8 * 8;
        return Math.min(REGISTERS_PER_SM / (perThread * LaunchPlanner.THREADS), THREADS_PER_SM / LaunchPlanner.THREADS);
    }

    /** {@return the model's view of {@code kernel}, read from the compiled PTX and the ptxas report} */
    static Kernel evidence(String ptx, String ptxasReport, String kernel) {
        // The same parser as the PTX evidence gate (PtxEvidenceTest): the KV data loads' basic blocks, the worst of them.
        List<String> body = PtxEvidenceTest.ptxEntry(ptx, kernel);
        int bytes = PtxEvidenceTest.dataBlocksBytesBeforeFirstUse(body).stream().mapToInt(Integer::intValue).min().orElse(0);
        int widest = body.stream().filter(PtxEvidenceTest::isDataLoad).mapToInt(PtxEvidenceTest::ptxLoadBytes).max().orElse(1);
        int regs = registers(ptxasReport, kernel);
        return new Kernel(kernel, bytes, widest, ctasPerSm(regs), regs);
    }

    // ---- the model ------------------------------------------------------------------------------------------------

    /** Items (token, unit) of one slice of a full block: the cell's units of the kernel's widest load times the block. */
    static long sliceItems(Shape s, Kernel k) {
        return (long) (s.kBytes() + s.vBytes()) / k.unit() * BLOCK;
    }

    /**
     * Bytes one warp has in flight per DRAM round trip while it walks {@code walkSlices} slices of a full block: each
     * lane {@code ceil(items / 32)} items per slice, in batches of {@link Kernel#batchSlots} that run on across slices.
     */
    static double warpBytesPerRoundTrip(Shape s, Kernel k, int walkSlices) {
        long items = sliceItems(s, k);
        long perLane = Math.ceilDiv(items, 32) * walkSlices;
        long roundTrips = Math.ceilDiv(perLane, k.batchSlots());
        return (double) walkSlices * items * k.unit() / roundTrips;
    }

    /** The slices of a fused warp's walk: every 8th slice of a chunk of 64 staged descriptors of its part. */
    static int fusedWalkSlices(int slicesPerPart) {
        return Math.max(1, Math.min(slicesPerPart, 64) / LaunchPlanner.WARPS);
    }

    /** Round trips a warp spends loading {@code slicesPerWarp} slices of a block in walks of {@code walkSlices}. */
    static double warpWorkRoundTrips(Shape s, Kernel k, double slicesPerWarp, int walkSlices) {
        return slicesPerWarp * sliceItems(s, k) * k.unit() / warpBytesPerRoundTrip(s, k, walkSlices);
    }

    /** The fused CTA's staging: the page ids with the first chunk of descriptors, then each further chunk of 64. */
    static int stagingRoundTrips(int slicesPerPart) {
        return Math.max(1, Math.ceilDiv(slicesPerPart, 64));
    }

    record Row(Shape shape, Gpu gpu, long requestBytes, long blocks, int parts, long ctas, double inFlightPerSm,
            double waveEfficiency) {
        /** Fraction of peak Little's law allows (capped at 1), times the wave efficiency. */
        double expected(Latency latency) {
            double littles = Math.min(1.0, gpu.sms() * inFlightPerSm / latency.seconds() / gpu.bytesPerSecond());
            return littles * waveEfficiency;
        }

        /** The loaded latency above which this row falls below {@link #GOAL} (infinite where the waves alone do). */
        double breakEvenLatency() {
            if (waveEfficiency < GOAL) {
                return 0;
            }
            return gpu.sms() * inFlightPerSm / (gpu.bytesPerSecond() * GOAL / waveEfficiency);
        }
    }

    /**
     * The model's row for {@code k} over a request of {@code requestBytes} of shape {@code s}: the fused kernel's grid, or
     * for a slices kernel the planner's slices per warp ({@link #row(Shape, long, Gpu, Kernel, int)}).
     */
    static Row row(Shape s, long requestBytes, Gpu g, Kernel k) {
        return row(s, requestBytes, g, k, k.sliceSums() ? slicesPerWarp(s, requestBytes, g, k) : 0);
    }

    /** The planner's slices per warp for a slices kernel over a request of {@code requestBytes} of shape {@code s}. */
    static int slicesPerWarp(Shape s, long requestBytes, Gpu g, Kernel k) {
        return new LaunchPlanner(g.sms(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH)
                .sliceSumsSlicesPerWarp(s.slices(), (int) blocks(s, requestBytes), sliceItems(s, k), k.batchSlots());
    }

    static long blocks(Shape s, long requestBytes) {
        return Math.ceilDiv(Math.max(1, requestBytes / s.bytesPerToken()), BLOCK);
    }

    /** As {@link #row(Shape, long, Gpu, Kernel)}, a slices kernel with {@code slicesPerWarp} slices per warp. */
    static Row row(Shape s, long requestBytes, Gpu g, Kernel k, int slicesPerWarp) {
        long blocks = blocks(s, requestBytes);
        LaunchPlanner planner = new LaunchPlanner(g.sms(), LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
        int activeWarps;
        double work;
        int staging;
        LaunchPlanner.BlockLaunch f;
        if (k.sliceSums()) {
            f = planner.sliceSums(s.slices(), (int) blocks, slicesPerWarp).get(0);
            // a CTA row's warps: all 8 but in a short last row; each walks its slices once
            activeWarps = (int) Math.min(LaunchPlanner.WARPS, Math.ceilDiv(s.slices(), slicesPerWarp));
            work = warpWorkRoundTrips(s, k, slicesPerWarp, slicesPerWarp);
            staging = 1;
        } else {
            f = planner.blocks(s.slices(), (int) blocks, sliceItems(s, k), k.batchSlots()).get(0);
            activeWarps = Math.min(LaunchPlanner.WARPS, f.slicesPerPart());
            int perPart = Math.max(f.slicesPerPart(), LaunchPlanner.WARPS);
            work = warpWorkRoundTrips(s, k, (double) perPart / LaunchPlanner.WARPS, fusedWalkSlices(perPart));
            staging = stagingRoundTrips(f.slicesPerPart());
        }
        int walk = k.sliceSums() ? slicesPerWarp : fusedWalkSlices(Math.max(f.slicesPerPart(), LaunchPlanner.WARPS));
        long ctas = blocks * f.numParts();
        double ctasPerSm = Math.min(k.residentCtas(), (double) ctas / g.sms());
        double busy = work / (work + staging);
        double inFlight = ctasPerSm * activeWarps * warpBytesPerRoundTrip(s, k, walk) * busy;
        double waves = (double) ctas / ((long) g.sms() * k.residentCtas());
        double eff = waves / Math.ceil(waves);
        return new Row(s, g, requestBytes, blocks, f.numParts(), ctas, inFlight, eff);
    }

    /** The table of docs/gpu-performance.md, markdown, for {@code k}. */
    static String table(List<Long> sizes, Kernel k) {
        StringBuilder b = new StringBuilder();
        b.append("| shape | request | blocks x parts = CTAs | KiB in flight per SM | waves eff. |");
        for (Gpu g : GPUS) {
            for (Latency l : LATENCIES) {
                b.append(' ').append(g.name()).append(" @").append(l.label()).append(" |");
            }
            b.append(' ').append(g.name()).append(" < 0.9 above |");
        }
        b.append("\n|---|---:|---:|---:|---:|").append("---:|".repeat(GPUS.size() * (LATENCIES.size() + 1))).append('\n');
        for (Shape s : SHAPES) {
            for (long size : sizes) {
                Row first = row(s, size, GPUS.get(0), k);
                b.append(String.format(Locale.ROOT, "| %s | %s | %d x %d = %d | %.0f | %.2f |", s.name(), human(size),
                        first.blocks(), first.parts(), first.ctas(), first.inFlightPerSm() / 1024, first.waveEfficiency()));
                for (Gpu g : GPUS) {
                    Row r = row(s, size, g, k);
                    for (Latency l : LATENCIES) {
                        b.append(String.format(Locale.ROOT, " %.2f |", r.expected(l)));
                    }
                    double be = r.breakEvenLatency();
                    b.append(be == 0 ? " - |" : String.format(Locale.ROOT, " %.2fus |", be * 1e6));
                }
                b.append('\n');
            }
        }
        return b.toString();
    }

    static String human(long bytes) {
        return bytes >= 1L << 30 ? (bytes >> 30) + " GiB" : bytes >= 1L << 20 ? (bytes >> 20) + " MiB" : (bytes >> 10) + " KiB";
    }

    private BandwidthModel() {
    }
}
