package io.kvchecksum.opencl;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A kernel source that does not compile is reported with the device compiler's log. */
class BuildFailureTest {
    @Test
    void brokenSourceReportsTheBuildLog() {
        OpenClTests.requireOpenCl();
        String broken = OpenClBackend.kernelSource().replace("return mixed ? feistel3(x) : x;", "return x + undeclared_mixer_state;");
        assertTrue(broken.contains("undeclared_mixer_state"), "the test's edit no longer applies to the kernel source");
        OpenClBuildException e = assertThrows(OpenClBuildException.class, () -> OpenClBackend.openWithSource(null, broken));
        System.out.println(e.getMessage());
        assertTrue(e.getMessage().contains("CL_BUILD_PROGRAM_FAILURE"), e.getMessage());
        assertTrue(e.buildLog().contains("undeclared_mixer_state"), "build log does not name the error: " + e.buildLog());
        assertTrue(e.getMessage().contains(e.buildLog()), "the message carries the log");
    }

    @Test
    void extensionsAreNotNeeded() {
        // The shipped source must stay within OpenCL C 1.2 without extensions: no pragma enables one.
        String src = OpenClBackend.kernelSource();
        assertTrue(!src.contains("#pragma OPENCL EXTENSION") && !src.contains("atom_") && !src.contains("atomic_"), "kernels use an extension");
    }
}
