package io.kvchecksum.engine.verdict;

/**
 * What the engine does with a load after its checksums were compared. Ordered by severity: when TP ranks merge their
 * decisions ({@link RankDecisions}) the most severe wins.
 */
public enum Action {
    /** Use the loaded KV as usual (a match, or fail-open). */
    USE_LOAD,
    /** Fail the load and recompute the prompt locally on the consumer (vLLM {@code kv_load_failure_policy=recompute}). */
    RECOMPUTE,
    /** Fail the load and end the request with an error (vLLM {@code kv_load_failure_policy=fail}). */
    FAIL_REQUEST
}
