package io.kvchecksum.spi;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The CPU this JVM runs on, as the CPU backend tells CPUs apart where a loop measured faster on one than on another:
 * by {@code /proc/cpuinfo}'s vendor and family. The read bound of the benchmarks ({@code io.kvchecksum.bench
 * .MemoryBound}) asks here too, so that the backend's choices and the bound's rest on one reading. Where
 * {@code /proc/cpuinfo} cannot be read (not Linux) no vendor is known and every choice takes its default. The choices
 * only pick among loops that give the same checksums; none of them changes a result.
 */
public final class CpuModel {
    /** The lines read: the first processor's entry, which names vendor and family, is well within them. */
    private static final int LINES = 40;
    private static final List<String> THIS_CPU = read();

    private CpuModel() {
    }

    /** {@return the first lines of this machine's {@code /proc/cpuinfo} (read once), empty where it cannot be read} */
    public static List<String> cpuinfo() {
        return THIS_CPU;
    }

    /** {@return whether this machine's CPU is Intel's ({@code vendor_id: GenuineIntel})} */
    public static boolean intel() {
        return intel(THIS_CPU);
    }

    /**
     * {@return whether {@code cpuinfo} names an Intel CPU}
     *
     * @param cpuinfo lines of {@code /proc/cpuinfo}
     */
    public static boolean intel(List<String> cpuinfo) {
        return cpuinfo.stream().anyMatch(l -> l.matches("vendor_id\\s*:\\s*GenuineIntel"));
    }

    /**
     * {@return whether {@code cpuinfo} names an AMD CPU of that family (25: Zen 4, 26: Zen 5)}
     *
     * @param cpuinfo lines of {@code /proc/cpuinfo}
     * @param family the {@code cpu family} number
     */
    public static boolean amdFamily(List<String> cpuinfo, int family) {
        return cpuinfo.stream().anyMatch(l -> l.matches("vendor_id\\s*:\\s*AuthenticAMD"))
                && cpuinfo.stream().anyMatch(l -> l.matches("cpu family\\s*:\\s*" + family));
    }

    private static List<String> read() {
        try (var lines = Files.lines(Path.of("/proc/cpuinfo"))) {
            return lines.limit(LINES).toList();
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }
}
