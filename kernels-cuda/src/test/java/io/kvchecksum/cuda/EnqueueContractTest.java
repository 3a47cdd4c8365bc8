package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a submit on an engine's stream ({@code KvChecksum.of(cuda).submit(plan, stream)}) promises an engine beyond
 * the values, on the emulated driver: a stream capturing a CUDA graph
 * is refused before anything is enqueued; the caller thread's current context is the same after the call; a slot
 * whose end could not be marked with an event is never handed out again.
 */
class EnqueueContractTest {
    private static final long SEED = 0xC0_47E7L;
    private static final long STREAM = 0xCA11E7L;

    private static RandomCase someCase(Arena arena) {
        Random rnd = new Random(SEED);
        RandomCase c;
        do {
            c = RandomCase.make(rnd, arena, true);
        } while (c.request().numBlocks() == 0);
        return c;
    }

    @Test
    void aCapturingStreamIsRefusedBeforeAnythingIsEnqueued() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        RecordingDriver rec = new RecordingDriver(fake);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = someCase(arena);
            List<Long> uploads = new ArrayList<>();
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            fake.capturing.add(STREAM);
            rec.take();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> cuda.submit(dev, c.request(), STREAM));
            assertTrue(e.getMessage().contains("capturing a CUDA graph"), e.getMessage());
            for (RecordingDriver.Call call : rec.take()) {
                assertFalse(Set.of("cuMemcpyHtoDAsync", "cuLaunchKernel", "cuEventRecord", "cuMemcpyDtoHAsync").contains(call.name()),
                        "a refused enqueue called " + call.name());
            }
            fake.capturing.clear();
            try (PendingChecksums p = cuda.submit(dev, c.request(), STREAM)) {
                assertArrayEquals(KvChecksums.reference().blockChecksums(c.group(), c.request()), p.get(), "after the capture ended");
            }
            uploads.forEach(fake::cuMemFree);
        }
    }

    @Test
    void theCallersCurrentContextIsRestored() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        long engineContext = 0xE1E1L;
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = someCase(arena);
            List<Long> uploads = new ArrayList<>();
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            long[] cur = new long[1];
            fake.cuCtxSetCurrent(engineContext);
            cuda.submit(dev, c.request(), STREAM).close();
            fake.cuCtxGetCurrent(cur);
            assertEquals(engineContext, cur[0], "enqueue left another context current on the caller's thread");
            cuda.blockChecksums(c.group(), c.request());
            fake.cuCtxGetCurrent(cur);
            assertEquals(engineContext, cur[0], "blockChecksums left another context current on the caller's thread");
            fake.cuCtxSetCurrent(0);
            cuda.sliceSums(c.group(), c.request());
            fake.cuCtxGetCurrent(cur);
            assertEquals(0, cur[0], "sliceSums made a context current on a thread that had none");
            uploads.forEach(fake::cuMemFree);
        }
    }

    @Test
    void aSlotWhoseCopyEventFailedIsNeverReused() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        boolean[] failSideRecords = {false};
        CudaDriver failing = (CudaDriver) Proxy.newProxyInstance(CudaDriver.class.getClassLoader(), new Class<?>[] {CudaDriver.class},
                (proxy, m, args) -> {
                    if (failSideRecords[0] && m.getName().equals("cuEventRecord") && (long) args[1] != STREAM) {
                        return 999;  // CUDA_ERROR_UNKNOWN for the record after the result copy, and for its fallback
                    }
                    try {
                        return m.invoke(fake, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        RecordingDriver rec = new RecordingDriver(failing);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = someCase(arena);
            RequestBlocks r = c.request();
            List<Long> uploads = new ArrayList<>();
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            long[] expected = KvChecksums.reference().blockChecksums(c.group(), r);
            try (PendingChecksums p = cuda.submit(dev, r, STREAM)) {
                assertArrayEquals(expected, p.get(), "warm-up");  // the context's only slot is free again
            }
            failSideRecords[0] = true;
            CudaException e = assertThrows(CudaException.class, () -> cuda.submit(dev, r, STREAM));
            assertTrue(e.getMessage().startsWith("cuEventRecord(after result copy)"), e.getMessage());
            failSideRecords[0] = false;
            assertEquals(1, backend.primaryResources().quarantinedSlots(), "the slot must be taken out of service");
            rec.take();
            try (PendingChecksums p = cuda.submit(dev, r, STREAM)) {
                assertArrayEquals(expected, p.get(), "after the failure");
            }
            assertTrue(rec.take().stream().anyMatch(call -> call.name().equals("cuMemAllocHost")),
                    "the next enqueue must get a new slot, not the one whose result copy may still be pending");
            uploads.forEach(fake::cuMemFree);
        }
        assertEquals(0, fake.livePinnedAllocations(), "close() must free the quarantined slot too");
    }

    /** A plan reused across enqueues is uploaded once; another plan is uploaded again; the values stay exact. */
    @Test
    void aReusedPlanIsUploadedOnce() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        RecordingDriver rec = new RecordingDriver(fake);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = someCase(arena);
            List<Long> uploads = new ArrayList<>();
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            io.kvchecksum.SlicePlan plan = io.kvchecksum.SlicePlan.of(dev, c.request());
            long[] expected = KvChecksums.reference().blockChecksums(c.group(), c.request());
            int[] htod = new int[4];
            for (int i = 0; i < 4; i++) {
                io.kvchecksum.SlicePlan p = i == 2 ? io.kvchecksum.SlicePlan.of(dev, c.request()) : plan;
                rec.take();
                try (PendingChecksums pc = cuda.submit(p, STREAM)) {
                    assertArrayEquals(expected, pc.get(), "enqueue " + i);
                }
                htod[i] = (int) rec.take().stream().filter(call -> call.name().equals("cuMemcpyHtoDAsync")).count();
            }
            assertArrayEquals(new int[] {1, 0, 1, 1}, htod, "uploads per enqueue: the first, none for the same plan, again for "
                    + "a new plan instance and for the first plan after it");
            uploads.forEach(fake::cuMemFree);
        }
    }
}
