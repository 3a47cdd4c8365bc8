package io.kvchecksum.spi;

import io.kvchecksum.SlicePlan.Residency;

import java.util.Objects;
import java.util.Set;

/**
 * What a backend can run, as data: the compiler ({@link io.kvchecksum.CompiledPlan#compile}, and for copies
 * {@link io.kvchecksum.CopyPlan#check}) refuses a case only for a limit declared here, with a message naming it, before
 * any kernel runs; a case within these limits the backend accepts. Every backend implements both checksum modes and
 * every cell kind (whole pieces, byte cells, padded cells), so those are not limits.
 *
 * @param reads where a launch's memory may live when the backend runs on its own stream (or on the calling thread)
 * @param readsOnStream where a launch's memory may live when it runs on an engine's stream or queue
 * @param maxByteCellSlices the most (layer, head) slices one launch of {@link io.kvchecksum.CompiledPlan.CellKind#BYTE_CELLS
 *     byte cells} may have ({@link Integer#MAX_VALUE}: no limit)
 * @param hint what to do instead of a refused memory kind, appended to that refusal (may be empty, not null)
 * @param copies which (source, destination) memory kinds {@link Backend#runCopy} copies on the backend's own stream
 *     (or on the calling thread); empty: the backend does not implement the verifying copy. A route with host memory
 *     also admits pinned host memory there ({@link #copies(CopyRoute, boolean)}); a route with
 *     {@link Residency#PINNED_HOST} admits only pinned host memory (the CUDA backend's routes between host and device)
 * @param copiesOnStream which (source, destination) memory kinds it copies on an engine's stream or queue
 * @param maxStagedUnitBytes the largest staging unit the backend stages, in bytes; 0: it stages none. A copy whose
 *     source and destination memory overlap (vLLM's in-place rearrangement) runs only staged: per unit (one layer's
 *     cells of one destination page, {@link io.kvchecksum.CopyPlan#stagingUnitBytes()}) every source cell is read
 *     into staging memory before any of the unit's destination cells is written. {@link io.kvchecksum.CopyPlan#check}
 *     refuses an overlapping copy whose largest unit exceeds this, naming both sizes (the CPU backends: 64 MiB, a
 *     per-thread buffer; a GPU backend: what its shared or local memory holds)
 * @param copiesSegments whether {@link Backend#runCopy} takes a plan whose destination is segmented
 *     ({@link io.kvchecksum.CopyPlan#isSegmented()}: several groups, each segment's launches with values in its own
 *     blocks) as one call; without it the front runs such a plan one segment plan at a time and adds the values up
 */
