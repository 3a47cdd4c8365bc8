package io.kvchecksum.cuda;

import io.kvchecksum.golden.Combinations;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The combination test ({@link Combinations}) through the CUDA backend's whole host path, the kernels' arithmetic run
 * on the CPU by the host test library: once with the KV in host memory (copied to the simulated device by the
 * backend) and once already in "device" memory.
 */
class EmulatedCombinationsTest {
    @RegisterExtension
    static final EmulatedCuda CUDA = new EmulatedCuda();

    @TestFactory
    DynamicTest hostMemory() {
        return Combinations.test(CUDA.wide());
    }

    @TestFactory
    DynamicTest deviceMemory() {
        return Combinations.test(CUDA.wide(), "device memory", CUDA.fake()::onDevice);
    }
}
