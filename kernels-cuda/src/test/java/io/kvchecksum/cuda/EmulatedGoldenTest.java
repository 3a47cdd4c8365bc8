package io.kvchecksum.cuda;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.golden.GoldenSuite;
import io.kvchecksum.golden.GoldenVectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

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
    private static FakeCudaDriver fake;
    private static KvChecksum wide;
    private static KvChecksum chunked;

    @BeforeAll
    static void setUp() {
        fake = new FakeCudaDriver(HostLibrary.load());
        fake.smCount = 132;
        wide = NamedBackend.cudaHost(fake, LaunchPlanner.DEFAULT_MAX_BLOCKS_PER_LAUNCH);
        chunked = NamedBackend.cudaHost(fake, 2);
    }

    @AfterAll
    static void tearDown() {
        if (wide != null) {
            wide.close();
            chunked.close();
            fake.freeUploads();
        }
    }

    private static void requireVectors() {
        assumeTrue(GoldenVectors.class.getResource("/vectors/index.json") != null,
                "the kvchecksum-golden jar on the class path carries no vectors/index.json yet (vectors not generated)");
    }

    @TestFactory
    Stream<DynamicNode> hostMemory() {
        requireVectors();
        return GoldenSuite.tests(wide);
    }

    @TestFactory
    Stream<DynamicNode> deviceMemory() {
        requireVectors();
        return GoldenSuite.tests(chunked, c -> {
            Map<MemorySegment, KvMemory> moved = new LinkedHashMap<>();
            return Relocation.relocate(c.group(), m -> moved.computeIfAbsent(((KvMemory.Host) m).segment(),
                    s -> fake.onDevice(m)));
        });
    }
}
