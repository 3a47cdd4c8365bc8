package io.kvchecksum.cli;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.cli.dump.KvDump;
import picocli.CommandLine;

/**
 * The backend a command runs on, chosen once from {@code --backend}. {@code auto} is the CPU backend: a dump is in
 * host memory, where a CPU pass runs at memory bandwidth and a GPU backend would first have to copy every byte (and
 * probing GPU drivers costs start-up time and, for OpenCL, prints on stdout where no library is installed). A backend
 * asked for by name runs or the command fails with the reason: never a silent substitute.
 */
final class ChosenBackend implements AutoCloseable {
    private final KvChecksum backend;

    private ChosenBackend(KvChecksum backend) {
        this.backend = backend;
    }

    /**
     * Opens {@code name} ({@code auto}, {@code cpu}, {@code reference}, {@code cuda}, {@code opencl}).
     *
     * @throws io.kvchecksum.BackendUnavailableException with the reason (exit 64)
     * @throws CommandLine.ParameterException for an unknown name (exit 64)
     */
    static ChosenBackend open(String name, CommandLine cl) {
        if (name.equalsIgnoreCase("auto")) {
            return new ChosenBackend(KvChecksums.cpu());
        }
        try {
            return new ChosenBackend(KvChecksums.byName(name));
        } catch (IllegalArgumentException e) {
            if (e instanceof InvalidLayoutException) {
                throw e;
            }
            throw new CommandLine.ParameterException(cl, "--backend: " + Main.oneLine(e.getMessage()));
        }
    }

    /** The block checksums of a dump on this backend, with progress. */
    long[] blockChecksums(KvDump dump, Progress progress) {
        return blockChecksums(dump, progress, ChecksumMode.STANDARD);
    }

    /** The block checksums of a dump in checksum mode {@code mode}, with progress. */
    long[] blockChecksums(KvDump dump, Progress progress, ChecksumMode mode) {
        return ChunkedChecksums.blockChecksums(backend, dump, progress, mode);
    }

    /** The backend that runs. */
    KvChecksum backend() {
        return backend;
    }

    @Override
    public void close() {
        backend.close();
    }
}
