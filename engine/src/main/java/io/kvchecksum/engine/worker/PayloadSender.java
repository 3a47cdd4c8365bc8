package io.kvchecksum.engine.worker;

import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.PayloadCodec;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The producer scheduler's last step for a request that finished normally: the payload to put in the request's
 * parameters (as {@code kv_checksums}) or hand to the connector, or none.
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
     * {@return the payload as base64 text for a text carrier, or empty (warned and counted) when there is none to send}
     *
     * @param requestId the request, for the warning; not null
     * @param producer the producer side's aggregated records ({@link Aggregator#producer}); not null
     * @throws NullPointerException when an argument is null
     */
    public Optional<String> base64(String requestId, Aggregator.Result producer) {
        return payload(requestId, producer).map(PayloadCodec::encodeBase64);
    }

    /**
     * {@return the payload as bytes for a connector carrier, or empty (warned and counted)}
     *
     * @param requestId the request, for the warning; not null
     * @param producer the producer side's aggregated records ({@link Aggregator#producer}); not null
     * @throws NullPointerException when an argument is null
     */
    public Optional<byte[]> bytes(String requestId, Aggregator.Result producer) {
        return payload(requestId, producer).map(PayloadCodec::encode);
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
