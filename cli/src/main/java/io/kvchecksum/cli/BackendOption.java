package io.kvchecksum.cli;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/** The {@code --backend} option every computing command shares. */
final class BackendOption {
    @Option(names = "--backend", paramLabel = "NAME", defaultValue = "auto",
            description = "auto (default), cpu, reference, cuda, opencl.")
    String name;

    /** The named backend, never another; see {@link Backends#open}. */
    Backends open(CommandLine cl) {
        return Backends.open(name, cl);
    }
}
