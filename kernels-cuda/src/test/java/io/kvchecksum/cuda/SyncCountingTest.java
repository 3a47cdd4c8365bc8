package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.LongAdder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link SyncCounting} on the CPU-simulated driver: a steady-state submit of device memory, on the own stream or on the
 * caller's, counts 0,
 * {@code get()} counts its one wait; and {@link CudaBackend#upload} places host bytes in device memory that the
 * kernels read, freed on close.
 */
class SyncCountingTest {
    private static final long SEED = 20260214L;
    private static final long CALLER_STREAM = 0x5EA11L;

    /** Exactly the driver methods named in COUNTED count, each once per call; the others pass through uncounted. */
    @Test
    void countsExactlyTheListedCalls() throws Exception {
        List<String> forwarded = new ArrayList<>();
        CudaDriver stub = (CudaDriver) Proxy.newProxyInstance(CudaDriver.class.getClassLoader(),
                new Class<?>[] {CudaDriver.class}, (proxy, m, args) -> {
                    forwarded.add(m.getName());
                    return 0;
                });
        LongAdder n = new LongAdder();
        CudaDriver counting = SyncCounting.counting(stub, n);
        for (Method m : CudaDriver.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers()) || m.isDefault()) {
                continue;
            }
            Object[] args = new Object[m.getParameterCount()];
            Class<?>[] types = m.getParameterTypes();
            for (int i = 0; i < args.length; i++) {
                args[i] = types[i] == int.class ? (Object) 0 : types[i] == long.class ? (Object) 0L : null;
            }
            long before = n.sum();
            m.invoke(counting, args);
            assertEquals(SyncCounting.COUNTED.contains(m.getName()) ? 1 : 0, n.sum() - before, m.getName());
            assertEquals(m.getName(), forwarded.getLast(), "every call is forwarded");
        }
        assertTrue(SyncCounting.COUNTED.containsAll(List.of("cuStreamSynchronize", "cuEventSynchronize", "cuMemFree",
                "cuMemFreeHost", "cuMemAlloc", "cuMemAllocHost", "cuCtxSynchronize", "cuMemcpyHtoD")));
    }

    @Test
    void steadyStateSubmitCountsNothingAndGetCountsItsWait() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        fake.deferCompletion = true;
        LongAdder syncs = new LongAdder();
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = SyncCounting.open(fake, 0, syncs)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = nonEmpty(arena);
            long[] expected = KvChecksums.reference().blockChecksums(c.group(), c.request());
            List<DeviceBuffer> buffers = new ArrayList<>();
            KvCacheGroup dev = upload(backend, c.group(), buffers);
            RequestBlocks r = c.request();
            try (PendingChecksums warm = cuda.submit(dev, r)) {   // first in the context: allocates its pool
                assertArrayEquals(expected, warm.get());
            }
            for (int i = 0; i < 3; i++) {
                long before = syncs.sum();
                PendingChecksums p = cuda.submit(dev, r);
                assertEquals(0, syncs.sum() - before, "a steady-state submit of device memory must not synchronize");
                long beforeGet = syncs.sum();
                assertArrayEquals(expected, p.get());
                assertTrue(syncs.sum() - beforeGet >= 1, "get() waits on the result copy");
                p.close();

                before = syncs.sum();
                PendingChecksums q = cuda.submit(dev, r, CALLER_STREAM);
                assertEquals(0, syncs.sum() - before, "a steady-state submit on the caller's stream must not synchronize");
                beforeGet = syncs.sum();
                assertArrayEquals(expected, q.get());
                assertEquals(1, syncs.sum() - beforeGet, "get() waits once");
                q.close();
            }
            // Host memory through submit copies first: that allocates and waits, and the counter shows it.
            long before = syncs.sum();
            try (PendingChecksums h = cuda.submit(c.group(), r)) {
                assertTrue(syncs.sum() - before >= 1, "submit of host memory synchronizes (it copies and waits)");
                assertArrayEquals(expected, h.get());
            }
            buffers.forEach(DeviceBuffer::close);
        }
        assertEquals(0, fake.liveDeviceAllocations(), "device memory leaked");
        assertEquals(0, fake.livePinnedAllocations(), "pinned memory leaked");
    }

    @Test
    void uploadPlacesHostBytesOnTheDeviceAndCloseFreesThem() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = nonEmpty(arena);
            long[] expected = KvChecksums.reference().blockChecksums(c.group(), c.request());
            int before = fake.liveDeviceAllocations();
            List<DeviceBuffer> buffers = new ArrayList<>();
            KvCacheGroup dev = upload(backend, c.group(), buffers);
            assertEquals(before + buffers.size(), fake.liveDeviceAllocations());
            for (DeviceBuffer b : buffers) {
                assertTrue(b.memory() instanceof KvMemory.Device, b.toString());
            }
            try (PendingChecksums p = cuda.submit(dev, c.request(), CALLER_STREAM)) {
                assertArrayEquals(expected, p.get(), "submit on the caller's stream, uploaded memory");
            }
            assertArrayEquals(expected, cuda.blockChecksums(dev, c.request()), "blockChecksums on uploaded memory");

            // A heap segment is staged and copied byte for byte.
            long[] heap = new long[37];
            for (int i = 0; i < heap.length; i++) {
                heap[i] = 0x9E3779B97F4A7C15L * (i + 1);
            }
            try (DeviceBuffer b = backend.upload(MemorySegment.ofArray(heap))) {
                assertEquals(8L * heap.length, b.byteSize());
                @SuppressWarnings("restricted")
                MemorySegment onDevice = MemorySegment.ofAddress(b.memory().address()).reinterpret(b.byteSize());
                assertArrayEquals(heap, onDevice.toArray(java.lang.foreign.ValueLayout.JAVA_LONG));
            }

            DeviceBuffer first = buffers.getFirst();
            int live = fake.liveDeviceAllocations();
            first.close();
            first.close();  // twice: nothing more
            assertEquals(live - 1, fake.liveDeviceAllocations(), "close frees the buffer");
            assertThrows(IllegalStateException.class, first::memory);
            try (DeviceBuffer empty = backend.upload(MemorySegment.ofArray(new byte[0]))) {
                assertEquals(0, empty.byteSize());
            }
            // The others are left open: closing the backend frees them.
        }
        assertEquals(0, fake.liveDeviceAllocations(), "closing the backend frees the uploads still open");
        assertEquals(0, fake.livePinnedAllocations(), "pinned memory leaked");
    }

    private static RandomCase nonEmpty(Arena arena) {
        for (long s = SEED; ; s++) {
            RandomCase c = RandomCase.make(new Random(s), arena, true);
            if (c.request().numBlocks() > 0) {
                System.out.println("SyncCountingTest case (seed " + s + "): " + c.label());
                return c;
            }
        }
    }

    /** The group with each distinct host segment uploaded once, same offsets and strides. */
    static KvCacheGroup upload(CudaBackend cuda, KvCacheGroup g, List<DeviceBuffer> buffers) {
        Map<MemorySegment, KvMemory> moved = new LinkedHashMap<>();
        return Relocation.relocate(g, m -> moved.computeIfAbsent(((KvMemory.Host) m).segment(), s -> {
            DeviceBuffer b = cuda.upload(s);
            buffers.add(b);
            return b.memory();
        }));
    }
}
