package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.engine.verdict.ChecksumCounters;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.PolicyTest;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.worker.Cluster.Config;
import io.kvchecksum.engine.worker.Cluster.Engine;
import io.kvchecksum.engine.worker.Cluster.Layout;
import io.kvchecksum.engine.worker.Cluster.Model;
import io.kvchecksum.engine.worker.Cluster.Prompt;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link SingleWorker}: a one-worker engine's producer payload and consumer verdict, and what a failure gives. */
class SingleWorkerTest {
    private static final long SEED = 0x5_1A6_1EL;
    private static final long N = 150;

    private Arena arena;
    private Model model;
    private Engine producer;
    private Engine consumer;
    private KvChecksum cpu;

    @BeforeEach
    void engines() {
        System.out.println("SingleWorkerTest seed " + SEED);
        arena = Arena.ofConfined();
        cpu = KvChecksums.cpu();
        model = Model.gqa(4, SEED);
        Random rnd = new Random(SEED);
        producer = new Engine(model, Config.of(1, 1, 16), N, rnd, arena);
        producer.fill(new Prompt(model, N, SEED + 1), 0, N);
        // Another layout and page size on the consumer: the payload is what crosses, not the geometry.
        consumer = new Engine(model, Config.of(1, 1, 16).layout(Layout.HND).pageSize(8), N, rnd, arena);
    }

    @AfterEach
    void close() {
        cpu.close();
        arena.close();
    }

    /** Both groups of a TP 1 x PP 1 engine, each held whole. */
    static List<WorkerChecksummer.WorkerGroup> layout(Engine e, Model m) {
        List<WorkerChecksummer.WorkerGroup> out = new ArrayList<>();
        for (int g = 0; g < Cluster.GROUP_LAYERS.length; g++) {
            List<Long> hashes = new ArrayList<>();
            for (CacheLayer l : e.caches[0][0][g].layers()) {
                hashes.add(m.layerHash(l.layer()));
            }
            out.add(SingleWorker.group(g, Fingerprints.ofGroup(hashes), e.caches[0][0][g].group()));
        }
        return out;
    }

    private List<WorkerChecksummer.WorkerGroup> layout(Engine e) {
        return layout(e, model);
    }

    /** Producer payload, the load (local prefix of {@code prefixBlocks}), then the consumer's verdict. */
    private Optional<LoadVerdict> transfer(SingleWorker worker, PendingLoads pending, int prefixBlocks, boolean corrupt) {
        Optional<String> payload = worker.producerBase64("r", layout(producer), producer.select(Side.PRODUCER, 0, N));
        assertTrue(payload.isPresent());
        long local = prefixBlocks * 16L;
        if (local > 0) {
            consumer.loadFrom(producer, 0, local);   // the local prefix hit: the same tokens, computed locally
        }
        pending.expect("r", payload.get());
        consumer.loadFrom(producer, local, N);
        if (corrupt) {
            consumer.corrupt(0, 0, 0, 2, 0, 70, 3);   // token 70: block 4
        }
        return worker.verify(pending, "r", layout(consumer), consumer.select(Side.CONSUMER, local, N));
    }

    @Test
    void aCleanLoadMatchesACorruptedOneMismatchesAtItsBlock() {
        SingleWorker worker = SingleWorker.builder(cpu).build();
        LoadVerdict clean = transfer(worker, new PendingLoads(), 2, false).orElseThrow();
        assertEquals(Status.MATCH, clean.status(), clean.toString());

        LoadVerdict bad = transfer(worker, new PendingLoads(), 0, true).orElseThrow();
        assertEquals(Status.MISMATCH, bad.status(), bad.toString());
        assertArrayEquals(new long[] {4}, bad.group(0).mismatchedBlocks());
    }

    @Test
    void theProducerPayloadIsTheAggregatorsEncoded() {
        SingleWorker worker = SingleWorker.builder(cpu).build();
        List<BlockSelection> sel = producer.select(Side.PRODUCER, 0, N);
        var complete = assertInstanceOf(Aggregator.Complete.class, worker.producer(layout(producer), sel));
        ChecksumPayload decoded = PayloadCodec.decodeBase64(worker.producerBase64("r", layout(producer), sel).orElseThrow());
        assertEquals(complete.payload(), decoded);
        assertEquals(N, decoded.numTokens());
        assertEquals(1, (int) decoded.tpSize());
        // Independent of the library's worker path: the reference checksums of the prompt's blocks.
        Prompt prompt = new Prompt(model, N, SEED + 1);
        assertEquals(2, decoded.groups().size());
        for (GroupChecksums g : decoded.groups()) {
            assertArrayEquals(prompt.referenceChecksums(g.groupId(), 0, 16, arena), g.values(), "group " + g.groupId());
        }
    }

