package io.kvchecksum.engine;

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

    /** A load whose checksums differ at {@code blocks} block positions (summed over its groups). */
    default void mismatched(int blocks) {
    }

    /** A load that could not be verified, once per reason it gives. */
    default void unverified(UnverifiedReason reason) {
    }

    /** A copy of a producer's payload that could not be decoded (counted even if a later good copy was used). */
    default void payloadMalformed() {
    }

    /** A producer request sent without checksums, for {@code reason}. */
    default void payloadWithheld(UnverifiedReason reason) {
    }

    /**
     * Time spent checksumming one worker's part of one request, in nanoseconds: from the submit to the moment its
     * results were seen complete (an upper bound for asynchronous backends, which are polled).
     */
    default void checksumNanos(long nanos) {
    }
}
