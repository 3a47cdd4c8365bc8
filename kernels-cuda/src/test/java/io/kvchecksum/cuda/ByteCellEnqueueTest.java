package io.kvchecksum.cuda;

import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.golden.GoldenVector;
import io.kvchecksum.golden.GoldenVectors;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The engine's path for cells that are not whole pieces ({@code submit} on the caller's stream, device memory) over
 * NumPy's cell vectors, on the emulated driver: the values of both modes, blocks cut into launches of two, the
 * byte-cell kernels launched for the compiler's byte-cell launches (and, for a group with both kinds of cells, the
 * whole-piece kernels too), and no call that waits for the device.
 */
class ByteCellEnqueueTest {
    private static final long STREAM = 0xB17EL;

    @TestFactory
    Stream<DynamicTest> enqueueOfEveryCellVector() {
        List<DynamicTest> tests = new ArrayList<>();
        for (GoldenVector v : GoldenVectors.cells()) {
            tests.add(DynamicTest.dynamicTest("cuda enqueue · cells · " + v.name(), () -> check(v)));
        }
        return tests.stream();
    }

    private static void check(GoldenVector v) {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        RecordingDriver rec = new RecordingDriver(fake);
        List<Long> uploads = new ArrayList<>();
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 2)) {
            KvChecksum cuda = KvChecksum.of(backend);
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, v.group(v.buffers(arena)), uploads);
            SlicePlan plan = SlicePlan.of(dev, v.request(), ChecksumMode.STANDARD,
                    v.padCells() ? CellPadding.ZEROS : CellPadding.NONE);
            for (ChecksumMode mode : ChecksumMode.values()) {
                GoldenVector expected = mode == ChecksumMode.MIXED ? GoldenVectors.mixedOf(v) : v;
                rec.take();
                try (PendingChecksums p = cuda.submit(plan.withMode(mode), STREAM)) {
                    List<String> calls = rec.take().stream().map(RecordingDriver.Call::name).toList();
                    assertFalse(calls.stream().anyMatch(c -> c.contains("Synchronize")), "submit waited: " + calls);
                    assertArrayEquals(expected.expected(), p.get(), v.name() + " " + mode.wireName());
                }
            }
            List<String> launched = new ArrayList<>(fake.launchedNames);
            // indexk-bf16 is whole pieces throughout: the whole-piece kernels only
            List<CompiledPlan.CellKind> kinds = CompiledPlan.of(plan).launches().stream().map(CompiledPlan.Launch::cellKind).toList();
            boolean byteCells = kinds.contains(CompiledPlan.CellKind.BYTE_CELLS);
            assertEquals(byteCells, launched.contains(BatchLaunch.BYTE_CELLS_BLOCK_CHECKSUMS), kinds + " " + launched);
            assertEquals(byteCells, launched.contains(BatchLaunch.BYTE_CELLS_BLOCK_CHECKSUMS + CudaBackend.MIXED_SUFFIX),
                    kinds + " " + launched);
            boolean wholeToo = kinds.contains(CompiledPlan.CellKind.WHOLE_PIECES);
            assertEquals(wholeToo, launched.stream().anyMatch(k -> k.startsWith("kvc_block_checksums")), kinds + " " + launched);
        } finally {
            uploads.forEach(fake::cuMemFree);
        }
    }
}
