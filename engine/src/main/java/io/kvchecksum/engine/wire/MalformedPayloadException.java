package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.UnverifiedReason;

/**
 * The one exception {@link PayloadCodec} throws for input it rejects: bytes that are not a checksum payload, an
 * unknown version, a field of the wrong type or out of range, a size the input cannot hold, trailing bytes, or text
 * that is not base64. The message names the field ({@code groups[1].values}, {@code num_tokens}, ...).
 *
 * <p>A consumer treats it as a malformed payload: the load is unverified with
 * {@link UnverifiedReason#MALFORMED_PAYLOAD}, never a match.
 */
public class MalformedPayloadException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A rejection with the field and the problem in the message.
     *
     * @param message the field and what is wrong with it (e.g. {@code groups[1].values: 12 bytes, not a multiple of 8})
     */
    public MalformedPayloadException(String message) {
        super(message);
    }

    /**
     * A rejection caused by a lower-level error (a msgpack or base64 error).
     *
     * @param message the field and what is wrong with it
     * @param cause the msgpack or base64 error underneath
     */
    public MalformedPayloadException(String message, Throwable cause) {
        super(message, cause);
    }
}
