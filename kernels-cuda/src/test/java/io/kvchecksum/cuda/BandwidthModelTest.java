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
 * for the kernels these shapes run ({@code kvc_block_checksums_16b} and {@code kvc_slice_sums_16b}, both modes). It
 * fails when the compiled kernels keep fewer bytes in flight (see {@link #halfTheBytesInFlightMissesTheGoal}), or when
 * the slices kernels' warps walk one tiny slice each ({@link #oneTinySlicePerWarpMissesTheGoal}), not when an input is
 * retuned.
 */
class BandwidthModelTest {
    static final List<Long> SIZES = List.of(1L << 20, 16L << 20, 256L << 20, 1L << 30, 4L << 30);

    /** The whole-piece kernels the shapes' 16-byte-aligned layouts run, in both modes. */
    static final List<String> GATED = List.of(CudaBackend.BLOCK_CHECKSUMS_16B, CudaBackend.BLOCK_CHECKSUMS_16B + CudaBackend.MIXED_SUFFIX,
            CudaBackend.sliceSums(CudaBackend.BLOCK_CHECKSUMS_16B),
            CudaBackend.sliceSums(CudaBackend.BLOCK_CHECKSUMS_16B) + CudaBackend.MIXED_SUFFIX);

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
     * The gate can fail: the same model with half of today's bytes in flight per thread (64 B, 4 loads of 16 B a batch)
     * misses the goal for Llama-3-8B at 1 GiB on H200 at 1.0 us. The Little's-law bound by hand: 132 SMs x 2 CTAs x
     * 8 warps x 2 KiB per round trip = 4.3 MB in flight / 1.0 us = 4.33 TB/s, 0.90 of 4.8 TB/s before staging and
     * waves take their share.
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
        assertEquals(2048.0, BandwidthModel.warpBytesPerRoundTrip(llama, half, 1));
    }

    /**
     * The slices kernels before their warps walked several slices: one fp8 head-64 slice of a 16-token block gives a lane
     * 4 items, half its batch, so a warp has 2 KiB in flight per round trip instead of 4, in a single round trip after
     * its CTA's staging; the model then misses the goal for that shape at 1 GiB on H200 at 1.0 us, and with the planner's
     * slices per warp (6: every warp of a block's one CTA walks 6 slices, 3 full batches a lane) it reaches it.
     */
    @Test
    void oneTinySlicePerWarpMissesTheGoal() {
        BandwidthModel.Kernel k = new BandwidthModel.Kernel(CudaBackend.sliceSums(CudaBackend.BLOCK_CHECKSUMS_16B), 128, 16, 2, 110);
        BandwidthModel.Shape tiny = BandwidthModel.SHAPES.get(4);
        BandwidthModel.Gpu h200 = BandwidthModel.GPUS.get(1);
        assertEquals(2048.0, BandwidthModel.warpBytesPerRoundTrip(tiny, k, 1));
        assertEquals(4096.0, BandwidthModel.warpBytesPerRoundTrip(tiny, k, 2));
        double one = BandwidthModel.row(tiny, 1L << 30, h200, k, 1).expected(BandwidthModel.LATENCY);
        assertTrue(one < BandwidthModel.GOAL, "one fp8 head-64 slice per warp should miss the goal, the model gives " + one);
        assertEquals(6, BandwidthModel.slicesPerWarp(tiny, 1L << 30, h200, k));
        double planned = BandwidthModel.row(tiny, 1L << 30, h200, k).expected(BandwidthModel.LATENCY);
        assertTrue(planned >= BandwidthModel.GOAL, "the planner's slices per warp: the model gives " + planned);
    }

    /**
     * The fused kernel's parts for tiny slices: fp8 head 64 at 16 MiB (171 blocks) took parts of 8 slices for CTAs
     * enough, one slice a warp, half a lane's batch, and the model expected 0.42 of peak on H100. The planner now takes
     * parts of 16 (two slices a warp, full batches, 513 CTAs, about two waves): the model expects the goal on H100 at
     * 1.0 us.
     */
    @Test
    void fusedPartsOfTinySlicesFillTheBatchAt16MiB() {
        BandwidthModel.Kernel k = new BandwidthModel.Kernel(CudaBackend.BLOCK_CHECKSUMS_16B, 128, 16, 2, 124);
        BandwidthModel.Shape tiny = BandwidthModel.SHAPES.get(4);
        BandwidthModel.Row r = BandwidthModel.row(tiny, 16L << 20, BandwidthModel.GPUS.get(0), k);
        assertEquals(171, r.blocks());
        assertEquals(3, r.parts());
        double e = r.expected(BandwidthModel.LATENCY);
        assertTrue(e >= BandwidthModel.GOAL, "fp8 head 64 at 16 MiB on H100: the model gives " + e);
    }

    /** The per-warp figure against hand counts (kvchecksum.cuh's lane mapping) at 128 B = 8 loads x 16 B per lane. */
    @Test
    void warpBytesPerRoundTripMatchesHandCounts() {
        BandwidthModel.Kernel k = new BandwidthModel.Kernel("hypothetical", 128, 16, 2, 96);
        // Llama: 32 units x 16 tokens = 512 items, 16 a lane = 2 batches of 8: 32 lanes x 8 x 16 B per round trip.
        assertEquals(4096.0, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(0), k, 1));
        assertEquals(4096.0, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(0), k, 8));
        // MLA bf16: 72 units x 16 = 1152 items, 36 a lane: one slice in 5 round trips (the last half full); a walk of
        // 8 slices, 288 a lane, in 36 (batches run on across slices).
        assertEquals(72.0 * 16 * 16 / 5, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(2), k, 1));
        assertEquals(4096.0, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(2), k, 8));
        // MLA fp8 (656-byte rows): 41 units x 16 = 656 items, 21 a lane (the 21st of lanes 16..31 off): 3 round trips.
        assertEquals(41.0 * 16 * 16 / 3, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(3), k, 1));
        // fp8 head 64: 8 units x 16 = 128 items, 4 a lane: one slice half fills a batch, two fill it.
        assertEquals(2048.0, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(4), k, 1));
        assertEquals(4096.0, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(4), k, 2));
        assertEquals(6, BandwidthModel.fusedWalkSlices(48));
        assertEquals(8, BandwidthModel.fusedWalkSlices(256));
    }

    @Test
    void registersGiveTheResidentCtas() {
        assertEquals(2, BandwidthModel.ctasPerSm(96));   // 96 x 256 = 24576 registers a CTA: 2 in 65536
        assertEquals(3, BandwidthModel.ctasPerSm(80));   // 80 x 256 = 20480: 3
        assertEquals(2, BandwidthModel.ctasPerSm(121));  // 128 after rounding to 8: 2
        assertEquals(8, BandwidthModel.ctasPerSm(16));   // the 2048-thread limit
    }
}
