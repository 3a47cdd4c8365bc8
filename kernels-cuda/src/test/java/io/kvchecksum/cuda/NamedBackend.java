package io.kvchecksum.cuda;

import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.Pending;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;

import java.util.OptionalLong;

/**
 * The CUDA backend under another name, so test reports never label a CPU simulation "cuda": {@code cuda-host} is
 * CudaBackend driven by {@link FakeCudaDriver}, whose kernels run on the CPU through the host test library. Everything
 * but the name and description is the delegate's: its limits, its runs, its page digest.
 */
record NamedBackend(String name, String description, Backend delegate) implements Backend {
    @Override public BackendLimits limits() { return delegate.limits(); }

    @Override
    public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
        return delegate.run(plan, output, stream);
    }

    @Override public long pageDigest(PageDigestPlan p) { return delegate.pageDigest(p); }

    @Override public PendingChecksums runCopy(CopyPlan plan, OptionalLong stream) { return delegate.runCopy(plan, stream); }

    @Override public Pending<Long> submitPageDigest(PageDigestPlan p, long stream) { return delegate.submitPageDigest(p, stream); }

    @Override public void close() { delegate.close(); }

    /** The front over {@code cuda-host}: what the golden suite runs. */
    static KvChecksum cudaHost(FakeCudaDriver fake, int maxBlocksPerLaunch) {
        CudaBackend b = new CudaBackend(fake, 0, Cuda.fatbin(), maxBlocksPerLaunch);
        return KvChecksum.of(new NamedBackend("cuda-host", "CudaBackend on a CPU-simulated driver; kernel arithmetic from the "
                + "nvcc-built host library (sm=" + fake.smCount + ", maxBlocksPerLaunch=" + maxBlocksPerLaunch + ")", b));
    }
}
