package io.kvchecksum.archfixture.cuda;

import io.kvchecksum.archfixture.engine.worker.Worker;
import io.kvchecksum.archfixture.opencl.OpenClUsesEngine;

/** Violates cudaUsesNeitherEngineNorOpenCl, twice. */
public class CudaUsesEngineAndOpenCl {
    public Worker worker;
    public OpenClUsesEngine openCl;
}
