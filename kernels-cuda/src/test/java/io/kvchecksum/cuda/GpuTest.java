package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.golden.GoldenSuite;
import io.kvchecksum.golden.GoldenVectors;
import io.kvchecksum.spi.BackendProvider.Availability;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The real CUDA backend on a real GPU, behind the front ({@link KvChecksum#of}): the golden suite (host memory and
 * device memory) and a recorded submit on a caller's stream on the real driver. Skipped with the reason where there is no usable GPU; {@code -Dkvchecksum.requireGpu=true}
 * turns the skip into a failure.
 */
class GpuTest {
    private static CudaBackend backend;
    private static final List<Long> uploads = new ArrayList<>();

    static CudaBackend gpu() {
        Availability a = CudaBackend.availability();
        if (!a.available()) {
            if (Boolean.getBoolean("kvchecksum.requireGpu")) {
                fail("-Dkvchecksum.requireGpu=true but CUDA is unavailable: " + a.reason());
            }
            assumeTrue(false, "no usable GPU: " + a.reason());
        }
        synchronized (GpuTest.class) {
            if (backend == null) {
                backend = CudaBackend.open();
            }
            return backend;
        }
    }

    @AfterAll
    static void tearDown() {
        if (backend != null) {
            backend.primaryResources();
            uploads.forEach(backend.driver()::cuMemFree);
            backend.close();
        }
    }

    static long upload(CudaBackend b, MemorySegment s) {
        CudaDriver d = b.driver();
        b.primaryResources();
        long[] p = new long[1];
        Cuda.check(d, d.cuMemAlloc(p, Math.max(16, s.byteSize())), "cuMemAlloc");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = s.isNative() ? s : a.allocate(s.byteSize(), 16).copyFrom(s);
            Cuda.check(d, d.cuMemcpyHtoDAsync(p[0], src.address(), s.byteSize(), 0), "cuMemcpyHtoDAsync");
            Cuda.check(d, d.cuStreamSynchronize(0), "cuStreamSynchronize");
        }
        return p[0];
    }

    static KvCacheGroup onDevice(CudaBackend b, KvCacheGroup g, List<Long> keep) {
        Map<MemorySegment, KvMemory> moved = new LinkedHashMap<>();
        return Relocation.relocate(g, m -> moved.computeIfAbsent(((KvMemory.Host) m).segment(), s -> {
            long p = upload(b, s);
            keep.add(p);
            return KvMemory.device(p, s.byteSize());
        }));
    }

    @TestFactory
    Stream<DynamicNode> goldenHostMemory() {
        CudaBackend b = gpu();
        assumeTrue(GoldenVectors.class.getResource("/vectors/index.json") != null, "no golden vectors on the class path");
        return GoldenSuite.tests(KvChecksum.of(b));
    }

    @TestFactory
    Stream<DynamicNode> goldenDeviceMemory() {
        CudaBackend b = gpu();
        assumeTrue(GoldenVectors.class.getResource("/vectors/index.json") != null, "no golden vectors on the class path");
        return GoldenSuite.tests(KvChecksum.of(b), c -> onDevice(b, c.group(), uploads));
    }

    /**
     * NumPy's verifying-copy vectors in device memory on the GPU (the in-place ones through {@code kvc_copy_staged} in
     * dynamic shared memory), the copy's faults and the in-place faults.
     */
    @TestFactory
    Stream<DynamicNode> copyDeviceMemory() {
        CudaBackend b = gpu();
        KvChecksum c = KvChecksum.of(b);
        java.util.function.Supplier<io.kvchecksum.golden.CopySuite.Placement> device = () -> new io.kvchecksum.golden.CopySuite.Placement() {
            private final List<Long> mine = new ArrayList<>();

            @Override
            public KvMemory place(MemorySegment host, boolean destination) {
                long p = upload(b, host);   // makes the primary context current: submitCopy(plan, 0) runs on it
                mine.add(p);
                return KvMemory.device(p, host.byteSize());
            }

            @Override
            public void readBack(KvMemory placed, MemorySegment into) {
                CudaDriver d = b.driver();
                b.primaryResources();
                // the copy's values were waited for: its kernels, earlier on the same stream, have finished
                Cuda.check(d, d.cuMemcpyDtoHAsync(into.address(), ((KvMemory.Device) placed).address(), into.byteSize(), 0),
                        "cuMemcpyDtoHAsync");
                Cuda.check(d, d.cuStreamSynchronize(0), "cuStreamSynchronize");
            }

            @Override
            public void close() {
                b.primaryResources();
                mine.forEach(b.driver()::cuMemFree);
            }
        };
        return Stream.of(io.kvchecksum.golden.CopySuite.tests(c, device), io.kvchecksum.golden.CopySuite.faults(c, device),
                io.kvchecksum.golden.CopySuite.inPlaceFaults(c, device)).flatMap(x -> x);
    }

    @TestFactory
    Stream<DynamicNode> pageDigestHostMemory() {
        CudaBackend b = gpu();
        assumeTrue(io.kvchecksum.golden.DigestVector.present(), "no page-digest vectors on the class path");
        return io.kvchecksum.golden.DigestSuite.tests(KvChecksum.of(b));
    }

    @TestFactory
    Stream<DynamicNode> pageDigestDeviceMemory() {
        CudaBackend b = gpu();
        assumeTrue(io.kvchecksum.golden.DigestVector.present(), "no page-digest vectors on the class path");
        return io.kvchecksum.golden.DigestSuite.tests(KvChecksum.of(b), m -> {
            MemorySegment s = ((KvMemory.Host) m).segment();
            long p = upload(b, s);
            uploads.add(p);
            return KvMemory.device(p, s.byteSize());
        });
    }

    @Test
    void randomLayoutsMatchReferenceOnTheGpu() {
        KvChecksum b = KvChecksum.of(gpu());
        long seed = 4242L;
        System.out.println("GpuTest seed = " + seed);
        Random rnd = new Random(seed);
        for (int i = 0; i < 200; i++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCase c = RandomCase.make(rnd, arena, i % 2 == 0);
                long[] expected = KvChecksums.reference().blockChecksums(c.group(), c.request());
                assertArrayEquals(expected, b.blockChecksums(c.group(), c.request()), "seed " + seed + " case " + i + ": " + c.label());
            }
        }
    }

    @Test
    void realSubmitOnACallerStreamIsFreeOfSynchronizingCalls() {
        CudaBackend plain = gpu();
        RecordingDriver rec = new RecordingDriver(plain.driver());
        try (Arena arena = Arena.ofConfined(); CudaBackend b = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            RandomCase c = RandomCase.make(new Random(9), arena, true);
            List<Long> mine = new ArrayList<>();
            KvCacheGroup dev = onDevice(b, c.group(), mine);
            long[] expected = KvChecksums.reference().blockChecksums(c.group(), c.request());
            long[] s = new long[1];
            Cuda.check(b.driver(), b.driver().cuStreamCreate(s, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
            KvChecksum k = KvChecksum.of(b);
            try (PendingChecksums warm = k.submit(dev, c.request(), s[0])) {
                assertArrayEquals(expected, warm.get());
            }
            rec.take();
            PendingChecksums p = k.submit(dev, c.request(), s[0]);
            for (RecordingDriver.Call call : rec.take()) {
                assertTrue(RecordedCallsTest.STEADY.contains(call.name()), "real submit on a caller stream called " + call.name());
                assertFalse(RecordedCallsTest.SYNCHRONIZING.contains(call.name()), call.name());
            }
            assertArrayEquals(expected, p.get());
            b.driver().cuStreamDestroy(s[0]);
            mine.forEach(b.driver()::cuMemFree);
        }
    }

    /** The stream-ordered auxiliary operations on the real driver: values exact, no synchronizing call once warm. */
    @Test
    void realAuxiliaryEnqueuesOnACallerStreamAreFreeOfSynchronizingCalls() {
        CudaBackend plain = gpu();
        RecordingDriver rec = new RecordingDriver(plain.driver());
        try (Arena arena = Arena.ofShared(); CudaBackend b = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum k = KvChecksum.of(b);
            RandomCase c = RandomCase.make(new Random(26), arena, true);
            List<Long> mine = new ArrayList<>();
            KvCacheGroup dev = onDevice(b, c.group(), mine);
            io.kvchecksum.SlicePlan host = io.kvchecksum.SlicePlan.of(c.group(), c.request());
            io.kvchecksum.SlicePlan plan = io.kvchecksum.SlicePlan.of(dev, c.request());
            byte[] bytes = io.kvchecksum.golden.GoldenStateRows.bytes();
            MemorySegment seg = arena.allocate(bytes.length, 64).copyFrom(MemorySegment.ofArray(bytes));
            long state = upload(b, seg);
            mine.add(state);
            List<io.kvchecksum.StateRow> rows = new ArrayList<>();
            List<Long> mixed = new ArrayList<>();
            for (io.kvchecksum.golden.GoldenStateRows.Case gc : io.kvchecksum.golden.GoldenStateRows.cases()) {
                for (io.kvchecksum.golden.GoldenStateRows.Row r : gc.rows()) {
                    rows.add(new io.kvchecksum.StateRow(r.name(), KvMemory.device(state, bytes.length), r.offset(), r.length()));
                    mixed.add(r.mixed());
                }
            }
            io.kvchecksum.golden.DigestVector v = io.kvchecksum.golden.DigestVector.all().getFirst();
            io.kvchecksum.PageDigestPlan digest = v.plan(arena, m -> {
                long p = upload(b, ((KvMemory.Host) m).segment());
                mine.add(p);
                return KvMemory.device(p, m.byteSize());
            });
            long[] s = new long[1];
            Cuda.check(b.driver(), b.driver().cuStreamCreate(s, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
            for (int round = 0; round < 2; round++) {
                rec.take();
                PendingChecksums d = k.submitStateDigests(rows, io.kvchecksum.ChecksumMode.MIXED, s[0]);
                io.kvchecksum.Pending<io.kvchecksum.SliceSums> sums = k.submitSliceSums(plan, s[0]);
                io.kvchecksum.Pending<Long> pd = k.submitPageDigest(digest, s[0]);
                io.kvchecksum.PageProbe.PendingProbes probes = io.kvchecksum.PageProbe.submit(k, plan, 64, s[0]);
                List<RecordingDriver.Call> calls = rec.take();
                for (RecordingDriver.Call call : calls) {
                    assertFalse(RecordedCallsTest.SYNCHRONIZING.contains(call.name()), "an auxiliary enqueue called " + call.name());
                    if (round > 0) {
                        assertTrue(RecordedCallsTest.STEADY.contains(call.name()), "a steady-state auxiliary enqueue called " + call.name());
                    }
                }
                assertArrayEquals(mixed.stream().mapToLong(Long::longValue).toArray(), d.get(), "state digests");
                assertEquals(KvChecksums.reference().sliceSums(host), sums.get(), "slice sums");
                assertEquals(v.expectedDigest(), pd.get(), "page digest");
                assertEquals(io.kvchecksum.PageProbe.compute(KvChecksums.reference(), host, 64), probes.get(), "probes");
                d.close();
                sums.close();
                pd.close();
                probes.close();
            }
            b.driver().cuStreamDestroy(s[0]);
            mine.forEach(b.driver()::cuMemFree);
        }
    }
}
