package io.kvchecksum.golden;

import io.kvchecksum.KvChecksums;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

import java.util.stream.Stream;

/** NumPy's verifying-copy vectors and the copy's fault tests through both pure-Java backends. */
class CpuCopyTest {
    @TestFactory
    Stream<DynamicNode> reference() {
        return Stream.concat(CopySuite.tests(KvChecksums.reference()), CopySuite.faults(KvChecksums.reference()));
    }

    @TestFactory
    Stream<DynamicNode> cpu() {
        return Stream.concat(CopySuite.tests(KvChecksums.cpu()), CopySuite.faults(KvChecksums.cpu()));
    }

    @TestFactory
    Stream<DynamicNode> cpuSingleThread() {
        return CopySuite.tests(KvChecksums.cpu(1));
    }
}
