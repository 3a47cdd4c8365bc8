package io.kvchecksum.cli;

import io.kvchecksum.ChecksumMode;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/** The {@code --mode} option of {@code sum} and {@code diff}: which checksum is computed. */
final class ModeOption {
    @Option(names = "--mode", paramLabel = "MODE", defaultValue = "standard",
            description = "standard (default: the definition, payload version 2) or mixed (every 8-byte piece through "
                    + "the feistel3 mixer first, no blind spot; payload version 3). See docs/detection.md.")
    String name;

    /** The mode named, or a usage error (exit 64) naming the accepted values. */
    ChecksumMode mode(CommandLine cl) {
        try {
            return ChecksumMode.of(name);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(cl, "--mode: " + e.getMessage());
        }
    }
}
