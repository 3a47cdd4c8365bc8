package io.kvchecksum.cli;

import picocli.CommandLine.Option;

/** {@code -q}: no progress bar; the option {@code sum}, {@code verify} and {@code diff} share. */
final class QuietOption {
    @Option(names = {"-q", "--quiet"}, description = "No progress bar.")
    boolean quiet;

    /** {@return whether the command shows progress: not with {@code -q}, and only on a terminal ({@link Progress#shown})} */
    boolean progressShown() {
        return Progress.shown(quiet);
    }
}
