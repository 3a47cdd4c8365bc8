package io.kvchecksum.cuda;

import io.kvchecksum.KvMemory;
import io.kvchecksum.golden.GoldenSuite;
import io.kvchecksum.golden.GoldenVectors;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Every golden vector (written by NumPy) through the CUDA backend's whole host path (validation, descriptor
 * packing, launch planning, pooling, event sequence) with the kernels' arithmetic run on the CPU by the host test
 * library: once with the KV in host memory (copied to the simulated device) and once already in "device" memory.
 */
class EmulatedGoldenTest {
    @RegisterExtension
    static final EmulatedCuda CUDA = new EmulatedCuda();

    private static void requireVectors() {
        assumeTrue(GoldenVectors.class.getResource("/vectors/index.json") != null,
                "the kvchecksum-golden jar on the class path carries no vectors/index.json yet (vectors not generated)");
    }

    @TestFactory
    Stream<DynamicNode> hostMemory() {
        requireVectors();
        return GoldenSuite.tests(CUDA.wide());
    }

    @TestFactory
    Stream<DynamicNode> deviceMemory() {
        requireVectors();
        return GoldenSuite.tests(CUDA.chunked(), c -> {
            Map<MemorySegment, KvMemory> moved = new LinkedHashMap<>();
            return Relocation.relocate(c.group(), m -> moved.computeIfAbsent(((KvMemory.Host) m).segment(),
                    s -> CUDA.fake().onDevice(m)));
        });
    }
}
