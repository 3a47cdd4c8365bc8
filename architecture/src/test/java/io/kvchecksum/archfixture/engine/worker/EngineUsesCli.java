package io.kvchecksum.archfixture.engine.worker;

import io.kvchecksum.archfixture.cli.UsesInternal;

/** Violates engineUsesOnlyTheCore: the engine uses an application module. */
public class EngineUsesCli {
    public UsesInternal command;
}
