package io.kvchecksum.engine.faults;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.Decision;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.PolicyTest;
import io.kvchecksum.engine.verdict.RankDecisions;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.Verifier;
import io.kvchecksum.engine.worker.Aggregator;
import io.kvchecksum.engine.worker.BlockRange;
import io.kvchecksum.engine.worker.BlockSelection;
import io.kvchecksum.engine.worker.Cluster;
import io.kvchecksum.engine.worker.Cluster.Config;
import io.kvchecksum.engine.worker.Cluster.Engine;
import io.kvchecksum.engine.worker.Cluster.Layout;
import io.kvchecksum.engine.worker.Cluster.Model;
import io.kvchecksum.engine.worker.Cluster.Prompt;
import io.kvchecksum.engine.worker.Cluster.WorkerCache;
import io.kvchecksum.engine.worker.Fingerprints;
import io.kvchecksum.engine.worker.PartialGroup;
import io.kvchecksum.engine.worker.ReplicaKey;
import io.kvchecksum.engine.worker.Side;
import io.kvchecksum.engine.worker.WorkerChecksummer;
import io.kvchecksum.engine.worker.WorkerRecord;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fault injector on two simulated TP ranks of a consumer (SGLang's TP2 e2e test, in process): each rank verifies
 * its own shard of every request, the injector flips its computed checksum or XORs a landed row with p = 0.3 from its
 * own generator, each rank decides locally, and the all-reduced decision is what both ranks act on.
 */
class FaultInjectionTest {
    private static final long SEED = 0x000F_A017L;
    private static final int REQUESTS = 40;

    /** One rank's record of one request, as the only worker of a TP1 view over that rank's heads. */
    private static WorkerRecord rankRecord(KvChecksum backend, Engine e, Model m, int rank, Side side, long n,
            List<BlockSelection> sel) {
        List<WorkerChecksummer.WorkerGroup> layout = new ArrayList<>();
        for (int g = 0; g < Cluster.GROUP_LAYERS.length; g++) {
            WorkerCache c = e.caches[0][rank][g];
            List<Long> hashes = new ArrayList<>();
            for (CacheLayer l : c.layers()) {
                hashes.add(m.layerHash(l.layer()));
            }
            layout.add(new WorkerChecksummer.WorkerGroup(g, Fingerprints.ofGroup(hashes),
                    List.of(new WorkerChecksummer.ReplicaPart(c.key(), c.group()))));
        }
        return WorkerChecksummer.builder(backend).groups(layout).build()
                .compute(side, n, sel);
    }

    private static ChecksumPayload payload(Aggregator.Result r) {
        return ((Aggregator.Complete) r).payload();
    }

    @Test
    void atPointThreeOnTwoRanksSomeLoadsFailTheRestAreCleanAndBothRanksActAlike() {
        System.out.println("FaultInjectionTest seed = " + SEED);
        FaultInjector.Config cfg = FaultInjector.parse("p:0.3,kinds:flip|xor,seed:" + SEED, "test");
        FaultInjector[] inj = {FaultInjector.of(cfg, 0), FaultInjector.of(cfg, 1)};
        FailurePolicy policy = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, ChecksumMetrics.NONE,
                new PolicyTest.Recording());
        Model model = Model.gqa(4, SEED);
        Config pc = Config.of(2, 1, 16).layout(Layout.FLASH);
        Config cc = Config.of(2, 1, 16).layout(Layout.SGLANG);
        List<String> batch = new ArrayList<>();
        List<Map<String, Decision>> local = List.of(new HashMap<>(), new HashMap<>());
        Map<String, boolean[]> injectedOn = new HashMap<>();
        Random rnd = new Random(SEED);
        try (KvChecksum backend = KvChecksums.cpu()) {
            for (int q = 0; q < REQUESTS; q++) {
                String id = "req-" + q;
                batch.add(id);
                long n = 17 + rnd.nextInt(50);
                try (Arena arena = Arena.ofConfined()) {
                    Prompt prompt = new Prompt(model, n, SEED + q);
                    Engine producer = new Engine(model, pc, n, rnd, arena);
                    producer.fill(prompt, 0, n);
                    Engine consumer = new Engine(model, cc, n, rnd, arena);
                    consumer.loadFrom(producer, 0, n);
                    boolean[] hit = new boolean[2];
                    for (int r = 0; r < 2; r++) {
                        List<BlockSelection> ps = producer.select(Side.PRODUCER, 0, n);
                        ChecksumPayload expected = payload(Aggregator.producer(1, 1, n, ps,
                                List.of(rankRecord(backend, producer, model, r, Side.PRODUCER, n, ps))));
                        // The landed row the engine names: token t's K bytes of layer 0, first local head, on rank r.
                        CacheLayer l0 = consumer.caches[0][r][0].layers().get(0);
                        long t = rnd.nextInt((int) n);
                        long at = l0.k().cellOffset(consumer.tables[0][(int) (t / 16)], t % 16, 0);
                        MemorySegment row = ((KvMemory.Host) l0.k().memory()).segment().asSlice(at, l0.k().cellBytes());
                        hit[r] |= inj[r].maybeCorrupt(row);
                        List<BlockSelection> cs = consumer.select(Side.CONSUMER, 0, n);
                        WorkerRecord computed = rankRecord(backend, consumer, model, r, Side.CONSUMER, n, cs);
                        WorkerRecord reported = inj[r].maybeFlip(computed);
                        hit[r] |= reported != computed;
                        LoadVerdict v = Verifier.compare(expected, payload(Aggregator.consumer(1, 1, n, cs, List.of(reported))));
                        assertEquals(hit[r] ? Status.MISMATCH : Status.MATCH, v.status(), id + " rank " + r + ": " + v);
                        local.get(r).put(id, policy.decide(id, v));
                    }
                    injectedOn.put(id, hit);
                }
            }
        }
        int[] v0 = RankDecisions.localVector(batch, local.get(0));
        int[] v1 = RankDecisions.localVector(batch, local.get(1));
        // Each rank all-reduces (MAX) and acts on the result: rank 0 sees [own, peer], rank 1 [own, peer].
        Map<String, Action> onRank0 = RankDecisions.actions(batch, RankDecisions.maxReduce(List.of(v0, v1)));
        Map<String, Action> onRank1 = RankDecisions.actions(batch, RankDecisions.maxReduce(List.of(v1, v0)));
        assertEquals(onRank0, onRank1, "the decision is identical on both ranks");
        int failed = 0;
        int rankLocalOnly = 0;
        for (String id : batch) {
            boolean[] hit = injectedOn.get(id);
            assertEquals(hit[0] || hit[1] ? Action.RECOMPUTE : Action.USE_LOAD, onRank0.get(id), id);
            failed += hit[0] || hit[1] ? 1 : 0;
            rankLocalOnly += hit[0] != hit[1] ? 1 : 0;
        }
        System.out.println("FaultInjectionTest: " + inj[0].injected() + " + " + inj[1].injected() + " injections, "
                + failed + " of " + REQUESTS + " loads recomputed, " + rankLocalOnly + " on one rank only");
        assertTrue(failed > 0 && failed < REQUESTS, failed + " of " + REQUESTS + " loads failed (seed " + SEED + ")");
        assertTrue(rankLocalOnly > 0, "per-rank generators: some request was injected on one rank only (seed " + SEED + ")");
        assertTrue(inj[0].injected() > 0 && inj[1].injected() > 0, "both ranks injected");
    }

    @Test
    void configurationComesFromThePropertyOrTheEnvironmentAndIsOffByDefault() {
        String before = System.getProperty(FaultInjector.PROPERTY);
        try {
            System.clearProperty(FaultInjector.PROPERTY);
            if (System.getenv(FaultInjector.ENV) == null) {
                assertSame(FaultInjector.OFF, FaultInjector.configured(0));
            }
            System.setProperty(FaultInjector.PROPERTY, "p:0.25, kinds:xor, seed:-7");
            FaultInjector f = FaultInjector.configured(3);
            assertTrue(f.isOn());
            assertEquals(new FaultInjector.Config(0.25, java.util.Set.of(FaultInjector.Kind.XOR), -7), f.config());
            assertEquals(3, f.rank());
            System.setProperty(FaultInjector.PROPERTY, "off");
            assertSame(FaultInjector.OFF, FaultInjector.configured(0));
        } finally {
            if (before == null) {
                System.clearProperty(FaultInjector.PROPERTY);
            } else {
                System.setProperty(FaultInjector.PROPERTY, before);
            }
        }
        assertNull(FaultInjector.parse(null, "x"));
        assertNull(FaultInjector.parse(" ", "x"));
        for (String bad : List.of("p:1.5", "p:x", "kinds:flip", "p:0.3,kinds:bitrot", "p:0.3,seed:1.5", "p:0.3,p:0.2",
                "p:0.3,colour:red", "p")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FaultInjector.parse(bad, "-Dkvchecksum.faults"));
            assertTrue(e.getMessage().startsWith("-Dkvchecksum.faults: "), e.getMessage());
        }
    }

    @Test
    void ranksDrawFromDifferentSeedsAndOffNeverInjects() {
        assertNotEquals(FaultInjector.rankSeed(SEED, 0), FaultInjector.rankSeed(SEED, 1));
        FaultInjector.Config c = new FaultInjector.Config(0.5, java.util.Set.of(FaultInjector.Kind.XOR), SEED);
        FaultInjector a = FaultInjector.of(c, 0);
        FaultInjector b = FaultInjector.of(c, 1);
        FaultInjector a2 = FaultInjector.of(c, 0);
        StringBuilder sa = new StringBuilder();
        StringBuilder sb = new StringBuilder();
        StringBuilder sa2 = new StringBuilder();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment row = arena.allocate(16);
            for (int i = 0; i < 64; i++) {
                sa.append(a.maybeCorrupt(row) ? 1 : 0);
                sb.append(b.maybeCorrupt(row) ? 1 : 0);
                sa2.append(a2.maybeCorrupt(row) ? 1 : 0);
                assertFalse(FaultInjector.OFF.maybeCorrupt(row));
            }
            assertNotEquals(sa.toString(), sb.toString(), "ranks 0 and 1 inject into other requests");
            assertEquals(sa.toString(), sa2.toString(), "one rank's draws are fixed by the base seed");
            MemorySegment x = arena.allocate(4);
            x.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 0x12345678);
            FaultInjector always = FaultInjector.of(new FaultInjector.Config(1, java.util.Set.of(FaultInjector.Kind.XOR), 1), 0);
            assertTrue(always.maybeCorrupt(x));
            assertEquals(~0x12345678, x.get(java.lang.foreign.ValueLayout.JAVA_INT, 0), "every byte XOR 0xFF");
        }
        WorkerRecord rec = new WorkerRecord(0, 0, 16, List.of(new PartialGroup(0, 1, new BlockRange(16, 0, 1),
                Map.of(ReplicaKey.NONE, new long[] {42}))), Map.of());
        FaultInjector flip = FaultInjector.of(new FaultInjector.Config(1, java.util.Set.of(FaultInjector.Kind.FLIP), 1), 0);
        assertEquals(~42L, flip.maybeFlip(rec).groups().get(0).columns().get(ReplicaKey.NONE)[0]);
        assertSame(rec, FaultInjector.OFF.maybeFlip(rec));
    }

    @Test
    void onlyWhatReallyChangedIsCountedAndReported() {
        // p = 1: every draw hits, so only "was there anything to alter" decides.
        FaultInjector both = FaultInjector.of(new FaultInjector.Config(1, java.util.Set.of(FaultInjector.Kind.FLIP,
                FaultInjector.Kind.XOR), SEED), 0);
        WorkerRecord failed = WorkerRecord.failed(0, 0, 16, new IllegalStateException("device lost"));
        WorkerRecord empty = new WorkerRecord(0, 0, 16, List.of(), Map.of());
        WorkerRecord noBlocks = new WorkerRecord(0, 0, 16, List.of(new PartialGroup(0, 1, new BlockRange(16, 1, 1),
                Map.of(ReplicaKey.NONE, new long[0]))), Map.of());
        assertSame(failed, both.maybeFlip(failed));
        assertSame(empty, both.maybeFlip(empty));
        assertSame(noBlocks, both.maybeFlip(noBlocks));
        try (Arena arena = Arena.ofConfined()) {
            assertFalse(both.maybeCorrupt(arena.allocate(0)), "a 0-byte row cannot be corrupted");
            assertEquals(0, both.injected(), "four hits that altered nothing are no injections");

            MemorySegment row = arena.allocate(8);
            row.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, 0x0102030405060708L);
            assertTrue(both.maybeCorrupt(row));
            assertEquals(~0x0102030405060708L, row.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
        }
        WorkerRecord rec = new WorkerRecord(0, 0, 16, List.of(new PartialGroup(0, 1, new BlockRange(16, 0, 1),
                Map.of(ReplicaKey.NONE, new long[] {42}))), Map.of());
        assertEquals(~42L, both.maybeFlip(rec).groups().get(0).columns().get(ReplicaKey.NONE)[0]);
        assertEquals(2, both.injected(), "one row and one value changed");
    }
}
