package io.kvchecksum.archfixture.engine.worker;

/** Violates workerChecksummerDoesNotKnowTheCacheGate. */
public class WorkerChecksummer {
    /** A nested class counts as the worker too. */
    public static class Nested {
        public CacheGate gate;
    }
}
