package io.kvchecksum.engine.auxiliary;

import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.SglangDigestSection;
import io.kvchecksum.engine.worker.Aggregator;
import io.kvchecksum.engine.worker.PayloadSender;
import io.kvchecksum.engine.worker.PendingLoads;

import java.util.List;
import java.util.Objects;

/**
 * The opt-in SGLang page digest of an engine: computes one worker's {@link SglangDigestSection.Entry} and attaches the
 * workers' entries to the side's payload. Off unless the engine calls it; either way the checksums are the same bytes
 * (version 2 in the standard mode), the section travels beside them, and a peer that does not know it skips it.
 *
 * <p>Where it fits: each worker, after its checksums, calls {@link #entry} over its own buffers (the digest reads the
 * bytes of whole pages, so on a GPU it runs on the backend's {@link KvChecksum#pageDigest}); the scheduler collects the
 * entries with the records and wraps the {@link Aggregator} result: {@code sender.wire(reqId,
 * SglangDigests.attach(Aggregator.producer(...), entries))}, whose {@code params()} go into
 * {@code kv_transfer_params} (the section under {@code kv_checksum_sections}). The consumer does the same for the pages it loaded:
 * {@code pending.verify(reqId, SglangDigests.attach(Aggregator.consumer(...), entries)).map(v -> policy.decide(reqId,
 * peer, v))}, which warns about a {@link UnverifiedReason#LAYOUT_DIFFERS} once per peer
 * ({@link FailurePolicy#decide(String, String, LoadVerdict)}).
 */
public final class SglangDigests {
    private SglangDigests() {
    }

    /**
     * One worker's digest of one group: Adler-32 of the pages of {@code plan}'s range (from its first token, rounded up
     * to whole pages) followed by {@code stateRows}, with the layout signature of the same stream.
     *
     * @param backend the backend that computes the digest ({@link KvChecksum#pageDigest}), not null
     * @param groupId the KV cache group's id, non-negative
     * @param worker {@code pp_stage * tp_size + tp_rank}, non-negative (0 for a single worker)
     * @param plan the request over the group's pages; its first token must start a page
     * @param stateRows the state rows digested after the pages, in stream order; may be empty, not null
     * @return this worker's entry: signature, page size, first token, page count and Adler-32 digest
     * @throws NullPointerException when {@code backend} is null
     * @throws IllegalArgumentException when {@code groupId} or {@code worker} is negative
     * @throws InvalidLayoutException when the first token is inside a page, or the backend cannot read the memory
     */
    public static SglangDigestSection.Entry entry(KvChecksum backend, int groupId, int worker, SlicePlan plan,
            List<StateRow> stateRows) {
        Objects.requireNonNull(backend, "backend");
        int pageSize = plan.group().pageSize();
        long first = plan.request().startToken();
        if (first % pageSize != 0) {
            throw new InvalidLayoutException("the page digest covers whole pages: the first token " + first
                    + " is inside a page of " + pageSize + " tokens");
        }
        long digest = backend.pageDigest(PageDigestPlan.of(plan, stateRows));
        long signature = LayoutSignature.of(plan.group(), stateRows);
        return new SglangDigestSection.Entry(groupId, worker, signature, pageSize, first, plan.numPages(), digest);
    }

    /**
     * A side's aggregated result with the section of {@code entries} attached to its payload; an
     * {@link Aggregator.Incomplete} result, or no entries, unchanged. What the scheduler passes to
     * {@link PayloadSender} (producer) or {@link PendingLoads#verify(String, Aggregator.Result)} (consumer).
     *
     * @param result the side's aggregated result
     * @param entries every worker's entries, each (group, worker) once; may be empty, not null
     * @return a new {@link Aggregator.Complete} with the section in its payload and the same skipped groups, or
     *     {@code result} itself
     * @throws IllegalArgumentException when a (group, worker) appears twice, or the payload is version 1
     */
    public static Aggregator.Result attach(Aggregator.Result result, List<SglangDigestSection.Entry> entries) {
        return entries.isEmpty() ? result : AuxiliaryChecks.attach(result, List.of(new SglangDigestSection(entries)));
    }

    /**
     * {@code payload} with the section of {@code entries} (its version unchanged), or unchanged when there are none.
     *
     * @param payload the side's payload, not null
     * @param entries every worker's entries, each (group, worker) once; may be empty, not null
     * @return the payload with the section (replacing any of the same name), or {@code payload} itself
     * @throws IllegalArgumentException when a (group, worker) appears twice, or the payload is version 1
     */
    public static ChecksumPayload attach(ChecksumPayload payload, List<SglangDigestSection.Entry> entries) {
        return entries.isEmpty() ? payload : payload.withSection(new SglangDigestSection(entries));
    }
}
