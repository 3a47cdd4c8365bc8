package io.kvchecksum.engine.worker;

import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.WirePayload;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The producer scheduler's last step for a request that finished normally: the payload to put in the request's
 * parameters or hand to the connector, or none.
 *
 * <p>{@link #wire} gives both parts: the checksums, under {@code kv_transfer_params["kv_checksums"]} or as the
 * connector's byte string, and the sections when the payload has any (the auxiliary checks), under
 * {@code kv_transfer_params["kv_checksum_sections"]} or as a second byte string ({@link WirePayload#params()} builds
 * the entries). {@link #base64} and {@link #bytes} give the checksums alone, for engines that send no sections; a
 * payload with sections passed to them loses its sections (the consumer then sees them on one side only, never a
 * mismatch), with one warning for the life of this sender.
 *
 * <p>A producer whose workers did not all report the request, or reported other blocks, sends no checksums for it,
 * with a warning: once per {@link UnverifiedReason} for the life of this sender, each occurrence's detail at debug
 * level, and every one counted ({@link ChecksumMetrics#payloadWithheld}). The consumer then sees the load as
 * {@link UnverifiedReason#MISSING_PAYLOAD}. Requests that ended otherwise (aborted) get no checksums and are not
 * passed here. One instance per engine; thread-safe.
 */
public final class PayloadSender {
    private final Logger log;
    private final ChecksumMetrics metrics;
    private final Set<UnverifiedReason> warned = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean sectionsDropped = new AtomicBoolean();

    /**
     * A sender logging to {@code System.getLogger(PayloadSender.class.getName())}.
     *
     * @param metrics where withheld payloads are counted; not null
     * @throws NullPointerException when {@code metrics} is null
     */
    public PayloadSender(ChecksumMetrics metrics) {
        this(metrics, System.getLogger(PayloadSender.class.getName()));
    }

    /**
     * A sender logging to {@code log} (the engine's own logging, or one that drops the warnings a load test expects).
     *
     * @param metrics where withheld payloads are counted; not null
     * @param log where the once-per-reason warnings go; not null
     * @throws NullPointerException when an argument is null
     */
    public PayloadSender(ChecksumMetrics metrics, Logger log) {
        this.log = Objects.requireNonNull(log, "log");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
    }

    /**
     * {@return the payload's checksums and sections, encoded, or empty (warned and counted) when there is none to send}
     * A text carrier adds {@link WirePayload#params()} to the request's {@code kv_transfer_params}; a connector carrier
     * moves {@link WirePayload#checksums()} and, when not null, {@link WirePayload#sections()}.
     *
     * @param requestId the request, for the warning; not null
     * @param producer the producer side's aggregated records ({@link Aggregator#producer}), sections attached; not null
     * @throws NullPointerException when an argument is null
     */
    public Optional<WirePayload> wire(String requestId, Aggregator.Result producer) {
        return payload(requestId, producer).map(WirePayload::of);
    }

    /**
     * {@return the payload's checksums as base64 text for {@code kv_transfer_params["kv_checksums"]}, or empty (warned
     * and counted) when there is none to send} Sections are not in it: use {@link #wire} when the payload has any.
     *
     * @param requestId the request, for the warning; not null
     * @param producer the producer side's aggregated records ({@link Aggregator#producer}); not null
     * @throws NullPointerException when an argument is null
     */
    public Optional<String> base64(String requestId, Aggregator.Result producer) {
        return payload(requestId, producer).map(p -> PayloadCodec.encodeBase64(withoutSections(requestId, p)));
    }

    /**
     * {@return the payload's checksums as bytes for a connector carrier, or empty (warned and counted)} Sections are
     * not in them: use {@link #wire} when the payload has any.
     *
     * @param requestId the request, for the warning; not null
     * @param producer the producer side's aggregated records ({@link Aggregator#producer}); not null
     * @throws NullPointerException when an argument is null
     */
    public Optional<byte[]> bytes(String requestId, Aggregator.Result producer) {
        return payload(requestId, producer).map(p -> PayloadCodec.encode(withoutSections(requestId, p)));
    }

    /** {@code p}, warning once when its sections will not travel (the checksums' bytes do not depend on them). */
    private ChecksumPayload withoutSections(String requestId, ChecksumPayload p) {
        if (!p.sections().isEmpty() && sectionsDropped.compareAndSet(false, true)) {
            log.log(Level.WARNING, "request " + requestId + ": the payload's sections " + p.sections().keySet()
                    + " are not sent by base64()/bytes(), which carry the checksums only; use wire() to send them as "
                    + "kv_checksum_sections. Not repeated.");
        }
        return p;
    }

    private Optional<ChecksumPayload> payload(String requestId, Aggregator.Result producer) {
        Objects.requireNonNull(requestId, "requestId");
        return switch (Objects.requireNonNull(producer, "producer")) {
            case Aggregator.Complete c -> Optional.of(c.payload());
            case Aggregator.Incomplete i -> {
                metrics.payloadWithheld(i.reason());
                if (warned.add(i.reason())) {
                    log.log(Level.WARNING, "sending no KV checksums for request " + requestId + " (" + i.reason() + ": "
                            + i.detail() + "); its consumer will report the load unverified. Further " + i.reason()
                            + " cases are logged at debug level.");
                } else {
                    log.log(Level.DEBUG, () -> "sending no KV checksums for request " + requestId + " (" + i.reason()
                            + ": " + i.detail() + ")");
                }
                yield Optional.empty();
            }
        };
    }
}
