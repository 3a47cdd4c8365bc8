package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.golden.GoldenSuite;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which way host memory reaches the kernels on a CPU device (PoCL): in place ({@code CL_MEM_USE_HOST_PTR} over a
 * window of the native segments) or a packed copy, with the reason. {@code OpenClGoldenTest} runs the golden suite
 * through the default backend, which on PoCL is the zero-copy path (the vectors live in native memory, as the first
 * test here checks); the copy path runs the whole suite again here.
 */
class ZeroCopyTest {
    private static OpenClBackend copying;
    private static OpenClBackend otherOrder;

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

    /** The golden suite again, with zero copy turned off: the packed copy path, exact. */
    @TestFactory
    Stream<? extends DynamicNode> goldenThroughTheCopy() {
        return OpenClTests.dynamic("opencl golden suite, copied", () -> {
            String device = OpenClTests.backend().device().index();   // the shared backend opened before the property is set
            String before = System.getProperty(OpenClBackend.ZERO_COPY_PROPERTY);
            System.setProperty(OpenClBackend.ZERO_COPY_PROPERTY, "false");
            try {
                copying = OpenClBackend.open(device);
            } finally {
                if (before == null) {
                    System.clearProperty(OpenClBackend.ZERO_COPY_PROPERTY);
                } else {
                    System.setProperty(OpenClBackend.ZERO_COPY_PROPERTY, before);
                }
            }
            try (Arena arena = Arena.ofShared()) {
                SlicePlan p = plan(arena.allocate(1024, 64), arena.allocate(1024, 64));
                assertTrue(copying.memoryPath(p).startsWith("copy: "), copying.memoryPath(p));
            }
            return GoldenSuite.tests(KvChecksum.of(copying));
        });
    }

    private static void restore(String property, String value) {
        if (value == null) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    /**
     * The golden suite with the other build of {@code block_checksums}: on a CPU device the GPU one (strided units of
     * 8 pieces), elsewhere the CPU one (contiguous units of 16).
     */
    @TestFactory
    Stream<? extends DynamicNode> goldenWithTheOtherUnitOrder() {
        return OpenClTests.dynamic("opencl golden suite, other unit order", () -> {
            OpenClDevice dev = OpenClTests.backend().device();
            boolean cpu = dev.type().equals("CPU");
            String order = System.getProperty(OpenClBackend.UNIT_ORDER_PROPERTY);
            String pieces = System.getProperty(OpenClBackend.UNIT_PIECES_PROPERTY);
            System.setProperty(OpenClBackend.UNIT_ORDER_PROPERTY, cpu ? "strided" : "contiguous");
            System.setProperty(OpenClBackend.UNIT_PIECES_PROPERTY, cpu ? "8" : "16");
            try {
                otherOrder = OpenClBackend.open(dev.index());
            } finally {
                restore(OpenClBackend.UNIT_ORDER_PROPERTY, order);
                restore(OpenClBackend.UNIT_PIECES_PROPERTY, pieces);
            }
            return GoldenSuite.tests(KvChecksum.of(otherOrder));
        });
    }

    @AfterAll
    static void close() {
        if (copying != null) {
            copying.close();
        }
        if (otherOrder != null) {
            otherOrder.close();
        }
    }
}
