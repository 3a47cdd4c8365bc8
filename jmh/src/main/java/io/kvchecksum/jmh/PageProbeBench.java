package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PageProbe;
import io.kvchecksum.SlicePlan;
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

import java.util.concurrent.TimeUnit;

/**
 * The head/tail page probe ({@link PageProbe}) against the full checksum of the same request, in one run on the same
 * fixture: their ratio is the result ({@code docs/bench-cpu.md}, "Page probe cost"). The probe runs on the calling
 * thread; the full checksum on the CPU backend's threads.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {Jvm.VECTOR, Jvm.NATIVE, Jvm.HEAP})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class PageProbeBench {
    /** A {@link ModelShape#id()}. */
    @Param({"llama3-8b-tp1"})
    public String shape;

    /** Tokens, or a KV size rounded to whole 16-token blocks; see {@link ModelShape#tokens}. */
    @Param({"1MiB", "256MiB"})
    public String size;

    /** Bytes probed at each end of each cell. */
    @Param({"64"})
    public int probeBytes;

    private KvChecksum cpu;
    private KvFixture fx;
    private SlicePlan plan;

    @Setup(Level.Trial)
    public void setUp() {
        ModelShape s = ModelShape.of(shape);
        fx = KvFixture.create(s, s.tokens(size));
        cpu = KvChecksums.cpu();
        plan = SlicePlan.of(fx.group(), fx.request());
        // Checked before timing: the probe is deterministic, covers every page, and is not all zeros.
        PageProbe.Probes p = PageProbe.compute(cpu, plan, probeBytes);
        if (!p.equals(PageProbe.compute(cpu, plan, probeBytes)) || p.head().length != plan.numPages()
                || java.util.Arrays.stream(p.tail()).allMatch(x -> x == 0)) {
            throw new IllegalStateException("page probe not deterministic or empty: " + p);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (cpu != null) {
            cpu.close();
        }
        if (fx != null) {
            fx.close();
        }
    }

    /** The full checksum: every KV byte once. */
    @Benchmark
    public long[] full() {
        return cpu.blockChecksums(plan);
    }

    /** The probe: the first and last {@code probeBytes} of each cell end of every page, on the calling thread. */
    @Benchmark
    public PageProbe.Probes probe() {
        return PageProbe.compute(cpu, plan, probeBytes);
    }
}
