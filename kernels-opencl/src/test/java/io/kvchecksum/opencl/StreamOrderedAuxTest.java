package io.kvchecksum.opencl;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PageProbe;
import io.kvchecksum.Pending;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;
import io.kvchecksum.StateRow;
import io.kvchecksum.golden.DigestVector;
import io.kvchecksum.golden.GoldenStateRows;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The stream-ordered auxiliary operations ({@link KvChecksum#submitStateDigests}, {@link KvChecksum#submitSliceSums},
 * {@link KvChecksum#submitPageDigest}, {@link PageProbe#submit}) on the OpenCL backend's own queue (the only queue it
 * runs on: 0 or its {@code commandQueue()}): NumPy's and zlib's goldens, the reference backend's values on random
 * layouts (fixed seeds) in host memory and in a registered {@code cl_mem}, no waiting call in the enqueue (recorded),
 * and another queue handle refused before anything is enqueued.
 */
class StreamOrderedAuxTest {
    private static final long SEED = 0x26A0_C1L;

    @AfterAll
    static void release() {
        DeviceBufferTest.release();
    }

    @Test
    void stateDigestsMatchNumPysGoldensInHostAndDeviceMemory() {
        KvChecksum cl = OpenClTests.checksum();
        OpenClBackend b = OpenClTests.backend();
        byte[] bytes = GoldenStateRows.bytes();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment seg = arena.allocate(bytes.length, 64);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, seg, 0, bytes.length);
            KvMemory host = KvMemory.host(seg);
            KvMemory dev = DeviceBufferTest.onDevice(b, KvCacheGroup.of(1, 1, List.of(io.kvchecksum.CacheLayer.kOnly(0, 0, 1,
                    new io.kvchecksum.KvRegion(host, 0, 0, 0, 0, bytes.length / 8 * 8))))).layers().get(0).k().memory();
            for (GoldenStateRows.Case c : GoldenStateRows.cases()) {
                for (KvMemory m : List.of(host, dev)) {
                    List<StateRow> rows = new ArrayList<>();
                    for (GoldenStateRows.Row r : c.rows()) {
                        rows.add(new StateRow(r.name(), m, r.offset(), r.length()));
                    }
                    for (ChecksumMode mode : ChecksumMode.values()) {
                        long[] expected = c.rows().stream().mapToLong(r -> mode == ChecksumMode.STANDARD ? r.standard() : r.mixed())
                                .toArray();
                        String who = c.name() + " · " + mode + " · " + m;
                        for (long queue : new long[] {0, b.commandQueue()}) {
                            try (PendingChecksums p = cl.submitStateDigests(rows, mode, queue)) {
                                assertArrayEquals(expected, p.get(), who);
                            }
                        }
                        assertArrayEquals(expected, cl.stateDigests(rows, mode), who + " (synchronous)");
                    }
                }
            }
        }
    }

    @Test
    void pageDigestMatchesZlib() {
        KvChecksum cl = OpenClTests.checksum();
        OpenClBackend b = OpenClTests.backend();
        for (DigestVector v : DigestVector.all()) {
            try (Arena arena = Arena.ofShared(); Pending<Long> p = cl.submitPageDigest(v.plan(arena, m -> m), b.commandQueue())) {
                assertEquals(v.expectedDigest(), p.get(), v.name() + " (" + v.description() + ")");
            }
        }
    }

    @Test
    void sliceSumsAndProbesEqualTheReference() {
        KvChecksum cl = OpenClTests.checksum();
        OpenClBackend b = OpenClTests.backend();
        System.out.println("StreamOrderedAuxTest seeds 0x" + Long.toHexString(SEED) + " + 0..19");
        for (int i = 0; i < 20; i++) {
            long seed = SEED + i;
            try (Arena arena = Arena.ofShared()) {
                RandomLayouts.Case c = RandomLayouts.random(seed, arena);
                SlicePlan host = SlicePlan.of(c.group(), c.request());
                SlicePlan dev = SlicePlan.of(DeviceBufferTest.onDevice(b, c.group()), c.request());
                SliceSums sums = KvChecksums.reference().sliceSums(host);
                int probeBytes = 8 * (1 + (int) (seed % 6));
                PageProbe.Probes probes = PageProbe.compute(KvChecksums.reference(), host, probeBytes);
                String who = "seed 0x" + Long.toHexString(seed) + " (" + c.label() + ")";
                for (SlicePlan plan : List.of(host, dev)) {
                    try (Pending<SliceSums> p = cl.submitSliceSums(plan, b.commandQueue())) {
                        assertEquals(sums, p.get(), "slice sums · " + who);
                    }
                    try (PageProbe.PendingProbes p = PageProbe.submit(cl, plan, probeBytes, b.commandQueue())) {
                        assertEquals(probes, p.get(), "probes · " + who);
                    }
                }
            }
        }
    }

    @Test
    void theEnqueuesNeverWaitAndAnotherQueueIsRefused() {
        KvChecksum cl = OpenClTests.recordedChecksum();
        OpenClBackend b = OpenClTests.recordedBackend();
        RecordingClApi rec = OpenClTests.recorder();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment s = arena.allocate(4096, 64);
            for (int i = 0; i < 512; i++) {
                s.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, i, 0x9E3779B97F4A7C15L * (i + 7));
            }
            List<StateRow> rows = List.of(new StateRow("conv", KvMemory.host(s), 8, 1000), new StateRow("ssm", KvMemory.host(s), 1200, 1203));
            PageDigestPlan digest = DigestVector.all().getFirst().plan(arena, m -> m);
            long[] expected = KvChecksums.reference().stateDigests(rows, ChecksumMode.MIXED);

            rec.start();
            PendingChecksums p = cl.submitStateDigests(rows, ChecksumMode.MIXED, b.commandQueue());
            List<String> enqueue = rec.stop();
            assertTrue(enqueue.stream().noneMatch(ClApi.SYNCHRONIZING::contains), "submitStateDigests waited: " + enqueue);
            assertEquals(1, enqueue.stream().filter("enqueueKernel"::equals).count(), "one launch: " + enqueue);
            assertArrayEquals(expected, p.get());
            p.close();

            rec.start();
            Pending<Long> d = cl.submitPageDigest(digest, 0);
            enqueue = rec.stop();
            assertTrue(enqueue.stream().noneMatch(ClApi.SYNCHRONIZING::contains), "submitPageDigest waited: " + enqueue);
            assertTrue(enqueue.contains("enqueueKernel"), enqueue.toString());
            assertEquals(DigestVector.all().getFirst().expectedDigest(), d.get());
            d.close();

            long other = b.commandQueue() + 8;
            for (Runnable r : List.<Runnable>of(() -> cl.submitStateDigests(rows, ChecksumMode.STANDARD, other),
                    () -> cl.submitPageDigest(digest, other))) {
                rec.start();
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
                assertTrue(e.getMessage().contains("runs on its own command queue"), e.getMessage());
                assertTrue(rec.stop().stream().noneMatch(c -> c.startsWith("enqueue")), "a refused queue enqueued");
            }
        }
    }
}
