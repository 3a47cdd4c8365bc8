package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumCounters;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.PolicyTest;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.Verifier;
import io.kvchecksum.engine.worker.Cluster.Config;
import io.kvchecksum.engine.worker.Cluster.Engine;
import io.kvchecksum.engine.worker.Cluster.Model;
import io.kvchecksum.engine.worker.Cluster.Prompt;

import java.lang.foreign.Arena;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.BiFunction;

import org.junit.jupiter.api.Test;

/**
 * A load that wrote no block (0 tokens, a local prefix hit covering the whole request) is UNVERIFIED with the reason
 * {@link UnverifiedReason#NOTHING_LOADED} only: both policies use it without a recompute or a warning, and the metrics
 * count it on its own, never as verified (nor as unverified).
 */
class NothingLoadedTest {
    private static final long SEED = 0x0_7E5_10ADL;
    private static final long N = 160;   // 10 whole blocks of 16: a full prefix hit is whole blocks

    /** Producer at TP 2 (summed by the aggregator), consumer at TP 1 with another page size; a prefix hit of {@code local}. */
    private static LoadVerdict load(KvChecksum backend, long numTokens, long local, Arena arena) {
        Model model = Model.gqa(4, SEED);
        Random rnd = new Random(SEED);
        Engine producer = new Engine(model, Config.of(2, 1, 16), N, rnd, arena);
        producer.fill(new Prompt(model, N, SEED + 1), 0, N);
        Engine consumer = new Engine(model, Config.of(1, 1, 16).pageSize(8), N, rnd, arena);
        List<BlockSelection> ps = producer.select(Side.PRODUCER, 0, numTokens);
        String payload = new PayloadSender(io.kvchecksum.engine.verdict.ChecksumMetrics.NONE).base64("r",
                Aggregator.producer(2, 1, numTokens, ps, producer.records(backend, Side.PRODUCER, numTokens, ps, Map.of())))
                .orElseThrow();
        consumer.loadFrom(producer, 0, numTokens);   // the prefix computed locally and the load: the same tokens
        List<BlockSelection> cs = consumer.select(Side.CONSUMER, local, numTokens);
        PendingLoads pending = new PendingLoads();
        pending.expect("r", payload);
        return pending.verify("r", Aggregator.consumer(1, 1, numTokens, cs,
                consumer.records(backend, Side.CONSUMER, numTokens, cs, Map.of()))).orElseThrow();
    }

    @Test
    void aLoadThatWroteNothingPassesBothPoliciesWithoutAWarningAndIsNeverCountedAsAMatch() {
        System.out.println("NothingLoadedTest seed " + SEED);
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            LoadVerdict fullHit = load(cpu, N, N, arena);
            LoadVerdict zeroTokens = load(cpu, 0, 0, arena);
            LoadVerdict oneBlock = load(cpu, N, N - 16, arena);
            for (LoadVerdict v : List.of(fullHit, zeroTokens)) {
                assertEquals(Status.UNVERIFIED, v.status(), v.toString());
                assertEquals(EnumSet.of(UnverifiedReason.NOTHING_LOADED), v.reasons(), v.toString());
                assertEquals(2, v.groups().size(), "both groups are listed, each wrote nothing: " + v);
            }
            assertEquals(Status.MATCH, oneBlock.status(), "the last block loaded is compared: " + oneBlock);

            List<BiFunction<ChecksumCounters, PolicyTest.Recording, FailurePolicy>> policies = List.of(
                    FailurePolicy::failOpen,
                    (m, log) -> FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST, m, log),
                    (m, log) -> FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, m, log));
            for (var make : policies) {
                ChecksumCounters counters = new ChecksumCounters();
                PolicyTest.Recording log = new PolicyTest.Recording();
                FailurePolicy policy = make.apply(counters, log);
                for (int i = 0; i < 3; i++) {
                    assertEquals(Action.USE_LOAD, policy.decide("full" + i, fullHit).action(), policy.toString());
                    assertEquals(Action.USE_LOAD, policy.decide("zero" + i, zeroTokens).action());
                }
                assertEquals(6, counters.nothingLoadedLoads());
                assertEquals(0, counters.verifiedLoads(), "a load that wrote nothing is never counted as verified");
                for (UnverifiedReason r : UnverifiedReason.values()) {
                    assertEquals(0, counters.unverifiedLoads(r), r.name());
                }
                assertEquals(0, log.count("WARNING") + log.count("ERROR"), log.lines.toString());
                assertEquals(6, log.count("DEBUG"), log.lines.toString());

                assertEquals(Action.USE_LOAD, policy.decide("one", oneBlock).action());
                assertEquals(1, counters.verifiedLoads());
                assertEquals(6, counters.nothingLoadedLoads());
            }
        }
    }

    private static GroupChecksums g(int id, long fingerprint, long start, long... values) {
        return new GroupChecksums(id, fingerprint, 16, start, values);
    }

    @Test
    void aGroupThatWroteNothingLeavesTheLoadToTheOtherGroups() {
        ChecksumPayload producer = ChecksumPayload.of(1, 64, List.of(g(0, 7, 0, 1, 2, 3, 4), g(1, 9, 0, 5, 6, 7, 8)));
        // Group 1's loaded positions were all null blocks: the load wrote none of it.
        LoadVerdict v = Verifier.compare(producer, ChecksumPayload.of(1, 64, List.of(g(0, 7, 2, 3, 4), g(1, 9, 4))));
        assertEquals(Status.MATCH, v.status(), v.toString());
        assertEquals(UnverifiedReason.NOTHING_LOADED, v.group(1).reason());
        v = Verifier.compare(producer, ChecksumPayload.of(1, 64, List.of(g(0, 7, 2, 3, 5), g(1, 9, 4))));
        assertEquals(Status.MISMATCH, v.status(), v.toString());
        // Another unverified group still fails the load under fail-closed.
        v = Verifier.compare(producer, ChecksumPayload.of(1, 64, List.of(g(0, 8, 2, 3, 4), g(1, 9, 4))));
        assertEquals(Status.UNVERIFIED, v.status(), v.toString());
        assertEquals(EnumSet.of(UnverifiedReason.FINGERPRINT_DIFFERS, UnverifiedReason.NOTHING_LOADED), v.reasons());
        ChecksumCounters counters = new ChecksumCounters();
        FailurePolicy closed = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, counters, new PolicyTest.Recording());
        assertEquals(Action.RECOMPUTE, closed.decide("r", v).action());
        assertEquals(0, counters.nothingLoadedLoads());
        assertEquals(1, counters.unverifiedLoads(UnverifiedReason.FINGERPRINT_DIFFERS));
        // Nothing written: nothing crossed, so even another fingerprint cannot make it wrong.
        v = Verifier.compare(producer, ChecksumPayload.of(1, 64, List.of(g(0, 8, 4), g(1, 9, 4))));
        assertEquals(EnumSet.of(UnverifiedReason.NOTHING_LOADED), v.reasons(), v.toString());
        assertEquals(Action.USE_LOAD, closed.decide("s", v).action());
        assertEquals(1, counters.nothingLoadedLoads());
    }
}
