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

    static Path evidence(String file) {
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

    /** Bytes per thread that every batch of data loads must have issued before the first is used (issue 27). */
    static final int MIN_BYTES_BEFORE_FIRST_USE = 128;

    /**
     * Every kernel that reads KV data: block checksums and slice sums, all widths and modes, byte cells, both variants,
     * and the verifying copy's kernels.
     */
    static List<String> checksumKernels() {
        List<String> out = new ArrayList<>();
        for (String k : CudaBackend.KERNELS) {
            if (k.contains("block_checksums") || k.contains("slice_sums")) {
                out.add(k);
            }
        }
        for (String k : CudaBackend.VARIANT_KERNELS) {
            out.add(k + CudaBackend.variantSuffix(CudaBackend.VARIANT_OCCUPANCY3));
        }
        out.addAll(CudaBackend.COPY_KERNELS);  // the verifying copy's: the same bound on loads, registers and spills
        return out;
    }

    private static final Pattern PTX_GLOBAL_LOAD = Pattern.compile("^(@!?%?\\w+\\s+)?ld\\.global((\\.[a-z0-9]+)*)\\s");

    /** {@return the bytes one PTX global load moves per thread, from its type and vector width; 0 if not a global load} */
    static int ptxLoadBytes(String ins) {
        Matcher m = PTX_GLOBAL_LOAD.matcher(ins);
        if (!m.find()) {
            return 0;
        }
        int vec = 1;
        int bits = 0;
        for (String q : m.group(2).substring(1).split("\\.")) {
            if (q.matches("v[248]")) {
                vec = q.charAt(1) - '0';
            } else if (q.matches("[usbf](8|16|32|64)")) {
                bits = Integer.parseInt(q.substring(1));
            }
        }
        assertTrue(bits > 0, "no type in " + ins);
        return vec * bits / 8;
    }

    /** {@return whether a PTX load reads the KV data: streamed ({@code .cs}), not a page id or descriptor} */
    static boolean isDataLoad(String ins) {
        Matcher m = PTX_GLOBAL_LOAD.matcher(ins);
        return m.find() && m.group(2).contains(".cs");
    }

    /**
     * The basic blocks of a PTX body (a label starts one; a branch, return, barrier or exit ends one), and for each that
     * holds a data load ({@link #isDataLoad}) the most bytes of global loads issued in it before any instruction reads a
     * register one of them wrote (instructions in between that touch other registers, address arithmetic for
     * instance, are allowed). Inline assembly's braces and {@code .reg} lines are neither.
     */
    static List<Integer> dataBlocksBytesBeforeFirstUse(List<String> body) {
        List<Integer> out = new ArrayList<>();
        int best = 0;
        int run = 0;
        boolean data = false;
        Set<String> pending = new HashSet<>();
        for (String ins : body) {
            boolean label = ins.endsWith(":");
            boolean ends = label || ins.matches("^(@!?%?\\w+\\s+)?(bra|ret|exit|bar|barrier)\\b.*");
            if (ends) {
                if (data) {
                    out.add(best);
                }
                best = 0;
                run = 0;
                data = false;
                pending.clear();
                continue;
            }
            if (ins.equals("{") || ins.equals("}")) {
                continue;
            }
            int bytes = ptxLoadBytes(ins);
            if (bytes > 0) {
                int bracket = ins.indexOf('[');
                String dests = ins.substring(0, bracket);
                if (reads(ins.substring(bracket), pending)) {
                    run = 0;
                    pending.clear();
                }
                Matcher m = PTX_REG.matcher(dests);
                while (m.find()) {
                    pending.add(m.group());
                }
                run += bytes;
                best = Math.max(best, run);
                data |= isDataLoad(ins);
                continue;
            }
            // Any other instruction: its sources are everything after the first operand (a guard predicate aside).
            String plain = ins.replaceFirst("^@!?%?\\w+\\s+", "");
            int space = plain.indexOf(' ');
            int comma = plain.indexOf(',');
            String sources = comma > 0 ? plain.substring(comma) : space > 0 ? plain.substring(space) : "";
            if (reads(sources, pending)) {
                run = 0;
                pending.clear();
            }
        }
        if (data) {
            out.add(best);
        }
        return out;
    }

    /**
     * Every kernel that reads KV data, the byte-cell kernels included, every basic block of it that loads data: at least
     * {@link #MIN_BYTES_BEFORE_FIRST_USE}
     * bytes of loads issued before the first is used. There is no block with fewer, so no one-load-at-a-time loop
     * for short cells, partial blocks or tails either: one batched loop serves every cell size.
     */
    @Test
    void everyDataLoadBlockIssues128BytesBeforeTheFirstUse() throws IOException {
        String ptx = Files.readString(evidence("kvchecksum_sm90.ptx"));
        List<String> failures = new ArrayList<>();
        for (String k : checksumKernels()) {
            List<Integer> blocks = dataBlocksBytesBeforeFirstUse(ptxEntry(ptx, k));
            int min = blocks.stream().mapToInt(Integer::intValue).min().orElse(0);
            System.out.printf("PTX compute_90 %-40s %d data-load blocks, bytes before first use per thread: %s (min %d)%n",
                    k, blocks.size(), blocks, min);
            if (blocks.isEmpty() || min < MIN_BYTES_BEFORE_FIRST_USE) {
                failures.add(k + ": " + blocks);
            }
        }
        assertTrue(failures.isEmpty(), "data-load blocks under " + MIN_BYTES_BEFORE_FIRST_USE + " bytes before the first use: " + failures);
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
        assertEquals(List.of(16), dataBlocksBytesBeforeFirstUse(serial));
        assertEquals(List.of(128), dataBlocksBytesBeforeFirstUse(batched));
        // Predicated loads (inline assembly) count; a label splits the batch; page-id loads alone are no data block.
        List<String> predicated = new ArrayList<>();
        for (int k = 0; k < 16; k++) {
            predicated.add("{");
            predicated.add("setp.ne.u64 q, %rd" + (100 + k) + ", 0;");
            predicated.add("@q ld.global.cs.u64 %rd" + k + ", [%rd" + (100 + k) + "];");
            predicated.add("@!q mov.b64 %rd" + k + ", 0;");
            predicated.add("}");
            if (k == 11) {
                predicated.add("$L__BB0_3:");
            }
        }
        predicated.add("add.s64 %rd50, %rd50, %rd0;");
        predicated.add("ld.global.nc.u32 %r1, [%rd60];");
        predicated.add("$L__BB0_4:");
        predicated.add("ld.global.nc.u32 %r2, [%rd61];");
        predicated.add("mul.lo.s32 %r3, %r2, 4;");
        assertEquals(List.of(96, 36), dataBlocksBytesBeforeFirstUse(predicated));
        assertEquals(16, ptxLoadBytes("@%p3 ld.global.cs.v4.u32 {%r1, %r2, %r3, %r4}, [%rd9];"));
        assertEquals(1, ptxLoadBytes("ld.global.u8 %rs1, [%rd9];"));
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

    /** SMs of an H200 (and H100 SXM), for the occupancy figures printed with the report. */
    static final int H200_SMS = 132;

    /**
     * ptxas for every kernel that reads KV data: registers, spills and the CTAs per SM the registers allow (H200: 64 K
     * registers per SM), printed with the bytes in flight per SM and per GPU that follow from 128 bytes per thread.
     * The default variants and the byte-cell kernels: no spills, and at least their launch bounds' CTAs per SM. The
     * {@code _occ3} variants are reported, not gated: they are the alternative the device check measures, and ptxas
     * fits their batch into 80 registers only by spilling (reported here so that the measurement can be read).
     */
    @Test
    void noSpillsAndRegistersWithinTheLaunchBounds() throws IOException {
        String report = Files.readString(evidence("ptxas_sm90.txt"));
        List<String> failures = new ArrayList<>();
        for (String k : checksumKernels()) {
            Ptxas r = ptxas(report, k);
            int ctas = ctasPerSmByRegisters(r.registers());
            long inFlight = (long) ctas * LaunchPlanner.THREADS * MIN_BYTES_BEFORE_FIRST_USE;
            System.out.printf("ptxas sm_90 %-40s %3d registers, spills %d/%d bytes, %d CTAs/SM by registers (%d threads), "
                    + "%d KiB in flight per SM, %.1f MiB per H200%n", k, r.registers(), r.spillStores(), r.spillLoads(), ctas,
                    ctas * LaunchPlanner.THREADS, inFlight / 1024, inFlight * H200_SMS / 1048576.0);
            boolean occ3 = k.endsWith(CudaBackend.variantSuffix(CudaBackend.VARIANT_OCCUPANCY3));
            if (occ3) {
                continue;
            }
            if (r.spillStores() + r.spillLoads() != 0) {
                failures.add(k + " spills " + r.spillStores() + "/" + r.spillLoads());
            }
            if (ctas < MIN_CTAS_PER_SM) {
                failures.add(k + ": " + r.registers() + " registers allow only " + ctas + " CTAs per SM");
            }
            if (k.equals(CudaBackend.BLOCK_CHECKSUMS_16B) && inFlight < MIN_BYTES_IN_FLIGHT_PER_SM) {
                failures.add(k + ": " + inFlight + " bytes in flight per SM");
            }
        }
        assertTrue(failures.isEmpty(), String.join("; ", failures));
    }

    /**
     * The staged copy's kernels ({@code kvc_copy_staged[_mixed]}, one CTA per staging unit in shared memory): no
     * spills, registers for their launch bounds' 2 CTAs per SM (shared memory allows 3 of Llama-3-8B's 64 KiB units on
     * an H100, registers 2), and one barrier, the one between reading the unit and writing it.
     */
    @Test
    void stagedCopyKernelsNeitherSpillNorExceedTheirBounds() throws IOException {
        String report = Files.readString(evidence("ptxas_sm90.txt"));
        for (String k : List.of(CudaBackend.COPY_STAGED, CudaBackend.COPY_STAGED + CudaBackend.MIXED_SUFFIX)) {
            Ptxas r = ptxas(report, k);
            System.out.printf("ptxas sm_90 %-40s %3d registers, spills %d/%d bytes%n", k, r.registers(), r.spillStores(),
                    r.spillLoads());
            assertEquals(0, r.spillStores() + r.spillLoads(), k + " spills");
            assertTrue(ctasPerSmByRegisters(r.registers()) >= 2, k + ": " + r.registers() + " registers");
            Matcher barriers = Pattern.compile("Used \\d+ registers, used (\\d+) barriers").matcher(report);
            assertTrue(barriers.find(report.indexOf("Function properties for " + k + "\n")), "no barrier count for " + k);
            assertEquals(1, Integer.parseInt(barriers.group(1)), k + " barriers");
        }
    }

    private static final Pattern SASS_LDG = Pattern.compile("\\bLDG\\.E((?:\\.[A-Z0-9]+)*)\\s+R(\\d+)");
    private static final Pattern SASS_REG = Pattern.compile("\\bR(\\d+)\\b");

    /** {@return bytes and registers of an {@code LDG}'s width suffix: .128, .64, .U8 and so on, 32 bits by default} */
    static int sassLoadBytes(String suffixes) {
        for (String q : suffixes.split("\\.")) {
            switch (q) {
                case "128": return 16;
                case "64": return 8;
                case "U8", "S8": return 1;
                case "U16", "S16": return 2;
                default: break;
            }
        }
        return 4;
    }

    /**
     * The SASS check, when the build found cuobjdump (CUDA toolkits without it skip with that reason): in every kernel
     * that reads KV data, some straight run of {@code LDG}s issues at least {@link #MIN_BYTES_BEFORE_FIRST_USE} bytes
     * before an instruction reads a register one of them wrote.
     */
    @Test
    void sassKeepsTheLoadsTogether() throws IOException {
        Path dir = evidence("ptxas_sm90.txt").getParent();
        Path sass = dir.resolve("kvchecksum_sm90.sass");
        assumeTrue(Files.isRegularFile(sass), "no SASS: neither cuobjdump nor nvdisasm is part of this CUDA toolkit (" + sass + ")");
        String all = Files.readString(sass);
        List<String> failures = new ArrayList<>();
        for (String k : checksumKernels()) {
            int at = all.indexOf("Function : " + k + "\n");
            assertTrue(at >= 0, "no SASS for " + k);
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
                String ins = line.substring(slash + 2, semi).strip().replaceFirst("^@!?U?P\\w+\\s+", "");
                if (ins.startsWith("BRA") || ins.startsWith("EXIT") || ins.startsWith("BAR") || ins.startsWith("RET")) {
                    run = 0;
                    pending.clear();
                    continue;
                }
                Matcher ld = SASS_LDG.matcher(ins);
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
                    int bytes = sassLoadBytes(ld.group(1));
                    int r = Integer.parseInt(ld.group(2));
                    for (int i = 0; i < Math.max(1, bytes / 4); i++) {
                        pending.add(r + i);
                    }
                    run += bytes;
                    best = Math.max(best, run);
                }
            }
            System.out.printf("SASS sm_90 %-40s %d bytes of LDG in a row before their first use%n", k, best);
            if (best < MIN_BYTES_BEFORE_FIRST_USE) {
                failures.add(k + ": " + best);
            }
        }
        assertTrue(failures.isEmpty(), "SASS: under " + MIN_BYTES_BEFORE_FIRST_USE + " bytes before the first use: " + failures);
    }
}
