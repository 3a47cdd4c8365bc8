package io.kvchecksum.cuda;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Little's-law model of docs/gpu-performance.md fed with the compiled kernels: the bytes in flight per thread
 * and the resident CTAs come from the PTX and ptxas report the build wrote ({@link BandwidthModel#evidence}), the GPU
 * figures from their cited sources. Its output is an EXPECTATION, labelled as one, until a device run replaces it.
 * The gate: every shape from 256 MiB up at or above the 0.9 goal on H100 and H200 at the pessimistic 1.0 us latency,
 * for the kernels these shapes run ({@code kvc_block_checksums_16b}, both modes). It fails when the compiled kernels
 * keep fewer bytes in flight (see {@link #halfTheBytesInFlightMissesTheGoal}), not when an input is retuned.
 */
class BandwidthModelTest {
    static final List<Long> SIZES = List.of(1L << 20, 16L << 20, 256L << 20, 1L << 30, 4L << 30);

    /** The whole-piece kernels the shapes' 16-byte-aligned layouts run, in both modes. */
    static final List<String> GATED = List.of(CudaBackend.BLOCK_CHECKSUMS_16B, CudaBackend.BLOCK_CHECKSUMS_16B + CudaBackend.MIXED_SUFFIX);

    private static List<BandwidthModel.Kernel> compiled(List<String> names) throws IOException {
        String ptx = Files.readString(PtxEvidenceTest.evidence("kvchecksum_sm90.ptx"));
        String report = Files.readString(PtxEvidenceTest.evidence("ptxas_sm90.txt"));
        List<BandwidthModel.Kernel> out = new ArrayList<>();
        for (String n : names) {
            out.add(BandwidthModel.evidence(ptx, report, n));
        }
        return out;
    }

    @Test
    void everyShapeFrom256MiBReachesTheGoalWithTheCompiledKernels() throws IOException {
        // Every checksum kernel's evidence, for the record; the shapes below run the 16-byte ones.
        List<String> all = CudaBackend.KERNELS.stream().filter(k -> k.contains("checksums") || k.contains("slice_sums")).toList();
        StringBuilder printed = new StringBuilder("Compiled evidence (compute_90 PTX, sm_90 ptxas):\n");
        for (BandwidthModel.Kernel k : compiled(all)) {
            printed.append(String.format(Locale.ROOT, "  %-40s %4d B of global loads before first use per thread (widest %d B), "
                    + "%d registers, %d CTAs/SM -> %d KiB in flight per SM%n", k.name(), k.bytesInFlight(), k.unit(), k.registers(),
                    k.residentCtas(), (long) k.bytesInFlight() * LaunchPlanner.THREADS * k.residentCtas() / 1024));
        }
        System.out.print(printed);
        for (BandwidthModel.Gpu g : BandwidthModel.GPUS) {
            System.out.println("GPU input " + g.name() + ": " + g.sms() + " SMs, " + g.bytesPerSecond() / 1e12 + " TB/s (" + g.source() + ")");
        }
        for (BandwidthModel.Kernel k : compiled(GATED)) {
            assertEquals(16, k.unit(), k.name() + ": the model's shapes need 16-byte loads, the PTX's widest is " + k.unit());
            System.out.println("EXPECTATION (model, not a measurement): " + k.name() + ", fraction of HBM peak\n"
                    + BandwidthModel.table(SIZES, k));
            for (BandwidthModel.Shape s : BandwidthModel.SHAPES) {
                for (long size : SIZES) {
                    if (size < 256L << 20) {
                        continue;
                    }
                    for (BandwidthModel.Gpu g : BandwidthModel.GPUS) {
                        double e = BandwidthModel.row(s, size, g, k).expected(BandwidthModel.LATENCY);
                        assertTrue(e >= BandwidthModel.GOAL, k.name() + " (" + k.bytesInFlight() + " B in flight per thread, "
                                + k.residentCtas() + " CTAs/SM): " + s.name() + " " + BandwidthModel.human(size) + " on " + g.name()
                                + ": the model expects " + e + " of peak, below the goal " + BandwidthModel.GOAL);
                    }
                }
            }
        }
    }

    /**
     * The gate can fail: the same model with half of today's bytes in flight per thread (64 B, one 16-byte unit per
     * token over 4 tokens, what a lane with 4 loads in flight would give) misses the goal for Llama-3-8B at 1 GiB on
     * H200 at 1.0 us. The Little's-law bound by hand: 132 SMs x 2 CTAs x 8 warps x 2 KiB per round trip = 4.3 MB in
     * flight / 1.0 us = 4.33 TB/s, 0.90 of 4.8 TB/s before staging and waves take their share.
     */
    @Test
    void halfTheBytesInFlightMissesTheGoal() {
        BandwidthModel.Kernel half = new BandwidthModel.Kernel("hypothetical", 64, 16, 2, 96);
        BandwidthModel.Kernel today = new BandwidthModel.Kernel("hypothetical", 128, 16, 2, 96);
        BandwidthModel.Shape llama = BandwidthModel.SHAPES.get(0);
        BandwidthModel.Gpu h200 = BandwidthModel.GPUS.get(1);
        double e = BandwidthModel.row(llama, 1L << 30, h200, half).expected(BandwidthModel.LATENCY);
        assertTrue(e < BandwidthModel.GOAL, "64 B per thread should miss the goal, the model gives " + e);
        assertTrue(BandwidthModel.row(llama, 1L << 30, h200, today).expected(BandwidthModel.LATENCY) >= BandwidthModel.GOAL);
        assertEquals(2048.0, BandwidthModel.warpBytesPerRoundTrip(llama, half));
    }

    /** The per-warp figure against hand counts (kvchecksum.cuh's lane mapping) at 128 B = 8 tokens x 16 B per lane. */
    @Test
    void warpBytesPerRoundTripMatchesHandCounts() {
        BandwidthModel.Kernel k = new BandwidthModel.Kernel("hypothetical", 128, 16, 2, 96);
        // Llama: 32 units, one token lane, 16 tokens = 2 batches of 8: 32 lanes x 8 x 16 B per round trip.
        assertEquals(4096.0, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(0), k));
        // MLA bf16: 72 units x 2 batches = 144 items over 32 lanes: 5 round trips for 72 x 16 x 16 B.
        assertEquals(72.0 * 16 * 16 / 5, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(2), k));
        // MLA fp8 (656-byte rows): 41 units x 2 = 82 items: 3 round trips.
        assertEquals(41.0 * 16 * 16 / 3, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(3), k));
    }

    @Test
    void registersGiveTheResidentCtas() {
        assertEquals(2, BandwidthModel.ctasPerSm(96));   // 96 x 256 = 24576 registers a CTA: 2 in 65536
        assertEquals(3, BandwidthModel.ctasPerSm(80));   // 80 x 256 = 20480: 3
        assertEquals(2, BandwidthModel.ctasPerSm(121));  // 128 after rounding to 8: 2
        assertEquals(8, BandwidthModel.ctasPerSm(16));   // the 2048-thread limit
    }
}
