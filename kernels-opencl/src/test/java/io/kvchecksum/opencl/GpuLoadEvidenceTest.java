package io.kvchecksum.opencl;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The compiled evidence for the GPU build: PoCL is a CPU device, so the kernels are compiled here as a GPU compiler
 * would, by clang for {@code nvptx64-nvidia-nvcl} (clang-15 comes with Debian's PoCL package), with the GPU tuning's
 * defines, and the PTX of {@code block_checksums} is read: the most bytes of {@code ld.global} issued in one basic
 * block before any loaded register is used. The GPU tuning must reach 128 (eight 16-byte loads per work item); the
 * build before it ({@code KVC_ROWS_IN_FLIGHT} unset, {@code vload8} one row at a time) reaches 64, so the measure
 * tells them apart. Where CUDA's {@code ptxas} is present, the PTX is compiled for sm_90 and must not spill. NVIDIA's
 * own OpenCL compiler is not clang: the device check times the builds on the GPU (the module's README).
 */
class GpuLoadEvidenceTest {
    private static final String[] CLANGS = {"clang-15", "clang"};
    private static final String[] KERNELS = {"block_checksums", "block_checksums_mixed"};

    @Test
    void theGpuTuningHas128BytesOfLoadsInFlightPerWorkItem() throws Exception {
        String clang = clang();
        for (int rows : new int[] {1, 2, 4}) {
            Tuning t = Tuning.GPU.withRowsInFlight(rows);
            String ptx = ptx(clang, t.defines());
            for (String k : KERNELS) {
                int bytes = bytesInFlight(entry(ptx, k));
                System.out.println("GpuLoadEvidenceTest: " + k + ", " + rows + " rows in flight ('" + t.defines().strip()
                        + "'): " + bytes + " bytes of ld.global before the first use");
                if (rows == Tuning.GPU.rowsInFlight()) {
                    assertTrue(bytes >= 128, k + " of the GPU tuning: " + bytes + " bytes in flight, want >= 128");
                    assertTrue(entry(ptx, k).contains("ld.global.v2.u64"), k + ": no 16-byte loads");
                } else if (rows == 1) {
                    assertEquals(64, bytes, k + " of the build before KVC_ROWS_IN_FLIGHT");
                } else {
                    assertTrue(bytes >= 64 * rows, k + ", " + rows + " rows: " + bytes);
                }
            }
        }
    }

    @Test
    void theMeasureCountsLoadsUntilTheFirstUse() {
        String ptx = """
                $L__BB0_1:
                \tld.global.v2.u64 \t{%rd1, %rd2}, [%rd9];
                \tld.global.v2.u64 \t{%rd3, %rd4}, [%rd9+16];
                \tld.global.u32 \t%r1, [%rd8];
                \tadd.s64 \t%rd5, %rd1, %rd5;
                \tld.global.v2.u64 \t{%rd6, %rd7}, [%rd9+32];
                \tbra.uni \t$L__BB0_1;
                $L__BB0_2:
                \tld.global.u64 \t%rd10, [%rd9];
                \tld.global.u64 \t%rd11, [%rd10];
                """;
        assertEquals(36, bytesInFlight(ptx));
    }

    /** Where ptxas is here: the GPU tuning's block_checksums compiled for sm_90 spills nothing. */
    @Test
    void ptxasCompilesItWithoutSpills() throws Exception {
        Path ptxas = Path.of("/usr/local/cuda/bin/ptxas");
        Assumptions.assumeTrue(Files.isExecutable(ptxas), "no ptxas at " + ptxas + ": registers and spills not checked");
        String clang = clang();
        Path dir = Files.createTempDirectory("kvc-ptx");
        try {
            Path ptx = dir.resolve("k.ptx");
            Files.writeString(ptx, ptx(clang, Tuning.GPU.defines()));
            String out = run(List.of(ptxas.toString(), "-arch=sm_90", "-v", ptx.toString(), "-o",
                    dir.resolve("k.cubin").toString()));
            for (String k : KERNELS) {
                Matcher m = Pattern.compile("Compiling entry function '" + k + "'.*?(\\d+) bytes spill stores, (\\d+) bytes "
                        + "spill loads.*?Used (\\d+) registers", Pattern.DOTALL).matcher(out);
                assertTrue(m.find(), "no ptxas report for " + k + ":\n" + out);
                System.out.println("GpuLoadEvidenceTest: ptxas sm_90 " + k + ": " + m.group(3) + " registers, spills "
                        + m.group(1) + "/" + m.group(2) + " bytes");
                assertEquals("0", m.group(1), k + " spills: " + out);
                assertEquals("0", m.group(2), k + " spills: " + out);
            }
        } finally {
            try (var files = Files.list(dir)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(dir);
        }
    }

    /** clang with the nvptx64 target: skipped with the reason where there is none, failed in CI (PoCL brings it). */
    private static String clang() throws Exception {
        for (String c : CLANGS) {
            try {
                if (run(List.of(c, "-print-targets")).contains("nvptx64")) {
                    return c;
                }
            } catch (IOException e) {
                // not installed under this name
            }
        }
        String why = "no clang with the nvptx64 target (tried " + String.join(", ", CLANGS) + ")";
        if (OpenClTests.inCi()) {
            fail(why + "; Debian's pocl-opencl-icd depends on clang-15, so CI has one");
        }
        Assumptions.abort(why);
        return null;
    }

    /** The shipped kernels after the built-in stand-ins, compiled to PTX with {@code defines}; every function inlined. */
    private static String ptx(String clang, String defines) throws Exception {
        Path dir = Files.createTempDirectory("kvc-ptx");
        Path src = dir.resolve("kvchecksum.cl");
        Path out = dir.resolve("kvchecksum.ptx");
        try (InputStream in = GpuLoadEvidenceTest.class.getResourceAsStream("nvptx-prelude.cl")) {
            Files.writeString(src, new String(in.readAllBytes(), StandardCharsets.UTF_8) + "\n" + OpenClBackend.kernelSource());
            List<String> cmd = new ArrayList<>(List.of(clang, "-x", "cl", "-cl-std=CL1.2", "-target", "nvptx64-nvidia-nvcl",
                    "-Xclang", "-finclude-default-header", "-O3", "-S", "-Dinline=__attribute__((always_inline)) inline"));
            if (!defines.isBlank()) {
                cmd.addAll(List.of(defines.strip().split("\\s+")));
            }
            cmd.addAll(List.of(src.toString(), "-o", out.toString()));
            run(cmd);
            return Files.readString(out);
        } finally {
            Files.deleteIfExists(src);
            Files.deleteIfExists(out);
            Files.delete(dir);
        }
    }

    private static String run(List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), String.join(" ", cmd) + " did not finish");
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ":\n" + out);
        return out;
    }

    /** The body of PTX entry {@code name}. */
    static String entry(String ptx, String name) {
        int at = ptx.indexOf(".entry " + name + "(");
        assertTrue(at >= 0, "no entry " + name);
        int end = ptx.indexOf("\n}\n", at);
        return ptx.substring(at, end < 0 ? ptx.length() : end);
    }

    private static final Pattern REG = Pattern.compile("%[a-zA-Z]+\\d+");
    private static final Pattern LOAD = Pattern.compile("^(?:@!?%p\\d+\\s+)?ld\\.global(\\S*)\\s+(.*)$");

    /**
     * The most bytes of {@code ld.global} (any variant: vector, non-coherent, predicated) issued in one basic block
     * before an instruction reads a register one of them loaded (a load addressed by such a register counts as a use).
     * Blocks end at labels and branches.
     */
    static int bytesInFlight(String ptx) {
        int best = 0;
        int bytes = 0;
        boolean used = false;
        Set<String> pending = new HashSet<>();
        for (String raw : ptx.split("\n")) {
            String line = raw.replaceFirst("//.*", "").strip();
            if (line.isEmpty()) {
                continue;
            }
            if (line.endsWith(":") || line.matches("^(?:@!?%p\\d+\\s+)?(bra|ret|exit)\\b.*")) {
                pending.clear();
                bytes = 0;
                used = false;
                continue;
            }
            if (used) {
                continue;
            }
            Matcher ld = LOAD.matcher(line);
            Set<String> read = new HashSet<>();
            List<String> loaded = new ArrayList<>();
            if (ld.matches()) {
                String ops = ld.group(2);
                int bracket = ops.indexOf('[');
                registers(ops.substring(bracket), read);
                Matcher r = REG.matcher(ops.substring(0, bracket));
                while (r.find()) {
                    loaded.add(r.group());
                }
            } else {
                registers(line, read);
            }
            read.retainAll(pending);
            if (!read.isEmpty()) {
                used = true;
                continue;
            }
            if (ld.matches()) {
                bytes += loaded.size() * elementBytes(ld.group(1));
                pending.addAll(loaded);
                best = Math.max(best, bytes);
            }
        }
        return best;
    }

    private static void registers(String s, Set<String> into) {
        Matcher r = REG.matcher(s);
        while (r.find()) {
            into.add(r.group());
        }
    }

    /** Bytes per destination register of a load's type suffix ({@code .v2.u64}: 8, twice). */
    private static int elementBytes(String suffix) {
        Matcher m = Pattern.compile("[usbf](8|16|32|64)$").matcher(suffix);
        assertTrue(m.find(), "type of ld.global" + suffix);
        return Integer.parseInt(m.group(1)) / 8;
    }
}
