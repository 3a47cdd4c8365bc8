package io.kvchecksum.golden;

import io.kvchecksum.KvChecksums;
import io.kvchecksum.internal.FastCpuBackend;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

import java.util.stream.Stream;

/** Every golden vector through both pure-Java backends. */
class CpuGoldenTest {
    @TestFactory
    Stream<DynamicNode> reference() {
        return GoldenSuite.tests(KvChecksums.reference());
    }

    @TestFactory
    Stream<DynamicNode> cpuFast() {
        return GoldenSuite.tests(new FastCpuBackend());
    }

    @TestFactory
    Stream<DynamicNode> cpuFastSingleThread() {
        return GoldenSuite.tests(new FastCpuBackend(1));
    }
}
