package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.golden.CopySuite;
import io.kvchecksum.golden.CopyVector;
import io.kvchecksum.spi.BackendLimits.CopyRoute;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_device_id;
import org.jocl.cl_mem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verifying copy on OpenCL: NumPy's copy vectors and the fault tests in host memory (read and written in place on
 * PoCL's CPU device), every vector between cl_mems (each side's buffers packed into one cl_mem of the backend's context,
 * as an engine's pool) on every route, the GPU tuning on the same device (host memory not shared: cl_mem to cl_mem and
 * host into cl_mem; host destinations refused), and the refusals, each before anything runs.
 */
class OpenClCopyTest {
    private static OpenClBackend gpuTuned;

    /** The backend opened with the GPU tuning on the test device (host memory copied, not used in place). */
    private static synchronized OpenClBackend gpuTuned() {
        if (gpuTuned == null) {
            gpuTuned = OpenClBackend.open(OpenClTests.backend().device().index(), Tuning.GPU, ClApi.jocl());
        }
        return gpuTuned;
    }

    @AfterAll
    static synchronized void close() {
        if (gpuTuned != null) {
            gpuTuned.close();
            gpuTuned = null;
        }
    }

    @TestFactory
    Stream<? extends DynamicNode> hostMemory() {
        return OpenClTests.dynamic("opencl copy, host memory", () -> {
            KvChecksum c = OpenClTests.checksum();
            return Stream.of(CopySuite.tests(c), CopySuite.faults(c), CopySuite.inPlaceFaults(c)).flatMap(x -> x);
        });
    }

    /** The suite with every buffer a sub-buffer of one cl_mem per side (an engine's pool): every vector and fault. */
    @TestFactory
    Stream<? extends DynamicNode> subBuffersOfOneClMem() {
        return OpenClTests.dynamic("opencl copy, sub-buffers", () -> {
            OpenClBackend cl = OpenClTests.backend();
            KvChecksum c = OpenClTests.checksum();
            return Stream.concat(CopySuite.tests(c, () -> new SubBuffers(cl)), CopySuite.faults(c, () -> new SubBuffers(cl)));
        });
    }

    /** The same on the GPU tuning (cl_mem to cl_mem, where host memory is not shared). */
    @TestFactory
    Stream<? extends DynamicNode> subBuffersGpuTuning() {
        return OpenClTests.dynamic("opencl copy, sub-buffers, GPU tuning", () -> {
            OpenClBackend cl = gpuTuned();
            KvChecksum c = KvChecksum.of(cl);
            return Stream.concat(CopySuite.tests(c, () -> new SubBuffers(cl)), CopySuite.faults(c, () -> new SubBuffers(cl)));
        });
    }

