package io.kvchecksum.cuda;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.InvalidLayoutException;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The auxiliary computations enqueued on an engine's stream, on the emulated driver with every call recorded (issue
 * 26: "every auxiliary computation is enqueued on the caller's stream, ordered after the engine's writes, returning a
 * pending result, with 0 host synchronizations per enqueue"): {@link KvChecksum#submitStateDigests},
 * {@link KvChecksum#submitSliceSums}, {@link KvChecksum#submitPageDigest} and {@link PageProbe#submit}. For each: no
 * synchronizing driver call in the enqueue (and, once warm, no allocation either), every upload and kernel on the
 * caller's stream, the result not ready until the device (simulated) finishes, the values equal to NumPy's goldens or
 * the reference backend's, and a stream capturing a CUDA graph refused before anything is enqueued.
 */
class AuxiliaryEnqueueTest {
    private static final long SEED = 0xA0C5_26L;
    private static final long STREAM = 0x26_57EAL;
    /** Driver calls that put work on a stream: none may happen when an enqueue is refused. */
    private static final Set<String> ENQUEUING = Set.of("cuMemcpyHtoDAsync", "cuLaunchKernel", "cuEventRecord",
            "cuMemcpyDtoHAsync", "cuMemsetD8Async");

    private FakeCudaDriver fake;
    private RecordingDriver rec;
    private CudaBackend backend;
    private KvChecksum cuda;
    private Arena arena;
    private final List<Long> uploads = new ArrayList<>();

    @BeforeEach
    void open() {
        fake = new FakeCudaDriver(HostLibrary.load());
        fake.deferCompletion = true;
        rec = new RecordingDriver(fake);
        backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20);
        cuda = KvChecksum.of(backend);
        arena = Arena.ofShared();
    }

    @AfterEach
    void close() {
        if (cuda == null) {
            return; // open() was aborted: no host library (-Dkvchecksum.skipCuda=true)
        }
        cuda.close();
        fake.freeUploads();
        uploads.forEach(fake::cuMemFree);
        arena.close();
        assertEquals(0, fake.liveDeviceAllocations(), "device memory leaked");
        assertEquals(0, fake.livePinnedAllocations(), "pinned memory leaked");
    }

    @Test
    void stateDigestsOnTheCallersStreamMatchNumPysGoldens() {
        assumeTrue(!GoldenStateRows.cases().isEmpty(), "no state-row goldens");
        byte[] bytes = GoldenStateRows.bytes();
        MemorySegment seg = arena.allocate(bytes.length, 64);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, seg, 0, bytes.length);
        KvMemory dev = fake.onDevice(KvMemory.host(seg));
        for (GoldenStateRows.Case c : GoldenStateRows.cases()) {
            List<StateRow> rows = new ArrayList<>();
            long[] standard = new long[c.rows().size()];
            long[] mixed = new long[c.rows().size()];
            for (int i = 0; i < standard.length; i++) {
                GoldenStateRows.Row r = c.rows().get(i);
                rows.add(new StateRow(r.name(), dev, r.offset(), r.length()));
                standard[i] = r.standard();
                mixed[i] = r.mixed();
            }
            for (ChecksumMode mode : ChecksumMode.values()) {
                long[] expected = mode == ChecksumMode.STANDARD ? standard : mixed;
                String who = "state rows · " + c.name() + " · " + mode;
                boolean launches = rows.stream().anyMatch(r -> r.length() > 0);
                for (int round = 0; round < 2; round++) {
                    long[] got = enqueued(who + " round " + round, round > 0, launches ? 1 : 0,
                            () -> cuda.submitStateDigests(rows, mode, STREAM), PendingChecksums::get, PendingChecksums::isDone);
                    assertArrayEquals(expected, got, who);
                }
            }
            assertRefused(() -> cuda.submitStateDigests(rows, ChecksumMode.STANDARD, STREAM));
        }
    }

    @Test
    void sliceSumsAndProbesOnTheCallersStreamEqualTheReference() {
        System.out.println("AuxiliaryEnqueueTest seed = 0x" + Long.toHexString(SEED));
        Random rnd = new Random(SEED);
        for (int trial = 0; trial < 6; trial++) {
            RandomCase c;
            do {
                c = RandomCase.make(rnd, arena, trial % 2 == 0);
            } while (c.request().numBlocks() == 0);
            String who = "seed 0x" + Long.toHexString(SEED) + " trial " + trial + " (" + c.label() + ")";
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            SlicePlan host = SlicePlan.of(c.group(), c.request());
            SlicePlan plan = SlicePlan.of(dev, c.request());
            SliceSums sums = KvChecksums.reference().sliceSums(host);
            int probeBytes = 8 * (1 + rnd.nextInt(8));
            PageProbe.Probes probes = PageProbe.compute(KvChecksums.reference(), host, probeBytes);
            for (int round = 0; round < 2; round++) {
                assertEquals(sums, enqueued("slice sums · " + who, round > 0, -1,
                        () -> cuda.submitSliceSums(plan, STREAM), Pending::get, Pending::isDone), "slice sums · " + who);
                assertEquals(probes, enqueued("probes · " + who, round > 0, 1,
                        () -> PageProbe.submit(cuda, plan, probeBytes, STREAM), PageProbe.PendingProbes::get,
                        PageProbe.PendingProbes::isDone), "probes · " + who);
            }
            assertRefused(() -> cuda.submitSliceSums(plan, STREAM));
            assertRefused(() -> PageProbe.submit(cuda, plan, probeBytes, STREAM));
        }
    }

    @Test
    void pageDigestOnTheCallersStreamMatchesZlib() {
        assumeTrue(DigestVector.present(), "the kvchecksum-golden jar carries no vectors-digest/index.json");
        for (DigestVector v : DigestVector.all()) {
            PageDigestPlan plan = v.plan(arena, fake::onDevice);
            boolean launches = plan.totalBytes() > 0;
            for (int round = 0; round < 2; round++) {
                long got = enqueued("digest · " + v.name(), round > 0, launches ? 1 : 0,
                        () -> cuda.submitPageDigest(plan, STREAM), Pending::get, Pending::isDone);
                assertEquals(v.expectedDigest(), got, "digest · " + v.name() + " (" + v.description() + ")");
            }
            if (launches) {
                assertRefused(() -> cuda.submitPageDigest(plan, STREAM));
            }
        }
        PageDigestPlan onHost = DigestVector.all().getFirst().plan(arena, m -> m);
        rec.take();
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> cuda.submitPageDigest(onHost, STREAM));
        assertTrue(e.getMessage().contains("device memory only"), e.getMessage());
        assertTrue(rec.take().stream().noneMatch(call -> ENQUEUING.contains(call.name())), "host memory refused late");
    }

    /** The synchronous forms keep their values and wait once: the state digests are now one launch, not two. */
    @Test
    void theSynchronousStateDigestsWaitOnce() {
        Random rnd = new Random(SEED + 1);
        MemorySegment s = arena.allocate(1000, 64);
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        KvMemory dev = fake.onDevice(KvMemory.host(s));
        List<StateRow> rows = new ArrayList<>();
        List<StateRow> hostRows = new ArrayList<>();
        for (int len = 0; len < 40; len++) {   // whole pieces and tails alike
            long at = rnd.nextInt(1000 - len + 1);
            rows.add(new StateRow("r" + len, dev, at, len));
            hostRows.add(new StateRow("r" + len, KvMemory.host(s), at, len));
        }
        for (ChecksumMode mode : ChecksumMode.values()) {
            long[] expected = KvChecksums.reference().stateDigests(hostRows, mode);
            cuda.stateDigests(rows, mode);   // warm-up: the own stream's slots
            rec.take();
            assertArrayEquals(expected, cuda.stateDigests(rows, mode), mode.wireName());
            List<RecordingDriver.Call> calls = rec.take();
            assertEquals(1, count(calls, "cuLaunchKernel"), "one launch for every row and tail: " + calls);
            assertEquals(1, calls.stream().filter(c -> SyncCounting.SYNCHRONIZING.contains(c.name())).count(),
                    "one wait: " + calls);
            assertArrayEquals(expected, cuda.stateDigests(hostRows, mode), mode.wireName() + ", rows in host memory");
        }
    }

    /**
     * Runs one enqueue and checks its driver calls: nothing synchronizing (nothing counted at all when {@code warm}),
     * every upload and kernel on {@link #STREAM} ({@code launches} kernel launches, or at least one when negative),
     * the result pending until the simulated device completes the events the enqueue recorded; then reads it.
     */
    private <P extends AutoCloseable, T> T enqueued(String who, boolean warm, int launches, Supplier<P> enqueue,
            java.util.function.Function<P, T> get, java.util.function.Predicate<P> isDone) {
        rec.take();
        P p = enqueue.get();
        List<RecordingDriver.Call> calls = rec.take();
        try {
            assertEquals(0, calls.stream().filter(c -> SyncCounting.SYNCHRONIZING.contains(c.name())).count(),
                    who + ": the enqueue synchronized: " + calls);
            if (warm) {
                assertEquals(0, calls.stream().filter(c -> SyncCounting.COUNTED.contains(c.name())).count(),
                        who + ": a steady-state enqueue allocated: " + calls);
            }
            long n = count(calls, "cuLaunchKernel");
            if (launches >= 0) {
                assertEquals(launches, n, who + ": kernel launches " + calls);
            } else {
                assertTrue(n >= 1, who + ": no kernel launched " + calls);
            }
            for (RecordingDriver.Call c : calls) {
                if (c.name().equals("cuLaunchKernel")) {
                    assertEquals(STREAM, c.longArg(8), who + ": a kernel ran off the caller's stream");
                } else if (c.name().equals("cuMemcpyHtoDAsync") || c.name().equals("cuMemsetD8Async")) {
                    assertEquals(STREAM, c.longArg(3), who + ": " + c.name() + " ran off the caller's stream");
                }
            }
            if (n > 0) {
                assertFalse(isDone.test(p), who + ": done before the device finished");
                assertTrue(rec.take().stream().allMatch(c -> c.name().equals("cuEventQuery")), who + ": isDone() waited");
                // The device finishes, behind the recorder.
                calls.stream().filter(c -> c.name().equals("cuEventRecord")).forEach(c -> fake.cuEventSynchronize(c.longArg(0)));
                assertTrue(isDone.test(p), who + ": not done after the device finished");
            }
            return get.apply(p);
        } finally {
            try {
                p.close();
            } catch (Exception e) {
                throw new AssertionError(who + ": close", e);
            }
        }
    }

    /** A stream capturing a CUDA graph: refused with the capture named, before anything is put on a stream. */
    private void assertRefused(Executable enqueue) {
        fake.capturing.add(STREAM);
        try {
            rec.take();
            IllegalStateException e = assertThrows(IllegalStateException.class, enqueue);
            assertTrue(e.getMessage().contains("capturing a CUDA graph"), e.getMessage());
            for (RecordingDriver.Call call : rec.take()) {
                assertFalse(ENQUEUING.contains(call.name()), "a refused enqueue called " + call.name());
            }
        } finally {
            fake.capturing.clear();
        }
    }

    private static long count(List<RecordingDriver.Call> calls, String name) {
        return calls.stream().filter(c -> c.name().equals(name)).count();
    }
}
