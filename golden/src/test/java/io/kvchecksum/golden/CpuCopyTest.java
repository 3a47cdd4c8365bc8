package io.kvchecksum.golden;

import io.kvchecksum.KvChecksums;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

import java.util.stream.Stream;

/**
 * NumPy's verifying-copy vectors (the in-place ones staged) and the copy's fault tests through both pure-Java
 * backends.
 */
class CpuCopyTest {
    @TestFactory
    Stream<DynamicNode> reference() {
        return Stream.of(CopySuite.tests(KvChecksums.reference()), CopySuite.faults(KvChecksums.reference()),
                CopySuite.inPlaceFaults(KvChecksums.reference())).flatMap(s -> s);
    }

    @TestFactory
    Stream<DynamicNode> cpu() {
        return Stream.of(CopySuite.tests(KvChecksums.cpu()), CopySuite.faults(KvChecksums.cpu()),
                CopySuite.inPlaceFaults(KvChecksums.cpu())).flatMap(s -> s);
    }

    @TestFactory
    Stream<DynamicNode> cpuSingleThread() {
        return Stream.concat(CopySuite.tests(KvChecksums.cpu(1)), CopySuite.inPlaceFaults(KvChecksums.cpu(1)));
    }
}
