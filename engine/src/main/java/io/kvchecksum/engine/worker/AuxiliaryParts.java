package io.kvchecksum.engine.worker;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.PageProbe;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.wire.StateDigestsSection;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A worker's auxiliary parts of one request (its state digests, its page-probe partials by copy): the one place that
 * asks the backend for them. Computed synchronously for now, with the backend's own state-digest and probe calls; the
 * stream-ordered forms ({@code KvChecksum.submitStateDigests}, {@code PageProbe.submit}) replace them here alone.
 */
final class AuxiliaryParts {
    /** The computed parts: {@code null} for a part not configured. */
    record Result(List<StateDigestsSection.Entry> stateDigests, Map<ReplicaKey, PageProbe.Probes> probes) {
    }

    /** The parts of one request while the device computes them. */
    static final class Pending implements AutoCloseable {
        private final Result result;

        private Pending(Result result) {
            this.result = result;
        }

        boolean isDone() {
            return true;
        }

        Result get() {
            return result;
        }

        @Override
        public void close() {
        }
    }

    /** Nothing configured: both parts {@code null}. */
    static final Pending NONE = new Pending(new Result(null, null));

    private AuxiliaryParts() {
    }

    /**
     * Starts the request's parts.
     *
     * @param state the worker's state rows to digest, or {@code null} when state digests are off
     * @param probes the probed group's plans on this worker by copy, or {@code null} when the probe is off
     * @param stream the engine's stream, or {@code null} for the backend's own
     */
    static Pending submit(KvChecksum backend, ChecksumMode mode, int ppStage, List<StateShard> state,
            Map<ReplicaKey, List<SlicePlan>> probes, int probeBytes, Long stream) {
        List<StateDigestsSection.Entry> entries = null;
        if (state != null) {
            List<StateRow> rows = state.stream().map(StateShard::row).toList();
            long[] d = rows.isEmpty() ? new long[0] : backend.stateDigests(rows, mode);
            entries = new ArrayList<>();
            for (int i = 0; i < d.length; i++) {
                StateShard s = state.get(i);
                entries.add(new StateDigestsSection.Entry(s.row().name(), s.shard(), s.shards(), ppStage, s.copy(),
                        s.copies(), s.row().length(), d[i]));
            }
        }
        Map<ReplicaKey, PageProbe.Probes> partials = null;
        if (probes != null) {
            partials = new LinkedHashMap<>();
            for (Map.Entry<ReplicaKey, List<SlicePlan>> e : probes.entrySet()) {
                List<PageProbe.Probes> parts = new ArrayList<>();
                for (SlicePlan plan : e.getValue()) {
                    parts.add(PageProbe.compute(backend, plan, probeBytes));
                }
                partials.put(e.getKey(), PageProbe.Probes.sum(parts));
            }
        }
        return new Pending(new Result(entries, partials));
    }
}
