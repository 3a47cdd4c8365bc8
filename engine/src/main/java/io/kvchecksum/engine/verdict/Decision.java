package io.kvchecksum.engine.verdict;

import java.util.Objects;

/**
 * What the engine must do with one load, and why.
 *
 * @param requestId the request
 * @param action the engine's next step
 * @param verdict the comparison behind it
 */
public record Decision(String requestId, Action action, LoadVerdict verdict) {
    /**
     * Checks every component is given.
     *
     * @throws NullPointerException when {@code requestId}, {@code action} or {@code verdict} is null
     */
    public Decision {
        Objects.requireNonNull(requestId, "requestId");
        Objects.requireNonNull(action, "action");
        Objects.requireNonNull(verdict, "verdict");
    }

    /** {@return true when the loaded KV may be used} */
    public boolean useLoad() {
        return action == Action.USE_LOAD;
    }
}
