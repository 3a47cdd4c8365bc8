package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The calls submit() makes, recorded: nothing in it waits for the device; only get() does, once. The same recorder
 * lets a benchmark count synchronizing calls per operation.
 */
class SyncFreeEnqueueTest {

    private static void check(KvMemory memory) {
        KvChecksum cl = OpenClTests.recordedChecksum();
        KvCacheGroup g = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(2, 0, 2, new KvRegion(memory, 0, 256, 64, 32, 16),
                new KvRegion(memory, 16, 256, 64, 32, 16))));
        RequestBlocks r = RequestBlocks.of(new int[] {3, 1, 2}, 11, 4);
        RecordingClApi rec = OpenClTests.recorder();
        rec.start();
        PendingChecksums p = cl.submit(g, r);
        List<String> enqueue = rec.stop();
        System.out.println("submit() calls: " + enqueue);
        for (String sync : ClApi.SYNCHRONIZING) {
            assertTrue(!enqueue.contains(sync), "submit() called " + sync + ": " + enqueue);
        }
        assertTrue(enqueue.contains("enqueueKernel") && enqueue.contains("enqueueRead") && enqueue.contains("flush"), enqueue.toString());
        assertEquals("flush", enqueue.get(enqueue.size() - 1), "the last call of submit() hands the work to the device");

        rec.start();
        long[] values = p.get();
        p.close();
        List<String> get = rec.stop();
        System.out.println("get() calls: " + get);
        assertEquals(1, get.stream().filter(ClApi.SYNCHRONIZING::contains).count(), "get() waits exactly once: " + get);
        assertEquals("waitForEvent", get.get(0));
        assertTrue(p.isDone());
        assertArrayEquals(KvChecksums.reference().blockChecksums(g, r), values);
    }

    @Test
    void submitOfNativeMemoryNeverWaits() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment seg = arena.allocate(1024, 64);
            for (int i = 0; i < 128; i++) {
                seg.setAtIndex(ValueLayout.JAVA_LONG, i, 0x9E3779B97F4A7C15L * (i + 3));
            }
            check(KvMemory.host(seg));
        }
    }

    @Test
    void submitOfHeapMemoryNeverWaits() {
        long[] heap = new long[128];
        for (int i = 0; i < heap.length; i++) {
            heap[i] = 0xD1B54A32D192ED03L * (i + 5);
        }
        check(KvMemory.host(MemorySegment.ofArray(heap)));
    }
}
