package io.kvchecksum.golden;

import io.kvchecksum.KvChecksums;
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
        return GoldenSuite.tests(KvChecksums.cpu());
    }

    @TestFactory
    Stream<DynamicNode> cpuFastSingleThread() {
        return GoldenSuite.tests(KvChecksums.cpu(1));
    }
}
