package io.kvchecksum.opencl;

import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_device_id;
import org.jocl.cl_platform_id;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * Finding OpenCL devices and choosing one.
 *
 * <p>The device is named by the system property {@value #DEVICE_PROPERTY} (wins) or the environment variable
 * {@value #DEVICE_ENV}: either {@code "platformIndex:deviceIndex"} or a case-insensitive substring of
 * {@code "platform name / device name"}. Unset, the first GPU is chosen, else the first CPU device.
 */
public final class OpenClDevices {
    /** System property naming the device; wins over {@value #DEVICE_ENV}. */
    public static final String DEVICE_PROPERTY = "kvchecksum.opencl.device";
    /** Environment variable naming the device. */
    public static final String DEVICE_ENV = "KVCHECKSUM_OPENCL_DEVICE";

    private OpenClDevices() {
    }

    /** A device discovery found, with the handles to open it. */
    record Found(OpenClDevice info, cl_platform_id platform, cl_device_id device) {
    }

    /**
     * {@return every device of every platform}
     *
     * @throws OpenClException when the OpenCL library cannot be loaded or does not answer
     */
    public static List<OpenClDevice> list() {
        List<OpenClDevice> out = new ArrayList<>();
        for (Found f : discover()) {
            out.add(f.info());
        }
        return out;
    }

    /** The device selection from the property or environment, or {@code null} for the default. */
    static String configuredSpec() {
        String s = System.getProperty(DEVICE_PROPERTY);
        if (s == null || s.isBlank()) {
            s = System.getenv(DEVICE_ENV);
        }
        return s == null || s.isBlank() ? null : s.trim();
    }

    /** The found device that is {@code device} (an engine's own); throws when it is unknown or unusable. */
    static Found of(cl_device_id device) {
        for (Found f : discover()) {
            if (f.device().getNativePointer() == device.getNativePointer()) {
                if (f.info().problem() != null) {
                    throw new OpenClException("OpenCL device " + f.info() + " is unusable: " + f.info().problem());
                }
                return f;
            }
        }
        throw new OpenClException("the cl_device_id 0x" + Long.toHexString(device.getNativePointer())
                + " is not a device of any OpenCL platform found");
    }

    /**
     * The device {@code spec} names ({@code null}: the default choice).
     *
     * @throws OpenClException when there is no platform, no device, no match, or the match is unusable
     */
    static Found select(String spec) {
        List<Found> all = discover();
        if (all.isEmpty()) {
            throw new OpenClException("no OpenCL device: the platforms found have no devices");
        }
        if (spec == null) {
            return Stream.of("GPU", "CPU").flatMap(type -> all.stream()
                            .filter(f -> f.info().type().equals(type) && f.info().problem() == null)).findFirst()
                    .orElseThrow(() -> new OpenClException("no usable OpenCL GPU or CPU device; found: "
                            + all.stream().map(Found::info).toList() + " (name one with -D" + DEVICE_PROPERTY + ")"));
        }
        String needle = spec.toLowerCase(Locale.ROOT);
        Predicate<Found> named = spec.matches("\\d+:\\d+") ? f -> f.info().index().equals(spec)
                : f -> (f.info().platformName() + " / " + f.info().deviceName()).toLowerCase(Locale.ROOT).contains(needle);
        Found chosen = all.stream().filter(named).findFirst().orElseThrow(() -> new OpenClException("no OpenCL device "
                + "matches '" + spec + "' (" + DEVICE_PROPERTY + "/" + DEVICE_ENV + "); found: "
                + all.stream().map(Found::info).toList()));
        if (chosen.info().problem() != null) {
            throw new OpenClException("OpenCL device " + chosen.info() + " cannot run the kernels: " + chosen.info().problem());
        }
        return chosen;
    }

    /** Why OpenCL could not be loaded, with what to install. */
    static String loadFailure(Throwable e) {
        // JOCL dlopen()s the unversioned name libOpenCL.so (never libOpenCL.so.1), which only development packages
        // or driver installers provide; a failed load also leaves JOCL's CL class unusable for the rest of the JVM.
        return "the OpenCL library could not be loaded on " + System.getProperty("os.name") + "/"
                + System.getProperty("os.arch") + " (JOCL opens 'libOpenCL.so', the unversioned name: install an ICD "
                + "loader with that link, e.g. Debian's ocl-icd-opencl-dev, plus a driver such as pocl-opencl-icd, or put a "
                + "link libOpenCL.so -> libOpenCL.so.1 on LD_LIBRARY_PATH): " + e;
    }

    private static List<Found> discover() {
        int[] n = new int[1];
        int err = CL.clGetPlatformIDs(0, null, n);
        if (err == CL.CL_PLATFORM_NOT_FOUND_KHR || (err == CL.CL_SUCCESS && n[0] == 0)) {
            throw new OpenClException("no OpenCL platform: the OpenCL library loads but no driver (ICD) is installed");
        }
        JoclApi.check(err, "clGetPlatformIDs");
        cl_platform_id[] platforms = new cl_platform_id[n[0]];
        JoclApi.check(CL.clGetPlatformIDs(platforms.length, platforms, null), "clGetPlatformIDs");
        List<Found> out = new ArrayList<>();
        for (int p = 0; p < platforms.length; p++) {
            String pname = platformString(platforms[p], CL.CL_PLATFORM_NAME);
            int[] nd = new int[1];
            int e = CL.clGetDeviceIDs(platforms[p], CL.CL_DEVICE_TYPE_ALL, 0, null, nd);
            if (e == CL.CL_DEVICE_NOT_FOUND || nd[0] == 0) {
                continue;
            }
            JoclApi.check(e, "clGetDeviceIDs");
            cl_device_id[] devices = new cl_device_id[nd[0]];
            JoclApi.check(CL.clGetDeviceIDs(platforms[p], CL.CL_DEVICE_TYPE_ALL, devices.length, devices, null), "clGetDeviceIDs");
            for (int d = 0; d < devices.length; d++) {
                cl_device_id dev = devices[d];
                long type = deviceLong(dev, CL.CL_DEVICE_TYPE);
                String t = (type & CL.CL_DEVICE_TYPE_GPU) != 0 ? "GPU"
                        : (type & CL.CL_DEVICE_TYPE_CPU) != 0 ? "CPU"
                        : (type & CL.CL_DEVICE_TYPE_ACCELERATOR) != 0 ? "ACCELERATOR" : "OTHER";
                String problem = null;
                if (deviceInt(dev, CL.CL_DEVICE_ENDIAN_LITTLE) == 0) {
                    problem = "big-endian device (the checksum reads little-endian pieces)";
                } else if (!deviceString(dev, CL.CL_DEVICE_PROFILE).contains("FULL_PROFILE")) {
                    // The embedded profile may lack 64-bit integers, which every kernel needs.
                    problem = "embedded profile (64-bit integers are not guaranteed)";
                }
                out.add(new Found(new OpenClDevice(p, d, pname, deviceString(dev, CL.CL_DEVICE_NAME), t,
                        deviceString(dev, CL.CL_DEVICE_VERSION), problem), platforms[p], dev));
            }
        }
        return out;
    }

    /** One {@code clGet*Info} call for one parameter: (bytes, where to write them, size returned) to its return code. */
    interface InfoQuery {
        int query(long size, Pointer value, long[] sizeReturned);
    }

    /** The string an info call answers (up to its first NUL, trimmed), asked twice: for its size, then its bytes. */
    static String infoString(InfoQuery q, String call) {
        long[] size = new long[1];
        JoclApi.check(q.query(0, null, size), call);
        byte[] b = new byte[(int) size[0]];
        JoclApi.check(q.query(b.length, Pointer.to(b), null), call);
        int n = 0;
        while (n < b.length && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n, StandardCharsets.UTF_8).trim();
    }

    static String platformString(cl_platform_id p, int param) {
        return infoString((size, value, ret) -> CL.clGetPlatformInfo(p, param, size, value, ret), "clGetPlatformInfo");
    }

    static String deviceString(cl_device_id d, int param) {
        return infoString((size, value, ret) -> CL.clGetDeviceInfo(d, param, size, value, ret), "clGetDeviceInfo");
    }

    /** A {@code cl_ulong} parameter, or a {@code size_t} one (at most 8 bytes, written from the first). */
    static long deviceLong(cl_device_id d, int param) {
        long[] v = new long[1];
        JoclApi.check(CL.clGetDeviceInfo(d, param, Sizeof.cl_ulong, Pointer.to(v), null), "clGetDeviceInfo");
        return v[0];
    }

    static int deviceInt(cl_device_id d, int param) {
        int[] v = new int[1];
        JoclApi.check(CL.clGetDeviceInfo(d, param, Sizeof.cl_uint, Pointer.to(v), null), "clGetDeviceInfo");
        return v[0];
    }
}
