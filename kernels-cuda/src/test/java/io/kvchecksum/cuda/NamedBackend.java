package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.Rechunked;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;

/**
 * The CUDA backend under another name, so test reports never label a CPU simulation "cuda": {@code cuda-host} is
 * CudaBackend driven by {@link FakeCudaDriver}, whose kernels run on the CPU through the host test library.
 */
record NamedBackend(String name, String description, KvChecksum delegate) implements KvChecksum {
    @Override public long[] blockChecksums(KvCacheGroup g, RequestBlocks r) { return delegate.blockChecksums(g, r); }

    @Override public SliceSums sliceSums(KvCacheGroup g, RequestBlocks r) { return delegate.sliceSums(g, r); }

    @Override public long[] combine(SliceSums s) { return delegate.combine(s); }

    @Override public Rechunked rechunk(long[] v, long firstBlock, int factor) { return delegate.rechunk(v, firstBlock, factor); }

    @Override public PendingChecksums submit(KvCacheGroup g, RequestBlocks r) { return delegate.submit(g, r); }

    @Override public void close() { delegate.close(); }

    static NamedBackend cudaHost(FakeCudaDriver fake, int maxBlocksPerLaunch) {
        CudaBackend b = new CudaBackend(fake, 0, Cuda.fatbin(), maxBlocksPerLaunch);
        return new NamedBackend("cuda-host", "CudaBackend on a CPU-simulated driver; kernel arithmetic from the nvcc-built host "
                + "library (sm=" + fake.smCount + ", maxBlocksPerLaunch=" + maxBlocksPerLaunch + ")", b);
    }
}
