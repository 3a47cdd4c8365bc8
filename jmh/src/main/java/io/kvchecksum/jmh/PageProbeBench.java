package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PageProbe;
import io.kvchecksum.SlicePlan;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The head/tail page probe ({@link PageProbe}) against the full checksum of the same request, in one run on the same
 * fixture: their ratio is the result ({@code docs/bench-cpu.md}, "Page probe cost"). The probe runs on the calling
 * thread; the full checksum on the CPU backend's threads.
 */
@State(Scope.Benchmark)
public class PageProbeBench extends Bench {
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
    private SlicePlan plan;

    @Setup(Level.Trial)
    public void setUp() {
        KvFixture fx = closing(KvFixture.of(shape, size));
        cpu = closing(KvChecksums.cpu());
        plan = SlicePlan.of(fx.group(), fx.request());
        // Checked before timing: the probe is deterministic, covers every page, and is not all zeros.
        PageProbe.Probes p = PageProbe.compute(cpu, plan, probeBytes);
        check(p.equals(PageProbe.compute(cpu, plan, probeBytes)) && p.head().length == plan.numPages()
                && !java.util.Arrays.stream(p.tail()).allMatch(x -> x == 0),
                "page probe not deterministic or empty: " + p);
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
