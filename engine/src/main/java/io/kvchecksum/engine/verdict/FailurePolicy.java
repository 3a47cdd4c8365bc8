package io.kvchecksum.engine.verdict;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Turns a load's verdict into the engine's next step, and logs it.
 *
 * <ul>
 *   <li><b>Fail-open</b> (roll-out, observation): every load is used.</li>
 *   <li><b>Fail-closed</b>: a mismatched or unverified load fails; the engine then either ends the request
 *       ({@link OnFailure#FAIL_REQUEST}) or recomputes the prompt locally ({@link OnFailure#RECOMPUTE}). The KV is not
 *       transferred again; recovery is per request.</li>
 * </ul>
 * A match is always {@link Action#USE_LOAD}. Under TP, feed the decisions to {@link RankDecisions} before acting.
 * Either way a mismatch is logged as an error with the groups and block positions, and an unverified load is warned
 * about once per {@link UnverifiedReason} for the life of this policy, every occurrence's detail at debug level. Each
 * verdict is counted in the policy's {@link ChecksumMetrics}.
 *
 * <p><b>A load that wrote nothing</b> (its only reason {@link UnverifiedReason#NOTHING_LOADED}: 0 tokens, a local
 * prefix hit covering the request) is {@link Action#USE_LOAD} under both modes: no KV crossed, so failing it would
 * only recompute a prompt the consumer already holds. It is logged at debug level only and counted by
 * {@link ChecksumMetrics#nothingLoaded()}, neither as verified nor as unverified.
 *
 * <p><b>One instance per engine</b>, made at startup: "once per reason" is per instance. Thread-safe.
 *
 * <p><b>Where it logs.</b> To {@code System.getLogger(FailurePolicy.class.getName())} (java.util.logging unless the
 * application installs another {@code System.LoggerFinder}), or to the {@link Logger} the engine passes to
 * {@link #failOpen(ChecksumMetrics, Logger)} or {@link #failClosed(OnFailure, ChecksumMetrics, Logger)}: its own
 * logging, a counter, or a logger that drops what a load test expects by the thousand.
 */
public final class FailurePolicy {

    /** What a fail-closed engine does with a failed load. */
    public enum OnFailure {
        /** End the request with an error. */
        FAIL_REQUEST,
        /** Recompute the whole prompt locally. */
        RECOMPUTE
    }

    private final boolean failClosed;
    private final OnFailure onFailure;
    private final Logger log;
    private final ChecksumMetrics metrics;
    private final Set<UnverifiedReason> warned = ConcurrentHashMap.newKeySet();
    private final SectionWarnings sectionWarnings;

    FailurePolicy(boolean failClosed, OnFailure onFailure, Logger log, ChecksumMetrics metrics) {
        this.failClosed = failClosed;
        this.onFailure = onFailure;
        this.log = Objects.requireNonNull(log, "log");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.sectionWarnings = new SectionWarnings(log);
    }

    /**
     * Log and use every load.
     *
     * @return a fail-open policy that counts nothing and logs to
     *     {@code System.getLogger(FailurePolicy.class.getName())}
     */
    public static FailurePolicy failOpen() {
        return failOpen(ChecksumMetrics.NONE);
    }

    /**
     * Log and use every load, counting verdicts in {@code metrics}.
     *
     * @param metrics where verdicts are counted; not null ({@link ChecksumMetrics#NONE} counts nothing)
     * @return a fail-open policy logging to {@code System.getLogger(FailurePolicy.class.getName())}
     */
    public static FailurePolicy failOpen(ChecksumMetrics metrics) {
        return failOpen(metrics, defaultLogger());
    }

    /**
     * Log to {@code log} and use every load, counting verdicts in {@code metrics}.
     *
     * @param metrics where verdicts are counted; not null
     * @param log where mismatches and unverified loads are logged; not null
     * @return a fail-open policy
     * @throws NullPointerException when {@code metrics} or {@code log} is null
     */
    public static FailurePolicy failOpen(ChecksumMetrics metrics, Logger log) {
        return new FailurePolicy(false, null, log, metrics);
    }

    /**
     * Fail every mismatched or unverified load, then {@code onFailure}.
     *
     * @param onFailure what the engine does after failing a load; not null
     * @return a fail-closed policy that counts nothing and logs to
     *     {@code System.getLogger(FailurePolicy.class.getName())}
     * @throws NullPointerException when {@code onFailure} is null
     */
    public static FailurePolicy failClosed(OnFailure onFailure) {
        return failClosed(onFailure, ChecksumMetrics.NONE);
    }

    /**
     * Fail every mismatched or unverified load, then {@code onFailure}, counting verdicts in {@code metrics}.
     *
     * @param onFailure what the engine does after failing a load; not null
     * @param metrics where verdicts are counted; not null
     * @return a fail-closed policy logging to {@code System.getLogger(FailurePolicy.class.getName())}
     * @throws NullPointerException when an argument is null
     */
    public static FailurePolicy failClosed(OnFailure onFailure, ChecksumMetrics metrics) {
        return failClosed(onFailure, metrics, defaultLogger());
    }

    /**
     * Fail every mismatched or unverified load, then {@code onFailure}, counting verdicts in {@code metrics} and
     * logging to {@code log}.
     *
     * @param onFailure what the engine does after failing a load; not null
     * @param metrics where verdicts are counted; not null
     * @param log where mismatches and unverified loads are logged; not null
     * @return a fail-closed policy
     * @throws NullPointerException when an argument is null
     */
    public static FailurePolicy failClosed(OnFailure onFailure, ChecksumMetrics metrics, Logger log) {
        return new FailurePolicy(true, Objects.requireNonNull(onFailure, "onFailure"), log, metrics);
    }

    private static Logger defaultLogger() {
        return System.getLogger(FailurePolicy.class.getName());
    }

    /**
     * The startup check of the engine's transport: whether KV checksums stay enabled. A connector that cannot carry
     * the payload can verify no load, so enabling checksums with it is a configuration error under fail-closed
     * (every load would fail) and, under fail-open, disables checksums with one warning.
     *
     * @param connector the transport's name, for the messages
     * @param carriesChecksums whether it carries the payload (in the request's parameters or in its own messages)
     * @return true when checksums stay enabled; false (fail-open only) when they are disabled
     * @throws IllegalStateException under fail-closed when the connector carries no checksums
     */
    public boolean checkCarrier(String connector, boolean carriesChecksums) {
        if (carriesChecksums) {
            return true;
        }
        String why = "KV checksums are enabled but connector " + connector + " cannot carry them, so no load can be verified";
        if (failClosed) {
            throw new IllegalStateException(why + ": refusing to start fail-closed (every load would fail); use a "
                    + "connector with a checksum carrier or disable KV checksums");
        }
        log.log(Level.WARNING, why + ": KV checksums are disabled (fail-open)");
        return false;
    }

    /** {@return true for fail-closed} */
    public boolean isFailClosed() {
        return failClosed;
    }

    /**
     * As {@link #decide(String, LoadVerdict)}, also warning once per peer about each payload section it could not
     * verify (e.g. SGLang's page digest from a peer with another page layout: {@link UnverifiedReason#LAYOUT_DIFFERS};
     * see {@link SectionWarnings}).
     *
     * @param requestId the request, for the log line and the decision
     * @param peer the producer the payload came from (its address or id), for the once-per-peer warnings
     * @param verdict the load's verdict; not null
     * @return the engine's next step for this load
     */
    public Decision decide(String requestId, String peer, LoadVerdict verdict) {
        sectionWarnings.log(peer, requestId, verdict);
        return decide(requestId, verdict);
    }

    /**
     * {@return the engine's next step for this load} Logs and counts as described above.
     *
     * @param requestId the request, for the log line and the decision
     * @param verdict the load's verdict; not null
     */
    public Decision decide(String requestId, LoadVerdict verdict) {
        if (verdict.status() == Status.UNVERIFIED && verdict.reasons().equals(EnumSet.of(UnverifiedReason.NOTHING_LOADED))) {
            metrics.nothingLoaded();
            log.log(Level.DEBUG, () -> "KV load of request " + requestId + " wrote no block: nothing to verify, the load is"
                    + " used: " + verdict);
            return new Decision(requestId, Action.USE_LOAD, verdict);
        }
        String then = failClosed ? "failing the load, then " + onFailure : "fail-open: the load is used";
        switch (verdict.status()) {
            case MATCH -> {
                metrics.verified();
                log.log(Level.DEBUG, () -> "KV checksums of request " + requestId + " match: " + verdict.groups());
                return new Decision(requestId, Action.USE_LOAD, verdict);
            }
            case MISMATCH -> {
                int blocks = verdict.groups().stream().mapToInt(g -> g.mismatchedBlocks().length).sum();
                metrics.mismatched(blocks);
                log.log(Level.ERROR, "KV checksum mismatch for request " + requestId + " (" + then + "): " + verdict.detail());
            }
            case UNVERIFIED -> {
                for (UnverifiedReason r : verdict.reasons()) {
                    metrics.unverified(r);
                    if (warned.add(r)) {
                        log.log(Level.WARNING, "KV load of request " + requestId + " unverified (" + r + "; " + then
                                + "). Further " + r + " loads are logged at debug level.");
                    }
                }
                log.log(Level.DEBUG, () -> "KV load of request " + requestId + " unverified (" + then + "): " + verdict);
            }
        }
        if (!failClosed) {
            return new Decision(requestId, Action.USE_LOAD, verdict);
        }
        return new Decision(requestId, onFailure == OnFailure.FAIL_REQUEST ? Action.FAIL_REQUEST : Action.RECOMPUTE, verdict);
    }
}
