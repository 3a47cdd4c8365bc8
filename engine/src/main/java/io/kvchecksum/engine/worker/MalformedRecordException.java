package io.kvchecksum.engine.worker;

/**
 * The one exception {@link WorkerRecordCodec#decode} throws for input it rejects: bytes that are not a worker record,
 * an unknown version, a field of the wrong type or out of range, a count the input cannot hold, or trailing bytes.
 * The message names the field ({@code groups[1].columns[0].values}, {@code probes[0].bin}, ...).
 *
 * <p>The aggregating rank treats a worker whose record it cannot read as a worker that did not report: the request is
 * then {@link io.kvchecksum.engine.verdict.UnverifiedReason#NOT_EVERY_WORKER_REPORTED}, never a match.
 */
public class MalformedRecordException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A rejection with the field and the problem in the message.
     *
     * @param message the field and what is wrong with it
     */
    public MalformedRecordException(String message) {
        super(message);
    }

    /**
     * A rejection caused by a lower-level error (msgpack's, or a value's own check).
     *
     * @param message the field and what is wrong with it
     * @param cause the error underneath
     */
    public MalformedRecordException(String message, Throwable cause) {
        super(message, cause);
    }
}
