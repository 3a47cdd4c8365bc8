package io.kvchecksum.archfixture.opencl;

import io.kvchecksum.archfixture.engine.worker.Worker;

/** Violates openClUsesNeitherEngineNorCuda. */
public class OpenClUsesEngine {
    public Worker worker;
}
