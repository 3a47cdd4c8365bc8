package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.PendingChecksums;
import org.openjdk.jmh.annotations.AuxCounters;
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
 * Host-sync-free behaviour of an asynchronous backend: the host time of one {@code submit} (enqueue) as the request
 * grows, which must stay flat, and the synchronizing driver calls made inside it, which must be zero.
 *
 * <p>Only {@code submit} is timed; waiting for the result and releasing it happen in the per-invocation tear-down,
 * so one enqueue never queues behind the previous one's work. CPU backends compute inside {@code submit}, so this
 * benchmark is for {@link Backends#ASYNC} only.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {Jvm.VECTOR, Jvm.NATIVE, Jvm.HEAP})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class SubmitBench {
    /** An asynchronous backend. */
    @Param({"cuda", "opencl"})
    public String backend;

    /** A {@link ModelShape#id()}. */
    @Param({"llama3-8b-tp1"})
    public String shape;

    /** From one block to 128k tokens. */
    @Param({"16", "1MiB", "256MiB"})
    public String size;

    /**
     * Per-iteration sums: {@code syncCalls} synchronizing calls seen during {@code submit}, {@code recordedSubmits}
     * submits made while a recorder was attached. Synchronizing calls per enqueue = syncCalls / recordedSubmits;
     * with no recorder, recordedSubmits stays 0 and the count is missing, not zero.
     */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class SyncCounts {
        public long syncCalls;
        public long recordedSubmits;
    }

    private KvChecksum kc;
    private KvFixture fx;
    private SyncRecorder recorder;
    private PendingChecksums pending;

    @Setup(Level.Trial)
    public void setUp() {
        if (!Backends.ASYNC.contains(backend)) {
            throw new IllegalStateException("backend " + backend + " skipped: its submit computes on the calling thread");
        }
        kc = Backends.open(backend);
        ModelShape s = ModelShape.of(shape);
        fx = KvFixture.create(s, s.tokens(size));
        Oracle.of(fx).verify(kc, fx);
        recorder = SyncRecorder.of(kc);
    }

    /** The timed part: one enqueue. */
    @Benchmark
    public PendingChecksums submit(SyncCounts counts) {
        SyncRecorder r = recorder;
        long before = r == null ? 0 : r.syncCalls();
        PendingChecksums p = kc.submit(fx.group(), fx.request());
        if (r != null) {
            counts.syncCalls += r.syncCalls() - before;
            counts.recordedSubmits++;
        }
        pending = p;
        return p;
    }

    @TearDown(Level.Invocation)
    public void drain() {
        if (pending != null) {
            pending.get();
            pending.close();
            pending = null;
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (kc != null) {
            kc.close();
        }
        if (fx != null) {
            fx.close();
        }
    }
}
