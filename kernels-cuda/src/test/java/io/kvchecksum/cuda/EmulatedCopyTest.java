package io.kvchecksum.cuda;

import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.golden.CopySuite;
import io.kvchecksum.golden.CopyVector;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NumPy's verifying-copy vectors and the copy's fault tests through the CUDA backend's whole host path (limits,
 * descriptor packing, upload, launch planning, the output's zeroing, the result copy) with the copy kernels' arithmetic
 * and stores run on the CPU by the host test library: every buffer placed in simulated device memory, every value
 * compared exactly and the SHA-256 of every buffer read back after the copy (the destination changed in the copied
 * cells only, the source unchanged). Once with whole grids and once with grids of at most 2 blocks (several launches
 * per copy launch, each adding into its own blocks).
 */
class EmulatedCopyTest {
    @RegisterExtension
    static final EmulatedCuda CUDA = new EmulatedCuda();

    /**
     * Pageable host memory on either side is refused when the copy is compiled, naming the route and that it must be
     * pinned ({@code EmulatedPinnedCopyTest} copies pinned host memory); nothing reaches the driver.
     */
    @Test
    void hostMemoryIsRefusedAtCompileTime() {
        CopyVector v = CopyVector.all().get(0);
        try (Arena arena = Arena.ofConfined(); CopySuite.Placement device = CUDA.onDevice().get()) {
            List<MemorySegment> host = v.buffers(arena);
            List<KvMemory> onHost = host.stream().map(m -> (KvMemory) KvMemory.host(m)).toList();
            List<KvMemory> onDevice = new ArrayList<>();
            for (int k = 0; k < host.size(); k++) {
                onDevice.add(device.place(host.get(k), v.isDestination(k)));
            }
            int launches = CUDA.fake().launches;
            for (boolean hostSource : new boolean[] {true, false}) {
                List<KvMemory> from = hostSource ? onHost : onDevice;
                List<KvMemory> to = hostSource ? onDevice : onHost;
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> CUDA.wide().compileCopy(v.source(from),
                        v.sourceRequest(), v.destination(to), v.destinationRequest(), v.spec()));
                assertTrue(e.getMessage().contains("cannot copy " + (hostSource ? "host memory to device memory"
                        : "device memory to host memory")) && e.getMessage().contains("host memory must be pinned"),
                        e.getMessage());
            }
            CopyPlan plan = CUDA.wide().compileCopy(v.source(onDevice), v.sourceRequest(), v.destination(onDevice), v.destinationRequest(), v.spec());
            assertArrayEquals(v.expected(), CUDA.wide().copyAndChecksum(plan));
            assertEquals(launches + plan.launches().size(), CUDA.fake().launches, "one kernel launch per CopyPlan.Launch");
        }
    }

    @TestFactory
    Stream<DynamicNode> copy() {
        return CopySuite.tests(CUDA.wide(), CUDA.onDevice());
    }

    @TestFactory
    Stream<DynamicNode> copyFaults() {
        return CopySuite.faults(CUDA.wide(), CUDA.onDevice());
    }

    /**
     * Llama-3-8B's in-place layout change (vLLM flash NHD read as HND on the same block ids: 8 KV heads x 256-byte cells,
     * pages of 16): a staging unit of 64 KiB, above the 48 KiB a kernel has without opting in, so the backend's limit is
     * the device's opt-in maximum and the launch asks for 64 KiB of dynamic shared memory (the fake driver refuses more
     * than the kernel opted in to). Values and bytes equal the same copy out of place on the reference backend.
     */
    @Test
    void llamaPagesInPlaceUseTheOptInSharedMemory() {
        int heads = 8;
        int cell = 256;
        int pages = 6;
        long page = 16L * heads * cell;
        long bytes = 2 * 2 * pages * page;
        assertEquals(FakeCudaDriver.SHARED_OPTIN - CudaBackend.COPY_STAGE_PARTIALS, CUDA.wide().backend().limits().maxStagedUnitBytes());
        java.util.function.BiFunction<KvMemory, Boolean, io.kvchecksum.KvCacheGroup> group = (m, hnd) ->
                CopySuite.flashOrHnd(m, 2, heads, cell, 16, pages, hnd);
        io.kvchecksum.RequestBlocks q = io.kvchecksum.RequestBlocks.of(new int[] {4, 1, 5, 0, 2}, 75, 16);
        try (Arena arena = Arena.ofConfined(); CopySuite.Placement device = CUDA.onDevice().get()) {
            MemorySegment buf = arena.allocate(bytes, 64);
            java.util.Random rnd = new java.util.Random(29);
            for (long i = 0; i < bytes / 8; i++) {
                buf.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            MemorySegment src = arena.allocate(bytes, 64).copyFrom(buf);
            MemorySegment dst = arena.allocate(bytes, 64).copyFrom(buf);
            io.kvchecksum.KvChecksum reference = io.kvchecksum.KvChecksums.reference();
            long[] expected = reference.copyAndChecksum(reference.compileCopy(group.apply(KvMemory.host(src), false), q,
                    group.apply(KvMemory.host(dst), true), q, io.kvchecksum.ChecksumSpec.STANDARD));
            KvMemory m = device.place(buf, true);
            CopyPlan plan = CUDA.wide().compileCopy(group.apply(m, false), q, group.apply(m, true), q,
                    io.kvchecksum.ChecksumSpec.STANDARD);
            assertTrue(plan.staged() && plan.stagingUnitBytes() == 64 << 10, plan.stagingUnitBytes() + " bytes");
            assertArrayEquals(expected, CUDA.wide().copyAndChecksum(plan));
            device.readBack(m, buf);
            assertEquals(-1, buf.mismatch(dst), "the bytes after the copy");
            // the same unit on a backend without the opt-in (48 KiB) is refused at compile time, naming both sizes
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> plan.check("cuda",
                    CUDA.wide().backend().limits().withStagedUnits(CudaBackend.COPY_STAGE_BYTES), false));
            assertTrue(e.getMessage().contains("65536 bytes") && e.getMessage().contains("at most " + CudaBackend.COPY_STAGE_BYTES), e.getMessage());
        }
    }

    /**
     * The staged kernel's item widths and block spans beyond the vectors: an in-place NHD to HND change (4 KV heads,
     * two layers) at each width {@code kvc_copy_staged} picks per pair (256-byte cells: 16-byte items; 136: 8-byte
     * pieces; 100: byte cells), with destination blocks smaller than a page (several blocks per unit), straddling page
     * edges (B 12), more than the kernel's 16 shared partials per unit (pages of 32, B 1), a start past position 0, and
     * the mixed mode. Values and bytes equal the same copy out of place on the reference backend.
     */
    @TestFactory
    Stream<DynamicNode> stagedWidthsAndBlockSpans() {
        return CopySuite.stagedPiecesAndBlockSpans(CUDA.wide(), CUDA.onDevice());
    }

    /** The in-place vectors' faults, staged by {@code kvc_copy_staged}: a corrupted byte, a permutation, the limit. */
    @TestFactory
    Stream<DynamicNode> copyInPlaceFaults() {
        return CopySuite.inPlaceFaults(CUDA.wide(), CUDA.onDevice());
    }

    @TestFactory
    Stream<DynamicNode> copyInChunks() {
        return CopySuite.tests(CUDA.chunked(), CUDA.onDevice());
    }
}
