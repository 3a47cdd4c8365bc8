package io.kvchecksum.engine.worker;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One worker's part of one group's block checksums: the sums over the layers and heads this worker holds.
 *
 * @param groupId the group
 * @param fingerprint the sum of the hashes of this worker's layers in the group ({@link Fingerprints#ofGroup}); 0
 *     for a PP stage that holds none of its layers
 * @param range the block positions checksummed
 * @param columns partial block checksums per replica key, each {@code range.length()} long; empty when this worker
 *     holds none of the group's layers, or (producer) holds only copies other than 0. Arrays are copied.
 */
public record PartialGroup(int groupId, long fingerprint, BlockRange range, Map<ReplicaKey, long[]> columns) {

    /**
     * Copies the columns (map and arrays), keeping their order.
     *
     * @throws NullPointerException when {@code range}, {@code columns}, a replica key or an array is null
     */
    public PartialGroup {
        Objects.requireNonNull(range, "range");
        Map<ReplicaKey, long[]> copy = new LinkedHashMap<>();
        for (Map.Entry<ReplicaKey, long[]> e : columns.entrySet()) {
            copy.put(Objects.requireNonNull(e.getKey(), "replica key"), e.getValue().clone());
        }
        columns = Collections.unmodifiableMap(copy);
    }

    /** {@return the columns; the arrays are copies} */
    @Override
    public Map<ReplicaKey, long[]> columns() {
        Map<ReplicaKey, long[]> out = new LinkedHashMap<>();
        columns.forEach((k, v) -> out.put(k, v.clone()));
        return out;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof PartialGroup p) || groupId != p.groupId || fingerprint != p.fingerprint || !range.equals(p.range)
                || !columns.keySet().equals(p.columns.keySet())) {
            return false;
        }
        return columns.entrySet().stream().allMatch(e -> Arrays.equals(e.getValue(), p.columns.get(e.getKey())));
    }

    @Override
    public int hashCode() {
        return Objects.hash(groupId, fingerprint, range, columns.keySet());
    }

    @Override
    public String toString() {
        return "PartialGroup[group " + groupId + ", " + range + ", copies " + columns.keySet() + "]";
    }
}
