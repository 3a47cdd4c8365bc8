package io.kvchecksum.engine.verdict;

/**
 * Counters an engine exports about its KV checksums. No dependency: an engine bridges it to its own registry
 * (Prometheus, Micrometer, ...) by implementing the methods it cares about; every method defaults to doing nothing.
 * {@link ChecksumCounters} keeps plain counts.
 *
 * <p>Implementations must be thread-safe and cheap: they are called on the scheduler's path.
 */
public interface ChecksumMetrics {
    /** Counts nothing. */
    ChecksumMetrics NONE = new ChecksumMetrics() {
    };

    /** A load whose checksums matched. */
    default void verified() {
    }

    /**
     * A load whose checksums differ at {@code blocks} block positions (summed over its groups).
     *
     * @param blocks mismatched block positions of the load, non-negative: 0 when only a payload section differed
     */
    default void mismatched(int blocks) {
    }

    /**
     * A load that could not be verified, once per reason it gives (not a load that wrote nothing: {@link
     * #nothingLoaded()}).
     *
     * @param reason one reason the load gives; not null
     */
    default void unverified(UnverifiedReason reason) {
    }

    /**
     * A load that wrote no block ({@link UnverifiedReason#NOTHING_LOADED}: 0 tokens, a full local prefix hit): used,
     * counted here only, neither as verified nor as unverified.
     */
    default void nothingLoaded() {
    }

    /** A copy of a producer's payload that could not be decoded (counted even if a later good copy was used). */
    default void payloadMalformed() {
    }

    /**
     * A producer request sent without checksums, for {@code reason}.
     *
     * @param reason why the producer sent none; not null
     */
    default void payloadWithheld(UnverifiedReason reason) {
    }

    /**
     * Time spent checksumming one worker's part of one request, in nanoseconds: from the submit to the moment its
     * results were seen complete (an upper bound for asynchronous backends, which are polled).
     *
     * @param nanos the elapsed time, non-negative
     */
    default void checksumNanos(long nanos) {
    }
}
