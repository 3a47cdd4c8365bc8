package io.kvchecksum.engine.verdict;

/** The outcome of comparing a load's checksums, for one group or for the whole load. */
public enum Status {
    /** Every compared position holds the same checksum on both sides, and nothing that should be compared was left out. */
    MATCH,
    /** Some compared position differs: the KV the consumer holds is not what the producer computed. */
    MISMATCH,
    /** The checksums could not be compared; the reason says why. Not a match: the load was not checked. */
    UNVERIFIED
}
