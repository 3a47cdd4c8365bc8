package io.kvchecksum.engine.worker;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.PageProbe;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.StateDigestsSection;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What one worker (one TP rank of one PP stage) reports for one request: its partial checksums of every group it was
 * scheduled, and the groups it could not checksum, with the reason; or, when its checksum backend failed, that failure
 * ({@link #failed}); and, when the side runs them, its auxiliary parts: the digests of its state rows and its page
 * probe partials by copy. {@link Aggregator} combines the records of all workers of a side. Immutable. Engines ship
 * records from worker processes to the aggregating rank as bytes with {@link WorkerRecordCodec}.
 *
 * @param tpRank the worker's TP rank
 * @param ppStage the worker's PP stage
 * @param numTokens the request's token count the worker checksummed for
 * @param groups partial checksums, one per group computed; empty in a failed record
 * @param skippedGroups groups this worker could not checksum (no per-token KV, a layout the checksum cannot read, ...)
 *     with the reason; empty in a failed record
 * @param backendFailure what the backend threw, as text ({@code Throwable.toString()}), or {@code null} when the
 *     checksums were computed. A record carries text, not the exception, because engines ship records from worker
 *     processes to the scheduler. The side aggregates a failed record into
 *     {@link UnverifiedReason#BACKEND_FAILED}, or, when the text starts with {@value #LAYOUT_REFUSED} (a
 *     {@link #refused} record: the layout was refused before anything was read), into
 *     {@link UnverifiedReason#LAYOUT_REFUSED}.
 * @param mode the checksum mode the worker computed in (the engine's configuration)
 * @param stateDigests the digests of this worker's state rows, in {@code mode}, each entry's stage this worker's
 *     stage; empty when it holds none; {@code null} when the side does not digest state (or the record failed)
 * @param probes this worker's page-probe partials of the probed group, by the copy of the heads they cover (a producer:
 *     copy 0 only); empty when it holds none of the group; {@code null} when the side runs no probe (or the record
 *     failed)
 */
public record WorkerRecord(int tpRank, int ppStage, long numTokens, List<PartialGroup> groups,
        Map<Integer, String> skippedGroups, String backendFailure, ChecksumMode mode,
        List<StateDigestsSection.Entry> stateDigests, Map<ReplicaKey, PageProbe.Probes> probes) {

    /**
     * How the failure text of a {@link #refused} record starts: the marker travels with the text, so a record shipped
     * between processes keeps it.
     */
    public static final String LAYOUT_REFUSED = "layout refused: ";

    /**
     * Validates the record and copies its collections (the skipped groups sorted by group id).
     *
     * @throws IllegalArgumentException when a rank or stage is negative, a failed record carries groups, skipped
     *     groups or auxiliary parts, or a state digest names another stage than the record's
     * @throws NullPointerException when {@code mode}, {@code groups} or {@code skippedGroups} is null, or an element
     *     of a collection is null
     */
    public WorkerRecord {
        Objects.requireNonNull(mode, "mode");
        if (tpRank < 0 || ppStage < 0) {
            throw new IllegalArgumentException("TP rank " + tpRank + ", PP stage " + ppStage);
        }
        groups = List.copyOf(groups);
        skippedGroups = Map.copyOf(new TreeMap<>(skippedGroups));
        stateDigests = stateDigests == null ? null : List.copyOf(stateDigests);
        if (probes != null) {
            Map<ReplicaKey, PageProbe.Probes> copy = new LinkedHashMap<>();
            probes.forEach((k, v) -> copy.put(Objects.requireNonNull(k, "replica key"), Objects.requireNonNull(v, "probes")));
            probes = Collections.unmodifiableMap(copy);
        }
        if (backendFailure != null && (!groups.isEmpty() || !skippedGroups.isEmpty() || stateDigests != null
                || probes != null)) {
            throw new IllegalArgumentException("a failed record carries no groups and no auxiliary parts");
        }
        if (stateDigests != null) {
            for (StateDigestsSection.Entry e : stateDigests) {
                if (e.stage() != ppStage) {
                    throw new IllegalArgumentException("state buffer " + e.name() + " of stage " + e.stage()
                            + " in the record of PP stage " + ppStage);
                }
            }
        }
    }

    /**
     * A record without auxiliary parts.
     *
     * @param tpRank the worker's TP rank, non-negative
     * @param ppStage the worker's PP stage, non-negative
     * @param numTokens the request's token count the worker checksummed for
     * @param groups partial checksums, one per group computed; empty when failed
     * @param skippedGroups groups the worker could not checksum, with the reason; empty when failed
     * @param backendFailure what the backend threw, as text, or {@code null} when the checksums were computed
     * @param mode the checksum mode the worker computed in
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public WorkerRecord(int tpRank, int ppStage, long numTokens, List<PartialGroup> groups, Map<Integer, String> skippedGroups,
            String backendFailure, ChecksumMode mode) {
        this(tpRank, ppStage, numTokens, groups, skippedGroups, backendFailure, mode, null, null);
    }

    /**
     * {@return this record with auxiliary parts} A failed record stays as it is.
     *
     * @param stateDigests the digests of this worker's state rows, or {@code null} when the side digests no state
     * @param probes the page-probe partials by copy, or {@code null} when the side runs no probe
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public WorkerRecord withAuxiliary(List<StateDigestsSection.Entry> stateDigests, Map<ReplicaKey, PageProbe.Probes> probes) {
        return isFailed() ? this : new WorkerRecord(tpRank, ppStage, numTokens, groups, skippedGroups, null, mode,
                stateDigests, probes);
    }

    /**
     * A record of computed checksums in the standard mode.
     *
     * @param tpRank the worker's TP rank, non-negative
     * @param ppStage the worker's PP stage, non-negative
     * @param numTokens the request's token count the worker checksummed for
     * @param groups partial checksums, one per group computed; copied
     * @param skippedGroups groups the worker could not checksum, with the reason; copied
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public WorkerRecord(int tpRank, int ppStage, long numTokens, List<PartialGroup> groups, Map<Integer, String> skippedGroups) {
        this(tpRank, ppStage, numTokens, groups, skippedGroups, null, ChecksumMode.STANDARD, null, null);
    }

    /**
     * A standard-mode record, failed when {@code backendFailure} is not {@code null}.
     *
     * @param tpRank the worker's TP rank, non-negative
     * @param ppStage the worker's PP stage, non-negative
     * @param numTokens the request's token count the worker checksummed for
     * @param groups partial checksums, one per group computed; empty when failed
     * @param skippedGroups groups the worker could not checksum, with the reason; empty when failed
     * @param backendFailure what the backend threw, as text, or {@code null} when the checksums were computed
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public WorkerRecord(int tpRank, int ppStage, long numTokens, List<PartialGroup> groups, Map<Integer, String> skippedGroups,
            String backendFailure) {
        this(tpRank, ppStage, numTokens, groups, skippedGroups, backendFailure, ChecksumMode.STANDARD, null, null);
    }

    /**
     * {@return the record of a worker whose backend failed on this request: no checksums, the failure instead}
     *
     * @param failure what the backend threw; its {@code toString()} is kept
     * @param tpRank the worker's TP rank, non-negative
     * @param ppStage the worker's PP stage, non-negative
     * @param numTokens the request's token count the worker was asked to checksum
     * @throws NullPointerException when {@code failure} is null
     */
    public static WorkerRecord failed(int tpRank, int ppStage, long numTokens, Throwable failure) {
        return new WorkerRecord(tpRank, ppStage, numTokens, List.of(), Map.of(),
                Objects.requireNonNull(failure, "failure").toString(), ChecksumMode.STANDARD, null, null);
    }

    /**
     * {@return the record of a worker that refused the request's layout before reading anything: failed, its text
     * {@value #LAYOUT_REFUSED} and the refusal's message}
     *
     * @param refusal what refused the layout; its message is kept
     * @param tpRank the worker's TP rank, non-negative
     * @param ppStage the worker's PP stage, non-negative
     * @param numTokens the request's token count the worker was asked to checksum
     * @throws NullPointerException when {@code refusal} is null
     */
    public static WorkerRecord refused(int tpRank, int ppStage, long numTokens, InvalidLayoutException refusal) {
        return new WorkerRecord(tpRank, ppStage, numTokens, List.of(), Map.of(),
                LAYOUT_REFUSED + Objects.requireNonNull(refusal, "refusal").getMessage(), ChecksumMode.STANDARD);
    }

    /** {@return true when the backend failed and the record carries no checksums} */
    public boolean isFailed() {
        return backendFailure != null;
    }

    /** {@return true for a failed record whose worker refused the layout ({@link #refused}), not a failing backend} */
    public boolean isLayoutRefused() {
        return backendFailure != null && backendFailure.startsWith(LAYOUT_REFUSED);
    }
}
