package io.kvchecksum.engine.verdict;

import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.worker.PendingLoads;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.System.Logger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.ResourceBundle;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

public class PolicyTest {

    /** Records what the policy logs. */
    public static final class Recording implements Logger {
        public final List<String> lines = Collections.synchronizedList(new ArrayList<>());

        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            lines.add(level + " " + msg);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            lines.add(level + " " + format);
        }

        public long count(String prefix) {
            return lines.stream().filter(l -> l.startsWith(prefix)).count();
        }
    }

    public static final LoadVerdict MISSING = LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "none");
    public static final LoadVerdict MISMATCH = LoadVerdict.of(List.of(
            new GroupVerdict(0, Status.MISMATCH, new long[] {3}, null, "block 3")));
    public static final LoadVerdict MATCH = LoadVerdict.of(List.of(new GroupVerdict(0, Status.MATCH, null, null, "ok")));

    @Test
    void failOpenWarnsOncePerReasonAndLogsEveryMismatch() {
        Recording log = new Recording();
        FailurePolicy p = new FailurePolicy(false, null, log, ChecksumMetrics.NONE);
        for (int i = 0; i < 5; i++) {
            assertEquals(Action.USE_LOAD, p.decide("r" + i, MISSING).action());
            assertEquals(Action.USE_LOAD, p.decide("m" + i, MISMATCH).action());
            assertEquals(Action.USE_LOAD, p.decide("ok" + i, MATCH).action());
        }
        assertEquals(1, log.count("WARNING"));
        assertEquals(5, log.count("ERROR"));
        p.decide("x", LoadVerdict.unverified(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "2 of 4"));
        assertEquals(2, log.count("WARNING"));
    }

    @Test
    void failClosedFailsEveryBadLoad() {
        Recording log = new Recording();
        FailurePolicy fail = new FailurePolicy(true, FailurePolicy.OnFailure.FAIL_REQUEST, log, ChecksumMetrics.NONE);
        FailurePolicy recompute = new FailurePolicy(true, FailurePolicy.OnFailure.RECOMPUTE, log, ChecksumMetrics.NONE);
        assertEquals(Action.FAIL_REQUEST, fail.decide("a", MISSING).action());
        assertEquals(Action.FAIL_REQUEST, fail.decide("a", MISMATCH).action());
        assertEquals(Action.USE_LOAD, fail.decide("a", MATCH).action());
        assertEquals(Action.RECOMPUTE, recompute.decide("a", MISSING).action());
        assertEquals(Action.RECOMPUTE, recompute.decide("a", MISMATCH).action());
        assertEquals(Action.USE_LOAD, recompute.decide("a", MATCH).action());
    }

    @Test
    void rankDecisionsAreIdenticalOnEveryRank() {
        List<String> batch = List.of("a", "b", "c", "d");
        FailurePolicy p = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE);
        // Rank 0 saw a corrupted copy of b, rank 1 of d; c matched everywhere.
        int[] r0 = RankDecisions.localVector(batch, Map.of("b", p.decide("b", MISMATCH), "c", p.decide("c", MATCH)));
        int[] r1 = RankDecisions.localVector(batch, Map.of("d", p.decide("d", MISMATCH), "c", p.decide("c", MATCH)));
        int[] r2 = RankDecisions.localVector(batch, Map.of("a", new Decision("a", Action.FAIL_REQUEST, MISSING)));
        int[] reduced = RankDecisions.maxReduce(List.of(r0, r1, r2));
        assertArrayEquals(reduced, RankDecisions.maxReduce(List.of(r2, r0, r1)), "independent of rank order");
        Map<String, Action> a = RankDecisions.actions(batch, reduced);
        assertEquals(Map.of("a", Action.FAIL_REQUEST, "b", Action.RECOMPUTE, "c", Action.USE_LOAD, "d", Action.RECOMPUTE), a);
        assertEquals(List.of("a", "b", "d"), RankDecisions.dropped(a));
    }

    @Test
    void verifyOnceGivesOneVerdictToOneThread() throws Exception {
        PendingLoads v = new PendingLoads();
        ChecksumPayload consumer = ChecksumPayload.of(1, 16, List.of(new GroupChecksums(0, 1, 16, 0, new long[] {5})));
        v.expect("r", PayloadCodec.encodeBase64(consumer));
        AtomicInteger verdicts = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                fs.add(pool.submit(() -> v.verify("r", consumer).ifPresent(x -> {
                    assertEquals(Status.MATCH, x.status());
                    verdicts.incrementAndGet();
                })));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        assertEquals(1, verdicts.get());
        assertTrue(v.verify("never-expected", consumer).isEmpty());
        v.expect("gone", (String) null);
        assertTrue(v.forget("gone"));
        assertEquals(0, v.size());
    }

    @Test
    void theLoggerGivenToTheFactoriesGetsEveryLineOfBothPolicies() {
        Recording open = new Recording();
        Recording closed = new Recording();
        ChecksumCounters counters = new ChecksumCounters();
        FailurePolicy o = FailurePolicy.failOpen(counters, open);
        FailurePolicy c = FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST, counters, closed);
        for (int i = 0; i < 3; i++) {
            assertEquals(Action.USE_LOAD, o.decide("a", MISMATCH).action());
            assertEquals(Action.FAIL_REQUEST, c.decide("a", MISMATCH).action());
            o.decide("a", MISSING);
            c.decide("a", MISSING);
        }
        assertEquals(3, open.count("ERROR"));
        assertEquals(3, closed.count("ERROR"));
        assertEquals(1, open.count("WARNING"));
        assertEquals(1, closed.count("WARNING"));
        assertTrue(closed.lines.stream().anyMatch(l -> l.contains("FAIL_REQUEST")), closed.lines.toString());
        assertEquals(6, counters.mismatchedBlocks());
        assertEquals(6, counters.unverifiedLoads(UnverifiedReason.MISSING_PAYLOAD));
        assertEquals(false, o.isFailClosed());
        assertEquals(true, c.isFailClosed());
        assertFalse(o.checkCarrier("X", false));
        assertEquals(2, open.count("WARNING"));
    }

    @Test
    void eachOnFailureIsTheActionOfTheSameName() {
        for (FailurePolicy.OnFailure f : FailurePolicy.OnFailure.values()) {
            Decision d = FailurePolicy.failClosed(f, ChecksumMetrics.NONE, new Recording()).decide("a", MISSING);
            assertEquals(f.name(), d.action().name());
        }
    }
}
