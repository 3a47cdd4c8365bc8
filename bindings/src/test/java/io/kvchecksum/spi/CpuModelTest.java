package io.kvchecksum.spi;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CpuModelTest {
    private static final List<String> EMERALD_RAPIDS = List.of("processor\t: 0", "vendor_id\t: GenuineIntel",
            "cpu family\t: 6", "model\t\t: 207");
    private static final List<String> ZEN5 = List.of("processor\t: 0", "vendor_id\t: AuthenticAMD",
            "cpu family\t: 26", "model\t\t: 2");

    @Test
    void tellsTheVendorAndTheAmdFamilyFromCpuinfoLines() {
        assertTrue(CpuModel.intel(EMERALD_RAPIDS));
        assertFalse(CpuModel.intel(ZEN5));
        assertTrue(CpuModel.amdFamily(ZEN5, 26));
        assertFalse(CpuModel.amdFamily(ZEN5, 25), "another family");
        assertFalse(CpuModel.amdFamily(EMERALD_RAPIDS, 6), "family 6 of Intel is no AMD family");
        assertFalse(CpuModel.amdFamily(List.of("cpu family\t: 26"), 26), "no vendor line");
    }

    @Test
    void unreadableCpuinfoKnowsNoVendor() {
        assertFalse(CpuModel.intel(List.of()));
        assertFalse(CpuModel.amdFamily(List.of(), 25));
    }

    @Test
    void thisMachinesLinesAreReadOnceAndNameAtMostOneVendor() {
        List<String> lines = CpuModel.cpuinfo();
        assertTrue(lines == CpuModel.cpuinfo(), "read once");
        assertFalse(CpuModel.intel(lines) && (CpuModel.amdFamily(lines, 25) || CpuModel.amdFamily(lines, 26)));
    }
}
