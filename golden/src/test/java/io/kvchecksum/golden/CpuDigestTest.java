package io.kvchecksum.golden;

import io.kvchecksum.KvChecksums;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

import java.util.stream.Stream;

/** NumPy's page-digest vectors through both pure-Java backends. */
class CpuDigestTest {
    @TestFactory
    Stream<DynamicNode> reference() {
        return DigestSuite.tests(KvChecksums.reference());
    }

    @TestFactory
    Stream<DynamicNode> cpuFast() {
        return DigestSuite.tests(KvChecksums.cpu());
    }

    @TestFactory
    Stream<DynamicNode> cpuFastSingleThread() {
        return DigestSuite.tests(KvChecksums.cpu(1));
    }
}
