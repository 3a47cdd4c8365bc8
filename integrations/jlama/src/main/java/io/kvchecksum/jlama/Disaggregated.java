package io.kvchecksum.jlama;

import com.github.tjake.jlama.tensor.KvBufferCache;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.Decision;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.worker.PayloadSender;
import io.kvchecksum.engine.worker.PendingLoads;
import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Disaggregated serving over two Jlama instances: prefill on the producer, the KV moved into the consumer's session
 * by {@link KvTransfer}, verified before the consumer's first decode step, and acted on through a
 * {@link FailurePolicy} (recompute means: the consumer prefills the prompt itself).
 *
 * <p>Optionally ({@link #Disaggregated(JlamaInstance, JlamaInstance, KvChecksum, int, FailurePolicy, PayloadSender,
 * int[], boolean) verifyInCopy}) the transport writes into a staging buffer and the consumer verifies inside the copy
 * that moves the pages from there into its session ({@link StagedLoad}); the transport's faults land in the staging
 * buffer, so the copy carries them into the session and its checksums reveal them, at the same blocks.
 *
 * <p>Thread-safe: requests may be served from many threads at once; they share the checksum backend, the verify-once
 * registry and the policy, as an engine's requests do.
 */
public final class Disaggregated implements AutoCloseable {
    private final JlamaInstance producer;
    private final JlamaInstance consumer;
    private final int blockSize;
    private final PdChecks checks;
    private final PendingLoads pending = new PendingLoads();
    private final FailurePolicy policy;
    private final KvBufferCache.KvBuffer staleSession;
    private final JlamaKv stale;
    /** Load through a staging buffer and verify inside the copy into the session (set once, before any request). */
    private boolean verifyInCopy;

    /**
     * @param backend the checksum backend every request shares
     * @param stalePrompt a previous request's prompt, prefilled on the producer once: the source of stale pages
     */
    public Disaggregated(JlamaInstance producer, JlamaInstance consumer, KvChecksum backend, int blockSize,
            FailurePolicy policy, int[] stalePrompt) {
        this(producer, consumer, backend, blockSize, policy, new PayloadSender(ChecksumMetrics.NONE), stalePrompt);
    }

    /**
     * @param sender the producer's sender of checksums, made with the engine's logger
     */
    public Disaggregated(JlamaInstance producer, JlamaInstance consumer, KvChecksum backend, int blockSize,
            FailurePolicy policy, PayloadSender sender, int[] stalePrompt) {
        this.producer = producer;
        this.consumer = consumer;
        this.blockSize = blockSize;
        this.policy = policy;
        this.checks = new PdChecks(backend, blockSize, producer.model().getConfig().numberOfLayers,
                producer.model().getWorkingDType().name(), sender);
        this.staleSession = producer.newSession();
        producer.prefill(staleSession, stalePrompt, 0);
        this.stale = JlamaKv.of(producer.model(), staleSession, blockSize, producer.model().getConfig().contextLength);
    }

    /**
     * As {@link #Disaggregated(JlamaInstance, JlamaInstance, KvChecksum, int, FailurePolicy, PayloadSender, int[])},
     * choosing where the consumer verifies.
     *
     * @param verifyInCopy {@code true}: the transport writes into a staging buffer ({@link StagedLoad}) and the
     *     consumer verifies inside the copy that moves the pages from there into its session (issue 29: one pass over
     *     the bytes instead of a copy and a checksum; writes into the session after that copy are not covered);
     *     {@code false}: the transport writes into the session and the consumer checksums it afterwards
     */
    public Disaggregated(JlamaInstance producer, JlamaInstance consumer, KvChecksum backend, int blockSize,
            FailurePolicy policy, PayloadSender sender, int[] stalePrompt, boolean verifyInCopy) {
        this(producer, consumer, backend, blockSize, policy, sender, stalePrompt);
        this.verifyInCopy = verifyInCopy;
    }