    /** Two sub-buffers of one buffer that share bytes are overlapping memory: refused like host memory. */
    @Test
    void overlappingSubBuffersRefused() {
        OpenClTests.requireOpenCl();
        OpenClBackend cl = OpenClTests.backend();
        try (SubBuffers p = new SubBuffers(cl); Arena arena = Arena.ofShared()) {
            MemorySegment bytes = arena.allocate(1 << 16, 64);
            KvMemory a = p.place(bytes, false);
            KvMemory b = p.alias(a);
            KvCacheGroup ga = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(0, 0, 1, new KvRegion(a, 0, 256, 64, 64, 32),
                    new KvRegion(a, 32, 256, 64, 64, 32))));
            KvCacheGroup gb = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(0, 0, 1, new KvRegion(b, 0, 256, 64, 64, 32),
                    new KvRegion(b, 32, 256, 64, 64, 32))));
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> OpenClTests.checksum()
                    .compileCopy(ga, RequestBlocks.of(new int[] {0, 1}, 8, 4), gb, RequestBlocks.of(new int[] {1, 0}, 8, 4),
                            ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("overlap") && e.getMessage().contains("backend 'opencl'"), e.getMessage());
        }
    }

    @TestFactory
    Stream<? extends DynamicNode> betweenClMems() {
        return OpenClTests.dynamic("opencl copy, cl_mem", () -> {
            OpenClBackend cl = OpenClTests.backend();
            KvChecksum c = OpenClTests.checksum();
            return CopyVector.apart().stream().flatMap(v -> Stream.of(
                    vector(c, cl, v, true, true), vector(c, cl, v, false, true), vector(c, cl, v, true, false)));
        });
    }

    @TestFactory
    Stream<? extends DynamicNode> gpuTuning() {
        return OpenClTests.dynamic("opencl copy, GPU tuning", () -> {
            OpenClBackend cl = gpuTuned();
            return intoClMems(KvChecksum.of(cl), cl);
        });
    }

    /**
     * Every vector into a cl_mem, from a cl_mem and from host memory (the routes every device declares): for the GPU
     * tuning here and for {@link DeviceCheck} on a GPU.
     */
    static Stream<DynamicNode> intoClMems(KvChecksum c, OpenClBackend cl) {
        return CopyVector.apart().stream().flatMap(v -> Stream.of(vector(c, cl, v, true, true),
                vector(c, cl, v, false, true)));
    }

    /**
     * copy_staged's paths beyond the vectors, in place in host memory: an NHD to HND change (4 KV heads, two layers)
     * with whole aligned pieces (256- and 136-byte cells) and byte cells (100), destination blocks smaller than a page
     * (several blocks per unit), straddling page edges (B 12), larger than a page (B 48), a start past position 0, and
     * the mixed mode. Values and bytes equal the same copy out of place on the reference backend.
     */
    @TestFactory
    Stream<? extends DynamicNode> stagedPiecesAndBlockSpans() {
        return OpenClTests.dynamic("staged", () -> CopySuite.stagedPiecesAndBlockSpans(OpenClTests.checksum(),
                CopySuite.HOST));
    }

    /** The routes each device declares: every one where host memory is shared, never into host memory on the GPU tuning. */
    @Test
    void routes() {
        OpenClTests.requireOpenCl();
        assertEquals(java.util.Set.of(CopyRoute.HOST_TO_HOST, CopyRoute.HOST_TO_DEVICE, CopyRoute.DEVICE_TO_HOST,
                CopyRoute.DEVICE_TO_DEVICE), OpenClTests.backend().limits().copies());
        assertEquals(java.util.Set.of(CopyRoute.DEVICE_TO_DEVICE, CopyRoute.HOST_TO_DEVICE), gpuTuned().limits().copies());
        assertEquals(gpuTuned().limits().copies(), gpuTuned().limits().copiesOnStream());
        assertTrue(OpenClTests.backend().limits().maxStagedUnitBytes() > 0, "opencl stages units in local memory");
    }

    /**
     * submitCopy enqueues without waiting (no synchronizing call; the destination's host memory mapped back in queue
     * order), get() waits exactly once; another queue than the backend's is refused before anything is enqueued.
     */
    @Test
    void submitCopyNeverWaits() {
        OpenClTests.requireOpenCl();
        KvChecksum c = OpenClTests.recordedChecksum();
        CopyVector v = CopyVector.all().getFirst();
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> host = v.buffers(arena);
            List<KvMemory> hm = host.stream().map(s -> (KvMemory) KvMemory.host(s)).toList();
            CopyPlan plan = c.compileCopy(v.source(hm), v.sourceRequest(), v.destination(hm), v.destinationRequest(),
                    v.spec());
            assertThrows(IllegalArgumentException.class, () -> c.submitCopy(plan, 0x1234));
            RecordingClApi rec = OpenClTests.recorder();
            rec.start();
            PendingChecksums p = c.submitCopy(plan, 0);
            List<String> enqueue = rec.stop();
            for (String sync : ClApi.SYNCHRONIZING) {
                assertFalse(enqueue.contains(sync), "submitCopy called " + sync + ": " + enqueue);
            }
            assertTrue(enqueue.indexOf("enqueueMapUnmap") > enqueue.indexOf("enqueueKernel")
                    && enqueue.indexOf("enqueueMapUnmap") < enqueue.indexOf("enqueueRead"), enqueue.toString());
            assertEquals("flush", enqueue.getLast(), enqueue.toString());
            rec.start();
            long[] values = p.get();
            p.close();
            List<String> get = rec.stop();
            assertEquals(1, get.stream().filter(ClApi.SYNCHRONIZING::contains).count(), "get() waits once: " + get);
            assertArrayEquals(v.expected(), values);
            for (int k = 0; k < host.size(); k++) {
                assertEquals(v.finalSha256(k), CopyVector.sha256(host.get(k)), "buffer " + k);
            }
        }
    }

    /** On the GPU tuning a host destination is refused at compile time, naming the backend and the route. */
    @Test
    void hostDestinationRefusedWhereHostMemoryIsNotShared() {
        OpenClTests.requireOpenCl();
        KvChecksum c = KvChecksum.of(gpuTuned());
        CopyVector v = CopyVector.all().getFirst();
        try (Arena arena = Arena.ofShared()) {
            List<KvMemory> hm = v.buffers(arena).stream().map(s -> (KvMemory) KvMemory.host(s)).toList();
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> c.compileCopy(v.source(hm),
                    v.sourceRequest(), v.destination(hm), v.destinationRequest(), v.spec()));
            assertTrue(e.getMessage().contains("backend 'opencl' cannot copy host memory to host memory"), e.getMessage());
        }
    }

    /**
     * Source and destination sharing bytes as an in-place page permutation (each page reads the other's bytes) is refused:
     * per-page staging cannot order it.
     */
    @Test
    void overlappingMemoryRefused() {
        OpenClTests.requireOpenCl();
        try (Arena arena = Arena.ofShared()) {
            KvMemory m = KvMemory.host(arena.allocate(4 * 4 * 64, 64));
            KvCacheGroup g = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(0, 0, 1, new KvRegion(m, 0, 256, 64, 64, 32),
                    new KvRegion(m, 32, 256, 64, 64, 32))));
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> OpenClTests.checksum()
                    .compileCopy(g, RequestBlocks.of(new int[] {0, 1}, 8, 4), g, RequestBlocks.of(new int[] {1, 0}, 8, 4),
                            ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("overlap") && e.getMessage().contains("backend 'opencl'"), e.getMessage());
        }
    }

    /** A destination on the Java heap has no stable address to write in place: refused before anything is enqueued. */
    @Test
    void heapDestinationRefused() {
        OpenClTests.requireOpenCl();
        KvChecksum c = OpenClTests.checksum();
        CopyVector v = CopyVector.all().getFirst();
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> host = v.buffers(arena);
            List<KvMemory> mem = new ArrayList<>();
            for (int k = 0; k < host.size(); k++) {
                MemorySegment s = host.get(k);
                mem.add(KvMemory.host(v.isDestination(k) ? MemorySegment.ofArray(new byte[(int) s.byteSize()]) : s));
            }
            CopyPlan plan = c.compileCopy(v.source(mem), v.sourceRequest(), v.destination(mem), v.destinationRequest(),
                    v.spec());
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> c.copyAndChecksum(plan));
            assertTrue(e.getMessage().contains("Java heap"), e.getMessage());
        }
    }

    /** A source on the Java heap is copied to the device first (as the checksums do): the copy is still exact. */
    @Test
    void heapSource() {
        OpenClTests.requireOpenCl();
        KvChecksum c = OpenClTests.checksum();
        for (CopyVector v : CopyVector.apart()) {
            try (Arena arena = Arena.ofShared()) {
                List<MemorySegment> host = new ArrayList<>(v.buffers(arena));
                for (int k = 0; k < host.size(); k++) {
                    if (!v.isDestination(k)) {
                        MemorySegment heap = MemorySegment.ofArray(new byte[(int) host.get(k).byteSize()]);
                        heap.copyFrom(host.get(k));
                        host.set(k, heap);
                    }
                }
                List<KvMemory> mem = host.stream().map(s -> (KvMemory) KvMemory.host(s)).toList();
                CopyPlan plan = c.compileCopy(v.source(mem), v.sourceRequest(), v.destination(mem),
                        v.destinationRequest(), v.spec());
                assertArrayEquals(v.expected(), c.copyAndChecksum(plan), v.name());
                for (int k = 0; k < host.size(); k++) {
                    assertEquals(v.finalSha256(k), CopyVector.sha256(host.get(k)), v.name() + ": buffer " + k);
                }
            }
        }
    }

    /**
     * One vector with the source ({@code srcOnDevice}) and the destination ({@code dstOnDevice}) each in host memory or
     * packed into one cl_mem: the values, the SHA-256 of every buffer after the copy (cl_mems read back), the plan run
     * again and through submitCopy on the backend's queue.
     */
    private static DynamicNode vector(KvChecksum c, OpenClBackend cl, CopyVector v, boolean srcOnDevice,
                                      boolean dstOnDevice) {
        String route = (srcOnDevice ? "cl_mem" : "host") + " to " + (dstOnDevice ? "cl_mem" : "host");
        String who = c.name() + " · copy · " + route + " · " + v.name();
        return DynamicTest.dynamicTest(who, () -> {
            try (Arena arena = Arena.ofShared()) {
                List<MemorySegment> host = v.buffers(arena);
                List<KvMemory> hm = host.stream().map(s -> (KvMemory) KvMemory.host(s)).toList();
                try (Pool src = srcOnDevice ? new Pool(cl, host, k -> !v.isDestination(k)) : null;
                     Pool dst = dstOnDevice ? new Pool(cl, host, v::isDestination) : null) {
                    KvCacheGroup sg = src == null ? v.source(hm) : src.moved(v.source(hm));
                    KvCacheGroup dg = dst == null ? v.destination(hm) : dst.moved(v.destination(hm));
                    CopyPlan plan = c.compileCopy(sg, v.sourceRequest(), dg, v.destinationRequest(), v.spec());
                    assertArrayEquals(v.expected(), c.copyAndChecksum(plan), who + ": values");
                    for (Pool p : new Pool[] {src, dst}) {
                        if (p != null) {
                            p.readBack();
                        }
                    }
                    for (int k = 0; k < host.size(); k++) {
                        assertEquals(v.finalSha256(k), CopyVector.sha256(host.get(k)), who + ": "
                                + (v.isDestination(k) ? "destination" : "source") + " buffer " + k + " after the copy");
                    }
                    try (PendingChecksums p = c.submitCopy(plan, cl.commandQueue())) {
                        assertArrayEquals(v.expected(), p.get(), who + ": submitCopy on the backend's queue");
                    }
                }
            }
        });
    }

    /**
     * A {@link CopySuite.Placement}: each buffer a sub-buffer ({@code clCreateSubBuffer}) of one cl_mem per side, as an
     * engine's pool, at origins aligned to the device's {@code CL_DEVICE_MEM_BASE_ADDR_ALIGN}, filled and read back with
     * blocking transfers on a queue of its own.
     */
    static final class SubBuffers implements CopySuite.Placement {
        private static final long POOL = 4 << 20;
        private final OpenClBackend cl;
        private final cl_command_queue queue;
        private final long align;
        private final cl_mem[] pools = new cl_mem[2];
        private final long[] used = new long[2];
        private final Map<KvMemory, cl_mem> subs = new LinkedHashMap<>();

        SubBuffers(OpenClBackend cl) {
            this.cl = cl;
            this.queue = Pool.queue(cl);
            cl_device_id[] devices = new cl_device_id[1];
            JoclApi.check(CL.clGetContextInfo(cl.context(), CL.CL_CONTEXT_DEVICES, Sizeof.cl_device_id,
                    Pointer.to(devices), null), "clGetContextInfo");
            this.align = Math.max(64, OpenClDevices.deviceInt(devices[0], CL.CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
        }

        @Override
        public KvMemory place(MemorySegment host, boolean destination) {
            int side = destination ? 1 : 0;
            int[] err = new int[1];
            if (pools[side] == null) {
                pools[side] = CL.clCreateBuffer(cl.context(), CL.CL_MEM_READ_WRITE, POOL, null, err);
                JoclApi.check(err[0], "clCreateBuffer");
            }
            long origin = used[side];
            used[side] = Math.ceilDiv(origin + host.byteSize(), align) * align;
            assertTrue(used[side] <= POOL, "the test's pool is too small");
            cl_mem sub = sub(pools[side], origin, host.byteSize());
            JoclApi.check(CL.clEnqueueWriteBuffer(queue, sub, CL.CL_TRUE, 0, host.byteSize(),
                    Pointer.to(host.asByteBuffer()), 0, null, null), "clEnqueueWriteBuffer");
            return register(sub);
        }

        /**
         * A second sub-buffer of the source pool, over the bytes of the first source buffer placed from one alignment
         * unit on (for the overlap test; {@code placed} must be that buffer and longer than the unit).
         */
        KvMemory alias(KvMemory placed) {
            return register(sub(pools[0], align, placed.byteSize() - align));
        }

        private cl_mem sub(cl_mem pool, long origin, long size) {
            int[] err = new int[1];
            cl_mem sub = CL.clCreateSubBuffer(pool, CL.CL_MEM_READ_WRITE, CL.CL_BUFFER_CREATE_TYPE_REGION,
                    new org.jocl.cl_buffer_region(origin, size), err);
            JoclApi.check(err[0], "clCreateSubBuffer");
            return sub;
        }

        private KvMemory register(cl_mem sub) {
            KvMemory m = cl.buffer(sub);
            subs.put(m, sub);
            return m;
        }

        @Override
        public void readBack(KvMemory placed, MemorySegment into) {
            JoclApi.check(CL.clEnqueueReadBuffer(queue, subs.get(placed), CL.CL_TRUE, 0, into.byteSize(),
                    Pointer.to(into.asByteBuffer()), 0, null, null), "clEnqueueReadBuffer");
        }

        @Override
        public void close() {
            subs.values().forEach(m -> {
                cl.forget(m);
                CL.clReleaseMemObject(m);
            });
            for (cl_mem p : pools) {
                if (p != null) {
                    CL.clReleaseMemObject(p);
                }
            }
            CL.clReleaseCommandQueue(queue);
        }
    }

    /**
     * Some of a vector's buffers packed into one new cl_mem of the backend's context (64-byte aligned, so alignment
     * classes stay), registered; read back into the host buffers; released on close.
     */
    static final class Pool implements AutoCloseable {
        private final OpenClBackend cl;
        private final Map<MemorySegment, Long> at = new LinkedHashMap<>();
        private final cl_mem mem;
        private final KvMemory device;
        private final long size;

        Pool(OpenClBackend cl, List<MemorySegment> host, IntPredicate which) {
            this.cl = cl;
            long n = 0;
            for (int k = 0; k < host.size(); k++) {
                if (which.test(k)) {
                    at.put(host.get(k), n);
                    n += Math.ceilDiv(host.get(k).byteSize(), 64) * 64;
                }
            }
            size = n;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment packed = arena.allocate(size, 64);
                at.forEach((s, off) -> MemorySegment.copy(s, 0, packed, off, s.byteSize()));
                int[] err = new int[1];
                mem = CL.clCreateBuffer(cl.context(), CL.CL_MEM_READ_WRITE | CL.CL_MEM_COPY_HOST_PTR, size,
                        Pointer.to(packed.asByteBuffer()), err);
                JoclApi.check(err[0], "clCreateBuffer");
            }
            device = cl.buffer(mem);
        }

        KvCacheGroup moved(KvCacheGroup g) {
            List<CacheLayer> layers = new ArrayList<>();
            for (CacheLayer l : g.layers()) {
                layers.add(new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), moved(l.k()),
                        l.v() == null ? null : moved(l.v())));
            }
            return new KvCacheGroup(layers, g.pageSize(), g.numPages());
        }

        private KvRegion moved(KvRegion r) {
            long base = at.get(((KvMemory.Host) r.memory()).segment());
            return new KvRegion(device, base + r.offset(), r.pageStride(), r.tokenStride(), r.headStride(), r.cellBytes());
        }

        /** {@return the cl_mem} */
        cl_mem mem() {
            return mem;
        }

        /** {@return its size in bytes} */
        long size() {
            return size;
        }

        /** Reads the cl_mem (blocking, on a queue of its own) back into the host buffers it was packed from. */
        void readBack() {
            cl_command_queue q = queue(cl);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment packed = arena.allocate(size, 64);
                JoclApi.check(CL.clEnqueueReadBuffer(q, mem, CL.CL_TRUE, 0, size, Pointer.to(packed.asByteBuffer()), 0,
                        null, null), "clEnqueueReadBuffer");
                at.forEach((s, off) -> MemorySegment.copy(packed, off, s, 0, s.byteSize()));
            } finally {
                CL.clReleaseCommandQueue(q);
            }
        }

        /** A new in-order queue on the backend's context and device (the caller releases it). */
        static cl_command_queue queue(OpenClBackend cl) {
            cl_device_id[] devices = new cl_device_id[1];
            JoclApi.check(CL.clGetContextInfo(cl.context(), CL.CL_CONTEXT_DEVICES, Sizeof.cl_device_id,
                    Pointer.to(devices), null), "clGetContextInfo");
            int[] err = new int[1];
            cl_command_queue q = CL.clCreateCommandQueue(cl.context(), devices[0], 0, err);
            JoclApi.check(err[0], "clCreateCommandQueue");
            return q;
        }

        @Override
        public void close() {
            cl.forget(mem);
            CL.clReleaseMemObject(mem);
        }
    }
}
