package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.Decision;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.worker.Cluster.Config;
import io.kvchecksum.engine.worker.Cluster.Engine;
import io.kvchecksum.engine.worker.Cluster.Layout;
import io.kvchecksum.engine.worker.Cluster.Model;
import io.kvchecksum.engine.worker.Cluster.Prompt;
// README imports begin
import io.kvchecksum.engine.verdict.ChecksumCounters;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.worker.Aggregator;
import io.kvchecksum.engine.worker.BlockSelection;
import io.kvchecksum.engine.worker.PayloadSender;
import io.kvchecksum.engine.worker.PendingLoads;
import io.kvchecksum.engine.worker.Side;
import io.kvchecksum.engine.worker.WorkerChecksummer;
import io.kvchecksum.engine.worker.WorkerRecord;
// README imports end

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * The README's "End to end in an engine" example: the imports and the code between the markers below are the README's
 * block line for line (checked here), compiled with this test and run on real caches: a clean load, a corrupted one,
 * and a connector without a carrier under fail-closed. (The example's classes of this test's own package are imported
 * too, as the README shows them.)
 */
class ReadmeEngineExampleTest {
    private static final long SEED = 0x00EAD_3E00L;

    /** What the example leaves in the engine's hands. */
    record Outcome(Map<String, Decision> decisions, ChecksumCounters metrics, PendingLoads pending, Map<String, Object> params) {
    }

    static List<WorkerChecksummer.WorkerGroup> layoutOf(Engine e, Model m) {
        Cluster.WorkerCache c = e.caches[0][0][0];
        List<Long> hashes = new ArrayList<>();
        for (CacheLayer l : c.layers()) {
            hashes.add(m.layerHash(l.layer()));
        }
        return List.of(new WorkerChecksummer.WorkerGroup(0, Fingerprints.ofGroup(hashes),
                List.of(new WorkerChecksummer.ReplicaPart(c.key(), c.group()))));
    }

    @SuppressWarnings("unused")
    static Outcome example(boolean corrupt, boolean connectorCarriesChecksums) {
        Model model = Model.gqa(4, SEED);
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined(); KvChecksum backend = KvChecksums.cpu()) {
            long numComputedTokens = 150;
            Engine producer = new Engine(model, Config.of(1, 1, 16), numComputedTokens, rnd, arena);
            producer.fill(new Prompt(model, numComputedTokens, SEED + 1), 0, numComputedTokens);
            Engine consumer = new Engine(model, Config.of(1, 1, 16).layout(Layout.HND).pageSize(8), numComputedTokens, rnd, arena);
            consumer.loadFrom(producer, 0, numComputedTokens);
            if (corrupt) {
                consumer.corrupt(0, 0, 0, 2, 0, 70, 3);   // token 70: block 4
            }
            String connectorName = "TestConnector";
            int tpRank = 0;
            int ppStage = 0;
            int tp = 1;
            int pp = 1;
            long stream = 0;
            String reqId = "req-1";
            int[] blockTable = producer.tables[0];
            int[] table = consumer.tables[0];
            long numLocalComputed = 0;
            long numComputed = numComputedTokens;
            List<WorkerChecksummer.WorkerGroup> producerLayout = layoutOf(producer, model);
            List<WorkerChecksummer.WorkerGroup> consumerLayout = layoutOf(consumer, model);
            Map<String, Object> kvTransferParams = new HashMap<>();
            Map<String, Decision> decisions = new HashMap<>();

            // README begin
            // At startup, once per engine (one policy, so "warn once per reason" warns once):
            ChecksumCounters metrics = new ChecksumCounters();                    // or a bridge to your registry
            FailurePolicy policy = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, metrics);
            policy.checkCarrier(connectorName, connectorCarriesChecksums);         // throws fail-closed, false fail-open
            PendingLoads pending = new PendingLoads(metrics);
            PayloadSender sender = new PayloadSender(metrics);
            // Each worker, once: its layers per group, here explicit; an engine's caches go through the gate instead, e.g.
            // .layout(CacheGate.of(FieldLayouts.vllmFlash(shape, tpRank, tpSize, layerNames, caches), numBlocks, padding)),
            // which skips the groups it cannot checksum with the reason.
            WorkerChecksummer producerWorker = WorkerChecksummer.builder(backend).tpRank(tpRank).ppStage(ppStage)
                    .groups(producerLayout).metrics(metrics).build();
            WorkerChecksummer consumerWorker = WorkerChecksummer.builder(backend).tpRank(tpRank).ppStage(ppStage)
                    .groups(consumerLayout).metrics(metrics).build();

