package io.kvchecksum.cuda;

import com.sun.jna.FunctionMapper;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import io.kvchecksum.spi.BackendProvider.Availability;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;

/** Loading the driver and the kernels, driver constants, error checking and the availability probe. */
final class Cuda {
    static final int SUCCESS = 0;
    static final int ERROR_NOT_READY = 600;
    static final int STREAM_NON_BLOCKING = 0x1;
    static final int EVENT_DEFAULT = 0x0;
    static final int EVENT_DISABLE_TIMING = 0x2;
    /** {@code CU_MEMHOSTALLOC_PORTABLE} and {@code CU_MEMHOSTREGISTER_PORTABLE}: pinned for every context. */
    static final int MEMHOST_PORTABLE = 0x1;
    /** {@code CU_MEMHOSTALLOC_DEVICEMAP} and {@code CU_MEMHOSTREGISTER_DEVICEMAP}: mapped into the device's address space. */
    static final int MEMHOST_DEVICEMAP = 0x2;
    static final int ATTR_MULTIPROCESSOR_COUNT = 16;
    static final int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
    static final int ATTR_COMPUTE_CAPABILITY_MINOR = 76;
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN}: the most shared memory a block may opt in to. */
    static final int ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
    /** {@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}: a kernel's opt-in to more dynamic shared memory. */
    static final int FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
    /**
     * The fatbin is built by CUDA 13's nvcc: its machine code and PTX load on a driver of CUDA 13.0 (the 580 series,
     * driver API 13000) or newer. An older driver would load the library and fail later, at cuLibraryLoadData, with a
     * less clear error; it is refused here, when availability is probed.
     */
    static final int MIN_DRIVER_VERSION = 13000;

    /** The kernel image built by nvcc at build time (see pom.xml and src/main/cuda). */
    static final String FATBIN_RESOURCE = "/io/kvchecksum/cuda/kvchecksum.fatbin";
    static final String DRIVER_LIBRARY = "libcuda.so.1";

    private static final Set<String> V2 = Set.of("cuDevicePrimaryCtxRelease", "cuMemAlloc", "cuMemFree", "cuMemAllocHost",
            "cuMemGetInfo", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuStreamDestroy", "cuEventDestroy",
            "cuMemHostRegister", "cuMemHostGetDevicePointer");

    private Cuda() {
    }

    /** The JNA binding; {@link CudaDriver}'s methods map to the symbols of the same name, or {@code _v2}. */
    interface LibCuda extends CudaDriver, Library {
    }

    /**
     * Binds {@link CudaDriver} to {@code libcuda.so.1}.
     *
     * @throws UnsatisfiedLinkError if the library cannot be loaded (no NVIDIA driver)
     */
    static CudaDriver loadDriver() {
        FunctionMapper mapper = (NativeLibrary lib, Method m) -> V2.contains(m.getName()) ? m.getName() + "_v2" : m.getName();
        return Native.load(DRIVER_LIBRARY, LibCuda.class, Map.of(Library.OPTION_FUNCTION_MAPPER, mapper));
    }

    /** The fatbin from the jar, or {@code null} if the jar was built without kernels ({@code -Dkvchecksum.skipCuda}). */
    static byte[] fatbin() {
        try (InputStream in = Cuda.class.getResourceAsStream(FATBIN_RESOURCE)) {
            return in == null ? null : in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + FATBIN_RESOURCE, e);
        }
    }

    static String errorName(CudaDriver d, int rc) {
        try {
            long[] p = new long[1];
            if (d.cuGetErrorName(rc, p) == SUCCESS && p[0] != 0) {
                return new Pointer(p[0]).getString(0, StandardCharsets.US_ASCII.name());
            }
        } catch (RuntimeException | LinkageError e) {
            // fall through: the number is still useful
        }
        return "CUresult " + rc;
    }

    static void check(CudaDriver d, int rc, String call) {
        if (rc != SUCCESS) {
            throw new CudaException(call, rc, errorName(d, rc));
        }
    }

    /** A device's name, compute capability and multiprocessor count, for descriptions. */
    static String describeDevice(CudaDriver d, int device) {
        byte[] name = new byte[256];
        check(d, d.cuDeviceGetName(name, name.length, device), "cuDeviceGetName");
        int len = 0;
        while (len < name.length && name[len] != 0) {
            len++;
        }
        return new String(name, 0, len, StandardCharsets.UTF_8) + " (sm_" + attribute(d, device, ATTR_COMPUTE_CAPABILITY_MAJOR)
                + attribute(d, device, ATTR_COMPUTE_CAPABILITY_MINOR) + ", " + attribute(d, device, ATTR_MULTIPROCESSOR_COUNT)
                + " SMs)";
    }

    static int attribute(CudaDriver d, int device, int attribute) {
        int[] v = new int[1];
        check(d, d.cuDeviceGetAttribute(v, attribute, device), "cuDeviceGetAttribute(" + attribute + ")");
        return v[0];
    }

    /**
     * Whether the CUDA backend can run here with this driver binding: kernels in the jar, the driver library loads,
     * {@code cuInit(0)} succeeds, the driver is new enough and there is at least one device.
     */
    static Availability probe(java.util.function.Supplier<CudaDriver> loader) {
        if (Cuda.class.getResource(FATBIN_RESOURCE) == null) {
            return Availability.no("this kvchecksum-kernels-cuda jar was built without kernels (-Dkvchecksum.skipCuda=true): "
                    + FATBIN_RESOURCE + " is missing");
        }
        CudaDriver d;
        try {
            d = loader.get();
        } catch (LinkageError | RuntimeException e) {
            return Availability.no(DRIVER_LIBRARY + " cannot be loaded (no NVIDIA driver on this machine, "
                    + System.getProperty("os.name") + "/" + System.getProperty("os.arch") + "): " + e.getMessage());
        }
        try {
            int rc = d.cuInit(0);
            if (rc != SUCCESS) {
                return Availability.no("cuInit(0) failed: " + errorName(d, rc));
            }
            int[] v = new int[1];
            check(d, d.cuDriverGetVersion(v), "cuDriverGetVersion");
            if (v[0] < MIN_DRIVER_VERSION) {
                return Availability.no("insufficient driver: it supports CUDA " + v[0] / 1000 + "." + v[0] % 1000 / 10
                        + ", the backend's kernels were built with CUDA 13 and need a CUDA 13.0 driver (580 series) or newer");
            }
            check(d, d.cuDeviceGetCount(v), "cuDeviceGetCount");
            if (v[0] == 0) {
                return Availability.no("no CUDA device (cuDeviceGetCount = 0)");
            }
            int driver = v[0];
            int[] dev = new int[1];
            check(d, d.cuDeviceGet(dev, 0), "cuDeviceGet(0)");
            check(d, d.cuDriverGetVersion(v), "cuDriverGetVersion");
            return Availability.yes(driver + " device(s); device 0: " + describeDevice(d, dev[0]) + "; driver CUDA "
                    + v[0] / 1000 + "." + v[0] % 1000 / 10);
        } catch (CudaException | LinkageError e) {
            return Availability.no("CUDA driver probe failed: " + e.getMessage());
        }
    }

    private static Availability cached;
    private static volatile CudaDriver driver;

    /** {@link #probe} with the real driver, computed once per JVM. */
    static synchronized Availability availability() {
        if (cached == null) {
            cached = probe(() -> driver = loadDriver());
        }
        return cached;
    }

    /** The real driver binding, once {@link #availability()} said yes. */
    static CudaDriver driver() {
        Availability a = availability();
        if (!a.available()) {
            throw new io.kvchecksum.BackendUnavailableException("backend 'cuda' is unavailable: " + a.reason());
        }
        return driver;
    }
}