    /**
     * The engine's caches cut into one allocation per physical page, in request order: every page its own
     * {@link KvCacheGroup} (the same memory seen through an offset), as Jlama's sessions are.
     */
    private List<WorkerChecksummer.WorkerGroup> segmented(Engine e) {
        List<WorkerChecksummer.WorkerGroup> out = new ArrayList<>();
        List<WorkerChecksummer.WorkerGroup> whole = layout(e);
        for (int g = 0; g < whole.size(); g++) {
            KvCacheGroup cache = e.caches[0][0][g].group();
            int k = 16 / cache.pageSize();
            List<KvCacheGroup> pages = new ArrayList<>();
            for (int blockId : e.tables[g]) {
                for (int j = 0; j < k; j++) {
                    long page = (long) blockId * k + j;
                    List<CacheLayer> ls = new ArrayList<>();
                    for (CacheLayer l : cache.layers()) {
                        ls.add(new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), at(l.k(), page), l.v() == null ? null : at(l.v(), page)));
                    }
                    pages.add(KvCacheGroup.of(cache.pageSize(), 1, ls));
                }
            }
            out.add(SingleWorker.group(g, whole.get(g).fingerprint(), KvSegments.of(pages)));
        }
        return out;
    }

    private static KvRegion at(KvRegion r, long page) {
        return new KvRegion(r.memory(), r.offset() + page * r.pageStride(), r.pageStride(), r.tokenStride(), r.headStride(),
                r.cellBytes());
    }

    @Test
    void segmentedKvGivesTheSamePayloadAndVerdictsAsOneAllocation() {
        SingleWorker worker = SingleWorker.builder(cpu).build();
        List<BlockSelection> sel = producer.select(Side.PRODUCER, 0, N);
        String whole = worker.producerBase64("r", layout(producer), sel).orElseThrow();
        assertEquals(whole, worker.producerBase64("r", segmented(producer), sel).orElseThrow());

        // The consumer's pages are 8 tokens: every 16-token block lies in two allocations.
        consumer.loadFrom(producer, 0, N);
        PendingLoads pending = new PendingLoads();
        pending.expect("r", whole);
        LoadVerdict clean = worker.verify(pending, "r", segmented(consumer), consumer.select(Side.CONSUMER, 32, N)).orElseThrow();
        assertEquals(Status.MATCH, clean.status(), clean.toString());

        consumer.corrupt(0, 0, 0, 2, 0, 70, 3);   // token 70: block 4
        pending.expect("r2", whole);
        LoadVerdict bad = worker.verify(pending, "r2", segmented(consumer), consumer.select(Side.CONSUMER, 0, N)).orElseThrow();
        assertEquals(Status.MISMATCH, bad.status(), bad.toString());
        assertArrayEquals(new long[] {4}, bad.group(0).mismatchedBlocks());
    }

    @Test
    void aLoadNotPendingGetsNoVerdictAndIsNotComparedTwice() {
        SingleWorker worker = SingleWorker.builder(cpu).build();
        PendingLoads pending = new PendingLoads();
        assertTrue(transfer(worker, pending, 0, false).isPresent());
        assertTrue(worker.verify(pending, "r", layout(consumer), consumer.select(Side.CONSUMER, 0, N)).isEmpty());
        assertTrue(worker.verify(pending, "other", layout(consumer), consumer.select(Side.CONSUMER, 0, N)).isEmpty());
    }

    @Test
    void aFailingBackendIsUnverifiedOnTheConsumerAndNoPayloadOnTheProducer() {
        try (BackendFailureTest.Broken b = new BackendFailureTest.Broken(BackendFailureTest.Stage.GET)) {
            failingBackend(b);
        }
    }

    private void failingBackend(BackendFailureTest.Broken b) {
        ChecksumCounters counters = new ChecksumCounters();
        PolicyTest.Recording log = new PolicyTest.Recording();
        SingleWorker worker = SingleWorker.builder(b.backend).metrics(counters).sender(new PayloadSender(counters, log)).build();
        assertTrue(worker.producerBase64("r", layout(producer), producer.select(Side.PRODUCER, 0, N)).isEmpty());
        assertEquals(1, counters.withheldPayloads(UnverifiedReason.BACKEND_FAILED));
        assertEquals(1, log.count("WARNING"));

        consumer.loadFrom(producer, 0, N);
        PendingLoads pending = new PendingLoads();
        pending.expect("r", (String) null);
        LoadVerdict v = worker.verify(pending, "r", layout(consumer), consumer.select(Side.CONSUMER, 0, N)).orElseThrow();
        assertEquals(UnverifiedReason.BACKEND_FAILED, v.reason(), v.toString());
        assertTrue(v.detail().contains("device lost"), v.detail());
        assertEquals(b.handles.get(), b.closed.get());
    }

    @Test
    void selectionsOfMixedTokenCountsOrNoneAreRefused() {
        SingleWorker worker = SingleWorker.builder(cpu).build();
        BlockSelection a = producer.select(Side.PRODUCER, 0, N).get(0);
        BlockSelection shorter = BlockSelection.producer(1, producer.tables[1], 0, N - 20, 16, null);
        var e = assertThrows(IllegalArgumentException.class, () -> worker.producer(layout(producer), List.of(a, shorter)));
        assertTrue(e.getMessage().contains("130"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> worker.consumer(layout(consumer), List.of()));
    }

    @Test
    void groupHoldsTheCacheOnceUnderReplicaKeyNone() {
        var g = SingleWorker.group(3, 42, producer.caches[0][0][0].group());
        assertEquals(3, g.groupId());
        assertEquals(42, g.fingerprint());
        assertEquals(List.of(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, producer.caches[0][0][0].group())), g.parts());
    }
}
