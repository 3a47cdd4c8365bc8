package io.kvchecksum.golden;

import io.kvchecksum.KvChecksums;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** The combination test ({@link Combinations}) on both pure-Java backends, the CPU backend on one thread and on all. */
class CpuCombinationsTest {
    @TestFactory
    DynamicTest reference() {
        return Combinations.test(KvChecksums.reference());
    }

    @TestFactory
    DynamicTest cpu() {
        return Combinations.test(KvChecksums.cpu());
    }

    @TestFactory
    DynamicTest cpuSingleThread() {
        return Combinations.test(KvChecksums.cpu(1));
    }
}
