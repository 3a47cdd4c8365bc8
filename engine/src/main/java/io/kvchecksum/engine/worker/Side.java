package io.kvchecksum.engine.worker;

/** Which end of a transfer a worker or an aggregate is on. */
public enum Side {
    /** The engine that computed the KV (prefill): checksums copy 0 of replicated layers, once. */
    PRODUCER,
    /** The engine that loaded the KV (decode): checksums every copy, to check each copy's transfer. */
    CONSUMER
}
