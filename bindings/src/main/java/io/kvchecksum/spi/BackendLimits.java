package io.kvchecksum.spi;

import io.kvchecksum.SlicePlan.Residency;

import java.util.Objects;
import java.util.Set;

/**
 * What a backend can run, as data: the compiler ({@link io.kvchecksum.CompiledPlan#compile}) refuses a case only for a
 * limit declared here, with a message naming it, before any kernel runs; a case within these limits the backend
 * accepts. Every backend implements both checksum modes and every cell kind (whole pieces, byte cells, padded cells),
 * so those are not limits.
 *
 * @param reads where a launch's memory may live when the backend runs on its own stream (or on the calling thread)
 * @param readsOnStream where a launch's memory may live when it runs on an engine's stream or queue
 * @param maxByteCellSlices the most (layer, head) slices one launch of {@link io.kvchecksum.CompiledPlan.CellKind#BYTE_CELLS
 *     byte cells} may have ({@link Integer#MAX_VALUE}: no limit)
 * @param hint what to do instead of a refused memory kind, appended to that refusal (may be empty, not null)
 */
public record BackendLimits(Set<Residency> reads, Set<Residency> readsOnStream, int maxByteCellSlices, String hint) {
    /** Host memory only, on the calling thread: the CPU backends (which have no stream and ignore one). */
    public static final BackendLimits HOST_ONLY = new BackendLimits(Set.of(Residency.HOST), Set.of(Residency.HOST),
            Integer.MAX_VALUE, "");

    /**
     * Copies the sets.
     *
     * @throws NullPointerException when a component is null
     * @throws IllegalArgumentException when {@code maxByteCellSlices} is not positive
     */
    public BackendLimits {
        if (maxByteCellSlices < 1) {
            throw new IllegalArgumentException("maxByteCellSlices must be positive, got " + maxByteCellSlices);
        }
        reads = Set.copyOf(Objects.requireNonNull(reads, "reads"));
        readsOnStream = Set.copyOf(Objects.requireNonNull(readsOnStream, "readsOnStream"));
        Objects.requireNonNull(hint, "hint");
    }

    /**
     * {@return the memory kinds allowed for a launch}
     *
     * @param onStream whether the plan runs on an engine's stream
     */
    public Set<Residency> allowed(boolean onStream) {
        return onStream ? readsOnStream : reads;
    }
}
