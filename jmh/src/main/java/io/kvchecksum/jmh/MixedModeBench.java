package io.kvchecksum.jmh;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * The mixed mode's cost on the CPU backend, in one run: the standard mode, the mixed mode and the read bound on the
 * same fixture and threads, so their ratios are the result ({@code docs/bench-cpu.md}, "Mixed mode cost"). Run it
 * once as is (the JVM's native vector width) and once with {@code -jvmArgsAppend -XX:UseAVX=2}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {Jvm.VECTOR, Jvm.NATIVE, Jvm.HEAP})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class MixedModeBench {
    /** A {@link ModelShape#id()}. */
    @Param({"llama3-8b-tp1"})
    public String shape;

    /** Tokens, or a KV size rounded to whole 16-token blocks; see {@link ModelShape#tokens}. */
    @Param({"1MiB", "256MiB"})
    public String size;

    private KvChecksum cpu;
    private KvFixture fx;
    private SlicePlan standard;
    private SlicePlan mixed;
    private MemoryBound bound;

    @Setup(Level.Trial)
    public void setUp() {
        ModelShape s = ModelShape.of(shape);
        fx = KvFixture.create(s, s.tokens(size));
        cpu = KvChecksums.cpu();
        standard = SlicePlan.of(fx.group(), fx.request());
        mixed = SlicePlan.of(fx.group(), fx.request(), ChecksumMode.MIXED);
        // Checked before anything is timed: the mixed values against the literal reference backend (on the first
        // 16 MiB's worth of blocks at most, which it reads at tens of MB/s), and different from the standard ones.
        long[] m = cpu.blockChecksums(mixed);
        if (Arrays.equals(m, cpu.blockChecksums(standard))) {
            throw new IllegalStateException("mixed and standard checksums agree: the mixer did not run");
        }
        try (KvChecksum ref = KvChecksums.reference()) {
            long perBlock = Math.max(1, fx.group().bytesPerToken() * fx.request().blockSize());
            int blocks = (int) Math.min(m.length, Math.max(1, (16L << 20) / perBlock));
            io.kvchecksum.RequestBlocks r = fx.request();
            io.kvchecksum.RequestBlocks head = io.kvchecksum.RequestBlocks.of(r.pageTable(),
                    Math.min(r.numTokens(), (r.firstBlock() + blocks) * (long) r.blockSize()), r.firstBlock(), r.blockSize());
            long[] expected = ref.blockChecksums(SlicePlan.of(fx.group(), head, ChecksumMode.MIXED));
            if (!Arrays.equals(expected, Arrays.copyOf(m, expected.length))) {
                throw new IllegalStateException("cpu mixed mode differs from the reference backend");
            }
        }
        bound = new MemoryBound(fx.segments(), Runtime.getRuntime().availableProcessors());
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (bound != null) {
            bound.close();
        }
        if (cpu != null) {
            cpu.close();
        }
        if (fx != null) {
            fx.close();
        }
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

    /** Reads every KV byte once with the same threads: the bound of both. */
    @Benchmark
    public long read() {
        return bound.read();
    }
}
