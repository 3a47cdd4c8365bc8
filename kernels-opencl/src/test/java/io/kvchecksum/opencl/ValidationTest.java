package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Inputs the backend must refuse with a clear message before it creates a buffer or enqueues a command. */
class ValidationTest {

    private static KvCacheGroup hostGroup(Arena arena) {
        MemorySegment seg = arena.allocate(4 * 4 * 2 * 32, 64);
        KvMemory m = KvMemory.host(seg);
        // 4 pages x 4 slots x 2 heads, 16-byte K then 16-byte V
        return KvCacheGroup.of(4, 4, List.of(CacheLayer.of(0, 0, 2, new KvRegion(m, 0, 256, 64, 32, 16),
                new KvRegion(m, 16, 256, 64, 32, 16))));
    }

    /** Runs {@code call}, expects the exception, and checks the recorder saw no OpenCL call at all. */
    private static InvalidLayoutException rejectedBeforeAnyCall(Executable call) {
        RecordingClApi rec = OpenClTests.recorder();
        rec.start();
        InvalidLayoutException e;
        try {
            e = assertThrows(InvalidLayoutException.class, call);
        } finally {
            List<String> calls = rec.stop();
            assertEquals(List.of(), calls, "OpenCL calls made before the input was rejected");
        }
        return e;
    }

    @Test
    void outOfRangePageIdIsRejected() {
        KvChecksum cl = OpenClTests.recordedChecksum();
        try (Arena arena = Arena.ofConfined()) {
            KvCacheGroup g = hostGroup(arena);
            RequestBlocks r = RequestBlocks.of(new int[] {1, 4}, 8, 4);
            for (Executable call : List.<Executable>of(() -> cl.blockChecksums(g, r), () -> cl.submit(g, r),
                    () -> cl.sliceSums(g, r))) {
                InvalidLayoutException e = rejectedBeforeAnyCall(call);
                assertTrue(e.getMessage().contains("pageTable[1] = 4 is out of range"), e.getMessage());
            }
            InvalidLayoutException e = rejectedBeforeAnyCall(() -> cl.blockChecksums(g, RequestBlocks.of(new int[] {-1}, 3, 4)));
            assertTrue(e.getMessage().contains("pageTable[0] = -1"), e.getMessage());
        }
    }

    @Test
    void tooShortBlockTableIsRejected() {
        KvChecksum cl = OpenClTests.recordedChecksum();
        try (Arena arena = Arena.ofConfined()) {
            KvCacheGroup g = hostGroup(arena);
            InvalidLayoutException e = rejectedBeforeAnyCall(() -> cl.blockChecksums(g, RequestBlocks.of(new int[] {0, 1}, 9, 4)));
            assertTrue(e.getMessage().contains("pageTable has 2 entries"), e.getMessage());
        }
    }

    @Test
    void unregisteredAndMixedDeviceMemoryIsRejected() {
        KvChecksum cl = OpenClTests.recordedChecksum();
        KvMemory dev = KvMemory.device(0x7f0000000000L, 1 << 20);
        KvCacheGroup g = KvCacheGroup.of(4, 4, List.of(CacheLayer.kOnly(5, 0, 1, new KvRegion(dev, 0, 256, 64, 0, 64))));
        RequestBlocks r = RequestBlocks.of(new int[] {0}, 4, 4);
        // Device memory is within the declared limits; whether it is a registered cl_mem is checked when it runs.
        for (Executable call : List.<Executable>of(() -> cl.blockChecksums(g, r), () -> cl.submit(g, r),
                () -> cl.submit(g, r, 0), () -> cl.sliceSums(g, r))) {
            InvalidLayoutException e = rejectedBeforeAnyCall(call);
            assertTrue(e.getMessage().contains("layer 5 K region's " + dev)
                    && e.getMessage().contains("not a cl_mem registered with buffer(cl_mem)"), e.getMessage());
        }
        // Host and device regions mixed: refused by the compiler under the backend's declared limits, naming the first
        // region of the other kind than the first region's (layer 5 is device memory, layer 6 host memory).
        KvMemory host = KvMemory.host(java.lang.foreign.MemorySegment.ofArray(new byte[1024]));
        KvCacheGroup mixed = KvCacheGroup.of(4, 4, List.of(CacheLayer.kOnly(5, 0, 1, new KvRegion(dev, 0, 256, 64, 0, 64)),
                CacheLayer.kOnly(6, 0, 1, new KvRegion(host, 0, 256, 64, 0, 64))));
        for (Executable call : List.<Executable>of(() -> cl.blockChecksums(mixed, r), () -> cl.submit(mixed, r),
                () -> cl.submit(mixed, r, 0), () -> cl.sliceSums(mixed, r))) {
            InvalidLayoutException e = rejectedBeforeAnyCall(call);
            assertTrue(e.getMessage().contains("backend 'opencl' reads host memory only or device memory only, not both among "
                    + "the layers of one launch") && e.getMessage().contains("layer 6 K region is host memory")
                    && e.getMessage().contains("or every region a cl_mem registered with buffer(cl_mem)"), e.getMessage());
        }
    }

    @Test
    void nullArgumentsAreRejected() {
        KvChecksum cl = OpenClTests.recordedChecksum();
        rejectedBeforeAnyCall(() -> cl.blockChecksums(null, RequestBlocks.of(new int[] {0}, 1, 1)));
        rejectedBeforeAnyCall(() -> cl.sliceSums(null, RequestBlocks.of(new int[] {0}, 1, 1)));
    }

    @Test
    void emptyRequestsNeedNoDevice() {
        KvChecksum cl = OpenClTests.recordedChecksum();
        try (Arena arena = Arena.ofConfined()) {
            KvCacheGroup g = hostGroup(arena);
            RequestBlocks r = RequestBlocks.of(new int[0], 8, 2, 4); // starts at token 8 = numTokens: no blocks
            RecordingClApi rec = OpenClTests.recorder();
            rec.start();
            assertEquals(0, cl.blockChecksums(g, r).length);
            SliceSums s = cl.sliceSums(g, r);
            assertEquals(0, s.numBlocks());
            assertEquals(2, s.numSlices());
            assertEquals(List.of(), rec.stop());
        }
    }

    @Test
    void aClosedBackendRefusesWork() {
        OpenClTests.requireOpenCl();
        KvChecksum cl = KvChecksum.of(OpenClBackend.open());
        cl.close();
        try (Arena arena = Arena.ofConfined()) {
            KvCacheGroup g = hostGroup(arena);
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> cl.blockChecksums(g, RequestBlocks.of(new int[] {0}, 4, 4)));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }
}
