package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The driver calls a submit on the caller's stream ({@code KvChecksum.of(cuda).submit(plan, stream)}) makes, recorded: no call that synchronizes the device, the context or the caller's
 * stream; the kernel and the descriptor upload go on the caller's stream; the result copy goes on a side stream
 * after an event; and {@code get()} waits on that copy's event and nothing else.
 */
class RecordedCallsTest {
    /** Calls that block the host on the device, or may: the list benchmarks count too. */
    static final Set<String> SYNCHRONIZING = SyncCounting.SYNCHRONIZING;
    /** Allowed in a steady-state enqueue: nothing allocates, nothing waits. */
    static final Set<String> STEADY = Set.of("cuStreamGetCtx", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuMemcpyHtoDAsync",
            "cuLaunchKernel", "cuEventRecord", "cuStreamWaitEvent", "cuMemcpyDtoHAsync", "cuEventQuery", "cuStreamIsCapturing",
            "cuMemsetD8Async");

    private static final long CALLER_STREAM = 0xCA11E7L;
    private static final long SEED = 20251129L;

    @Test
    void enqueueIsFreeOfSynchronizingCallsAndGetWaitsOnlyOnTheCopy() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        fake.deferCompletion = true;
        fake.smCount = 16;
        RecordingDriver rec = new RecordingDriver(fake);
        System.out.println("RecordedCallsTest seed = " + SEED);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = RandomCase.make(new Random(SEED), arena, true);
            while (c.request().numBlocks() == 0) {
                c = RandomCase.make(new Random(SEED + 1), arena, true);
            }
            List<Long> uploads = new ArrayList<>();
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            RequestBlocks r = c.request();
            long[] expected = KvChecksums.reference().blockChecksums(c.group(), r);

            // First enqueue in the context: may create streams, events and buffers, but still never synchronizes.
            rec.take();
            PendingChecksums first = cuda.submit(dev, r, CALLER_STREAM);
            for (RecordingDriver.Call call : rec.take()) {
                assertFalse(SYNCHRONIZING.contains(call.name()), "first enqueue called " + call.name());
            }
            assertArrayEquals(expected, first.get(), "first enqueue");
            rec.take();

            // Steady state.
            PendingChecksums p = cuda.submit(dev, r, CALLER_STREAM);
            List<RecordingDriver.Call> calls = rec.take();
            for (RecordingDriver.Call call : calls) {
                assertTrue(STEADY.contains(call.name()), "steady-state enqueue called " + call.name() + "; all calls: " + calls);
            }
            long launched = -1;
            long copied = -1;
            long side = -1;
            int launches = 0;
            boolean uploaded = false;
            for (RecordingDriver.Call call : calls) {
                switch (call.name()) {
                    case "cuMemcpyHtoDAsync" -> {
                        assertEquals(CALLER_STREAM, call.longArg(3), "descriptor upload must be on the caller's stream");
                        assertEquals(0, launches, "descriptor upload must precede the kernels");
                        uploaded = true;
                    }
                    case "cuLaunchKernel" -> {
                        assertEquals(CALLER_STREAM, call.longArg(8), "kernels must run on the caller's stream");
                        launches++;
                    }
                    case "cuEventRecord" -> {
                        if (launched < 0) {
                            assertEquals(CALLER_STREAM, call.longArg(1), "the first event marks the kernels' end on the caller's stream");
                            assertTrue(launches > 0, "event recorded before the kernels");
                            launched = call.longArg(0);
                        } else {
                            assertEquals(side, call.longArg(1), "the copy event is recorded on the side stream");
                            copied = call.longArg(0);
                        }
                    }
                    case "cuStreamWaitEvent" -> {
                        assertEquals(launched, call.longArg(1), "the side stream must wait on the kernels' event");
                        side = call.longArg(0);
                        assertTrue(side != CALLER_STREAM, "the copy must not be on the caller's stream");
                    }
                    case "cuMemcpyDtoHAsync" -> assertEquals(side, call.longArg(3), "results are copied on the side stream");
                    default -> {
                    }
                }
            }
            assertTrue(uploaded && launches > 0 && copied > 0, "expected upload, launch and copy in " + calls);

            assertFalse(p.isDone(), "the copy event has not completed yet (deferred by the fake driver)");
            rec.take();
            assertArrayEquals(expected, p.get(), "steady-state enqueue");
            List<RecordingDriver.Call> waits = rec.take();
            assertEquals(1, waits.size(), "get() must make exactly one driver call: " + waits);
            assertEquals("cuEventSynchronize", waits.get(0).name());
            assertEquals(copied, waits.get(0).longArg(0), "get() must wait on the result copy's event");
            assertTrue(p.isDone());
            assertArrayEquals(expected, p.get(), "second get()");
            assertTrue(rec.take().isEmpty(), "a second get() needs no driver call");
            p.close();
            first.close();

            // Closing without get(): the slot is reused only after its copy completed.
            PendingChecksums abandoned = cuda.submit(dev, r, CALLER_STREAM);
            abandoned.close();
            try (PendingChecksums again = cuda.submit(dev, r, CALLER_STREAM)) {
                assertArrayEquals(expected, again.get());
            }
            uploads.forEach(fake::cuMemFree);
        }
    }

    @Test
    void noDeviceCallBeforeValidationFails() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        RecordingDriver rec = new RecordingDriver(fake);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = RandomCase.make(new Random(SEED), arena, true);
            List<Long> uploads = new ArrayList<>();
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            int pages = (int) Math.ceilDiv(40, (long) c.group().pageSize());
            int[] table = new int[pages];
            table[pages - 1] = (int) c.group().numPages();  // one past the last page
            RequestBlocks bad = RequestBlocks.of(table, 40, 4);
            rec.take();
            try {
                cuda.submit(dev, bad, CALLER_STREAM);
                fail("a page id out of range must be rejected");
            } catch (io.kvchecksum.InvalidLayoutException e) {
                assertTrue(e.getMessage().contains("pageTable[" + (pages - 1) + "]"), e.getMessage());
            }
            try {
                cuda.submit(c.group(), c.request(), CALLER_STREAM);
                fail("a submit on the caller's stream must refuse host memory");
            } catch (io.kvchecksum.InvalidLayoutException e) {
                // the backend's limits, applied by the compiler (CompiledPlan.check), with the backend's hint
                assertTrue(e.getMessage().startsWith("backend 'cuda' takes device memory only on an engine's stream, but layer "),
                        e.getMessage());
                assertTrue(e.getMessage().contains(" region is host memory "), e.getMessage());
                assertTrue(e.getMessage().endsWith("; use the backend's own stream (submit without a stream) for host memory"),
                        e.getMessage());
            }
            assertTrue(rec.take().isEmpty(), "nothing may reach the driver before validation passes");
            uploads.forEach(fake::cuMemFree);
        }
    }

    @Test
    void driverErrorsNameTheCallAndTheError() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            RandomCase c = RandomCase.make(new Random(SEED), arena, true);
            List<Long> uploads = new ArrayList<>();
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            // No context is current and stream 0 is the legacy default stream: the driver reports an invalid context.
            fake.cuCtxSetCurrent(0);
            try {
                cuda.submit(dev, c.request(), 0);
                fail("expected a CudaException");
            } catch (CudaException e) {
                assertEquals("CUDA_ERROR_INVALID_CONTEXT", e.errorName());
                assertTrue(e.getMessage().startsWith("cuStreamGetCtx"), e.getMessage());
            }
            uploads.forEach(fake::cuMemFree);
        }
    }
}
