package io.kvchecksum.cuda;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Prints the Little's-law table of docs/gpu-performance.md (an expectation, labelled as one, until a device run
 * replaces it) and holds the kernel to it: every shape from 256 MiB up at or above the 0.9 goal on H100 and H200 at
 * the pessimistic 1.0 us latency.
 */
class BandwidthModelTest {
    static final List<Long> SIZES = List.of(1L << 20, 16L << 20, 256L << 20, 1L << 30, 4L << 30);

    @Test
    void everyShapeFrom256MiBReachesTheGoalInTheModel() {
        System.out.println("EXPECTATION (model, not a measurement): fused kernel, fraction of HBM peak\n" + BandwidthModel.table(SIZES));
        for (BandwidthModel.Shape s : BandwidthModel.SHAPES) {
            for (long size : SIZES) {
                if (size < 256L << 20) {
                    continue;
                }
                BandwidthModel.Row r = BandwidthModel.row(s, size);
                for (BandwidthModel.Gpu g : BandwidthModel.GPUS) {
                    double e = r.expected(g, BandwidthModel.LATENCY);
                    assertTrue(e >= BandwidthModel.GOAL, s.name() + " " + BandwidthModel.human(size) + " on " + g.name()
                            + ": the model expects " + e + " of peak, below the goal " + BandwidthModel.GOAL);
                }
            }
        }
    }

    /** The per-warp figure against hand counts (kvchecksum.cuh's lane mapping). */
    @Test
    void warpBytesPerRoundTripMatchesHandCounts() {
        // Llama: 32 units, one token lane, 16 tokens = 2 batches of 8: 32 lanes x 8 x 16 B per round trip.
        assertEquals(4096.0, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(0)));
        // MLA bf16: 72 units x 2 batches = 144 items over 32 lanes: 5 round trips for 72 x 16 x 16 B.
        assertEquals(72.0 * 16 * 16 / 5, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(2)));
        // MLA fp8 (656-byte rows): 41 units x 2 = 82 items: 3 round trips.
        assertEquals(41.0 * 16 * 16 / 3, BandwidthModel.warpBytesPerRoundTrip(BandwidthModel.SHAPES.get(3)));
    }
}
