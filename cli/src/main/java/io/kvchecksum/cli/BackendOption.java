package io.kvchecksum.cli;

import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * The {@code --backend} option every computing command shares: the backend a command runs on, chosen once.
 * {@code auto} is the CPU backend: a dump is in host memory, where a CPU pass runs at memory bandwidth and a GPU
 * backend would first have to copy every byte (and probing GPU drivers costs start-up time and, for OpenCL, prints on
 * stdout where no library is installed). A backend asked for by name runs or the command fails with the reason: never
 * a silent substitute.
 */
final class BackendOption {
    @Option(names = "--backend", paramLabel = "NAME", defaultValue = "auto",
            description = "auto (default: cpu, as a dump is in host memory), cpu, reference, cuda, opencl.")
    String name;

    /** The named backend, never another; see {@link #open(String, CommandLine)}. */
    KvChecksum open(CommandLine cl) {
        return open(name, cl);
    }

    /**
     * Opens {@code name} ({@code auto}, {@code cpu}, {@code reference}, {@code cuda}, {@code opencl}).
     *
     * @throws io.kvchecksum.BackendUnavailableException with the reason (exit 64)
     * @throws CommandLine.ParameterException for an unknown name (exit 64)
     */
    static KvChecksum open(String name, CommandLine cl) {
        if (name.equalsIgnoreCase("auto")) {
            return KvChecksums.cpu();
        }
        try {
            return KvChecksums.byName(name);
        } catch (IllegalArgumentException e) {
            if (e instanceof InvalidLayoutException) {
                throw e;
            }
            throw new CommandLine.ParameterException(cl, "--backend: " + Main.oneLine(e.getMessage()));
        }
    }
}
