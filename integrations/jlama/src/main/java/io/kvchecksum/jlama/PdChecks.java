package io.kvchecksum.jlama;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.worker.BlockSelection;
import io.kvchecksum.engine.worker.Fingerprints;
import io.kvchecksum.engine.worker.PayloadSender;
import io.kvchecksum.engine.worker.PendingLoads;
import io.kvchecksum.engine.worker.SingleWorker;
import io.kvchecksum.engine.worker.WorkerChecksummer;
import java.util.List;
import java.util.stream.IntStream;

/**
 * Everything this example takes from {@code kvchecksum-engine}, in one place: the producer's payload after prefill,
 * the consumer's verdict after the load. A Jlama instance is one worker (TP 1, PP 1) holding one KV cache group, so
 * this is the library's {@link SingleWorker} with the request's session, one segment per Jlama page, as the group's
 * cache.
 *
 * <p>Neither method throws into the engine's step for a backend failure: the consumer's verdict is then UNVERIFIED
 * ({@code BACKEND_FAILED}) with the failure as its detail; the producer sends no checksums (warned and counted by the
 * sender), so its consumer sees {@code MISSING_PAYLOAD}.
 */
final class PdChecks {
    /** The only group: Jlama has one full-attention KV cache. */
    static final int GROUP = 0;

    private final SingleWorker worker;
    private final int blockSize;
    private final long fingerprint;

    /**
     * @param backend shared by every request and thread
     * @param layers layer numbers of the model
     * @param dtype Jlama's working dtype name, part of the fingerprint
     * @param sender the producer's sender (its logger is the engine's)
     */
    PdChecks(KvChecksum backend, int blockSize, int layers, String dtype, PayloadSender sender) {
        this.worker = SingleWorker.builder(backend).sender(sender).build();
        this.blockSize = blockSize;
        this.fingerprint = Fingerprints.ofGroup(IntStream.range(0, layers)
                .mapToObj(l -> Fingerprints.ofLayer("model.layers." + l + ".self_attn", "JlamaKvBuffer", dtype)).toList());
    }

    /** The producer's checksums of tokens {@code [0, numTokens)} as wire-format-2 base64, or null if none. */
    String producerPayload(String requestId, JlamaKv kv, long numTokens) {
        var sel = BlockSelection.producer(GROUP, JlamaKv.blockTable(numTokens, blockSize), BlockSelection.NO_NULL_BLOCK, numTokens, blockSize, null);
        return worker.producerBase64(requestId, layout(kv), List.of(sel)).orElse(null);
    }

    /**
     * The consumer's verdict on a load of tokens {@code [numLocal, numTokens)} (the first {@code numLocal} were a local
     * prefix hit) against what {@code pending} expects for {@code requestId}. Call once the load has landed and before
     * the first decode step.
     */
    LoadVerdict consumerVerdict(PendingLoads pending, String requestId, JlamaKv kv, long numLocal, long numTokens) {
        var sel = BlockSelection.consumer(GROUP, JlamaKv.blockTable(numTokens, blockSize), BlockSelection.NO_NULL_BLOCK, numLocal, numTokens,
                blockSize, null);
        return worker.verify(pending, requestId, layout(kv), List.of(sel)).orElseThrow(
                () -> new IllegalStateException("request " + requestId + " was not expecting a load"));
    }

    /**
     * The consumer's verdict on a load the transport wrote into {@code staged}: the worker copies positions
     * {@code [numLocal, numTokens)} from the staging buffer into {@code kv}'s pages and verifies the copy's checksums,
     * one pass over the bytes; the same verdict {@link #consumerVerdict} gives after a correct copy. Call once the load
     * has landed in the staging buffer and before the first decode step; an UNVERIFIED ({@code BACKEND_FAILED}) load
     * may be partly copied and must be recomputed.
     */
    LoadVerdict consumerVerdictCopying(PendingLoads pending, String requestId, StagedLoad staged, JlamaKv kv,
            long numLocal, long numTokens) {
        var sel = BlockSelection.consumer(GROUP, JlamaKv.blockTable(numTokens, blockSize), BlockSelection.NO_NULL_BLOCK, numLocal, numTokens,
                blockSize, null);
        return worker.copyAndVerify(pending, requestId, layout(kv), List.of(sel),
                List.of(staged.received(GROUP, numLocal, numTokens))).orElseThrow(
                () -> new IllegalStateException("request " + requestId + " was not expecting a load"));
    }

    /** A Jlama session holds its own KV, in pages of its own: the layout is the request's segments. */
    private List<WorkerChecksummer.WorkerGroup> layout(JlamaKv kv) {
        return List.of(SingleWorker.group(GROUP, fingerprint, kv.segments()));
    }
}
