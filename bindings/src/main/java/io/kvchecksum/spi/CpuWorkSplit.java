package io.kvchecksum.spi;

/**
 * How the CPU backend splits a request over threads, as data: the read bound of the benchmarks
 * ({@code io.kvchecksum.bench.MemoryBound}) splits its reads the same way, so that a ratio compares like with like.
 * Handing work to another thread costs tens of microseconds, more than a small request takes.
 */
public final class CpuWorkSplit {
    /** Below this many KV bytes a request runs on the calling thread. */
    public static final long PARALLEL_BYTES = 4L << 20;
    /** The smallest piece of work handed to another thread. */
    public static final long TASK_BYTES = 1L << 20;

    private CpuWorkSplit() {
    }
}
