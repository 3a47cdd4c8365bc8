package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageProbe;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.worker.BlockSelection;
import io.kvchecksum.engine.worker.ReplicaKey;
import io.kvchecksum.engine.worker.Side;
import io.kvchecksum.engine.worker.StateShard;
import io.kvchecksum.engine.worker.WorkerChecksummer;
import io.kvchecksum.engine.worker.WorkerRecord;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The engine's worker path ({@link WorkerChecksummer}) on the emulated driver, every call recorded: the worker's step
 * (submit on the engine's stream) and the scheduler's polls make no synchronizing call and run the kernels on the
 * engine's stream; the device finishing is simulated by completing the recorded events behind the recorder's back.
 * The worker also computes its auxiliary parts (state digests of rows in device memory, the page probe of its group),
 * which go on the engine's stream the same way.
 */
class WorkerPathSyncTest {
    private static final long ENGINE_STREAM = 0xE46135L;
    private static final long SEED = 20261129L;

    @Test
    void theWorkerStepAndTheSchedulersPollsNeverSynchronize() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        fake.deferCompletion = true;
        RecordingDriver rec = new RecordingDriver(fake);
        System.out.println("WorkerPathSyncTest seed = " + SEED);
        try (Arena arena = Arena.ofConfined(); CudaBackend cuda = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            // Two caches of one group (two replica-free parts), 16-token blocks, 40 tokens: blocks 0..2.
            List<Long> uploads = new ArrayList<>();
            List<WorkerChecksummer.ReplicaPart> parts = new ArrayList<>();
            List<KvCacheGroup> host = new ArrayList<>();
            Random rnd = new Random(SEED);
            for (int i = 0; i < 2; i++) {
                RandomCase c;
                do {
                    c = RandomCase.make(rnd, arena, true);
                } while (16 % c.group().pageSize() != 0 || c.group().numPages() < 3L * 16 / c.group().pageSize());
                host.add(c.group());
                parts.add(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, RandomLayoutTest.onDevice(fake, c.group(), uploads)));
            }
            // the engine keeps one front per worker
            WorkerChecksummer worker = WorkerChecksummer.builder(KvChecksum.of(cuda))
                    .groups(List.of(new WorkerChecksummer.WorkerGroup(0, 42, parts))).stateDigests(true)
                    .pageProbe(0, PageProbe.DEFAULT_PROBE_BYTES).build();
            List<BlockSelection> sel = List.of(BlockSelection.producer(0, new int[] {2, 0, 1}, -1, 40, 16, null));
            // Two state rows (one not a multiple of 8 bytes) in device memory, and their host originals.
            MemorySegment rowBytes = arena.allocate(256, 8);
            for (long i = 0; i < rowBytes.byteSize(); i++) {
                rowBytes.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            KvMemory rowsOnDevice = fake.onDevice(KvMemory.host(rowBytes));
            List<StateShard> state = List.of(new StateShard(new StateRow("l0.ssm", rowsOnDevice, 0, 136), 0, 2, 0, 1),
                    StateShard.whole(new StateRow("l0.conv", rowsOnDevice, 136, 101)));
            long[] expectedDigests = KvChecksums.reference().stateDigests(List.of(new StateRow("l0.ssm", KvMemory.host(rowBytes), 0, 136),
                    new StateRow("l0.conv", KvMemory.host(rowBytes), 136, 101)), io.kvchecksum.ChecksumMode.STANDARD);
            List<PageProbe.Probes> hostProbes = new ArrayList<>();
            for (KvCacheGroup g : host) {
                hostProbes.add(PageProbe.compute(KvChecksums.reference(), SlicePlan.of(g, sel.get(0).request(g.pageSize())),
                        PageProbe.DEFAULT_PROBE_BYTES));
            }
            PageProbe.Probes expectedProbes = PageProbe.Probes.sum(hostProbes);
            long[] expected = new long[3];
            for (KvCacheGroup g : host) {
                long[] v = KvChecksums.reference().blockChecksums(g, sel.get(0).request(g.pageSize()));
                for (int i = 0; i < 3; i++) {
                    expected[i] += v[i];
                }
            }

            // Warm-up: the first submit in a context may allocate its pools (still without waiting).
            worker.compute(Side.PRODUCER, 40, sel, state);
            rec.take();

            for (int step = 0; step < 3; step++) {
                // The worker's step.
                WorkerChecksummer.PendingRecord p = worker.submit(Side.PRODUCER, 40, sel, state, ENGINE_STREAM);
                List<RecordingDriver.Call> stepCalls = rec.take();
                assertEquals(0, synchronizing(stepCalls), "the worker's step synchronized: " + stepCalls);
                assertTrue(stepCalls.stream().anyMatch(c -> c.name().equals("cuLaunchKernel")), stepCalls.toString());
                for (RecordingDriver.Call c : stepCalls) {
                    if (c.name().equals("cuLaunchKernel")) {
                        assertEquals(ENGINE_STREAM, c.longArg(8), "kernels run on the engine's stream");
                    }
                }
                // The scheduler polls while the device is busy: no record yet, and no wait.
                assertTrue(p.poll().isEmpty());
                assertFalse(p.isDone());
                List<RecordingDriver.Call> pollCalls = rec.take();
                assertEquals(0, synchronizing(pollCalls), "polling synchronized: " + pollCalls);
                assertTrue(pollCalls.stream().allMatch(c -> c.name().equals("cuEventQuery")), pollCalls.toString());

                // The device finishes (behind the recorder): the next poll returns the record.
                for (RecordingDriver.Call c : stepCalls) {
                    if (c.name().equals("cuEventRecord")) {
                        fake.cuEventSynchronize(c.longArg(0));
                    }
                }
                WorkerRecord r = p.poll().orElseThrow();
                List<RecordingDriver.Call> collect = rec.take();
                // Collecting reads each result after its copy event reported done: CudaPending.get() then calls
                // cuEventSynchronize on a completed event, which returns at once; nothing else waits.
                for (RecordingDriver.Call c : collect) {
                    assertTrue(c.name().equals("cuEventQuery") || c.name().equals("cuEventSynchronize"), collect.toString());
                }
                assertArrayEquals(expected, r.groups().get(0).columns().get(ReplicaKey.NONE), "step " + step);
                assertArrayEquals(expectedDigests, r.stateDigests().stream().mapToLong(e -> e.digest()).toArray(), "step " + step);
                assertEquals(expectedProbes, r.probes().get(ReplicaKey.NONE), "step " + step);
                p.close();
            }
            uploads.forEach(fake::cuMemFree);
        }
    }

    private static long synchronizing(List<RecordingDriver.Call> calls) {
        return calls.stream().filter(c -> SyncCounting.SYNCHRONIZING.contains(c.name())).count();
    }
}
