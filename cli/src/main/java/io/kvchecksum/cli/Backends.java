package io.kvchecksum.cli;

import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.cli.dump.KvDump;
import picocli.CommandLine;

/**
 * The backend a command runs on, and the one case where another backend runs instead: with {@code auto}, when the
 * fastest backend (a GPU) cannot read the dump's host memory, the CPU backend runs and {@link #note()} says so.
 * Asked for by name, a backend runs or the command fails with the reason: never a silent substitute.
 */
final class Backends implements AutoCloseable {
    private final String requested;
    private KvChecksum backend;
    private String note;

    private Backends(String requested, KvChecksum backend) {
        this.requested = requested;
        this.backend = backend;
    }

    /**
     * Opens {@code name} ({@code auto}, {@code cpu}, {@code reference}, {@code cuda}, {@code opencl}).
     *
     * @throws io.kvchecksum.BackendUnavailableException with the reason (exit 64)
     */
    static Backends open(String name, CommandLine cl) {
        try {
            return new Backends(name, KvChecksums.byName(name));
        } catch (IllegalArgumentException e) {
            if (e instanceof InvalidLayoutException) {
                throw e;
            }
            throw new CommandLine.ParameterException(cl, "--backend: " + e.getMessage());
        }
    }

    /** The block checksums of a dump on this backend. */
    long[] blockChecksums(KvDump dump, Progress progress) {
        try {
            return Checksummer.blockChecksums(backend, dump, progress);
        } catch (InvalidLayoutException e) {
            if (!requested.equalsIgnoreCase("auto") || backend.name().equals("cpu") || backend.name().equals("reference")) {
                throw e;
            }
            note = "auto: " + backend.name() + " cannot read this dump's host memory (" + e.getMessage() + "); ran cpu";
            backend.close();
            backend = KvChecksums.cpu();
            return Checksummer.blockChecksums(backend, dump, progress);
        }
    }

    /** The backend that ran (or will run). */
    KvChecksum backend() {
        return backend;
    }

    /** Why another backend ran than {@code auto} first chose, or {@code null}. */
    String note() {
        return note;
    }

    @Override
    public void close() {
        backend.close();
    }
}
