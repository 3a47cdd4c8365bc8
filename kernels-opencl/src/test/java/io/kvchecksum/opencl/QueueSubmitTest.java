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
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The engine-facing submit with a queue handle: this backend's own queue (0 or its handle) only. */
class QueueSubmitTest {

    @Test
    void runsOnItsOwnQueueAndRefusesAnyOther() {
        OpenClTests.requireOpenCl();
        OpenClBackend cl = OpenClTests.backend();
        KvChecksum k = OpenClTests.checksum();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = a.allocate(1024, 8);
            for (long i = 0; i < 1024; i++) {
                m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 37 + 11));
            }
            KvMemory mem = KvMemory.host(m);
            KvCacheGroup g = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(2, 0, 2, new KvRegion(mem, 0, 256, 64, 32, 16),
                    new KvRegion(mem, 16, 256, 64, 32, 16))));
            RequestBlocks r = RequestBlocks.of(new int[] {3, 1, 2}, 11, 4);
            long[] expected = KvChecksums.reference().blockChecksums(g, r);
            assertTrue(cl.commandQueue() != 0);
            for (long q : new long[] {0, cl.commandQueue()}) {
                try (PendingChecksums p = k.submit(g, r, q)) {
                    assertArrayEquals(expected, p.get(), "queue 0x" + Long.toHexString(q));
                }
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> k.submit(g, r, cl.commandQueue() + 8));
            assertTrue(e.getMessage().contains("own command queue"), e.getMessage());
        }
    }
}
