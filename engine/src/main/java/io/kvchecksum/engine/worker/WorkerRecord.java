package io.kvchecksum.engine.worker;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What one worker (one TP rank of one PP stage) reports for one request: its partial checksums of every group it was
 * scheduled, and the groups it could not checksum, with the reason; or, when its checksum backend failed, that failure
 * ({@link #failed}). {@link Aggregator} combines the records of all workers of a side. Immutable.
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
 */
public record WorkerRecord(int tpRank, int ppStage, long numTokens, List<PartialGroup> groups,
        Map<Integer, String> skippedGroups, String backendFailure, ChecksumMode mode) {

    /**
     * How the failure text of a {@link #refused} record starts: the marker travels with the text, so a record shipped
     * between processes keeps it.
     */
    public static final String LAYOUT_REFUSED = "layout refused: ";

    /**
     * Validates the record and copies its collections (the skipped groups sorted by group id).
     *
     * @throws IllegalArgumentException when a rank or stage is negative, or a failed record carries groups or skipped
     *     groups
     * @throws NullPointerException when {@code mode}, {@code groups} or {@code skippedGroups} is null
     */
    public WorkerRecord {
        Objects.requireNonNull(mode, "mode");
        if (tpRank < 0 || ppStage < 0) {
            throw new IllegalArgumentException("TP rank " + tpRank + ", PP stage " + ppStage);
        }
        groups = List.copyOf(groups);
        skippedGroups = Map.copyOf(new TreeMap<>(skippedGroups));
        if (backendFailure != null && (!groups.isEmpty() || !skippedGroups.isEmpty())) {
            throw new IllegalArgumentException("a failed record carries no groups");
        }
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
        this(tpRank, ppStage, numTokens, groups, skippedGroups, null, ChecksumMode.STANDARD);
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
        this(tpRank, ppStage, numTokens, groups, skippedGroups, backendFailure, ChecksumMode.STANDARD);
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
                Objects.requireNonNull(failure, "failure").toString(), ChecksumMode.STANDARD);
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
