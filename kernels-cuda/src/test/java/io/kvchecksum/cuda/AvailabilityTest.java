package io.kvchecksum.cuda;

import io.kvchecksum.BackendUnavailableException;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.spi.BackendProvider.Availability;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class AvailabilityTest {
    private static FakeCudaDriver fake() {
        return new FakeCudaDriver(null);  // the probe launches nothing
    }

    private static void requireKernels() {
        assumeTrue(Cuda.fatbin() != null, "built with -Dkvchecksum.skipCuda=true: no kernels in the jar");
    }

    @Test
    void missingLibraryIsReportedWithTheReason() {
        requireKernels();
        Availability a = Cuda.probe(() -> {
            throw new UnsatisfiedLinkError("Unable to load library 'libcuda.so.1'");
        });
        assertFalse(a.available());
        assertTrue(a.reason().contains("libcuda.so.1") && a.reason().contains("no NVIDIA driver"), a.reason());
    }

    @Test
    void cuInitFailureNamesTheError() {
        requireKernels();
        FakeCudaDriver f = fake();
        f.initResult = FakeCudaDriver.NO_DEVICE;
        Availability a = Cuda.probe(() -> f);
        assertFalse(a.available());
        assertEquals("cuInit(0) failed: CUDA_ERROR_NO_DEVICE", a.reason());
    }

    @Test
    void noDeviceAndOldDriverAreReported() {
        requireKernels();
        FakeCudaDriver f = fake();
        f.deviceCount = 0;
        assertTrue(Cuda.probe(() -> f).reason().contains("no CUDA device"));
        FakeCudaDriver old = fake();
        // a CUDA 12.8 driver loads the library but not a CUDA 13 fatbin: refused when probed, naming both versions
        old.driverVersion = 12080;
        Availability a = Cuda.probe(() -> old);
        assertFalse(a.available());
        assertTrue(a.reason().contains("insufficient driver") && a.reason().contains("12.8")
                && a.reason().contains("CUDA 13.0"), a.reason());
    }

    @Test
    void aWorkingDriverIsAvailable() {
        requireKernels();
        Availability a = Cuda.probe(AvailabilityTest::fake);
        assertTrue(a.available(), a.reason());
        assertTrue(a.reason().contains("Fake CPU-simulated GPU"), a.reason());
    }

    @Test
    void theRealMachineEitherHasCudaOrSaysWhyNot() {
        Availability a = CudaBackend.availability();
        assertFalse(a.reason() == null || a.reason().isBlank(), "availability must carry a reason or a description");
        assertEquals(a, KvChecksums.status().get("cuda"), "the provider is registered and reports the same availability");
        if (!a.available()) {
            BackendUnavailableException e = assertThrows(BackendUnavailableException.class, () -> KvChecksums.byName("cuda"));
            assertTrue(e.getMessage().contains(a.reason()), e.getMessage());
            assertFalse(KvChecksums.fastest().name().equals("cuda"), "fastest() must not pick an unavailable backend");
        }
    }
}
