package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.golden.GoldenSuite;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.cl_context;
import org.jocl.cl_context_properties;
import org.jocl.cl_device_id;
import org.jocl.cl_mem;
import org.jocl.cl_platform_id;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Device-resident KV: regions over a {@code cl_mem} the test creates itself in the backend's context (as an OpenCL
 * engine would), read in place. The golden suite runs with every vector's bytes moved into one such buffer, and the
 * refusals (unregistered handle, size beyond {@code CL_MEM_SIZE}, two buffers, another context) happen before any
 * kernel runs.
 */
class DeviceBufferTest {
    private static final long SEED = 0x5EED_C1L;
    private static final List<cl_mem> CREATED = new ArrayList<>();

    private static synchronized cl_mem create(cl_context context, MemorySegment bytes) {
        int[] err = new int[1];
        cl_mem m = CL.clCreateBuffer(context, CL.CL_MEM_READ_WRITE | CL.CL_MEM_COPY_HOST_PTR, bytes.byteSize(),
                Pointer.to(bytes.asByteBuffer()), err);
        JoclApi.check(err[0], "clCreateBuffer");
        CREATED.add(m);
        return m;
    }

    /**
     * The group's segments packed (64-byte aligned, so alignment classes stay) into one new cl_mem registered with
     * {@code cl} (released by {@link #release()}).
     */
    static KvCacheGroup onDevice(OpenClBackend cl, KvCacheGroup g) {
        Map<MemorySegment, Long> at = new LinkedHashMap<>();
        long size = 0;
        for (CacheLayer l : g.layers()) {
            for (KvRegion r : l.v() == null ? List.of(l.k()) : List.of(l.k(), l.v())) {
                MemorySegment s = ((KvMemory.Host) r.memory()).segment();
                if (!at.containsKey(s)) {
                    at.put(s, size);
                    size += Math.ceilDiv(Math.max(1, s.byteSize()), 64) * 64;
                }
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment packed = arena.allocate(size, 64);
            at.forEach((s, off) -> MemorySegment.copy(s, 0, packed, off, s.byteSize()));
            KvMemory dev = cl.buffer(create(cl.context(), packed));
            List<CacheLayer> layers = new ArrayList<>();
            for (CacheLayer l : g.layers()) {
                layers.add(new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), moved(l.k(), dev, at),
                        l.v() == null ? null : moved(l.v(), dev, at)));
            }
            return new KvCacheGroup(layers, g.pageSize(), g.numPages());
        }
    }

    private static KvRegion moved(KvRegion r, KvMemory dev, Map<MemorySegment, Long> at) {
        long base = at.get(((KvMemory.Host) r.memory()).segment());
        return new KvRegion(dev, base + r.offset(), r.pageStride(), r.tokenStride(), r.headStride(), r.cellBytes());
    }

    @TestFactory
    Stream<? extends DynamicNode> goldenThroughAClMem() {
        return OpenClTests.dynamic("opencl golden suite, cl_mem", () -> {
            OpenClBackend cl = OpenClTests.backend();
            return GoldenSuite.tests(OpenClTests.checksum(), c -> onDevice(cl, c.group()));
        });
    }

    private record Case(KvCacheGroup group, RequestBlocks request, MemorySegment bytes) {
    }

    /** A small random layout (fixed seed) in host memory, 64-byte aligned. */
    private static Case hostCase(Arena arena, Random rnd) {
        int pageSize = 4;
        int numPages = 5;
        long bytes = numPages * 4L * 2 * 64;
        MemorySegment seg = arena.allocate(bytes, 64);
        for (long i = 0; i < bytes / 8; i++) {
            seg.setAtIndex(ValueLayout.JAVA_LONG, i, rnd.nextLong());
        }
        KvMemory mem = KvMemory.host(seg);
        KvCacheGroup g = new KvCacheGroup(List.of(new CacheLayer(0, 0, 2, new KvRegion(mem, 0, 512, 128, 32, 32),
                new KvRegion(mem, 64, 512, 128, 32, 24))), pageSize, numPages);
        return new Case(g, RequestBlocks.of(new int[] {3, 0, 4}, 10, 0, 4), seg);
    }

    private static KvCacheGroup relocated(KvCacheGroup g, KvMemory dev) {
        List<CacheLayer> layers = new ArrayList<>();
        for (CacheLayer l : g.layers()) {
            layers.add(new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), re(l.k(), dev), re(l.v(), dev)));
        }
        return new KvCacheGroup(layers, g.pageSize(), g.numPages());
    }

    private static KvRegion re(KvRegion r, KvMemory dev) {
        return new KvRegion(dev, r.offset(), r.pageStride(), r.tokenStride(), r.headStride(), r.cellBytes());
    }

    @Test
    void anEnginesOwnContextAndBufferMatchTheReference() {
        OpenClTests.requireOpenCl();
        OpenClDevices.Found f = OpenClDevices.select(OpenClTests.backend().device().index());
        cl_context_properties props = new cl_context_properties();
        props.addProperty(CL.CL_CONTEXT_PLATFORM, f.platform());
        int[] err = new int[1];
        cl_context engine = CL.clCreateContext(props, 1, new cl_device_id[] {f.device()}, null, null, err);
        JoclApi.check(err[0], "clCreateContext");
        System.out.println("DeviceBufferTest seed = " + SEED);
        try (Arena arena = Arena.ofShared(); KvChecksum k = KvChecksum.of(OpenClBackend.open(engine, f.device()))) {
            OpenClBackend cl = (OpenClBackend) k.backend();
            Case c = hostCase(arena, new Random(SEED));
            KvCacheGroup dg = relocated(c.group(), cl.buffer(create(engine, c.bytes())));
            long[] expected = KvChecksums.reference().blockChecksums(c.group(), c.request());
            assertArrayEquals(expected, k.blockChecksums(dg, c.request()), "seed " + SEED);
            try (var p = k.submit(dg, c.request())) {
                assertArrayEquals(expected, p.get(), "seed " + SEED + " (submit)");
            }
            try (var p = k.submit(dg, c.request(), cl.commandQueue())) {
                assertArrayEquals(expected, p.get(), "seed " + SEED + " (submit on the queue)");
            }
            assertEquals(KvChecksums.reference().sliceSums(c.group(), c.request()), k.sliceSums(dg, c.request()));
        } finally {
            CL.clReleaseContext(engine);
        }
    }

    @Test
    void badDeviceBuffersAreRefusedBeforeAnyKernelRuns() {
        OpenClBackend cl = OpenClTests.recordedBackend();
        KvChecksum k = OpenClTests.recordedChecksum();
        RecordingClApi rec = OpenClTests.recorder();
        try (Arena arena = Arena.ofShared()) {
            Case c = hostCase(arena, new Random(SEED));
            KvMemory dev = cl.buffer(create(cl.context(), c.bytes()));
            long handle = ((KvMemory.Device) dev).address();

            rec.start();
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> k.blockChecksums(
                    relocated(c.group(), KvMemory.device(handle + 64, dev.byteSize())), c.request()));
            assertTrue(e.getMessage().contains("not a cl_mem registered with buffer(cl_mem)"), e.getMessage());

            e = assertThrows(InvalidLayoutException.class, () -> k.blockChecksums(
                    relocated(c.group(), KvMemory.device(handle, dev.byteSize() + 1)), c.request()));
            assertTrue(e.getMessage().contains("CL_MEM_SIZE is " + dev.byteSize()), e.getMessage());

            KvMemory other = cl.buffer(create(cl.context(), c.bytes()));
            CacheLayer l = relocated(c.group(), dev).layers().getFirst();
            KvCacheGroup two = new KvCacheGroup(List.of(new CacheLayer(0, 0, 2, l.k(), re(l.v(), other))),
                    c.group().pageSize(), c.group().numPages());
            e = assertThrows(InvalidLayoutException.class, () -> k.blockChecksums(two, c.request()));
            assertTrue(e.getMessage().contains("another cl_mem than the first region's"), e.getMessage());
            assertEquals(List.of(), rec.stop(), "no OpenCL call was recorded before the refusals");

            // A region past the buffer's end: the plan's own bounds check, against CL_MEM_SIZE.
            KvMemory small = cl.buffer(create(cl.context(), c.bytes().asSlice(0, 512)));
            assertEquals(512, small.byteSize());
            assertThrows(InvalidLayoutException.class, () -> k.blockChecksums(relocated(c.group(), small), c.request()));

            // A buffer of another context.
            try (OpenClBackend stranger = OpenClBackend.open(cl.device().index())) {
                cl_mem foreign = create(stranger.context(), c.bytes());
                e = assertThrows(InvalidLayoutException.class, () -> cl.buffer(foreign));
                assertTrue(e.getMessage().contains("another OpenCL context"), e.getMessage());
                synchronized (DeviceBufferTest.class) {
                    CREATED.remove(foreign);
                }
                CL.clReleaseMemObject(foreign);
            }
        }
    }

    @AfterAll
    static synchronized void release() {
        for (cl_mem m : CREATED) {
            CL.clReleaseMemObject(m);
        }
        CREATED.clear();
    }
}