public record BackendLimits(Set<Residency> reads, Set<Residency> readsOnStream, int maxByteCellSlices, String hint,
                            Set<CopyRoute> copies, Set<CopyRoute> copiesOnStream, long maxStagedUnitBytes,
                            boolean copiesSegments) {
    /** Host memory only, on the calling thread, and no verifying copy. */
    public static final BackendLimits HOST_ONLY = new BackendLimits(Set.of(Residency.HOST), Set.of(Residency.HOST),
            Integer.MAX_VALUE, "");

    /**
     * The largest staging unit of the CPU backends: a unit is staged in a buffer of the copying thread, so the limit
     * only bounds that buffer (a real layer's page is a few hundred KiB at most).
     */
    public static final long CPU_STAGED_UNIT_BYTES = 64L << 20;

    /**
     * The CPU backends: host memory only, on the calling thread (they have no stream and ignore one); host-to-host
     * copies, in place staged in units of up to {@link #CPU_STAGED_UNIT_BYTES}.
     */
    public static final BackendLimits CPU = HOST_ONLY.withCopies(Set.of(CopyRoute.HOST_TO_HOST), Set.of(CopyRoute.HOST_TO_HOST))
            .withSegmentedCopies().withStagedUnits(CPU_STAGED_UNIT_BYTES);

    /**
     * Where a verifying copy reads and where it writes: the residency of every source region and of every destination
     * region of one launch ({@link Residency#MIXED} when a side has both kinds).
     *
     * @param source where the source regions live
     * @param destination where the destination regions live
     */
    public record CopyRoute(Residency source, Residency destination) {
        /** Host memory to host memory: the CPU backends' copy. */
        public static final CopyRoute HOST_TO_HOST = new CopyRoute(Residency.HOST, Residency.HOST);
        /** Device memory to device memory. */
        public static final CopyRoute DEVICE_TO_DEVICE = new CopyRoute(Residency.DEVICE, Residency.DEVICE);
        /** Host memory (a staging buffer) into device memory. */
        public static final CopyRoute HOST_TO_DEVICE = new CopyRoute(Residency.HOST, Residency.DEVICE);
        /** Device memory out to host memory (offload). */
        public static final CopyRoute DEVICE_TO_HOST = new CopyRoute(Residency.DEVICE, Residency.HOST);
        /**
         * Pinned host memory ({@link io.kvchecksum.KvMemory#pinnedHost}, a staging buffer mapped into the device's
         * address space) into device memory: the GPU kernel reads the host pages in place.
         */
        public static final CopyRoute PINNED_HOST_TO_DEVICE = new CopyRoute(Residency.PINNED_HOST, Residency.DEVICE);
        /** Device memory out to pinned host memory (offload): the GPU kernel writes the host pages in place. */
        public static final CopyRoute DEVICE_TO_PINNED_HOST = new CopyRoute(Residency.DEVICE, Residency.PINNED_HOST);

        /**
         * Checks the components.
         *
         * @throws NullPointerException when a component is null
         */
        public CopyRoute {
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(destination, "destination");
        }

        @Override
        public String toString() {
            return name(source) + " to " + name(destination);
        }

        /**
         * {@return this route with pinned host memory read as host memory: what a backend that reads host memory
         * anyway (the CPU backends) copies it as}
         */
        public CopyRoute asPageable() {
            return new CopyRoute(pageable(source), pageable(destination));
        }

        /** {@return this route with (pageable) host memory pinned: what a backend copying only pinned host memory needs} */
        public CopyRoute asPinned() {
            return new CopyRoute(source == Residency.HOST ? Residency.PINNED_HOST : source,
                    destination == Residency.HOST ? Residency.PINNED_HOST : destination);
        }

        private static Residency pageable(Residency r) {
            return r == Residency.PINNED_HOST ? Residency.HOST : r;
        }

        private static String name(Residency r) {
            return switch (r) {
                case HOST -> "host memory";
                case PINNED_HOST -> "pinned host memory";
                case DEVICE -> "device memory";
                case MIXED -> "host and device memory in one launch";
            };
        }
    }

    /**
     * Copies the sets.
     *
     * @throws NullPointerException when a component is null
     * @throws IllegalArgumentException when {@code maxByteCellSlices} is not positive or {@code maxStagedUnitBytes}
     *     is negative
     */
    public BackendLimits {
        if (maxByteCellSlices < 1) {
            throw new IllegalArgumentException("maxByteCellSlices must be positive, got " + maxByteCellSlices);
        }
        if (maxStagedUnitBytes < 0) {
            throw new IllegalArgumentException("maxStagedUnitBytes must not be negative, got " + maxStagedUnitBytes);
        }
        reads = Set.copyOf(Objects.requireNonNull(reads, "reads"));
        readsOnStream = Set.copyOf(Objects.requireNonNull(readsOnStream, "readsOnStream"));
        Objects.requireNonNull(hint, "hint");
        copies = Set.copyOf(Objects.requireNonNull(copies, "copies"));
        copiesOnStream = Set.copyOf(Objects.requireNonNull(copiesOnStream, "copiesOnStream"));
    }

    /**
     * Limits of a backend without the verifying copy.
     *
     * @param reads where a launch's memory may live on the backend's own stream
     * @param readsOnStream where a launch's memory may live on an engine's stream
     * @param maxByteCellSlices the most byte-cell slices of one launch
     * @param hint what to do instead of a refused memory kind
     */
    public BackendLimits(Set<Residency> reads, Set<Residency> readsOnStream, int maxByteCellSlices, String hint) {
        this(reads, readsOnStream, maxByteCellSlices, hint, Set.of(), Set.of(), 0, false);
    }

    /**
     * Limits without segmented copies in one call (the front splits a segmented copy by segment).
     *
     * @param reads where a launch's memory may live on the backend's own stream
     * @param readsOnStream where a launch's memory may live on an engine's stream
     * @param maxByteCellSlices the most byte-cell slices of one launch
     * @param hint what to do instead of a refused memory kind
     * @param copies the copy routes on the backend's own stream
     * @param copiesOnStream the copy routes on an engine's stream
     * @param maxStagedUnitBytes the largest staging unit of an in-place copy (0: none staged)
     */
    public BackendLimits(Set<Residency> reads, Set<Residency> readsOnStream, int maxByteCellSlices, String hint,
                         Set<CopyRoute> copies, Set<CopyRoute> copiesOnStream, long maxStagedUnitBytes) {
        this(reads, readsOnStream, maxByteCellSlices, hint, copies, copiesOnStream, maxStagedUnitBytes, false);
    }

    /**
     * {@return these limits with the given copy routes (the staging limit kept)}
     *
     * @param own the routes copied on the backend's own stream
     * @param onStream the routes copied on an engine's stream
     */
    public BackendLimits withCopies(Set<CopyRoute> own, Set<CopyRoute> onStream) {
        return new BackendLimits(reads, readsOnStream, maxByteCellSlices, hint, own, onStream, maxStagedUnitBytes,
                copiesSegments);
    }

    /**
     * {@return these limits, staging in-place copies in units of up to {@code bytes} (0: none)}
     *
     * @param bytes the largest staging unit, in bytes
     */
    public BackendLimits withStagedUnits(long bytes) {
        return new BackendLimits(reads, readsOnStream, maxByteCellSlices, hint, copies, copiesOnStream, bytes,
                copiesSegments);
    }

    /** {@return these limits, taking a segmented copy plan in one {@link Backend#runCopy} call} */
    public BackendLimits withSegmentedCopies() {
        return new BackendLimits(reads, readsOnStream, maxByteCellSlices, hint, copies, copiesOnStream,
                maxStagedUnitBytes, true);
    }

    /**
     * {@return the memory kinds allowed for a launch}
     *
     * @param onStream whether the plan runs on an engine's stream
     */
    public Set<Residency> allowed(boolean onStream) {
        return onStream ? readsOnStream : reads;
    }

    /**
     * {@return whether the backend copies {@code route}: a route it declares, or one with pinned host memory where it
     * declares the route with host memory (pinned host memory is host memory)}
     *
     * @param route the (source, destination) memory kinds of a launch
     * @param onStream whether the copy runs on an engine's stream
     */
    public boolean copies(CopyRoute route, boolean onStream) {
        Set<CopyRoute> routes = copyRoutes(onStream);
        return routes.contains(route) || routes.contains(route.asPageable());
    }

    /**
     * {@return the copy routes allowed}
     *
     * @param onStream whether the copy runs on an engine's stream
     */
    public Set<CopyRoute> copyRoutes(boolean onStream) {
        return onStream ? copiesOnStream : copies;
    }
}
