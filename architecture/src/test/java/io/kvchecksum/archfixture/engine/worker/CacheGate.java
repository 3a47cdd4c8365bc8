package io.kvchecksum.archfixture.engine.worker;

/** The gate, which the worker must not know. */
public class CacheGate {
}
