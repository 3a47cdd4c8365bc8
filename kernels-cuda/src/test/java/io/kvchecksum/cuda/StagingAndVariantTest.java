package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.SliceSums;
import io.kvchecksum.golden.GoldenVector;
import io.kvchecksum.golden.GoldenVectors;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The GPU-only staging runs in CI: the host emulation runs the kernels' shared-memory staging phases
 * ({@code kvc_stage_phase}: the page ids with the first descriptors, then each further chunk of descriptors) for every
 * thread of a CTA before the lanes, over stages it first fills with a pattern, so a lane reading a stage the phases
 * did not fill gives a wrong value; the counters of the host library say how much each phase copied. And the occupancy variant ({@link CudaBackend#VARIANT_PROPERTY}):
 * {@code occupancy3} launches the {@code _occ3} kernels, with the same values.
 */
class StagingAndVariantTest {
    private static final String VECTOR = "llama3-8b-tp1-bf16-bs16";

    private static GoldenVector vector() {
        assumeTrue(GoldenVectors.class.getResource("/vectors/index.json") != null, "no golden vectors on the class path");
        List<GoldenVector> all = GoldenVectors.all();
        return all.stream().filter(v -> v.name().equals(VECTOR)).findFirst()
                .orElseGet(() -> all.stream().filter(v -> !v.padCells()).findFirst().orElseThrow());
    }

    @Test
    void theStagingPhasesRunAndCopyEveryDescriptorOncePerBlock() {
        HostLibrary lib = HostLibrary.load();
        GoldenVector v = vector();
        FakeCudaDriver fake = new FakeCudaDriver(lib);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20, "default")) {
            KvChecksum cuda = KvChecksum.of(backend);
            KvCacheGroup g = v.group(v.buffers(arena));
            long[] counts = new long[2];
            lib.kvc_stage_counts(counts);  // reset
            assertArrayEquals(v.expected(), cuda.blockChecksums(g, v.request()), v.name());
            lib.kvc_stage_counts(counts);
            int slices = io.kvchecksum.SlicePlan.of(g, v.request()).numSlices();
            int blocks = v.expected().length;
            System.out.printf("%s: staged %d page ids and %d descriptor words for %d blocks of %d slices%n", v.name(), counts[0],
                    counts[1], blocks, slices);
            // Every CTA stages its part's descriptors: the parts of a block cover the slices once.
            assertEquals(8L * slices * blocks, counts[1], "descriptor words staged");
            assertTrue(counts[0] >= blocks, "page ids staged: " + counts[0]);
            assertTrue(fake.launchedNames.stream().anyMatch(k -> k.startsWith("kvc_block_checksums") && !k.endsWith("_occ3")),
                    fake.launchedNames.toString());

            SliceSums sums = cuda.sliceSums(g, v.request());
            lib.kvc_stage_counts(counts);
            assertEquals(v.expectedSlices(), sums, v.name() + " slice sums");
            // The slices kernels: each CTA stages the descriptors of its 8 warps, once per block.
            assertEquals(8L * slices * blocks, counts[1], "descriptor words staged by the slices kernel");
        }
    }

    @Test
    void occupancy3LaunchesTheOcc3KernelsWithTheSameValues() {
        GoldenVector v = vector();
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        try (Arena arena = Arena.ofConfined();
                CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20, CudaBackend.VARIANT_OCCUPANCY3)) {
            assertEquals(CudaBackend.VARIANT_OCCUPANCY3, backend.variant());
            KvChecksum cuda = KvChecksum.of(backend);
            assertArrayEquals(v.expected(), cuda.blockChecksums(v.group(v.buffers(arena)), v.request()), v.name());
            assertTrue(fake.launchedNames.stream().anyMatch(k -> k.startsWith("kvc_block_checksums") && k.endsWith("_occ3")),
                    fake.launchedNames.toString());
        }
    }

    @Test
    void anUnknownVariantIsRefusedNamingTheProperty() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new CudaBackend(new FakeCudaDriver(HostLibrary.load()), 0, Cuda.fatbin(), 1 << 20, "occupancy4"));
        assertTrue(e.getMessage().contains(CudaBackend.VARIANT_PROPERTY) && e.getMessage().contains("occupancy3"), e.getMessage());
    }
}
