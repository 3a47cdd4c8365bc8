/**
 * What a load's check concludes and what an engine does about it: the verdicts ({@link
 * io.kvchecksum.engine.verdict.LoadVerdict}, {@link io.kvchecksum.engine.verdict.GroupVerdict}, {@link
 * io.kvchecksum.engine.verdict.SectionVerdict}, {@link io.kvchecksum.engine.verdict.Status}, {@link
 * io.kvchecksum.engine.verdict.UnverifiedReason}), the failure policy ({@link io.kvchecksum.engine.verdict.FailurePolicy},
 * {@link io.kvchecksum.engine.verdict.Decision}, {@link io.kvchecksum.engine.verdict.RankDecisions}) and the counters
 * ({@link io.kvchecksum.engine.verdict.ChecksumMetrics}).
 *
 * <p>The bottom layer of the engine: plain values and the policy over them, depending on no other engine package, so
 * that every other layer (the wire format's section comparisons, the aggregator, the worker's metrics) can report in
 * these terms.
 */
package io.kvchecksum.engine.verdict;
