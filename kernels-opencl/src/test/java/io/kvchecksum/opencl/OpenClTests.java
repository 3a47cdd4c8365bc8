package io.kvchecksum.opencl;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.spi.BackendProvider.Availability;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The backends the tests share, opened once per JVM (building the kernels is the slow part on PoCL), and the
 * {@link KvChecksum} fronts over them through which the tests compute (the fronts are never closed: they would close
 * the shared backends).
 *
 * <p>Without OpenCL the tests are skipped with the reason, except in CI ({@code CI=true} as property or environment
 * variable, which {@code .ci/run} sets), where OpenCL is installed on purpose and its absence is a failure.
 */
final class OpenClTests {
    private static OpenClBackend plain;
    private static OpenClBackend recorded;
    private static KvChecksum plainFront;
    private static KvChecksum recordedFront;
    private static final RecordingClApi RECORDER = new RecordingClApi(JoclApi.INSTANCE);

    private OpenClTests() {
    }

    static boolean inCi() {
        return "true".equalsIgnoreCase(System.getProperty("CI")) || "true".equalsIgnoreCase(System.getenv("CI"));
    }

    /** Skips (or in CI fails) the calling test when OpenCL cannot run here. */
    static void requireOpenCl() {
        Availability a = new OpenClProvider().availability();
        if (!a.available()) {
            String why = "OpenCL is unavailable: " + a.reason();
            if (inCi()) {
                Assertions.fail(why + " (CI=true: CI installs pocl-opencl-icd, so the OpenCL tests must run)");
            }
            Assumptions.abort(why);
        }
    }

    /**
     * The tests {@code factory} makes when OpenCL is here; otherwise one test that is skipped (or fails in CI) with
     * the reason, so the report counts it instead of showing an empty container.
     */
    static Stream<? extends DynamicNode> dynamic(String name, Supplier<Stream<? extends DynamicNode>> factory) {
        if (!new OpenClProvider().availability().available()) {
            return Stream.of(DynamicTest.dynamicTest(name, OpenClTests::requireOpenCl));
        }
        return factory.get();
    }

    /** The backend on the default or configured device. */
    static synchronized OpenClBackend backend() {
        requireOpenCl();
        if (plain == null) {
            plain = OpenClBackend.open();
            System.out.println("OpenCL tests run on: " + plain.description());
        }
        return plain;
    }

    /** A second backend on the same device whose post-set-up calls all go through {@link #recorder()}. */
    static synchronized OpenClBackend recordedBackend() {
        requireOpenCl();
        if (recorded == null) {
            recorded = OpenClBackend.open(OpenClDevices.configuredSpec(), RECORDER);
        }
        return recorded;
    }

    /** The front over {@link #backend()}: what an application gets from {@code KvChecksums.byName("opencl")}. */
    static synchronized KvChecksum checksum() {
        if (plainFront == null) {
            plainFront = KvChecksum.of(backend());
        }
        return plainFront;
    }

    /** The front over {@link #recordedBackend()}. */
    static synchronized KvChecksum recordedChecksum() {
        if (recordedFront == null) {
            recordedFront = KvChecksum.of(recordedBackend());
        }
        return recordedFront;
    }

    static RecordingClApi recorder() {
        return RECORDER;
    }
}
