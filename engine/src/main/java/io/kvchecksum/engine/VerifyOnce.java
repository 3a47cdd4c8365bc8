package io.kvchecksum.engine;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The producer's checksums awaiting comparison, per request, each compared at most once.
 *
 * <p>A load is compared when it has landed, before any step writes into its blocks. Afterwards the expectation is
 * gone: a request that is preempted and later resumed is not compared again, because by then the consumer has written
 * decode tokens into the load's last block, and a second comparison would be a false mismatch. Requests the engine
 * never called {@link #expect} for (their connector carries no checksums) are not compared and not counted as
 * unverified.
 *
 * <p>Thread-safe: of several threads verifying one request at once, exactly one gets the verdict.
 */
public final class VerifyOnce {

    /** What arrived from the producer: base64 text, raw bytes, or nothing. */
    private record Expected(String text, byte[] bytes) {
    }

    private final ConcurrentHashMap<String, Expected> pending = new ConcurrentHashMap<>();

    /** Records what the producer sent as base64 text for a load that is starting; {@code null} when it sent nothing. */
    public void expect(String requestId, String producerBase64) {
        pending.put(Objects.requireNonNull(requestId, "requestId"), new Expected(producerBase64, null));
    }

    /** Records what the producer sent as raw bytes (connector carriers); {@code null} when it sent nothing. */
    public void expect(String requestId, byte[] producerBytes) {
        pending.put(Objects.requireNonNull(requestId, "requestId"), new Expected(null, producerBytes == null ? null : producerBytes.clone()));
    }

    /** True when the request's load awaits comparison. */
    public boolean isPending(String requestId) {
        return pending.containsKey(requestId);
    }

    /**
     * Compares the request's load with what the producer sent, the first time only; empty when the request is not
     * pending (already verified, forgotten, or never expected).
     */
    public Optional<LoadVerdict> verify(String requestId, ChecksumPayload actual) {
        Expected e = pending.remove(requestId);
        if (e == null) {
            return Optional.empty();
        }
        return Optional.of(e.bytes() != null ? Verifier.verify(e.bytes(), actual) : Verifier.verify(e.text(), actual));
    }

    /**
     * Takes the request out of the pending set without comparing: a load that failed or a request that ended. Call
     * this also when the load's records are incomplete and the verdict comes from {@link Aggregator.Incomplete}.
     */
    public boolean forget(String requestId) {
        return pending.remove(requestId) != null;
    }

    /** How many requests await comparison. */
    public int size() {
        return pending.size();
    }
}
