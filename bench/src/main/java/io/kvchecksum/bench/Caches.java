package io.kvchecksum.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The data cache sizes of this machine, read from Linux's {@code /sys/devices/system/cpu/cpu0/cache}, so that the read
 * bound and the benchmarks choose sizes relative to the caches instead of fixed ones (256 MiB is beyond the last-level
 * cache of one server and inside that of another).
 *
 * @param l2 bytes of the level-2 cache of one core
 * @param llc bytes of the last-level cache (the highest level listed)
 * @param source where the sizes came from: {@code /sys}, or why they are assumed
 */
public record Caches(long l2, long llc, String source) {
    private static final Path SYS = Path.of("/sys/devices/system/cpu/cpu0/cache");
    /** Sizes assumed where {@code /sys} does not say (not Linux, or a container hiding it). */
    private static final long ASSUMED_L2 = 1L << 20;
    private static final long ASSUMED_LLC = 32L << 20;

    private static final Caches THIS_MACHINE = read(SYS);

    /** {@return this machine's caches (read once)} */
    public static Caches machine() {
        return THIS_MACHINE;
    }

    /**
     * {@return the bytes of a cache-relative size name, case-insensitive: {@code L2}, half the L2 of one core (fits it
     * with room to spare); {@code LLC}, half the last-level cache (fits it but not L2); {@code 4xLLC}, four times the
     * LLC (its reads come from memory); -1 for any other text}
     *
     * @param name the size's name; surrounding blanks are ignored
     */
    public long bytesOf(String name) {
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "l2" -> l2 / 2;
            case "llc" -> llc / 2;
            case "4xllc" -> 4 * llc;
            default -> -1;
        };
    }

    @Override
    public String toString() {
        return "L2 " + mib(l2) + ", LLC " + mib(llc) + " (" + source + ")";
    }

    private static String mib(long b) {
        return b % (1L << 20) == 0 ? (b >> 20) + " MiB" : (b >> 10) + " KiB";
    }

    /** Reads {@code level}, {@code type} and {@code size} of every {@code index} directory under {@code dir}; falls back to assumed sizes, saying so. */
    static Caches read(Path dir) {
        long l2 = 0;
        long llc = 0;
        int llcLevel = 0;
        try (var entries = Files.list(dir)) {
            for (Path p : entries.filter(x -> x.getFileName().toString().startsWith("index")).toList()) {
                String type = Files.readString(p.resolve("type")).strip();
                if (type.equals("Instruction")) {
                    continue;
                }
                int level = Integer.parseInt(Files.readString(p.resolve("level")).strip());
                long size = parseSize(Files.readString(p.resolve("size")).strip());
                if (level == 2) {
                    l2 = size;
                }
                if (level >= 2 && level >= llcLevel) {
                    llcLevel = level;
                    llc = size;
                }
            }
        } catch (IOException | RuntimeException e) {
            return new Caches(ASSUMED_L2, ASSUMED_LLC, "assumed: " + dir + " unreadable (" + e.getClass().getSimpleName() + ")");
        }
        if (l2 <= 0 || llc <= 0) {
            return new Caches(ASSUMED_L2, ASSUMED_LLC, "assumed: " + dir + " lists no L2 or LLC");
        }
        return new Caches(l2, llc, "/sys");
    }

    /** {@code 32K}, {@code 1024K}, {@code 32M} as Linux writes them. */
    static long parseSize(String s) {
        int shift = switch (Character.toUpperCase(s.charAt(s.length() - 1))) {
            case 'K' -> 10;
            case 'M' -> 20;
            case 'G' -> 30;
            default -> -1;
        };
        return shift < 0 ? Long.parseLong(s) : Long.parseLong(s.substring(0, s.length() - 1)) << shift;
    }
}
