package io.kvchecksum.cuda;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Static evidence, without a GPU, that the fused kernel can keep HBM busy (docs/gpu-performance.md turns these numbers
 * into bandwidth expectations). The build (src/build/build-cuda.sh) writes next to the host test library the
 * compute_90 PTX, the sm_90 {@code ptxas -v} report and, where {@code cuobjdump} exists, the sm_90 SASS; this test
 * reads them:
 * <ul>
 *   <li>PTX: somewhere in {@code kvc_block_checksums_16b} (and {@code _8b}) at least {@link #MIN_LOADS_IN_FLIGHT}
 *       global loads of 16 (8) bytes are issued back to back, into distinct registers, before any of them is read;
 *   <li>ptxas: no spill stores or loads, and registers within the launch bounds (2 CTAs of 256 threads per SM), from
 *       which the bytes in flight per SM follow;
 *   <li>SASS (if present): the same count of {@code LDG.E*.128} before the first use of their registers.
 * </ul>
 */
class PtxEvidenceTest {
    static final int MIN_LOADS_IN_FLIGHT = 8;
    /** Registers per SM on sm_90, and the CTAs per SM the fused kernels' launch bounds ask for. */
    static final int REGISTERS_PER_SM = 65536;
    static final int MIN_CTAS_PER_SM = 2;
    /** What the issue asks of every shape large enough to fill the GPU. */
    static final long MIN_BYTES_IN_FLIGHT_PER_SM = 32 * 1024;

    private static Path evidence(String file) {
        Path dir = Path.of(System.getProperty("kvchecksum.cuda.hostlib", "target/native/libkvchecksum_host.so")).getParent();
        Path p = dir.resolve(file);
        if (!Files.isRegularFile(p)) {
            assumeTrue(!Boolean.getBoolean("kvchecksum.skipCuda"), "CUDA was skipped (-Dkvchecksum.skipCuda=true): no " + p);
            fail(p + " is missing although CUDA was not skipped: build-cuda.sh did not write its evidence");
        }
        return p;
    }

    /** The body of {@code .entry name} in a PTX file, one instruction or label per element. */
    static List<String> ptxEntry(String ptx, String name) {
        int at = ptx.indexOf(".entry " + name + "(");
        assertTrue(at >= 0, "no .entry " + name + " in the PTX");
        int open = ptx.indexOf('{', at);
        int depth = 0;
        int end = open;
        for (int i = open; i < ptx.length(); i++) {
            char c = ptx.charAt(i);
            if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                end = i;
                break;
            }
        }
        List<String> out = new ArrayList<>();
        for (String line : ptx.substring(open + 1, end).split("\n")) {
            String l = line.strip();
            int comment = l.indexOf("//");
            if (comment >= 0) {
                l = l.substring(0, comment).strip();
            }
            if (!l.isEmpty() && !l.startsWith(".")) {
                out.add(l);
            }
        }
        return out;
    }

    private static final Pattern PTX_REG = Pattern.compile("%[a-z]+\\d+");

    /**
     * The most global loads matching {@code load} issued in a row, in straight-line code, before any instruction reads
     * a register one of them wrote (instructions in between that touch other registers, address arithmetic for
     * instance, are allowed; a label or branch ends the run).
     */
    static int maxLoadsBeforeFirstUse(List<String> body, Pattern load) {
        int best = 0;
        int run = 0;
        Set<String> pending = new HashSet<>();
        for (String ins : body) {
            if (ins.endsWith(":") || ins.contains("bra") || ins.startsWith("ret") || ins.contains("bar.sync")) {
                run = 0;
                pending.clear();
                continue;
            }
            if (load.matcher(ins).find()) {
                int bracket = ins.indexOf('[');
                String dests = ins.substring(0, bracket);
                String addr = ins.substring(bracket);
                if (reads(addr, pending)) {
                    run = 0;
                    pending.clear();
                }
                Matcher m = PTX_REG.matcher(dests);
                while (m.find()) {
                    pending.add(m.group());
                }
                best = Math.max(best, ++run);
                continue;
            }
            // Any other instruction: its sources are everything after the first operand.
            int space = ins.indexOf(' ');
            int comma = ins.indexOf(',');
            String sources = comma > 0 ? ins.substring(comma) : space > 0 ? ins.substring(space) : "";
            if (reads(sources, pending)) {
                run = 0;
                pending.clear();
            }
        }
        return best;
    }

    private static boolean reads(String operands, Set<String> regs) {
        Matcher m = PTX_REG.matcher(operands);
        while (m.find()) {
            if (regs.contains(m.group())) {
                return true;
            }
        }
        return false;
    }

    @Test
    void theFusedLoopIssuesEightIndependentWideLoadsBeforeTheFirstUse() throws IOException {
        String ptx = Files.readString(evidence("kvchecksum_sm90.ptx"));
        int v16 = maxLoadsBeforeFirstUse(ptxEntry(ptx, CudaBackend.BLOCK_CHECKSUMS_16B), Pattern.compile("^ld\\.global(\\.[a-z]+)*\\.v2\\.u64\\b"));
        int v8 = maxLoadsBeforeFirstUse(ptxEntry(ptx, CudaBackend.BLOCK_CHECKSUMS_8B), Pattern.compile("^ld\\.global(\\.[a-z]+)*\\.u64\\b"));
        System.out.println("PTX compute_90: " + v16 + " independent 16-byte loads in a row in " + CudaBackend.BLOCK_CHECKSUMS_16B
                + ", " + v8 + " 8-byte loads in " + CudaBackend.BLOCK_CHECKSUMS_8B);
        assertTrue(v16 >= MIN_LOADS_IN_FLIGHT, CudaBackend.BLOCK_CHECKSUMS_16B + ": only " + v16 + " 16-byte loads before the first use");
        assertTrue(v8 >= MIN_LOADS_IN_FLIGHT, CudaBackend.BLOCK_CHECKSUMS_8B + ": only " + v8 + " 8-byte loads before the first use");
    }

    /** The parser itself: one load used at once is a run of 1, eight loads then their adds a run of 8. */
    @Test
    void theLoadCounterCountsOnlyLoadsBeforeTheirUse() {
        Pattern v2 = Pattern.compile("^ld\\.global(\\.[a-z]+)*\\.v2\\.u64\\b");
        List<String> serial = new ArrayList<>();
        List<String> batched = new ArrayList<>();
        for (int k = 0; k < 8; k++) {
            serial.add("ld.global.cs.v2.u64 {%rd" + (2 * k) + ", %rd" + (2 * k + 1) + "}, [%rd" + (100 + k) + "];");
            serial.add("add.s64 %rd50, %rd50, %rd" + (2 * k) + ";");
            batched.add("ld.global.cs.v2.u64 {%rd" + (2 * k) + ", %rd" + (2 * k + 1) + "}, [%rd" + (100 + k) + "];");
            batched.add("add.s64 %rd" + (101 + k) + ", %rd" + (100 + k) + ", 16;");
        }
        for (int k = 0; k < 8; k++) {
            batched.add("add.s64 %rd50, %rd50, %rd" + (2 * k) + ";");
        }
        assertEquals(1, maxLoadsBeforeFirstUse(serial, v2));
        assertEquals(8, maxLoadsBeforeFirstUse(batched, v2));
    }

    record Ptxas(int registers, int spillStores, int spillLoads) {
    }

    static Ptxas ptxas(String report, String kernel) {
        int at = report.indexOf("Function properties for " + kernel + "\n");
        assertTrue(at >= 0, "no ptxas report for " + kernel);
        Matcher spill = Pattern.compile("(\\d+) bytes spill stores, (\\d+) bytes spill loads").matcher(report);
        Matcher regs = Pattern.compile("Used (\\d+) registers").matcher(report);
        assertTrue(spill.find(at) && regs.find(at), "unreadable ptxas report for " + kernel);
        return new Ptxas(Integer.parseInt(regs.group(1)), Integer.parseInt(spill.group(1)), Integer.parseInt(spill.group(2)));
    }

    /** CTAs of 256 threads that fit one SM by registers (allocated per warp in units of 256, i.e. per thread in 8s). */
    static int ctasPerSmByRegisters(int registers) {
        int perThread = (registers + 7) / 8 * 8;
        return REGISTERS_PER_SM / (perThread * LaunchPlanner.THREADS);
    }

    @Test
    void noSpillsAndRegistersWithinTheLaunchBounds() throws IOException {
        String report = Files.readString(evidence("ptxas_sm90.txt"));
        for (String k : List.of(CudaBackend.BLOCK_CHECKSUMS_16B, CudaBackend.BLOCK_CHECKSUMS_8B, CudaBackend.BLOCK_CHECKSUMS_1B,
                CudaBackend.sliceSums(CudaBackend.BLOCK_CHECKSUMS_16B), CudaBackend.sliceSums(CudaBackend.BLOCK_CHECKSUMS_8B),
                CudaBackend.sliceSums(CudaBackend.BLOCK_CHECKSUMS_1B))) {
            Ptxas r = ptxas(report, k);
            int ctas = ctasPerSmByRegisters(r.registers());
            long inFlight = (long) ctas * LaunchPlanner.THREADS * MIN_LOADS_IN_FLIGHT * 16;
            System.out.printf("ptxas sm_90 %s: %d registers, spills %d/%d bytes, %d CTAs/SM by registers, %d KiB in flight per SM%n",
                    k, r.registers(), r.spillStores(), r.spillLoads(), ctas, inFlight / 1024);
            assertEquals(0, r.spillStores() + r.spillLoads(), k + " spills");
            assertTrue(ctas >= MIN_CTAS_PER_SM, k + ": " + r.registers() + " registers allow only " + ctas + " CTAs per SM");
            if (k.equals(CudaBackend.BLOCK_CHECKSUMS_16B)) {
                assertTrue(inFlight >= MIN_BYTES_IN_FLIGHT_PER_SM, k + ": " + inFlight + " bytes in flight per SM");
            }
        }
    }

    private static final Pattern SASS_LDG128 = Pattern.compile("\\bLDG\\.E[.A-Z0-9]*\\.128\\s+R(\\d+)");
    private static final Pattern SASS_REG = Pattern.compile("\\bR(\\d+)\\b");

    /** The SASS check, when the build found cuobjdump (CUDA toolkits without it skip with that reason). */
    @Test
    void sassKeepsTheLoadsTogether() throws IOException {
        Path dir = evidence("ptxas_sm90.txt").getParent();
        Path sass = dir.resolve("kvchecksum_sm90.sass");
        assumeTrue(Files.isRegularFile(sass), "no SASS: cuobjdump is not part of this CUDA toolkit (" + sass + ")");
        String all = Files.readString(sass);
        int at = all.indexOf("Function : " + CudaBackend.BLOCK_CHECKSUMS_16B);
        assertTrue(at >= 0, "no SASS for " + CudaBackend.BLOCK_CHECKSUMS_16B);
        int end = all.indexOf("Function : ", at + 10);
        int best = 0;
        int run = 0;
        Set<Integer> pending = new HashSet<>();
        for (String line : all.substring(at, end < 0 ? all.length() : end).split("\n")) {
            int semi = line.indexOf(';');
            int slash = line.indexOf("*/");
            if (semi < 0 || slash < 0 || slash > semi) {
                continue;
            }
            String ins = line.substring(slash + 2, semi).strip();
            if (ins.startsWith("BRA") || ins.startsWith("EXIT") || ins.startsWith("BAR")) {
                run = 0;
                pending.clear();
                continue;
            }
            Matcher ld = SASS_LDG128.matcher(ins);
            int comma = ins.indexOf(',');
            Matcher src = SASS_REG.matcher(comma > 0 ? ins.substring(comma) : "");
            boolean uses = false;
            while (src.find()) {
                uses |= pending.contains(Integer.parseInt(src.group(1)));
            }
            if (uses) {
                run = 0;
                pending.clear();
            }
            if (ld.find()) {
                int r = Integer.parseInt(ld.group(1));
                for (int i = 0; i < 4; i++) {
                    pending.add(r + i);
                }
                best = Math.max(best, ++run);
            }
        }
        System.out.println("SASS sm_90: " + best + " LDG.128 in a row before their first use in " + CudaBackend.BLOCK_CHECKSUMS_16B);
        assertTrue(best >= MIN_LOADS_IN_FLIGHT, "SASS: only " + best + " 128-bit loads before the first use");
    }
}
