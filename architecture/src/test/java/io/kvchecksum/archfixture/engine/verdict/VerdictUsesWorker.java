package io.kvchecksum.archfixture.engine.verdict;

import io.kvchecksum.archfixture.engine.worker.Worker;

/** Violates engineLayersAreRespected: the bottom layer uses one above it. */
public class VerdictUsesWorker {
    public Worker worker;
}
