package io.kvchecksum.engine;

import io.kvchecksum.ChecksumMode;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one worker (one TP rank of one PP stage) reports for one request: its partial checksums of every group it was
 * scheduled, and the groups it could not checksum, with the reason. {@link Aggregator} combines the records of all
 * workers of a side. Immutable.
 *
 * @param tpRank the worker's TP rank
 * @param ppStage the worker's PP stage
 * @param numTokens the request's token count the worker checksummed for
 * @param groups partial checksums, one per group computed
 * @param skippedGroups groups this worker could not checksum (no per-token KV, a layout the checksum cannot read, ...)
 *     with the reason
 * @param mode the checksum mode the worker computed in
 */
public record WorkerRecord(int tpRank, int ppStage, long numTokens, List<PartialGroup> groups, Map<Integer, String> skippedGroups,
        ChecksumMode mode) {

    /** A record in the standard mode. */
    public WorkerRecord(int tpRank, int ppStage, long numTokens, List<PartialGroup> groups, Map<Integer, String> skippedGroups) {
        this(tpRank, ppStage, numTokens, groups, skippedGroups, ChecksumMode.STANDARD);
    }

    public WorkerRecord {
        java.util.Objects.requireNonNull(mode, "mode");
        if (tpRank < 0 || ppStage < 0) {
            throw new IllegalArgumentException("TP rank " + tpRank + ", PP stage " + ppStage);
        }
        groups = List.copyOf(groups);
        skippedGroups = Map.copyOf(new TreeMap<>(skippedGroups));
    }
}
