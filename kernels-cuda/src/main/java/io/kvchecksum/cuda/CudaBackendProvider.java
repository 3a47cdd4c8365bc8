package io.kvchecksum.cuda;

import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendProvider;

/** Registers the CUDA backend with {@link io.kvchecksum.KvChecksums} (name {@code cuda}, priority 300). */
public final class CudaBackendProvider implements BackendProvider {
    /** Called by {@link java.util.ServiceLoader}; cheap: nothing is loaded until {@link #availability()}. */
    public CudaBackendProvider() {
    }

    @Override
    public String name() {
        return CudaBackend.NAME;
    }

    @Override
    public int priority() {
        return CUDA_PRIORITY;
    }

    @Override
    public Availability availability() {
        return Cuda.availability();
    }

    @Override
    public Backend create() {
        return CudaBackend.open();
    }
}
