package io.kvchecksum.cli;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/** The {@code --backend} option every computing command shares. */
final class BackendOption {
    @Option(names = "--backend", paramLabel = "NAME", defaultValue = "auto",
            description = "auto (default: cpu, as a dump is in host memory), cpu, reference, cuda, opencl.")
    String name;

    /** The named backend, never another; see {@link ChosenBackend#open}. */
    ChosenBackend open(CommandLine cl) {
        return ChosenBackend.open(name, cl);
    }
}
