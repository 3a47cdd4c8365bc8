package io.kvchecksum.cuda;

import java.util.List;
import java.util.Locale;

/**
 * The Little's-law model of docs/gpu-performance.md: what fraction of HBM bandwidth the fused kernel can reach, from
 * the bytes its threads keep in flight, before any GPU has run it. Expectations, not measurements.
 *
 * <p>Fixed inputs (not tuned): 132 SMs; HBM 3.35 TB/s (H100 SXM) and 4.8 TB/s (H200); loaded DRAM latency 1.0 us,
 * 0.65 us as the optimistic case. From the kernel (kvchecksum.cuh, mirrored here): a warp sums one slice of one block
 * at a time in 16-byte units; a lane loads {@code KVC_BATCH} = 8 tokens back to back, so a warp's bytes per DRAM
 * round trip are its (slice, block) bytes over its round trips ({@link #warpBytesPerRoundTrip}). Two CTAs of 8 warps per SM (launch bounds; PtxEvidenceTest checks ptxas allows it). Grid from
 * {@link LaunchPlanner}; wave efficiency = waves / ceil(waves) of the CTAs over the resident slots. Staging: before
 * its first data load a CTA stages the block's page ids, then its first chunk of slice descriptors, in shared
 * memory (two dependent round trips, one more per further chunk of 64 slices), counted pessimistically at the
 * full DRAM latency (they are mostly L2 hits: every part of a block and every block read the same words); a warp's
 * loads are in flight for its work round trips out of work + staging.
 */
final class BandwidthModel {
    static final int SMS = 132;
    static final int RESIDENT_CTAS = 2;
    static final int BATCH = 8;
    static final int UNIT = 16;
    static final int BLOCK = 16;
    static final double GOAL = 0.9;

    record Gpu(String name, double bytesPerSecond) {
    }

    static final List<Gpu> GPUS = List.of(new Gpu("H100", 3.35e12), new Gpu("H200", 4.8e12));
    static final double LATENCY = 1.0e-6;
    static final double LATENCY_OPTIMISTIC = 0.65e-6;

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
            new Shape("DeepSeek-V3 MLA fp8", 61, 1, 656, 0));

    /**
     * Bytes one warp has in flight per DRAM round trip while it sums one slice of a full block. Cells of fewer than 32
     * units: (token lane, unit lane) grid, each lane 8 tokens per round trip, then one at a time; 32 units or more:
     * (unit, batch of 8 tokens) items dealt to the 32 lanes in turn, one round trip per 32 items.
     */
    static double warpBytesPerRoundTrip(Shape s) {
        int units = (s.kBytes() + s.vBytes()) / UNIT;
        double bytes = (double) units * BLOCK * UNIT;
        if (units >= 32) {
            int items = units * Math.ceilDiv(BLOCK, BATCH);
            return bytes / Math.ceilDiv(items, 32);
        }
        int tokenLanes = Integer.highestOneBit(32 / units);
        int tokensPerLane = BLOCK / tokenLanes;
        return bytes / (tokensPerLane / BATCH + tokensPerLane % BATCH);
    }

    /** Round trips a warp spends loading: its slices of the part times the round trips of one slice. */
    static double warpWorkRoundTrips(Shape s, int slicesPerPart) {
        int units = (s.kBytes() + s.vBytes()) / UNIT;
        double slicesPerWarp = (double) slicesPerPart / LaunchPlanner.WARPS;
        return slicesPerWarp * (units * BLOCK * UNIT) / warpBytesPerRoundTrip(s);
    }

    static int stagingRoundTrips(int slicesPerPart) {
        return 1 + Math.ceilDiv(slicesPerPart, 64);
    }

    record Row(Shape shape, long requestBytes, long blocks, int parts, long ctas, double inFlightPerSm, double waveEfficiency) {
        /** Fraction of peak Little's law allows (capped at 1), times the wave efficiency. */
        double expected(Gpu g, double latency) {
            double littles = Math.min(1.0, SMS * inFlightPerSm / latency / g.bytesPerSecond());
            return littles * waveEfficiency;
        }
    }

    static Row row(Shape s, long requestBytes) {
        long tokens = Math.max(1, requestBytes / s.bytesPerToken());
        long blocks = Math.ceilDiv(tokens, BLOCK);
        LaunchPlanner.BlockLaunch f = new LaunchPlanner(SMS, LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH)
                .blocks(s.slices(), (int) blocks).get(0);
        long ctas = blocks * f.numParts();
        int activeWarps = Math.min(LaunchPlanner.WARPS, f.slicesPerPart());
        double ctasPerSm = Math.min(RESIDENT_CTAS, (double) ctas / SMS);
        double work = warpWorkRoundTrips(s, Math.max(f.slicesPerPart(), LaunchPlanner.WARPS));
        double busy = work / (work + stagingRoundTrips(f.slicesPerPart()));
        double inFlight = ctasPerSm * activeWarps * warpBytesPerRoundTrip(s) * busy;
        double waves = (double) ctas / (SMS * RESIDENT_CTAS);
        double eff = waves / Math.ceil(waves);
        return new Row(s, requestBytes, blocks, f.numParts(), ctas, inFlight, eff);
    }

    /** The table of docs/gpu-performance.md, markdown. */
    static String table(List<Long> sizes) {
        StringBuilder b = new StringBuilder();
        b.append("| shape | request | blocks x parts = CTAs | KiB in flight per SM | waves eff. | H100 @1.0us | H100 @0.65us | H200 @1.0us | H200 @0.65us |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Shape s : SHAPES) {
            for (long size : sizes) {
                Row r = row(s, size);
                b.append(String.format(Locale.ROOT, "| %s | %s | %d x %d = %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f |%n", s.name(),
                        human(size), r.blocks(), r.parts(), r.ctas(), r.inFlightPerSm() / 1024, r.waveEfficiency(),
                        r.expected(GPUS.get(0), LATENCY), r.expected(GPUS.get(0), LATENCY_OPTIMISTIC),
                        r.expected(GPUS.get(1), LATENCY), r.expected(GPUS.get(1), LATENCY_OPTIMISTIC)));
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
