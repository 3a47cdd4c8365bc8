package io.kvchecksum.engine.worker;

/**
 * Which copy of its layers a worker holds when several TP ranks hold the same KV heads.
 *
 * <p>Not replicated: {@code (1, 0)}. MLA caches, which every TP rank holds whole: {@code (tp, rank)}. GQA with more
 * ranks than KV heads, where each head sits on {@code R = tp / kvHeads} consecutive ranks: {@code (R, rank % R)}.
 * A producer checksums copy 0 only; a consumer checksums every copy and builds one check per copy
 * ({@link Aggregator#consumer}).
 *
 * @param replicas how many ranks hold the same heads, positive
 * @param index this rank's copy, {@code 0 .. replicas-1}
 */
public record ReplicaKey(int replicas, int index) {
    /** The key of layers that are not replicated. */
    public static final ReplicaKey NONE = new ReplicaKey(1, 0);

    /**
     * Validates the copy number.
     *
     * @throws IllegalArgumentException when {@code replicas} is not positive or {@code index} is outside
     *     {@code 0 .. replicas-1}
     */
    public ReplicaKey {
        if (replicas <= 0 || index < 0 || index >= replicas) {
            throw new IllegalArgumentException("replica " + index + " of " + replicas);
        }
    }

    /**
     * {@return the key of TP rank {@code rank} for a layer with {@code kvHeads} KV heads at TP size {@code tp}}
     *
     * @param kvHeads the layer's KV heads across TP (1 for MLA), positive
     * @param tp the TP size, positive
     * @param rank this worker's TP rank, {@code 0 .. tp-1}
     * @throws IllegalArgumentException when a number is out of range, or {@code tp > kvHeads} and {@code tp} is not a
     *     multiple of {@code kvHeads}
     */
    public static ReplicaKey forRank(int kvHeads, int tp, int rank) {
        if (kvHeads <= 0 || tp <= 0 || rank < 0 || rank >= tp) {
            throw new IllegalArgumentException("rank " + rank + " of TP " + tp + " with " + kvHeads + " KV heads");
        }
        if (tp <= kvHeads) {
            return NONE;
        }
        if (tp % kvHeads != 0) {
            throw new IllegalArgumentException("TP " + tp + " is not a multiple of " + kvHeads + " KV heads");
        }
        int r = tp / kvHeads;
        return new ReplicaKey(r, rank % r);
    }
}
