package io.kvchecksum.golden;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

import java.lang.foreign.Arena;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * SGLang's page digest through one backend: every vector of {@code vectors-digest/} (NumPy's layouts, Python's
 * {@code zlib.adler32}), compared exactly, each its own test named {@code "<backend> · digest · <vector>"}. A backend
 * module runs it with
 * <pre>{@code
 * @TestFactory Stream<DynamicNode> digest() { return DigestSuite.tests(backend); }
 * }</pre>
 */
public final class DigestSuite {
    private DigestSuite() {
    }

    /**
     * Every vector with its buffers in host memory.
     *
     * @param backend the backend under test
     * @return one dynamic test per vector, comparing {@code backend.pageDigest} with zlib's value exactly
     */
    public static Stream<DynamicNode> tests(KvChecksum backend) {
        return tests(backend, UnaryOperator.identity());
    }

    /**
     * As {@link #tests(KvChecksum)}, each buffer first passed through {@code placement} (e.g. to device memory).
     *
     * @param backend the backend under test
     * @param placement maps each host buffer to the memory the backend should read (identity for host memory)
     * @return one dynamic test per vector
     */
    public static Stream<DynamicNode> tests(KvChecksum backend, UnaryOperator<KvMemory> placement) {
        return DigestVector.all().stream().map(v -> DynamicTest.dynamicTest(backend.name() + " · digest · " + v.name(), () -> {
            try (Arena arena = Arena.ofShared()) {
                PageDigestPlan plan = v.plan(arena, placement);
                assertEquals(v.streamBytes(), plan.totalBytes(), v.name() + ": stream length");
                String who = backend.name() + " · digest · " + v.name() + " (" + v.description() + ")";
                long got = backend.pageDigest(plan);
                assertEquals(v.expectedDigest(), got, () -> who + ": expected 0x" + Long.toHexString(v.expectedDigest())
                        + ", got 0x" + Long.toHexString(got));
                assertEquals(v.expectedDigest(), backend.pageDigest(plan), who + " (the same plan again)");
            }
        }));
    }
}
