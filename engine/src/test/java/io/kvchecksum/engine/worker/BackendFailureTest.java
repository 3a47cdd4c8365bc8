package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumCounters;
import io.kvchecksum.engine.verdict.Decision;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.PolicyTest;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.worker.Cluster.Config;
import io.kvchecksum.engine.worker.Cluster.Engine;
import io.kvchecksum.engine.worker.Cluster.Model;
import io.kvchecksum.engine.worker.Cluster.Prompt;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A backend that fails (device lost) at each stage of a worker's checksum: the try-forms report a failed record, the
 * side aggregates it into {@link UnverifiedReason#BACKEND_FAILED} with the failure in the detail, the producer sends
 * nothing (warned, counted), and every handle the backend gave out is released. The throwing forms keep throwing.
 */
class BackendFailureTest {
    private static final long SEED = 0xFA11_ED00L;
    private static final long N = 150;

    /** Where the backend fails. */
    enum Stage { ENQUEUE, IS_DONE, GET }

    /**
     * A real CPU backend whose run (the second one, so that a handle given out before must be released), or whose
     * handles' isDone or get, throw "device lost".
     */
    static final class Broken implements Backend {
        final Backend real = KvChecksums.cpu().backend();
        final AtomicInteger handles = new AtomicInteger();
        final AtomicInteger closed = new AtomicInteger();
        final KvChecksum backend = KvChecksum.of(this);
        private final Stage stage;

        Broken(Stage stage) {
            this.stage = stage;
        }

        @Override
        public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
            if (stage == Stage.ENQUEUE && handles.get() > 0) {
                throw new IllegalStateException("device lost");   // after one handle was given out
            }
            PendingChecksums pc = real.run(plan, output, stream);
            handles.incrementAndGet();
            return wrap(pc, stage);
        }

        @Override
        public String name() {
            return "broken";
        }

        @Override
        public String description() {
            return "a CPU backend that loses its device at " + stage;
        }

        @Override
        public BackendLimits limits() {
            return real.limits();
        }

        @Override
        public long pageDigest(PageDigestPlan plan) {
            return real.pageDigest(plan);
        }

        @Override
        public void close() {
            real.close();
        }

        private PendingChecksums wrap(PendingChecksums pc, Stage stage) {
            return new PendingChecksums() {
                @Override
                public long[] get() {
                    if (stage == Stage.GET) {
                        throw new IllegalStateException("device lost");
                    }
                    return pc.get();
                }

                @Override
                public boolean isDone() {
                    if (stage == Stage.IS_DONE) {
                        throw new IllegalStateException("device lost");
                    }
                    return pc.isDone();
                }

                @Override
                public void close() {
                    closed.incrementAndGet();
                    pc.close();
                }
            };
        }
    }

    private Arena arena;
    private Model model;
    private Engine producer;
    private Engine consumer;

    @BeforeEach
    void engines() {
        System.out.println("BackendFailureTest seed " + SEED);
        arena = Arena.ofConfined();
        model = Model.gqa(4, SEED);
        Random rnd = new Random(SEED);
        producer = new Engine(model, Config.of(1, 1, 16), N, rnd, arena);
        producer.fill(new Prompt(model, N, SEED + 1), 0, N);
        consumer = new Engine(model, Config.of(1, 1, 16), N, rnd, arena);
        consumer.loadFrom(producer, 0, N);
    }

    private final List<Broken> made = new java.util.ArrayList<>();

    private Broken broken(Stage stage) {
        Broken b = new Broken(stage);
        made.add(b);
        return b;
    }

    @AfterEach
    void close() {
        made.forEach(Broken::close);
        arena.close();
    }

    /** Both groups: two handles per request. */
    private static List<WorkerChecksummer.WorkerGroup> twoGroups(Engine e, Model m) {
        return SingleWorkerTest.layout(e, m);
    }

    private static List<BlockSelection> twoSelections(Engine e, Side side) {
        return e.select(side, 0, N);
    }

    @ParameterizedTest
    @EnumSource(Stage.class)
    void theConsumersLoadIsUnverifiedBackendFailedAndEveryHandleIsReleased(Stage stage) {
        Broken b = broken(stage);
        var worker = WorkerChecksummer.builder(b.backend).groups(twoGroups(consumer, model)).build();
        List<BlockSelection> sel = twoSelections(consumer, Side.CONSUMER);
        WorkerChecksummer.PendingRecord p = worker.trySubmit(Side.CONSUMER, N, sel, 0);
        WorkerRecord r = stage == Stage.GET ? p.record() : p.poll().orElseThrow();
        assertTrue(r.isFailed(), r.toString());
        assertTrue(r.backendFailure().contains("device lost"), r.backendFailure());
        assertEquals(List.of(), r.groups());
        assertEquals(b.handles.get(), b.closed.get(), "handles given out vs released");
        assertTrue(b.handles.get() > 0);
        p.close();   // after the failure: nothing left to release, nothing thrown

        Aggregator.Result res = Aggregator.consumer(1, 1, N, sel, List.of(r));
        Aggregator.Incomplete i = assertInstanceOf(Aggregator.Incomplete.class, res);
        assertEquals(UnverifiedReason.BACKEND_FAILED, i.reason());
        assertTrue(i.detail().contains("TP rank 0 PP stage 0") && i.detail().contains("device lost"), i.detail());

        PendingLoads pending = new PendingLoads();
        pending.expect("r", "AAAA");
        LoadVerdict v = pending.verify("r", res).orElseThrow();
        assertEquals(Status.UNVERIFIED, v.status());
        assertEquals(UnverifiedReason.BACKEND_FAILED, v.reason());
        ChecksumCounters counters = new ChecksumCounters();
        Decision d = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, counters, new PolicyTest.Recording())
                .decide("r", v);
        assertEquals(Action.RECOMPUTE, d.action());
        assertEquals(1, counters.unverifiedLoads(UnverifiedReason.BACKEND_FAILED));
    }

    @ParameterizedTest
    @EnumSource(Stage.class)
    void theThrowingFormsStillThrowAndReleaseEveryHandle(Stage stage) {
        Broken b = broken(stage);
        var worker = WorkerChecksummer.builder(b.backend).groups(twoGroups(consumer, model)).build();
        List<BlockSelection> sel = twoSelections(consumer, Side.CONSUMER);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
            try (var p = worker.submit(Side.CONSUMER, N, sel, 0)) {
                p.poll();
                p.record();
            }
        });
        assertEquals("device lost", e.getMessage());
        assertEquals(b.handles.get(), b.closed.get());
        if (stage != Stage.IS_DONE) {   // compute waits with get(), never asks isDone()
            assertThrows(IllegalStateException.class, () -> worker.compute(Side.CONSUMER, N, sel));
            assertEquals(b.handles.get(), b.closed.get());
        }
    }

    @ParameterizedTest
    @EnumSource(Stage.class)
    void theProducerSendsNothingWarnedAndCounted(Stage stage) {
        Broken b = broken(stage);
        var worker = WorkerChecksummer.builder(b.backend).groups(twoGroups(producer, model)).build();
        List<BlockSelection> sel = twoSelections(producer, Side.PRODUCER);
        WorkerChecksummer.PendingRecord p = worker.trySubmit(Side.PRODUCER, N, sel, 0);
        WorkerRecord r = stage == Stage.GET ? p.record() : p.poll().orElseThrow();
        assertTrue(r.isFailed());
        if (stage != Stage.IS_DONE) {
            WorkerRecord computed = worker.tryCompute(Side.PRODUCER, N, sel);
            assertEquals(r, computed);
        }
        assertEquals(b.handles.get(), b.closed.get());
        ChecksumCounters counters = new ChecksumCounters();
        PolicyTest.Recording log = new PolicyTest.Recording();
        PayloadSender sender = new PayloadSender(counters, log);
        assertTrue(sender.base64("r", Aggregator.producer(1, 1, N, sel, List.of(r))).isEmpty());
        assertEquals(1, counters.withheldPayloads(UnverifiedReason.BACKEND_FAILED));
        assertEquals(1, log.count("WARNING"), log.lines.toString());
        assertTrue(log.lines.get(0).contains("BACKEND_FAILED") && log.lines.get(0).contains("device lost"), log.lines.toString());
    }

    @Test
    void aWorkingBackendGivesTheSameRecordThroughEitherForm() {
        try (KvChecksum cpu = KvChecksums.cpu()) {
            var worker = WorkerChecksummer.builder(cpu).groups(twoGroups(consumer, model)).build();
            List<BlockSelection> sel = twoSelections(consumer, Side.CONSUMER);
            WorkerRecord tried = worker.tryCompute(Side.CONSUMER, N, sel);
            assertFalse(tried.isFailed());
            assertEquals(worker.compute(Side.CONSUMER, N, sel), tried);
            assertEquals(2, tried.groups().size());
        }
    }

    @Test
    void aFailedWorkerOutranksAMissingOneAndAFailedRecordCarriesNoGroups() {
        WorkerRecord failed = WorkerRecord.failed(1, 0, N, new IllegalStateException("device lost"));
        assertEquals("java.lang.IllegalStateException: device lost", failed.backendFailure());
        BlockSelection s = consumer.select(Side.CONSUMER, 0, N).get(0);
        // TP 2: rank 0 never reported, rank 1 failed.
        var i = assertInstanceOf(Aggregator.Incomplete.class, Aggregator.consumer(2, 1, N, List.of(s), List.of(failed)));
        assertEquals(UnverifiedReason.BACKEND_FAILED, i.reason());
        assertTrue(i.detail().contains("TP rank 1 PP stage 0"), i.detail());
        var pg = new PartialGroup(0, 1, s.range(), Map.of());
        assertThrows(IllegalArgumentException.class, () -> new WorkerRecord(0, 0, N, List.of(pg), Map.of(), "x"));
        assertThrows(IllegalArgumentException.class, () -> new WorkerRecord(0, 0, N, List.of(), Map.of(0, "why"), "x"));
        assertFalse(new WorkerRecord(0, 0, N, List.of(pg), Map.of()).isFailed());
    }
}
