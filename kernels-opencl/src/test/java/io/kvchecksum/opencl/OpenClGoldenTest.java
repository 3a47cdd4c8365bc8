package io.kvchecksum.opencl;

import io.kvchecksum.golden.GoldenSuite;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

import java.util.stream.Stream;

/** Every golden vector (written by NumPy) and relation through the OpenCL backend, compared exactly. */
class OpenClGoldenTest {
    @TestFactory
    Stream<? extends DynamicNode> golden() {
        return OpenClTests.dynamic("opencl golden suite", () -> GoldenSuite.tests(OpenClTests.checksum()));
    }
}
