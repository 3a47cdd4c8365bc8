package io.kvchecksum.engine.auxiliary;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.PageProbeSection;
import io.kvchecksum.engine.wire.PayloadSection;
import io.kvchecksum.engine.wire.StateDigestsSection;
import io.kvchecksum.engine.wire.Verifier;
import io.kvchecksum.engine.worker.Aggregator;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A single-worker engine's opt-in checks beside the block checksums, carried as sections beside the checksums
 * ({@code kv_transfer_params["kv_checksum_sections"]}, {@link io.kvchecksum.engine.worker.PayloadSender#wire}): the
 * state-row digests ({@link StateDigestsSection}) and the head/tail page probe ({@link PageProbeSection}). Engines of
 * several workers configure them on each {@code WorkerChecksummer} instead, and {@link Aggregator} builds the sections.
 * Both sides use the same
 * configuration: the producer attaches the sections when it sends, the consumer when it consumes, and the verifier
 * compares them ({@link Verifier#compare}); a peer without them sees them UNVERIFIED {@code ONE_SIDE_ONLY}, never a
 * mismatch.
 *
 * <pre>{@code
 * AuxiliaryChecks aux = new AuxiliaryChecks(true, PageProbe.DEFAULT_PROBE_BYTES);     // at startup
 * List<PayloadSection> mine = aux.compute(backend, mode, stateRows, plan);             // per request, per side
 * sender.wire(reqId, AuxiliaryChecks.attach(Aggregator.producer(...), mine))          // producer
 *         .ifPresent(w -> kvTransferParams.putAll(w.params()));
 * pending.expect(reqId, params.get("kv_checksums"), params.get("kv_checksum_sections"));
 * pending.verify(reqId, AuxiliaryChecks.attach(Aggregator.consumer(...), mine));       // consumer
 * }</pre>
 *
 * @param stateDigests whether to digest the request's state rows
 * @param probeBytes bytes probed at each end of each cell (a positive multiple of 8), or 0 for no page probe
 */
public record AuxiliaryChecks(boolean stateDigests, int probeBytes) {
    /** No auxiliary check: the payload carries no sections. */
    public static final AuxiliaryChecks OFF = new AuxiliaryChecks(false, 0);

    /**
     * Validates the probe size.
     *
     * @throws IllegalArgumentException when {@code probeBytes} is negative or not a multiple of 8
     */
    public AuxiliaryChecks {
        if (probeBytes < 0 || probeBytes % 8 != 0) {
            throw new IllegalArgumentException("probeBytes must be 0 (off) or a positive multiple of 8, got " + probeBytes);
        }
    }

    /**
     * This side's sections for one request, for one worker (TP1 x PP1). Under TP or PP the workers compute their
     * parts themselves ({@code WorkerChecksummer.Builder.stateDigests} and {@code pageProbe}) and {@link Aggregator}
     * combines them, probing replicated heads copy by copy; adding every worker's probes here would count replicated
     * heads once per copy.
     *
     * @param backend the backend that computes the digests and, on device memory, the probes
     * @param mode the mode the state rows are digested in (the probe is always standard); not null when
     *     {@code stateDigests}
     * @param rows the request's state rows (ignored unless {@code stateDigests})
     * @param plan the request's plan (ignored unless {@code probeBytes > 0})
     * @return a new list: the {@link StateDigestsSection} when {@code stateDigests}, then the {@link PageProbeSection}
     *     when {@code probeBytes > 0}; empty for {@link #OFF}
     * @throws IllegalArgumentException when two state rows share a name, or a name is not 1..64 printable ASCII
     *     characters
     * @throws io.kvchecksum.InvalidLayoutException when the backend cannot read the rows or the plan's memory
     */
    public List<PayloadSection> compute(KvChecksum backend, ChecksumMode mode, List<StateRow> rows, SlicePlan plan) {
        List<PayloadSection> out = new ArrayList<>();
        if (stateDigests) {
            out.add(StateDigestsSection.compute(backend, rows, mode));
        }
        if (probeBytes > 0) {
            out.add(PageProbeSection.compute(backend, plan, probeBytes));
        }
        return out;
    }

    /**
     * {@code result} with {@code sections} added to its payload; an incomplete result is returned as it is.
     *
     * @param result the aggregator's result for the request, not null
     * @param sections the sections to add (each replaces one of the same name), not null; may be empty
     * @return a new {@link Aggregator.Complete} with the payload (same version) carrying the sections and the same skipped
     *     groups, or {@code result} itself when it is incomplete or {@code sections} is empty
     * @throws NullPointerException when {@code result} is null
     * @throws IllegalArgumentException when the payload is version 1, which has no sections
     */
    public static Aggregator.Result attach(Aggregator.Result result, List<PayloadSection> sections) {
        Objects.requireNonNull(result, "result");
        if (!(result instanceof Aggregator.Complete c) || sections.isEmpty()) {
            return result;
        }
        ChecksumPayload p = c.payload();
        for (PayloadSection s : sections) {
            p = p.withSection(s);
        }
        return new Aggregator.Complete(p, c.skippedGroups());
    }
}
