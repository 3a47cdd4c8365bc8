package io.kvchecksum.engine.worker;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.PageProbe;
import io.kvchecksum.Pending;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.wire.StateDigestsSection;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A worker's auxiliary parts of one request (its state digests, its page-probe partials by copy): the one place that
 * asks the backend for them. On the engine's stream they are enqueued with the stream-ordered forms
 * ({@link KvChecksum#submitStateDigests}, {@link PageProbe#submit}), ordered after the engine's writes and without a
 * host synchronization; without a stream, with the backend's own synchronous calls (tools, CPU engines).
 */
final class AuxiliaryParts {
    /** The computed parts: {@code null} for a part not configured. */
    record Result(List<StateDigestsSection.Entry> stateDigests, Map<ReplicaKey, PageProbe.Probes> probes) {
    }

    /** The parts of one request while the device computes them. Not thread-safe, as {@code PendingRecord}. */
    static final class Started implements AutoCloseable {
        private final List<StateShard> state;
        private final int ppStage;
        private final PendingChecksums digests;
        private final Map<ReplicaKey, List<Pending<PageProbe.Probes>>> probes;

        private Started(List<StateShard> state, int ppStage, PendingChecksums digests,
                Map<ReplicaKey, List<Pending<PageProbe.Probes>>> probes) {
            this.state = state;
            this.ppStage = ppStage;
            this.digests = digests;
            this.probes = probes;
        }

        boolean isDone() {
            return (digests == null || digests.isDone())
                    && (probes == null || probes.values().stream().flatMap(List::stream).allMatch(Pending::isDone));
        }

        /** Waits for the parts; what a handle throws propagates (the record turns it into its failure). */
        Result get() {
            List<StateDigestsSection.Entry> entries = null;
            if (state != null) {
                long[] d = digests.get();
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
                for (Map.Entry<ReplicaKey, List<Pending<PageProbe.Probes>>> e : probes.entrySet()) {
                    partials.put(e.getKey(), PageProbe.Probes.sum(e.getValue().stream().map(p -> p.get()).toList()));
                }
            }
            return new Result(entries, partials);
        }

        /** Releases every handle; what closing throws is collected and rethrown once all are closed. */
        @Override
        public void close() {
            RuntimeException failure = null;
            Stream<AutoCloseable> all = Stream.concat(Stream.ofNullable(digests),
                    probes == null ? Stream.empty() : probes.values().stream().flatMap(List::stream));
            for (AutoCloseable c : all.toList()) {
                try {
                    c.close();
                } catch (Exception e) {
                    if (failure == null) {
                        failure = new RuntimeException("closing auxiliary checks", e);
                    } else {
                        failure.addSuppressed(e);
                    }
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    /** Nothing configured: both parts {@code null}. */
    static final Started NONE = new Started(null, 0, null, null);

    private AuxiliaryParts() {
    }

    /**
     * Starts the request's parts; on failure whatever was already started is released before the exception propagates.
     *
     * @param state the worker's state rows to digest, or {@code null} when state digests are off
     * @param probes the probed group's plans on this worker by copy, or {@code null} when the probe is off
     * @param stream the engine's stream, or {@code null} for the backend's own synchronous calls
     */
    static Started submit(KvChecksum backend, ChecksumMode mode, int ppStage, List<StateShard> state,
            Map<ReplicaKey, List<SlicePlan>> probes, int probeBytes, Long stream) {
        PendingChecksums digests = null;
        Map<ReplicaKey, List<Pending<PageProbe.Probes>>> pendingProbes = probes == null ? null : new LinkedHashMap<>();
        try {
            if (state != null) {
                List<StateRow> rows = state.stream().map(StateShard::row).toList();
                digests = rows.isEmpty() ? PendingChecksums.completed(new long[0])
                        : stream == null ? PendingChecksums.completed(backend.stateDigests(rows, mode))
                        : backend.submitStateDigests(rows, mode, stream);
            }
            if (probes != null) {
                for (Map.Entry<ReplicaKey, List<SlicePlan>> e : probes.entrySet()) {
                    List<Pending<PageProbe.Probes>> list = new ArrayList<>();
                    pendingProbes.put(e.getKey(), list);
                    for (SlicePlan plan : e.getValue()) {
                        list.add(stream == null ? Pending.completed(PageProbe.compute(backend, plan, probeBytes))
                                : PageProbe.submit(backend, plan, probeBytes, stream));
                    }
                }
            }
        } catch (RuntimeException e) {
            try {
                new Started(state, ppStage, digests, pendingProbes).close();
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        return new Started(state, ppStage, digests, pendingProbes);
    }
}
