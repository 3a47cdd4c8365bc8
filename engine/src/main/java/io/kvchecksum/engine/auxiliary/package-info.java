/**
 * An engine's opt-in checks beside the block checksums, attached to the aggregated payload as sections (they travel
 * beside the checksums, {@code kv_checksum_sections}):
 * {@link io.kvchecksum.engine.auxiliary.AuxiliaryChecks} (state-row digests and the head/tail page probe) and
 * {@link io.kvchecksum.engine.auxiliary.SglangDigests} (SGLang's page digest, gated by the
 * {@link io.kvchecksum.engine.auxiliary.LayoutSignature}).
 *
 * <p>The sections' values and their decoding belong to {@link io.kvchecksum.engine.wire} (the decoder must know them);
 * this package computes them and attaches them to an {@link io.kvchecksum.engine.worker.Aggregator} result. It may
 * depend on {@link io.kvchecksum.engine.worker}, {@link io.kvchecksum.engine.wire} and
 * {@link io.kvchecksum.engine.verdict}; no other engine package depends on it.
 */
package io.kvchecksum.engine.auxiliary;
