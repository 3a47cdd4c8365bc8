package io.kvchecksum.archfixture;

import io.kvchecksum.archfixture.engine.worker.Worker;

/** Violates coreUsesNoOtherModule: the core's root package uses the engine. */
public class CoreUsesEngine {
    public Worker worker;
}
