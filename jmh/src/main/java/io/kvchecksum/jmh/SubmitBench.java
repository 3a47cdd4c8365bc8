package io.kvchecksum.jmh;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Host-sync-free behaviour of an asynchronous backend: the host time of one {@code submit} (enqueue) as the request
 * grows, which must stay flat, and the synchronizing driver calls made inside it, which must be zero.
 *
 * <p>Only {@code submit} is timed; waiting for the result and releasing it happen in the per-invocation tear-down,
 * so one enqueue never queues behind the previous one's work. CPU backends compute inside {@code submit}, so this
 * benchmark is for {@link Backends#ASYNC} only.
 *
 * <p>The backend is opened through its module's counting entry ({@link SyncRecorder#open}) when it has one, so the
 * synchronizing calls are counted. CUDA reads the KV from device memory: the fixture's segments are copied once in
 * set-up with {@code CudaBackend.upload} (a submit of host memory would copy and wait on every call, timing PCIe), and
 * the same layout is described on the copies.
 */
@State(Scope.Thread)
public class SubmitBench extends Bench {
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
    private KvCacheGroup group;
    private PendingChecksums pending;

    @Setup(Level.Trial)
    public void setUp() {
        check(Backends.ASYNC.contains(backend),
                "backend " + backend + " skipped: its submit computes on the calling thread");
        recorder = SyncRecorder.open(backend);
        kc = recorder != null ? recorder.backend() : Backends.open(backend);
        fx = closing(KvFixture.of(shape, size));
        closing(kc); // closed before the fixture's memory, after the device copies
        Oracle oracle = Oracle.of(fx);
        oracle.verify(kc, fx);
        group = backend.equals("cuda") ? onDevice(kc, fx.group(), this::closing) : fx.group();
        if (group != fx.group()) {
            try (PendingChecksums p = kc.submit(group, fx.request())) {
                Oracle.expectEqual(kc.description() + " on " + fx.shape().id() + ", " + fx.tokens()
                        + " tokens: submit of device memory", oracle.blocks(), p.get());
            }
        }
    }

    /**
     * The group with each distinct host segment copied to device memory by {@code CudaBackend.upload(MemorySegment)}
     * on the front's backend (through reflection: no compile-time dependency on the CUDA module), same offsets and
     * strides.
     */
    static KvCacheGroup onDevice(KvChecksum cuda, KvCacheGroup g, Consumer<AutoCloseable> buffers) {
        Method upload;
        Method memory;
        try {
            upload = cuda.backend().getClass().getMethod("upload", MemorySegment.class);
            memory = upload.getReturnType().getMethod("memory");
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException("backend " + cuda.name() + " skipped: its module has no public upload to "
                    + "device memory (CudaBackend.upload), and host memory would time the copy, not the kernel", e);
        }
        Function<MemorySegment, KvMemory> toDevice = seg -> {
            try {
                Object buffer = upload.invoke(cuda.backend(), seg);
                buffers.accept((AutoCloseable) buffer);
                return (KvMemory) memory.invoke(buffer);
            } catch (InvocationTargetException e) {
                throw new IllegalStateException("upload to device memory failed: " + e.getCause(), e.getCause());
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        };
        Map<MemorySegment, KvMemory> moved = new HashMap<>();  // each distinct segment once
        UnaryOperator<KvRegion> move = r -> r == null ? null : new KvRegion(r.memory() instanceof KvMemory.Host h
                ? moved.computeIfAbsent(h.segment(), toDevice) : r.memory(), r.offset(), r.pageStride(), r.tokenStride(),
                r.headStride(), r.cellBytes());
        List<CacheLayer> layers = g.layers().stream()
                .map(l -> new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), move.apply(l.k()), move.apply(l.v())))
                .toList();
        return new KvCacheGroup(layers, g.pageSize(), g.numPages());
    }

    /** The timed part: one enqueue. */
    @Benchmark
    public PendingChecksums submit(SyncCounts counts) {
        SyncRecorder r = recorder;
        long before = r == null ? 0 : r.syncCalls();
        PendingChecksums p = kc.submit(group, fx.request());
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
}
