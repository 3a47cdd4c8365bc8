package io.kvchecksum.cli;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * A progress bar on stderr, shown only when stderr is a terminal (a log file would collect carriage-return frames)
 * and once work has run for a second, redrawn at most ten times a second, and never written to stdout (so
 * {@code --json} output stays one JSON object). Disabled by {@code --quiet}.
 */
final class Progress implements AutoCloseable {
    private static final long SHOW_AFTER_NS = 1_000_000_000L;
    private static final long REDRAW_NS = 100_000_000L;

    private final PrintWriter err;
    private final boolean enabled;
    private final String label;
    private final long total;
    private final long startNs = System.nanoTime();
    private long lastDrawNs;
    private boolean drawn;

    /**
     * Whether a command shows progress: not with {@code --quiet}, and only on a terminal. The launcher
     * {@code cli/kvchecksum} tests stderr itself ({@code -Dkvchecksum.stderrTty}); otherwise the JVM's console says
     * whether the process talks to a terminal.
     */
    static boolean shown(boolean quiet) {
        if (quiet) {
            return false;
        }
        String tty = System.getProperty("kvchecksum.stderrTty");
        if (tty != null) {
            return Boolean.parseBoolean(tty);
        }
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }

    Progress(PrintWriter err, boolean enabled, String label, long totalBytes) {
        this.err = err;
        this.enabled = enabled;
        this.label = label;
        this.total = Math.max(1, totalBytes);
    }

    /** Whether a bar may be drawn at all (not quiet, a terminal). */
    boolean enabled() {
        return enabled;
    }

    /** Reports {@code done} of the total bytes. */
    void update(long done) {
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        if (now - startNs < SHOW_AFTER_NS || (drawn && now - lastDrawNs < REDRAW_NS)) {
            return;
        }
        draw(done, now);
    }

    private void draw(long done, long now) {
        int width = 30;
        double f = Math.min(1.0, (double) done / total);
        int filled = (int) Math.round(f * width);
        double secs = (now - startNs) / 1e9;
        err.print(String.format(Locale.ROOT, "\r%s [%s%s] %3.0f%% %s/%s %.1f GB/s", label, "#".repeat(filled),
                ".".repeat(width - filled), f * 100, Units.bytes(done), Units.bytes(total), done / secs / 1e9));
        err.flush();
        lastDrawNs = now;
        drawn = true;
    }

    /** Ends the bar with a newline if it was ever drawn. */
    @Override
    public void close() {
        if (drawn) {
            draw(total, System.nanoTime());
            err.println();
            err.flush();
            drawn = false;
        }
    }
}
