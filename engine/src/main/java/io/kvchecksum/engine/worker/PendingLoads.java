package io.kvchecksum.engine.worker;

import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.MalformedPayloadException;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.Verifier;

import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The consumer scheduler's loads awaiting comparison: what the producer sent for each, the first well-formed copy
 * kept, and each load compared at most once.
 *
 * <p><b>Life of a load.</b> {@link #start} when the load begins (the request's connector carries checksums), then
 * {@link #offer} every copy of the producer's payload as it arrives, then {@link #verify} once the load's worker
 * records are in, before any step writes into its blocks; {@link #forget} when the request ends or its load fails.
 * {@link #expect} is {@code start} plus {@code offer}, for the carrier that hands the payload over with the request
 * ({@code kv_transfer_params}).
 *
 * <ul>
 *   <li><b>First copy wins.</b> Several producer ranks may carry identical payloads: the first copy that decodes is
 *       kept and later copies are ignored, so a late duplicate can neither replace it nor turn a good copy into a
 *       malformed one. A load that received only missing or undecodable copies is
 *       {@link UnverifiedReason#MALFORMED_PAYLOAD} (some copy arrived but none decoded) or
 *       {@link UnverifiedReason#MISSING_PAYLOAD} (none arrived).</li>
 *   <li><b>Verify once.</b> After {@link #verify} the load is done: copies and {@code start}/{@code expect} for it are
 *       ignored until {@link #forget}. A request preempted and resumed is not compared again: by then decode tokens
 *       were written into the load's last block, and a second comparison would be a false mismatch.</li>
 *   <li><b>Not carried, not counted.</b> A request never started (its connector carries no checksums, e.g. a load of
 *       blocks whose source sent none) gets no verdict: {@link #verify} returns empty, and it is neither verified
 *       nor unverified.</li>
 * </ul>
 *
 * <p>Memory: a verified load is remembered (its id only) until {@link #forget}; call it when the request ends.
 * Thread-safe: of several threads verifying one load at once, exactly one gets the verdict; a copy offered while
 * the load is being verified is ignored.
 */
public final class PendingLoads {

    /** What arrived from the producer for one pending load: the first good copy, or why there is none. */
    private record Expected(ChecksumPayload payload, String malformed) {
        static final Expected NONE = new Expected(null, null);
    }

    private final ConcurrentHashMap<String, Expected> pending = new ConcurrentHashMap<>();
    private final Set<String> done = ConcurrentHashMap.newKeySet();
    private final ChecksumMetrics metrics;

    /** Loads counted nowhere. */
    public PendingLoads() {
        this(ChecksumMetrics.NONE);
    }

    /**
     * Loads whose malformed payload copies are counted in {@code metrics}.
     *
     * @param metrics where malformed copies are counted; not null
     * @throws NullPointerException when {@code metrics} is null
     */
    public PendingLoads(ChecksumMetrics metrics) {
        this.metrics = Objects.requireNonNull(metrics, "metrics");
    }

    /**
     * A load of the request begins and its checksums are expected. Ignored when the load is already pending (its
     * copies are kept) or was already verified.
     *
     * @param requestId the request whose load begins; not null
     * @return true when the load became pending
     */
    public synchronized boolean start(String requestId) {
        Objects.requireNonNull(requestId, "requestId");
        if (done.contains(requestId)) {
            return false;
        }
        return pending.putIfAbsent(requestId, Expected.NONE) == null;
    }

    /**
     * A copy of the producer's payload as base64 text ({@code null}: the producer sent none). Kept if the load is
     * pending and holds no good copy yet.
     *
     * @param requestId the request; not null
     * @param producerBase64 the copy as it arrived, untrusted; {@code null} or blank when the producer sent none
     * @return true when this copy is now the one the load will be compared with
     */
    public boolean offer(String requestId, String producerBase64) {
        return offer(requestId, producerBase64 == null || producerBase64.isBlank() ? null : () -> PayloadCodec.decodeBase64(producerBase64));
    }

    /**
     * As {@link #offer(String, String)} for raw payload bytes from a connector carrier.
     *
     * @param requestId the request; not null
     * @param producerBytes the copy as it arrived, untrusted (copied); {@code null} when the producer sent none
     * @return true when this copy is now the one the load will be compared with
     */
    public boolean offer(String requestId, byte[] producerBytes) {
        byte[] copy = producerBytes == null ? null : producerBytes.clone();
        return offer(requestId, copy == null ? null : () -> PayloadCodec.decode(copy));
    }

    private boolean offer(String requestId, Supplier<ChecksumPayload> copy) {
        Objects.requireNonNull(requestId, "requestId");
        Expected now = pending.get(requestId);
        if (now == null || now.payload() != null || copy == null) {
            return false;
        }
        Expected next;
        try {
            next = new Expected(copy.get(), null);
        } catch (MalformedPayloadException e) {
            metrics.payloadMalformed();
            next = new Expected(null, now.malformed() != null ? now.malformed() : e.getMessage());
        }
        // Only a pending load without a good copy takes it; a concurrent verify or a concurrent good copy wins.
        Expected chosen = next;
        Expected after = pending.computeIfPresent(requestId, (k, v) -> v.payload() == null ? chosen : v);
        return after == chosen && chosen.payload() != null;
    }

    /**
     * {@link #start} then {@link #offer(String, String)}: the payload arrived with the request.
     *
     * @param requestId the request whose load begins; not null
     * @param producerBase64 the payload that came with the request, untrusted; {@code null} or blank when none did
     */
    public void expect(String requestId, String producerBase64) {
        start(requestId);
        offer(requestId, producerBase64);
    }

    /**
     * {@link #start} then {@link #offer(String, byte[])}.
     *
     * @param requestId the request whose load begins; not null
     * @param producerBytes the payload that came with the request, untrusted (copied); {@code null} when none did
     */
    public void expect(String requestId, byte[] producerBytes) {
        start(requestId);
        offer(requestId, producerBytes);
    }

    /**
     * {@return true when the request's load awaits comparison}
     *
     * @param requestId the request; not null
     */
    public boolean isPending(String requestId) {
        return pending.containsKey(requestId);
    }

    /**
     * Compares the request's load with the producer's payload, the first time only; empty when the load is not
     * pending (never started, already verified, or forgotten).
     *
     * @param requestId the request; not null
     * @param actual the consumer's checksums of the blocks the load wrote; not null
     * @return the verdict ({@link UnverifiedReason#MISSING_PAYLOAD} or {@link UnverifiedReason#MALFORMED_PAYLOAD} when
     *     no good copy arrived), or empty when the load is not pending
     * @throws NullPointerException when an argument is null
     */
    public Optional<LoadVerdict> verify(String requestId, ChecksumPayload actual) {
        Objects.requireNonNull(actual, "actual");
        Expected e = take(requestId);
        if (e == null) {
            return Optional.empty();
        }
        if (e.payload() == null) {
            return Optional.of(e.malformed() != null
                    ? LoadVerdict.unverified(UnverifiedReason.MALFORMED_PAYLOAD, e.malformed())
                    : LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "the producer sent no checksums"));
        }
        return Optional.of(Verifier.compare(e.payload(), actual));
    }

    /**
     * {@return the load's verdict from its aggregated records: compared when they are {@link Aggregator.Complete}, the
     * records' own verdict when {@link Aggregator.Incomplete}} Either way the load is done, so it is never compared
     * again after a resume. Empty when the load is not pending.
     *
     * @param requestId the request; not null
     * @param consumer the consumer side's aggregated records ({@link Aggregator#consumer}); not null
     * @throws NullPointerException when an argument is null
     */
    public Optional<LoadVerdict> verify(String requestId, Aggregator.Result consumer) {
        return switch (Objects.requireNonNull(consumer, "consumer")) {
            case Aggregator.Complete c -> verify(requestId, c.payload());
            case Aggregator.Incomplete i -> take(requestId) == null ? Optional.empty() : Optional.of(i.verdict());
        };
    }

    private synchronized Expected take(String requestId) {
        Expected e = pending.remove(Objects.requireNonNull(requestId, "requestId"));
        if (e != null) {
            done.add(requestId);
        }
        return e;
    }

    /**
     * Drops everything about the request without comparing: call it when the request ends, or when its load failed
     * (the connector already knows it is bad, so it is not compared). A later load of the same id starts afresh.
     *
     * @param requestId the request that ended or whose load failed
     * @return true when the load was pending
     */
    public synchronized boolean forget(String requestId) {
        done.remove(requestId);
        return pending.remove(requestId) != null;
    }

    /** {@return how many loads await comparison} */
    public int size() {
        return pending.size();
    }
}