    /**
     * One request's outcome.
     *
     * @param fault the fault injected
     * @param faultedBlocks block positions whose KV was wrong when the consumer verified
     * @param verdict the consumer's verdict
     * @param action what the policy decided
     * @param tokens the consumer's decoded tokens (the producer's first token, then the consumer's), or null if failed
     * @param singleInstance the tokens one instance doing prefill and decode produces (the producer continuing)
     * @param checksumNanos time spent computing checksums and verifying, both sides
     * @param totalNanos the request's time end to end
     * @param checksummedBytes KV bytes read by the checksum, both sides
     */
    public record Outcome(KvTransfer.Fault fault, long[] faultedBlocks, LoadVerdict verdict, Action action, int[] tokens,
            int[] singleInstance, long checksumNanos, long totalNanos, long checksummedBytes) {
        /** True when the consumer's tokens equal the single instance's. */
        public boolean identicalTokens() {
            return tokens != null && Arrays.equals(tokens, singleInstance);
        }
    }

    /**
     * Serves one request.
     *
     * @param prompt token ids, the first being BOS
     * @param prefixBlocks blocks the consumer already holds (computed locally, a prefix-cache hit); at least one block
     *     must remain to load
     * @param decodeTokens tokens to produce
     * @param fault the fault to inject (drawn by the caller), NONE for a clean transfer
     */
    public Outcome serve(String requestId, int[] prompt, int prefixBlocks, int decodeTokens, KvTransfer.Fault fault,
            SplittableRandom rnd) {
        long start = System.nanoTime();
        int n = prompt.length;
        long checksumNanos = 0;
        try (var kvP = producer.newSession(); var kvD = consumer.newSession(); Arena staging = Arena.ofConfined()) {
            // Producer: prefill, then the checksums of the prompt's KV, sent with the first token.
            int first = producer.prefill(kvP, prompt, 0);
            JlamaKv p = JlamaKv.of(producer.model(), kvP, blockSize, n);
            long t = System.nanoTime();
            String payload = checks.producerPayload(requestId, p, n);
            checksumNanos += System.nanoTime() - t;
            if (fault == KvTransfer.Fault.DROPPED_PAYLOAD) {
                payload = null;
            } else if (fault == KvTransfer.Fault.MALFORMED_PAYLOAD && payload != null) {
                payload = payload.substring(0, payload.length() / 2);
            }

            // Consumer: a local prefix hit, then the load of the rest.
            int local = prefixBlocks * blockSize;
            if (local > 0) {
                consumer.prefill(kvD, Arrays.copyOf(prompt, local), 0);
            }
            pending.expect(requestId, payload);
            JlamaKv d = JlamaKv.of(consumer.model(), kvD, blockSize, n);
            StagedLoad staged = verifyInCopy ? StagedLoad.allocate(d, n, staging) : null;
            KvTransfer.Landed landed = KvTransfer.move(p, staged != null ? staged.kv() : d, stale, blockSize, prefixBlocks,
                    n, fault, rnd);
            t = System.nanoTime();
            LoadVerdict verdict = staged != null ? checks.consumerVerdictCopying(pending, requestId, staged, d, local, n)
                    : checks.consumerVerdict(pending, requestId, d, local, n);
            checksumNanos += System.nanoTime() - t;
            landed.late().run();

            Decision decision = policy.decide(requestId, verdict);
            int[] tokens = switch (decision.action()) {
                case USE_LOAD -> {
                    kvD.setCurrentContextPosition(n);
                    yield consumer.decode(kvD, first, n, decodeTokens);
                }
                case RECOMPUTE -> {
                    int again = consumer.prefill(kvD, prompt, 0);
                    yield consumer.decode(kvD, again, n, decodeTokens);
                }
                case FAIL_REQUEST -> null;
            };
            int[] single = producer.decode(kvP, first, n, decodeTokens);
            long bytes = (2L * n - local) * p.segments().geometry().bytesPerToken();
            KvTransfer.Fault injected = fault.payloadFault() ? fault : landed.fault();
            return new Outcome(injected, landed.faultedBlocks(), verdict, decision.action(), tokens, single, checksumNanos,
                    System.nanoTime() - start, bytes);
        } finally {
            pending.forget(requestId);   // the request is over: its entry in the verify-once registry goes too
        }
    }

    /** Requests whose producer checksums still await comparison: zero between requests. */
    public int pendingExpectations() {
        return pending.size();
    }

    @Override
    public void close() {
        staleSession.close();
    }
}
