package io.kvchecksum.opencl;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.golden.GoldenSuite;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The golden suite through every {@link Tuning} the backend can choose, each opened on the test device through the
 * test-only {@link OpenClBackend#open(String, Tuning, ClApi)}: on PoCL (CI) the CPU tuning is the one the device's type
 * chooses, and the GPU tuning (strided units of 8 pieces, work-groups of up to 256, the work-group page digest, host
 * memory copied) runs there too, so a GPU's choice is checked on every build, not only on a machine with a GPU.
 */
class TuningGoldenTest {
    private static final List<OpenClBackend> OPENED = new ArrayList<>();

    private static synchronized KvChecksum with(Tuning tuning) {
        OpenClBackend b = OpenClBackend.open(OpenClTests.backend().device().index(), tuning, ClApi.jocl());
        OPENED.add(b);
        assertSame(tuning, b.tuning());
        assertTrue(b.description().endsWith(", " + tuning.name() + ")"), b.description());
        System.out.println("golden suite on: " + b.description());
        return KvChecksum.of(b);
    }

    @TestFactory
    Stream<? extends DynamicNode> cpuTuning() {
        return OpenClTests.dynamic("opencl golden suite, CPU tuning", () -> GoldenSuite.tests(with(Tuning.CPU)));
    }

    @TestFactory
    Stream<? extends DynamicNode> gpuTuning() {
        return OpenClTests.dynamic("opencl golden suite, GPU tuning", () -> GoldenSuite.tests(with(Tuning.GPU)));
    }

    /** The selector: the device's type, nothing else (no system property). Pure Java; runs without OpenCL. */
    @Test
    void theDeviceTypeChoosesTheTuning() {
        assertSame(Tuning.CPU, Tuning.of(new OpenClDevice(0, 0, "Portable Computing Language", "cpu", "CPU", "OpenCL 3.0", null)));
        for (String type : List.of("GPU", "ACCELERATOR", "OTHER")) {
            assertSame(Tuning.GPU, Tuning.of(new OpenClDevice(0, 0, "p", "d", type, "OpenCL 1.2", null)), type);
        }
        assertEquals(" -D KVC_CONTIGUOUS_UNITS -D KVC_UNIT32", Tuning.CPU.defines());
        assertEquals(" -D KVC_ROWS_IN_FLIGHT=2", Tuning.GPU.defines());
    }

    @AfterAll
    static synchronized void close() {
        OPENED.forEach(OpenClBackend::close);
        OPENED.clear();
    }
}
