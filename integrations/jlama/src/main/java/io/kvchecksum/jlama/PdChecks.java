package io.kvchecksum.jlama;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.engine.Aggregator;
import io.kvchecksum.engine.BlockSelection;
import io.kvchecksum.engine.Fingerprints;
import io.kvchecksum.engine.LoadVerdict;
import io.kvchecksum.engine.PayloadCodec;
import io.kvchecksum.engine.ReplicaKey;
import io.kvchecksum.engine.Side;
import io.kvchecksum.engine.ChecksumMetrics;
import io.kvchecksum.engine.PendingLoads;
import io.kvchecksum.engine.WorkerChecksummer;
import io.kvchecksum.engine.WorkerRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Everything this example takes from {@code kvchecksum-engine}, in one place: the producer's payload after prefill,
 * the consumer's verdict after the load. A Jlama instance is one worker (TP 1, PP 1) holding one KV cache group.
 *
 * <p>Neither method throws into the engine's step for anything a fault can cause: a backend that fails on the
 * consumer is a worker that did not report, so the verdict is UNVERIFIED ({@code NOT_EVERY_WORKER_REPORTED}) with the
 * failure as its detail; on the producer it sends no checksums (the consumer then sees {@code MISSING_PAYLOAD}).
 */
final class PdChecks {
    /** The only group: Jlama has one full-attention KV cache. */
    static final int GROUP = 0;

    private final KvChecksum backend;
    private final int blockSize;
    private final long fingerprint;

    /**
     * @param backend shared by every request and thread
     * @param layers layer numbers of the model
     * @param dtype Jlama's working dtype name, part of the fingerprint
     */
    PdChecks(KvChecksum backend, int blockSize, int layers, String dtype) {
        this.backend = backend;
        this.blockSize = blockSize;
        List<Long> hashes = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            hashes.add(Fingerprints.ofLayer("model.layers." + l + ".self_attn", "JlamaKvBuffer", dtype));
        }
        this.fingerprint = Fingerprints.ofGroup(hashes);
    }

    /** The producer's checksums of tokens {@code [0, numTokens)} as wire-format-2 base64, or null if none. */
    String producerPayload(JlamaKv kv, long numTokens) {
        BlockSelection sel = BlockSelection.producer(GROUP, kv.pageTable(numTokens), BlockSelection.NO_NULL_BLOCK, numTokens, blockSize, null);
        List<WorkerRecord> recs = new ArrayList<>();
        try {
            recs.add(record(Side.PRODUCER, kv, numTokens, sel));
        } catch (RuntimeException e) {
            return null;
        }
        return Aggregator.producer(1, 1, numTokens, List.of(sel), recs) instanceof Aggregator.Complete c
                ? PayloadCodec.encodeBase64(c.payload())
                : null;
    }

    /**
     * The consumer's verdict on a load of tokens {@code [numLocal, numTokens)} (the first {@code numLocal} were a local
     * prefix hit) against what {@code pending} expects for {@code requestId}. Call once the load has landed and before
     * the first decode step.
     */
    LoadVerdict consumerVerdict(PendingLoads pending, String requestId, JlamaKv kv, long numLocal, long numTokens) {
        BlockSelection sel = BlockSelection.consumer(GROUP, kv.pageTable(numTokens), BlockSelection.NO_NULL_BLOCK, numLocal, numTokens,
                blockSize, null);
        List<WorkerRecord> recs = new ArrayList<>();
        String failure = null;
        try {
            recs.add(record(Side.CONSUMER, kv, numTokens, sel));
        } catch (RuntimeException e) {
            failure = e.toString();
        }
        Aggregator.Result r = Aggregator.consumer(1, 1, numTokens, List.of(sel), recs);
        LoadVerdict v = pending.verify(requestId, r).orElseThrow(
                () -> new IllegalStateException("request " + requestId + " was not expecting a load"));
        return failure == null ? v : LoadVerdict.unverified(v.reason(), "checksum backend failed: " + failure);
    }

    private WorkerRecord record(Side side, JlamaKv kv, long numTokens, BlockSelection sel) {
        var group = new WorkerChecksummer.WorkerGroup(GROUP, fingerprint,
                List.of(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, kv.group())));
        return new WorkerChecksummer(backend, 0, 0, List.of(group), Map.of(), ChecksumMetrics.NONE)
                .compute(side, numTokens, List.of(sel));
    }
}
