package io.kvchecksum.cuda;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.golden.CopySuite;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The emulated suites' shared fixture: the CUDA backend over the CPU-simulated driver ({@link FakeCudaDriver}, an
 * H100's 132 SMs), as a front launching whole grids ({@link #wide()}) and one cut into grids of at most 2 blocks
 * ({@link #chunked()}: several launches per plan launch, each adding into its own blocks). Registered as a static
 * extension field, it opens both before the class's tests and, after them, closes both, frees what
 * {@link FakeCudaDriver#onDevice} uploaded and checks that closing the backends unpinned and freed every pinned buffer.
 * Without the host test library the class is aborted as {@link HostLibrary#load()} says.
 */
final class EmulatedCuda implements BeforeAllCallback, AfterAllCallback {
    private FakeCudaDriver fake;
    private KvChecksum wide;
    private KvChecksum chunked;

    @Override
    public void beforeAll(ExtensionContext context) {
        fake = new FakeCudaDriver(HostLibrary.load());
        fake.smCount = 132;
        wide = NamedBackend.cudaHost(fake, LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
        chunked = NamedBackend.cudaHost(fake, 2);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (wide == null) {
            return;
        }
        wide.close();
        chunked.close();
        fake.freeUploads();
        assertEquals(0, fake.livePinnedMappings(), "closing the backends unpinned and freed every pinned buffer");
    }

    FakeCudaDriver fake() {
        return fake;
    }

    KvChecksum wide() {
        return wide;
    }

    KvChecksum chunked() {
        return chunked;
    }

    /**
     * Each buffer copied into a new simulated device allocation, read back from it, freed at the test's end. The test's
     * thread has the device's context current, as an engine's thread does: the suite's {@code submitCopy(plan, 0)} runs on
     * that context's legacy default stream.
     */
    Supplier<CopySuite.Placement> onDevice() {
        return () -> new CopySuite.Placement() {
            {
                fake.cuCtxSetCurrent(FakeCudaDriver.CONTEXT);
            }

            private final List<Long> allocations = new ArrayList<>();

            @Override
            public KvMemory place(MemorySegment host, boolean destination) {
                long p = fake.upload(host);
                allocations.add(p);
                return KvMemory.device(p, host.byteSize());
            }

            @Override
            public void readBack(KvMemory placed, MemorySegment into) {
                KvMemory.Device d = (KvMemory.Device) placed;
                if (fake.cuMemcpyDtoHAsync(into.address(), d.address(), into.byteSize(), 0) != 0) {
                    throw new AssertionError("reading back " + d + " failed");
                }
            }

            @Override
            public void close() {
                allocations.forEach(fake::cuMemFree);
                allocations.clear();
            }
        };
    }
}
