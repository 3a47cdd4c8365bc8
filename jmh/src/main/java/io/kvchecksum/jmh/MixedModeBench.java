package io.kvchecksum.jmh;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The mixed mode's cost on the CPU backend, in one run: the standard mode, the mixed mode and the read bound on the
 * same fixture and threads, so their ratios are the result ({@code docs/bench-cpu.md}, "Mixed mode cost"). Run it
 * once as is (the JVM's native vector width) and once with {@code -jvmArgsAppend -XX:UseAVX=2}.
 */
@State(Scope.Benchmark)
public class MixedModeBench extends Bench {
    /** A {@link ModelShape#id()}. */
    @Param({"llama3-8b-tp1"})
    public String shape;

    /** Tokens, or a KV size rounded to whole 16-token blocks; see {@link ModelShape#tokens}. */
    @Param({"1MiB", "256MiB"})
    public String size;

    private KvChecksum cpu;
    private SlicePlan standard;
    private SlicePlan mixed;
    private MemoryBound bound;

    @Setup(Level.Trial)
    public void setUp() {
        KvFixture fx = closing(KvFixture.of(shape, size));
        cpu = closing(Backends.open("cpu"));
        standard = SlicePlan.of(fx.group(), fx.request());
        mixed = SlicePlan.of(fx.group(), fx.request(), ChecksumMode.MIXED);
        Oracle.verifyMixed(cpu, fx, standard, cpu.blockChecksums(mixed));
        System.out.println("# " + cpu.description() + ": loop " + Backends.loop(cpu.description()) + "; " + shape + " "
                + size);
        bound = closing(new MemoryBound(fx.segments(), Runtime.getRuntime().availableProcessors()));
    }

    /** The standard mode's fused pass over a prepared plan. */
    @Benchmark
    public long[] standard() {
        return cpu.blockChecksums(standard);
    }

    /** The mixed mode's pass over a prepared plan: every piece through feistel3 first. */
    @Benchmark
    public long[] mixed() {
        return cpu.blockChecksums(mixed);
    }

    /**
     * Reads every KV byte once with the same threads at the JVM's preferred vector width. The bound of both is the
     * faster of this and {@link #read256()}.
     */
    @Benchmark
    public long read() {
        return bound.read();
    }

    /**
     * The same read in 256-bit vectors: on AMD Zen 4 the 512-bit loop reads memory slower than the standard checksum
     * does, so {@link #read()} alone is no bound there.
     */
    @Benchmark
    public long read256() {
        return bound.read(MemoryBound.Reader.VECTOR256);
    }
}
