package io.kvchecksum.engine;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Turns a load's verdict into the engine's next step, and logs it.
 *
 * <ul>
 *   <li><b>Fail-open</b> (roll-out, observation): every load is used. A mismatch is logged as an error with the groups
 *       and block positions; an unverified load is warned about once per {@link UnverifiedReason} for the life of this
 *       policy, with every occurrence's detail at debug level.</li>
 *   <li><b>Fail-closed</b>: a mismatched or unverified load fails; the engine then either ends the request
 *       ({@link OnFailure#FAIL}) or recomputes the prompt locally ({@link OnFailure#RECOMPUTE}). The KV is not
 *       transferred again; recovery is per request. Mismatches are logged as errors, failed unverified loads as
 *       warnings.</li>
 * </ul>
 * A match is always {@link Action#USE_LOAD}. Under TP, feed the decisions to {@link RankDecisions} before acting.
 *
 * <p>Thread-safe: one instance may serve every request of an engine.
 */
public final class FailurePolicy {

    /** What a fail-closed engine does with a failed load. */
    public enum OnFailure {
        /** End the request with an error. */
        FAIL,
        /** Recompute the whole prompt locally. */
        RECOMPUTE
    }

    private final boolean failClosed;
    private final OnFailure onFailure;
    private final Logger log;
    private final Set<UnverifiedReason> warned = ConcurrentHashMap.newKeySet();

    FailurePolicy(boolean failClosed, OnFailure onFailure, Logger log) {
        this.failClosed = failClosed;
        this.onFailure = onFailure;
        this.log = Objects.requireNonNull(log, "log");
    }

    /** Log and use every load. */
    public static FailurePolicy failOpen() {
        return new FailurePolicy(false, null, System.getLogger(FailurePolicy.class.getName()));
    }

    /** Fail every mismatched or unverified load, then {@code onFailure}. */
    public static FailurePolicy failClosed(OnFailure onFailure) {
        return new FailurePolicy(true, Objects.requireNonNull(onFailure, "onFailure"), System.getLogger(FailurePolicy.class.getName()));
    }

    /** True for fail-closed. */
    public boolean isFailClosed() {
        return failClosed;
    }

    /** The engine's next step for this load. Logs as described above. */
    public Decision decide(String requestId, LoadVerdict verdict) {
        switch (verdict.status()) {
            case MATCH -> {
                log.log(Level.DEBUG, () -> "KV checksums of request " + requestId + " match: " + verdict.groups());
                return new Decision(requestId, Action.USE_LOAD, verdict);
            }
            case MISMATCH -> log.log(Level.ERROR, "KV checksum mismatch for request " + requestId + " ("
                    + (failClosed ? "failing the load, then " + onFailure : "fail-open: the load is used") + "): " + verdict.detail());
            case UNVERIFIED -> {
                for (UnverifiedReason r : verdict.reasons()) {
                    if (failClosed || warned.add(r)) {
                        log.log(Level.WARNING, "KV load of request " + requestId + " unverified (" + r + ")"
                                + (failClosed ? ": failing the load, then " + onFailure
                                : "; the load is used (fail-open). Further " + r + " loads are logged at debug level."));
                    }
                }
                log.log(Level.DEBUG, () -> "KV load of request " + requestId + " unverified: " + verdict);
            }
            default -> throw new AssertionError(verdict.status());
        }
        if (!failClosed) {
            return new Decision(requestId, Action.USE_LOAD, verdict);
        }
        return new Decision(requestId, onFailure == OnFailure.FAIL ? Action.FAIL_REQUEST : Action.RECOMPUTE, verdict);
    }
}
