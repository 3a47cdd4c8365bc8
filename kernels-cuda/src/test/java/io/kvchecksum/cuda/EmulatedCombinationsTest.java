package io.kvchecksum.cuda;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.golden.Combinations;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * The combination test ({@link Combinations}) through the CUDA backend's whole host path, the kernels' arithmetic run
 * on the CPU by the host test library: once with the KV in host memory (copied to the simulated device by the
 * backend) and once already in "device" memory.
 */
class EmulatedCombinationsTest {
    private static FakeCudaDriver fake;
    private static KvChecksum cuda;
    private static final List<Long> uploads = new ArrayList<>();

    @BeforeAll
    static void setUp() {
        fake = new FakeCudaDriver(HostLibrary.load());
        fake.smCount = 132;
        cuda = NamedBackend.cudaHost(fake, LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
    }

    @AfterAll
    static void tearDown() {
        if (cuda != null) {
            cuda.close();
            uploads.forEach(fake::cuMemFree);
        }
    }

    @TestFactory
    DynamicTest hostMemory() {
        return Combinations.test(cuda);
    }

    @TestFactory
    DynamicTest deviceMemory() {
        return Combinations.test(cuda, "device memory", m -> {
            long p = fake.upload(((KvMemory.Host) m).segment());
            uploads.add(p);
            return KvMemory.device(p, m.byteSize());
        });
    }
}
