package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which way host memory reaches the kernels on a CPU device (PoCL): in place ({@code CL_MEM_USE_HOST_PTR} over a
 * window of the native segments) or a packed copy, with the reason. {@code OpenClGoldenTest} runs the golden suite
 * through the default backend, which on PoCL is the zero-copy path (the vectors live in native memory, as the first
 * test here checks); {@link TuningGoldenTest} runs it through the GPU tuning, which copies.
 */
class ZeroCopyTest {
    private static SlicePlan plan(MemorySegment k, MemorySegment v) {
        KvRegion kr = new KvRegion(KvMemory.host(k), 8, 4 * 64, 64, 32, 32);
        KvRegion vr = new KvRegion(KvMemory.host(v), 0, 4 * 64, 64, 32, 16);
        KvCacheGroup g = new KvCacheGroup(List.of(new CacheLayer(0, 0, 1, kr, vr)), 4, 3);
        return SlicePlan.of(g, RequestBlocks.of(new int[] {2, 0}, 7, 0, 4));
    }

    @Test
    void nativeSegmentsAreUsedInPlaceOnACpuDevice() {
        OpenClBackend cl = OpenClTests.backend();
        try (Arena arena = Arena.ofShared()) {
            SlicePlan p = plan(arena.allocate(1024, 64), arena.allocate(1024, 64));
            String path = cl.memoryPath(p);
            if (cl.device().type().equals("CPU")) {
                assertEquals("zero-copy", path, cl.description());
            } else {
                assertTrue(path.startsWith("copy: "), path);
            }
        }
    }

    @Test
    void heapSegmentsAreCopiedWithTheReason() {
        OpenClBackend cl = OpenClTests.backend();
        try (Arena arena = Arena.ofShared()) {
            SlicePlan p = plan(MemorySegment.ofArray(new byte[1024]), arena.allocate(1024, 64));
            String path = cl.memoryPath(p);
            assertTrue(path.startsWith("copy: "), path);
            if (cl.device().type().equals("CPU")) {
                assertEquals("copy: a segment is on the Java heap (no stable address)", path);
            }
        }
    }

    /** The GPU tuning on a CPU device copies host memory, saying why ({@link TuningGoldenTest} runs the suite through it). */
    @Test
    void theGpuTuningCopiesHostMemoryWithTheReason() {
        OpenClBackend cl = OpenClTests.backend();
        try (OpenClBackend gpu = OpenClBackend.open(cl.device().index(), Tuning.GPU, ClApi.jocl()); Arena arena = Arena.ofShared()) {
            SlicePlan p = plan(arena.allocate(1024, 64), arena.allocate(1024, 64));
            assertEquals("copy: the GPU tuning reads device memory (a " + cl.device().type() + " device)",
                    gpu.memoryPath(p), gpu.description());
        }
    }
}
