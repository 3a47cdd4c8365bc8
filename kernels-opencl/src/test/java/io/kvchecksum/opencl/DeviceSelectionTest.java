package io.kvchecksum.opencl;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.spi.BackendProvider.Availability;
import io.kvchecksum.spi.BackendProvider;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Device discovery, selection by index or name, and registration with {@link KvChecksums}. */
class DeviceSelectionTest {

    @Test
    void devicesAreSelectableByIndexAndByName() {
        OpenClTests.requireOpenCl();
        List<OpenClDevice> all = OpenClDevices.list();
        System.out.println("OpenCL devices: " + all);
        assertFalse(all.isEmpty());
        OpenClDevice first = all.get(0);
        assertEquals(first, OpenClDevices.select(first.index()).info());
        assertEquals(first, OpenClDevices.select(first.deviceName().toUpperCase(java.util.Locale.ROOT)).info());
    }

    @Test
    void theDefaultIsTheFirstGpuElseTheFirstCpu() {
        OpenClTests.requireOpenCl();
        List<OpenClDevice> all = OpenClDevices.list();
        OpenClDevice expected = all.stream().filter(d -> d.type().equals("GPU") && d.problem() == null).findFirst()
                .orElseGet(() -> all.stream().filter(d -> d.type().equals("CPU") && d.problem() == null).findFirst().orElseThrow());
        assertEquals(expected, OpenClDevices.select(null).info());
    }

    @Test
    void unknownDevicesAreNamedInTheError() {
        OpenClTests.requireOpenCl();
        OpenClException e = assertThrows(OpenClException.class, () -> OpenClDevices.select("no-such-device-xyzzy"));
        assertTrue(e.getMessage().contains("no OpenCL device matches 'no-such-device-xyzzy'") && e.getMessage().contains("found:"),
                e.getMessage());
        e = assertThrows(OpenClException.class, () -> OpenClDevices.select("97:3"));
        assertTrue(e.getMessage().contains("'97:3'"), e.getMessage());
    }

    @Test
    void theBackendIsRegisteredAndSaysWhereItRuns() {
        OpenClTests.requireOpenCl();
        Availability a = KvChecksums.status().get("opencl");
        assertTrue(a.available(), a.reason());
        try (KvChecksum k = KvChecksums.byName("opencl")) {
            assertEquals("opencl", k.name());
            OpenClDevice d = ((OpenClBackend) k.backend()).device();
            assertTrue(k.description().contains(d.deviceName()), k.description());
            System.out.println(k.description());
        }
    }

    @Test
    void aCpuDeviceDoesNotOutrankTheJavaCpuBackend() {
        OpenClTests.requireOpenCl();
        OpenClDevice d = OpenClDevices.select(OpenClDevices.configuredSpec()).info();
        int priority = new OpenClProvider().priority();
        assertEquals(d.type().equals("CPU") ? 90 : 200, priority, d.toString());
        assertTrue(d.type().equals("CPU") == priority < BackendProvider.CPU_PRIORITY, "a CPU device ranks below the Java CPU backend");
    }
}
