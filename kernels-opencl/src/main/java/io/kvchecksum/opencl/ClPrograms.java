package io.kvchecksum.opencl;

import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_kernel;
import org.jocl.cl_program;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Kernel source and program builds: the shipped source read from the jar, built with {@code -cl-std=CL1.2} where the
 * device compiles it, a failed build reported with the compiler's log ({@link OpenClBuildException}). Used for the
 * checksum program ({@link OpenClBackend}) and the page digest's ({@link OpenClPageDigest}).
 */
final class ClPrograms {
    private ClPrograms() {
    }

    /** The text of a resource inside the jar. */
    static String resourceText(String name) {
        try (InputStream in = OpenClBackend.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("kernel source " + name + " is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + name, e);
        }
    }

    /** Builds {@code source} for {@code device} with {@code defines}; throws {@link OpenClBuildException} with the log. */
    static cl_program build(cl_context context, cl_device_id device, OpenClDevice info, String source, String defines) {
        int[] err = new int[1];
        cl_program p = CL.clCreateProgramWithSource(context, 1, new String[] {source}, new long[] {source.length()}, err);
        JoclApi.check(err[0], "clCreateProgramWithSource");
        int rc = CL.clBuildProgram(p, 1, new cl_device_id[] {device}, (buildOptions(device) + defines).strip(), null, null);
        if (rc != CL.CL_SUCCESS) {
            String log;
            try {
                log = buildLog(p, device);
            } catch (RuntimeException e) {
                log = "(the build log could not be read: " + e.getMessage() + ")";
            }
            CL.clReleaseProgram(p);
            throw new OpenClBuildException(info.toString(), rc, log);
        }
        return p;
    }

    /** {@code -cl-std=CL1.2} where the device compiles OpenCL C 1.2 or later, so no later feature slips in. */
    private static String buildOptions(cl_device_id device) {
        Matcher m = Pattern.compile("OpenCL C (\\d+)\\.(\\d+)")
                .matcher(OpenClDevices.deviceString(device, CL.CL_DEVICE_OPENCL_C_VERSION));
        if (m.find() && Integer.parseInt(m.group(1)) * 10 + Integer.parseInt(m.group(2)) >= 12) {
            return "-cl-std=CL1.2";
        }
        return "";
    }

    private static String buildLog(cl_program p, cl_device_id device) {
        return OpenClDevices.infoString((size, value, ret) -> CL.clGetProgramBuildInfo(p, device, CL.CL_PROGRAM_BUILD_LOG,
                size, value, ret), "clGetProgramBuildInfo");
    }

    /** {@return the largest work-group {@code kernel} of {@code program} may run on {@code device}} */
    static long workGroupSize(cl_program program, cl_device_id device, String kernel) {
        cl_kernel k = JoclApi.INSTANCE.createKernel(program, kernel);
        try {
            long[] v = new long[1];
            JoclApi.check(CL.clGetKernelWorkGroupInfo(k, device, CL.CL_KERNEL_WORK_GROUP_SIZE, Sizeof.size_t,
                    Pointer.to(v), null), "clGetKernelWorkGroupInfo");
            return v[0];
        } finally {
            JoclApi.INSTANCE.releaseKernel(k);
        }
    }
}
