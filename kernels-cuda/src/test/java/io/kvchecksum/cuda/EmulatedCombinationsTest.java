package io.kvchecksum.cuda;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.golden.Combinations;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The combination test ({@link Combinations}) through the CUDA backend's whole host path, the kernels' arithmetic run
 * on the CPU by the host test library: once with the KV in host memory (copied to the simulated device by the
 * backend) and once already in "device" memory.
 */
class EmulatedCombinationsTest {
    private static FakeCudaDriver fake;
    private static KvChecksum cuda;

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
            fake.freeUploads();
        }
    }

    @TestFactory
    DynamicTest hostMemory() {
        return Combinations.test(cuda);
    }

    @TestFactory
    DynamicTest deviceMemory() {
        return Combinations.test(cuda, "device memory", fake::onDevice);
    }
}