            // Producer worker, in the step that finishes the prompt, on the engine's stream: returns at once. trySubmit throws
            // nothing for a backend failure (device lost): the record is then failed, and the side's result BACKEND_FAILED.
            var sel = List.of(BlockSelection.producer(0, blockTable, /*null id*/ 0, numComputedTokens, 16, /*window*/ null));
            WorkerChecksummer.PendingRecord p = producerWorker.trySubmit(Side.PRODUCER, numComputedTokens, sel, stream);
            // Producer scheduler: p.poll() each step (never waits) until every worker's record is in; then, for a request that
            // finished normally, the payload, or none with a warning:
            List<WorkerRecord> records = List.of(p.record());
            sender.base64(reqId, Aggregator.producer(tp, pp, numComputedTokens, sel, records))
                    .ifPresent(b64 -> kvTransferParams.put("kv_checksums", b64));

            // Consumer scheduler, when the load starts (only for connectors that carry checksums):
            pending.expect(reqId, (String) kvTransferParams.get("kv_checksums"));
            // Consumer worker, in the step that reports the load finished, before any step writes its blocks:
            var csel = List.of(BlockSelection.consumer(0, table, 0, numLocalComputed, numComputed, 16, null));
            WorkerChecksummer.PendingRecord c = consumerWorker.trySubmit(Side.CONSUMER, numComputed, csel, stream);
            // Consumer scheduler, once every worker's record is in (an incomplete set ends the load too):
            List<WorkerRecord> crecords = List.of(c.record());
            pending.verify(reqId, Aggregator.consumer(tp, pp, numComputed, csel, crecords))
                    .map(v -> policy.decide(reqId, v))      // empty: no checksums carried, neither verified nor counted
                    .ifPresent(d -> decisions.put(reqId, d));
            // Under TP: all-reduce (MAX) RankDecisions.localVector(batch, decisions) before acting, or ranks diverge and hang.
            // When the request ends (or its load failed): pending.forget(reqId);
            // README end

            // A resume of the same request is not compared again.
            assertTrue(pending.verify(reqId, Aggregator.consumer(tp, pp, numComputed, csel, crecords)).isEmpty());
            return new Outcome(decisions, metrics, pending, kvTransferParams);
        }
    }

    @Test
    void aCleanLoadIsUsedACorruptedOneRecomputed() {
        Outcome clean = example(false, true);
        assertEquals(Action.USE_LOAD, clean.decisions().get("req-1").action(), clean.decisions().toString());
        assertEquals(Status.MATCH, clean.decisions().get("req-1").verdict().status());
        assertEquals(1, clean.metrics().verifiedLoads());
        assertTrue(clean.params().get("kv_checksums") instanceof String);

        Outcome bad = example(true, true);
        Decision d = bad.decisions().get("req-1");
        assertEquals(Action.RECOMPUTE, d.action(), d.toString());
        assertEquals(Status.MISMATCH, d.verdict().status());
        assertEquals(4, d.verdict().group(0).mismatchedBlocks()[0]);
        assertEquals(1, bad.metrics().mismatchedBlocks());
    }

    @Test
    void aConnectorWithoutACarrierIsRefusedAtStartupFailClosed() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> example(false, false));
        assertTrue(e.getMessage().contains("TestConnector"), e.getMessage());
    }

    /** The README's block, line for line, is the imports between their markers, a blank line, then the code between its markers. */
    @Test
    void theReadmeShowsExactlyThisCode() throws IOException {
        List<String> readme = Files.readAllLines(Path.of("..", "README.md"));
        int heading = readme.indexOf("### End to end in an engine (`kvchecksum-engine`)");
        assertTrue(heading >= 0, "README section not found");
        int open = heading;
        while (!readme.get(open).equals("```java")) {
            open++;
        }
        int close = open + 1;
        while (!readme.get(close).equals("```")) {
            close++;
        }
        List<String> shown = readme.subList(open + 1, close);

        List<String> src = Files.readAllLines(Path.of("src", "test", "java", "io", "kvchecksum", "engine", "worker",
                "ReadmeEngineExampleTest.java"));
        int begin = -1;
        int end = -1;
        int importsBegin = -1;
        int importsEnd = -1;
        for (int i = 0; i < src.size(); i++) {
            switch (src.get(i).strip()) {
                case "// README begin" -> begin = i;
                case "// README end" -> end = i;
                case "// README imports begin" -> importsBegin = i;
                case "// README imports end" -> importsEnd = i;
                default -> { }
            }
        }
        int indent = src.get(begin).indexOf('/');
        List<String> code = new ArrayList<>(src.subList(importsBegin + 1, importsEnd));
        code.add("");
        for (String line : src.subList(begin + 1, end)) {
            code.add(line.length() >= indent ? line.substring(indent) : line.strip());
        }
        assertEquals(String.join("\n", code), String.join("\n", shown));
    }
}
