package io.kvchecksum.engine.worker;

import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvSegments;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The whole checksum path of an engine that is one worker (TP 1, PP 1, every layer held once): a CPU engine such as
 * Jlama, or a single-device one. It is {@link WorkerChecksummer#tryCompute} then {@link Aggregator} and
 * {@link PayloadSender} on the producer, {@link WorkerChecksummer#tryCompute} then {@link Aggregator} and
 * {@link PendingLoads#verify} on the consumer, with TP rank 0, PP stage 0 and {@link ReplicaKey#NONE}.
 *
 * <pre>{@code
 * SingleWorker worker = SingleWorker.builder(backend).metrics(metrics).build();   // once per engine
 * var layout = List.of(SingleWorker.group(0, fingerprint, cache));   // the request's caches, by group
 * // Producer, after prefill:
 * var sel = List.of(BlockSelection.producer(0, pageTable, BlockSelection.NO_NULL_BLOCK, n, 16, null));
 * Optional<String> payload = worker.producerBase64(requestId, layout, sel);   // empty: warned and counted
 * // Consumer, pages landed (pending.expect(requestId, payload) when the load began), before the first decode:
 * var csel = List.of(BlockSelection.consumer(0, pageTable, BlockSelection.NO_NULL_BLOCK, numLocal, n, 16, null));
 * Optional<LoadVerdict> v = worker.verify(pending, requestId, layout, csel);  // empty: the load was not pending
 * }</pre>
 *
 * <p><b>Nothing is thrown for a backend failure</b>: a consumer's load is then {@link UnverifiedReason#BACKEND_FAILED}
 * with the failure in the detail; a producer sends no checksums (warned and counted by its {@link PayloadSender}), so
 * its consumer sees {@link UnverifiedReason#MISSING_PAYLOAD}; a request whose layout is refused before anything is read
 * (tokens past a segmented cache's end) is {@link UnverifiedReason#LAYOUT_REFUSED} instead. Segmented KV that a load
 * starting at some block boundary could not read ({@link KvSegments#blockBoundaryProblem} for the selection's block
 * size) skips its group, with the reason, on that side. A selection of mixed token counts is a caller bug and throws
 * {@link IllegalArgumentException}; so is no selection where the token count is taken from it.
 *
 * <p><b>Auxiliary checks.</b> Built with {@link Builder#stateDigests} the worker digests the request's state rows,
 * passed per request ({@link #producer(List, List, long, List)}); with {@link Builder#pageProbe} it probes one group's
 * pages; both travel as payload sections. A pure-state model (no KV group) passes no selection and its token count,
 * and its load reaches MATCH or MISMATCH on its state digests alone.
 *
 * <p><b>Verifying during the copy.</b> A consumer that moves received KV from a staging buffer into its caches lets
 * the worker do that copy: {@link #copyAndVerify} copies with {@link io.kvchecksum.KvChecksum#copyAndChecksum} and
 * verifies the copy's checksums, one pass over the bytes instead of a copy and a checksum; same verdicts.
 *
 * <p>The checksums are computed with the backend's own {@code submit} and waited for: right for CPU backends; a GPU
 * engine that must not wait in its step uses {@link WorkerChecksummer#trySubmit} on its stream. The layout is passed
 * per request because an engine like Jlama holds each request's KV in memory of its own; an engine whose caches are
 * fixed passes the same list every time. One instance per engine (its sender warns once per reason); thread-safe if
 * the backend is.
 */
public final class SingleWorker {
    private final KvChecksum backend;
    private final ChecksumMetrics metrics;
    private final PayloadSender sender;
    private final ChecksumSpec spec;
    private final boolean stateDigests;
    private final Integer probeGroup;
    private final int probeBytes;

    private SingleWorker(Builder b) {
        this.backend = b.backend;
        this.stateDigests = b.stateDigests;
        this.probeGroup = b.probeGroup;
        this.probeBytes = b.probeBytes;
        this.metrics = b.metrics;
        this.sender = b.sender != null ? b.sender : new PayloadSender(b.metrics);
        this.spec = b.spec;
    }

    /**
     * {@return a builder of a worker computing with {@code backend}: the standard mode without padding,
     * {@link ChecksumMetrics#NONE}, a {@link PayloadSender} of the metrics logging to
     * {@code System.getLogger(PayloadSender.class.getName())}}
     *
     * @param backend computes the checksums, shared by every request; not null
     * @throws NullPointerException when {@code backend} is null
     */
    public static Builder builder(KvChecksum backend) {
        return new Builder(backend);
    }

    /** The worker's configuration, by name. Not thread-safe; each {@link #build} makes an independent worker. */
    public static final class Builder {
        private final KvChecksum backend;
        private ChecksumMetrics metrics = ChecksumMetrics.NONE;
        private PayloadSender sender;
        private ChecksumSpec spec = ChecksumSpec.STANDARD;
        private boolean stateDigests;
        private Integer probeGroup;
        private int probeBytes;

        private Builder(KvChecksum backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
        }

        /**
         * {@return this builder, digesting each request's state rows} Default off; see
         * {@link WorkerChecksummer.Builder#stateDigests}.
         *
         * @param on whether to digest the state rows passed with each request
         */
        public Builder stateDigests(boolean on) {
            this.stateDigests = on;
            return this;
        }

        /**
         * {@return this builder, probing group {@code groupId}'s pages} Default off; see
         * {@link WorkerChecksummer.Builder#pageProbe}.
         *
         * @param groupId the probed group
         * @param probeBytes bytes probed at each end of each cell, a positive multiple of 8 (checked by {@link #build})
         */
        public Builder pageProbe(int groupId, int probeBytes) {
            this.probeGroup = groupId;
            this.probeBytes = probeBytes;
            return this;
        }

        /**
         * {@return this builder, counting checksum time (and, without a {@link #sender}, withheld payloads) in
         * {@code metrics}}
         *
         * @param metrics the engine's metrics; not null
         * @throws NullPointerException when {@code metrics} is null
         */
        public Builder metrics(ChecksumMetrics metrics) {
            this.metrics = Objects.requireNonNull(metrics, "metrics");
            return this;
        }

        /**
         * {@return this builder, with the engine's own sender} It decides, warns and counts on the producer (make it
         * with the engine's logger).
         *
         * @param sender the sender; not null
         * @throws NullPointerException when {@code sender} is null
         */
        public Builder sender(PayloadSender sender) {
            this.sender = Objects.requireNonNull(sender, "sender");
            return this;
        }

        /**
         * {@return this builder, computing as {@code spec} asks} The engine's configuration, the same on both sides
         * (see {@link WorkerChecksummer.Builder#spec}): in another mode a load verifies as
         * {@link UnverifiedReason#MODE_DIFFERS}; without padding ({@link CellPadding#NONE}) a group of cells that are
         * not whole 8-byte pieces is skipped with the reason, with {@link CellPadding#ZEROS} padded.
         *
         * @param spec the mode and padding; not null
         * @throws NullPointerException when {@code spec} is null
         */
        public Builder spec(ChecksumSpec spec) {
            this.spec = Objects.requireNonNull(spec, "spec");
            return this;
        }

        /**
         * {@return the worker}
         *
         * @throws IllegalArgumentException when a page probe was asked for with probe bytes that are not a positive
         *     multiple of 8
         */
        public SingleWorker build() {
            if (probeGroup != null && (probeBytes <= 0 || probeBytes % 8 != 0)) {
                throw new IllegalArgumentException("probe bytes must be a positive multiple of 8, got " + probeBytes);
            }
            return new SingleWorker(this);
        }
    }

    /**
     * {@return one group whose layers this worker holds whole, once: its layout entry}
     *
     * @param groupId the group's id, as the selections name it
     * @param fingerprint the group's fingerprint ({@link Fingerprints#ofGroup}), the same on both sides for a match
     * @param cache the group's memory on this worker
     */
    public static WorkerChecksummer.WorkerGroup group(int groupId, long fingerprint, KvCacheGroup cache) {
        return new WorkerChecksummer.WorkerGroup(groupId, fingerprint,
                List.of(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, cache)));
    }

    /**
     * One group whose layers this worker holds whole, once, in several allocations per request (Jlama's pages): its
     * layout entry. The selection's block ids are not used: segmented KV is addressed by position ({@link KvSegments}).
     * Its pages are checked against the selection's block size before anything is computed: segments some block
     * boundary of which is not a page boundary skip the group with the reason.
     *
     * @param groupId the group's id, as the selections name it
     * @param fingerprint the group's fingerprint ({@link Fingerprints#ofGroup}), the same on both sides for a match
     * @param cache the group's allocations on this worker, in position order
     * @return the group's layout entry: one part holding all of it
     */
    public static WorkerChecksummer.WorkerGroup group(int groupId, long fingerprint, KvSegments cache) {
        return new WorkerChecksummer.WorkerGroup(groupId, fingerprint,
                List.of(WorkerChecksummer.ReplicaPart.segmented(ReplicaKey.NONE, cache)));
    }

    /**
     * {@return the producer's checksums of one request, or why there are none (the reason and detail)}
     *
     * @param layout the request's caches, one entry per group
     * @param selection the producer's blocks, one selection per group, all of one token count
     * @throws IllegalArgumentException when {@code selection} is empty or its token counts differ
     */
    public Aggregator.Result producer(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection) {
        return producer(layout, selection, numTokens(selection), List.of());
    }

    /**
     * {@return the producer's checksums and sections of one request, or why there are none}
     *
     * @param layout the request's caches, one entry per group; may be empty (a pure-state model)
     * @param selection the producer's blocks, one selection per group, each of {@code numTokens}; may be empty
     * @param numTokens the request's token count
     * @param state the request's state rows (digested when built with {@link Builder#stateDigests}); not null
     * @throws IllegalArgumentException when a selection's token count is not {@code numTokens}
     */
    public Aggregator.Result producer(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection,
            long numTokens, List<StateShard> state) {
        WorkerRecord r = checksummer(layout, selection).tryCompute(Side.PRODUCER, numTokens, selection, state);
        return Aggregator.producer(1, 1, numTokens, selection, List.of(r));
    }

    /**
     * {@return the producer's payload as base64 text for the request's parameters, or empty when there is none to send
     * (warned once per reason and counted by the sender; the consumer then reports {@code MISSING_PAYLOAD})}
     *
     * @param requestId the request, for the sender's warning; not null
     * @param layout the request's caches, one entry per group
     * @param selection the producer's blocks, one selection per group, all of one token count
     * @throws IllegalArgumentException when {@code selection} is empty or its token counts differ
     */
    public Optional<String> producerBase64(String requestId, List<WorkerChecksummer.WorkerGroup> layout,
            List<BlockSelection> selection) {
        return sender.base64(requestId, producer(layout, selection));
    }

    /**
     * {@return the producer's payload (checksums and sections) as base64 text, or empty when there is none to send}
     *
     * @param requestId the request, for the sender's warning; not null
     * @param layout the request's caches, one entry per group; may be empty
     * @param selection the producer's blocks, one selection per group, each of {@code numTokens}; may be empty
     * @param numTokens the request's token count
     * @param state the request's state rows; not null
     * @throws IllegalArgumentException when a selection's token count is not {@code numTokens}
     */
    public Optional<String> producerBase64(String requestId, List<WorkerChecksummer.WorkerGroup> layout,
            List<BlockSelection> selection, long numTokens, List<StateShard> state) {
        return sender.base64(requestId, producer(layout, selection, numTokens, state));
    }

    /**
     * {@return the consumer's checksums of the loaded blocks, or why there are none}
     *
     * @param layout the request's caches, one entry per group
     * @param selection the blocks the load wrote, one selection per group, all of one token count
     * @throws IllegalArgumentException when {@code selection} is empty or its token counts differ
     */
    public Aggregator.Result consumer(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection) {
        return consumer(layout, selection, numTokens(selection), List.of());
    }

    /**
     * {@return the consumer's checksums and sections of the loaded blocks and state, or why there are none}
     *
     * @param layout the request's caches, one entry per group; may be empty (a pure-state model)
     * @param selection the blocks the load wrote, one selection per group, each of {@code numTokens}; may be empty
     * @param numTokens the request's token count
     * @param state the request's state rows (digested when built with {@link Builder#stateDigests}); not null
     * @throws IllegalArgumentException when a selection's token count is not {@code numTokens}
     */
    public Aggregator.Result consumer(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection,
            long numTokens, List<StateShard> state) {
        WorkerRecord r = checksummer(layout, selection).tryCompute(Side.CONSUMER, numTokens, selection, state);
        return Aggregator.consumer(1, 1, numTokens, selection, List.of(r));
    }

    /**
     * Checksums the loaded blocks and compares them with what {@code pending} holds for the request
     * ({@link PendingLoads#verify(String, Aggregator.Result)}): the verdict, or empty when the load was not pending
     * (never started, already verified, forgotten). Call once the load has landed, before any step writes its blocks.
     *
     * @param pending the engine's pending loads, holding the producer's payload; not null
     * @param requestId the request; not null
     * @param layout the request's caches, one entry per group
     * @param selection the blocks the load wrote, one selection per group, all of one token count
     * @return the load's verdict, or empty when it was not pending
     * @throws IllegalArgumentException when {@code selection} is empty or its token counts differ
     * @throws NullPointerException when {@code pending} or {@code requestId} is null
     */
    public Optional<LoadVerdict> verify(PendingLoads pending, String requestId, List<WorkerChecksummer.WorkerGroup> layout,
            List<BlockSelection> selection) {
        Objects.requireNonNull(pending, "pending");
        Objects.requireNonNull(requestId, "requestId");
        return pending.verify(requestId, consumer(layout, selection));
    }

    /**
     * As {@link #verify(PendingLoads, String, List, List)}, with the token count given and the request's state rows.
     *
     * @param pending the engine's pending loads, holding the producer's payload; not null
     * @param requestId the request; not null
     * @param layout the request's caches, one entry per group; may be empty
     * @param selection the blocks the load wrote, one selection per group, each of {@code numTokens}; may be empty
     * @param numTokens the request's token count
     * @param state the request's state rows; not null
     * @return the load's verdict, or empty when it was not pending
     * @throws IllegalArgumentException when a selection's token count is not {@code numTokens}
     * @throws NullPointerException when {@code pending} or {@code requestId} is null
     */
    public Optional<LoadVerdict> verify(PendingLoads pending, String requestId, List<WorkerChecksummer.WorkerGroup> layout,
            List<BlockSelection> selection, long numTokens, List<StateShard> state) {
        Objects.requireNonNull(pending, "pending");
        Objects.requireNonNull(requestId, "requestId");
        return pending.verify(requestId, consumer(layout, selection, numTokens, state));
    }

    /**
     * {@return the consumer's checksums of the loaded blocks, computed while the received KV is copied into the
     * request's caches, or why there are none} The worker moves {@code received} into {@code layout}'s pages with
     * verifying copies ({@link WorkerChecksummer#tryCopyAndCompute}): the result is the one {@link #consumer} would
     * give after a correct copy, so the verdict is the same. Writes into the caches after the copy are not covered.
     *
     * @param layout the request's caches (the copies' destination), one entry per group
     * @param selection the blocks the load writes, one selection per group, all of one token count
     * @param received the KV the load received (a staging buffer), any number per group; not null
     * @throws IllegalArgumentException when {@code selection} is empty or its token counts differ, or as
     *     {@link WorkerChecksummer#tryCopyAndSubmit} does for received KV of a group not copied
     */
    public Aggregator.Result consumerCopy(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection,
            List<ReceivedKv> received) {
        long numTokens = numTokens(selection);
        WorkerRecord r = checksummer(layout, selection).tryCopyAndCompute(numTokens, selection, received);
        return Aggregator.consumer(1, 1, numTokens, selection, List.of(r));
    }

    /**
     * Copies the received KV into the request's caches, verifying it during the copy, and compares the copy's
     * checksums with what {@code pending} holds for the request: the verdict {@link #verify(PendingLoads, String,
     * List, List)} would give after a correct copy, or empty when the load was not pending. Call once the transfer
     * has landed in {@code received}, before any step reads the caches. An {@link UnverifiedReason#BACKEND_FAILED}
     * verdict means the caches may be partly written: recompute, never use the load.
     *
     * @param pending the engine's pending loads, holding the producer's payload; not null
     * @param requestId the request; not null
     * @param layout the request's caches (the copies' destination), one entry per group
     * @param selection the blocks the load writes, one selection per group, all of one token count
     * @param received the KV the load received, any number per group; not null
     * @return the load's verdict, or empty when it was not pending
     * @throws IllegalArgumentException as {@link #consumerCopy} does
     * @throws NullPointerException when {@code pending} or {@code requestId} is null
     */
    public Optional<LoadVerdict> copyAndVerify(PendingLoads pending, String requestId,
            List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection, List<ReceivedKv> received) {
        Objects.requireNonNull(pending, "pending");
        Objects.requireNonNull(requestId, "requestId");
        return pending.verify(requestId, consumerCopy(layout, selection, received));
    }

    /**
     * The worker for this request's layout, its groups declared with the selection's block sizes: segmented KV that a
     * load could not read from some block boundary skips its group with the reason ({@link WorkerChecksummer.Builder#blockSize}).
     */
    private WorkerChecksummer checksummer(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection) {
        WorkerChecksummer.Builder b = WorkerChecksummer.builder(backend).groups(layout).spec(spec).metrics(metrics)
                .stateDigests(stateDigests);
        selection.forEach(s -> b.blockSize(s.groupId(), s.blockSize()));
        if (probeGroup != null) {
            b.pageProbe(probeGroup, probeBytes);
        }
        return b.build();
    }

    /** The first selection's token count: the worker and the aggregator refuse selections of any other. */
    private static long numTokens(List<BlockSelection> selection) {
        return selection.stream().findFirst().orElseThrow(() -> new IllegalArgumentException("no group was selected"))
                .numTokens();
    }
}
