package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The verifying copy on the CPU backend against its baseline in the same run (issue 29: at least 0.9 of the plain
 * copy's throughput in cache and from memory): {@code copyAndChecksum} (one pass: every piece loaded, stored and summed)
 * and {@code baseline} ({@link java.lang.foreign.MemorySegment#copy} of the same page runs with the same threads,
 * {@link CopyFixture}) with {@code baselineVector} (a Vector API copy loop of the same runs, which in this JVM can beat
 * {@code MemorySegment.copy}). The ratio is the faster baseline's time / copy time; above 1.0 a baseline is wrong. Not in the suite;
 * run it by name. On a loaded machine {@link CopyTurns} runs both in turns in one JVM.
 */
@State(Scope.Benchmark)
public class CopyBench extends Bench {
    /** A {@link ModelShape#id()}. */
    @Param({"llama3-8b-tp1", "deepseek-mla-bf16"})
    public String shape;

    /**
     * The source's KV size (the destination holds as much again), as {@link ModelShape#at} reads it: {@code 512KiB}
     * in L2 (source and destination together fit a 1 MiB L2), {@code 1MiB} in L2 and L3, {@code 256MiB} from memory.
     */
    @Param({"512KiB", "1MiB", "256MiB"})
    public String size;

    /** {@code perm}: the same layout, pages permuted; {@code hnd}: vLLM flash into FlashInfer HND. */
    @Param({"perm", "hnd"})
    public String conversion;

    private KvChecksum cpu;
    private CopyFixture fx;

    @Setup(Level.Trial)
    public void setUp() {
        cpu = closing(Backends.open("cpu"));
        fx = closing(CopyFixture.of(cpu, shape, size, conversion, Runtime.getRuntime().availableProcessors()));
        fx.verify(cpu, cpu.copyAndChecksum(fx.plan()));
        System.out.println("# " + cpu.description() + ": loop " + Backends.loop(cpu.description()) + "; " + fx.plan());
    }

    /** The verifying copy over a compiled plan. */
    @Benchmark
    public long[] copyAndChecksum() {
        return cpu.copyAndChecksum(fx.plan());
    }

    /** {@link java.lang.foreign.MemorySegment#copy} of the same page runs, same threads. */
    @Benchmark
    public long baseline() {
        return fx.baseline();
    }

    /** A Vector API copy loop of the same page runs, same threads: the bound is the faster baseline. */
    @Benchmark
    public long baselineVector() {
        return fx.baselineVector();
    }

    /** {@link #baseline} in the verifying copy's order (a layer's K pages, then its V pages). */
    @Benchmark
    public long baselineLayers() {
        return fx.baselineGroups();
    }

    /** {@link #baselineVector} in the verifying copy's order (a layer's K pages, then its V pages). */
    @Benchmark
    public long baselineVectorLayers() {
        return fx.baselineVectorGroups();
    }

    /** {@link #baselineVectorLayers} in 256-bit vectors (from memory on Intel the faster plain copy). */
    @Benchmark
    public long baselineVector256Layers() {
        return fx.baselineVector256Groups();
    }
}
