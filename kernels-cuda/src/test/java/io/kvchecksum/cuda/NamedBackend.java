package io.kvchecksum.cuda;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;

/**
 * The CUDA backend under another name, so test reports never label a CPU simulation "cuda": {@code cuda-host} is
 * CudaBackend driven by {@link FakeCudaDriver}, whose kernels run on the CPU through the host test library.
 */
record NamedBackend(String name, String description, KvChecksum delegate) implements KvChecksum {
    @Override public boolean supports(io.kvchecksum.ChecksumMode mode) { return delegate.supports(mode); }

    @Override public long[] blockChecksums(SlicePlan p) { return delegate.blockChecksums(p); }

    @Override public SliceSums sliceSums(SlicePlan p) { return delegate.sliceSums(p); }

    @Override public PendingChecksums submit(SlicePlan p) { return delegate.submit(p); }

    @Override public long pageDigest(io.kvchecksum.PageDigestPlan p) { return delegate.pageDigest(p); }

    @Override public void close() { delegate.close(); }

    static NamedBackend cudaHost(FakeCudaDriver fake, int maxBlocksPerLaunch) {
        CudaBackend b = new CudaBackend(fake, 0, Cuda.fatbin(), maxBlocksPerLaunch);
        return new NamedBackend("cuda-host", "CudaBackend on a CPU-simulated driver; kernel arithmetic from the nvcc-built host "
                + "library (sm=" + fake.smCount + ", maxBlocksPerLaunch=" + maxBlocksPerLaunch + ")", b);
    }
}
