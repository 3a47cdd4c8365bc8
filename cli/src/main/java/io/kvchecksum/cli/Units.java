package io.kvchecksum.cli;

import java.util.Locale;

/** Formatting of sizes and rates for the text outputs. */
final class Units {
    private Units() {
    }

    static String bytes(long b) {
        if (b < 1024) {
            return b + " B";
        }
        if (b < 1L << 20) {
            return String.format(Locale.ROOT, "%.1f KiB", b / 1024.0);
        }
        if (b < 1L << 30) {
            return String.format(Locale.ROOT, "%.1f MiB", b / (double) (1L << 20));
        }
        return String.format(Locale.ROOT, "%.2f GiB", b / (double) (1L << 30));
    }

    static String gbps(long bytes, long nanos) {
        return String.format(Locale.ROOT, "%.1f GB/s", bytes / (double) Math.max(1, nanos));
    }
}
