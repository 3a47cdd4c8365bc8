/**
 * The payload that travels from the producer to the consumer and its comparison: {@link
 * io.kvchecksum.engine.wire.ChecksumPayload} of {@link io.kvchecksum.engine.wire.GroupChecksums}, its wire format
 * ({@link io.kvchecksum.engine.wire.PayloadCodec}, {@link io.kvchecksum.engine.wire.MalformedPayloadException},
 * {@link io.kvchecksum.engine.wire.WirePayload}), the
 * sections the codec knows ({@link io.kvchecksum.engine.wire.PayloadSections} and the three section values
 * it lists), and {@link io.kvchecksum.engine.wire.Verifier}, which compares two payloads into a verdict.
 *
 * <p>The known sections live here rather than beside the auxiliary checks that compute them because the decoder must
 * know them: {@code PayloadCodec.decode} reads each known section into its value. Depends on
 * {@link io.kvchecksum.engine.verdict} only (a comparison's outcome is a verdict), never on the worker side.
 */
package io.kvchecksum.engine.wire;
