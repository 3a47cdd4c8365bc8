package io.kvchecksum.opencl;

import io.kvchecksum.golden.Combinations;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

import java.util.stream.Stream;

/** The combination test ({@link Combinations}) through the OpenCL backend, host memory in place or copied. */
class OpenClCombinationsTest {
    @TestFactory
    Stream<? extends DynamicNode> combinations() {
        return OpenClTests.dynamic("opencl combinations", () -> Stream.of(Combinations.test(OpenClTests.checksum())));
    }
}
