package io.kvchecksum.engine;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The whole checksum path of an engine that is one worker (TP 1, PP 1, every layer held once): a CPU engine such as
 * Jlama, or a single-device one. It is {@link WorkerChecksummer#tryCompute} then {@link Aggregator} and
 * {@link PayloadSender} on the producer, {@link WorkerChecksummer#tryCompute} then {@link Aggregator} and
 * {@link PendingLoads#verify} on the consumer, with TP rank 0, PP stage 0 and {@link ReplicaKey#NONE}.
 *
 * <pre>{@code
 * SingleWorker worker = new SingleWorker(backend, metrics);          // once per engine
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
 * its consumer sees {@link UnverifiedReason#MISSING_PAYLOAD}. A selection of mixed token counts, or none, is a caller
 * bug and throws {@link IllegalArgumentException}.
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
    private final io.kvchecksum.ChecksumMode mode;
    private final io.kvchecksum.CellPadding padding;

    /** A worker counting in {@code metrics}, its sender logging to {@code System.getLogger(PayloadSender.class.getName())}. */
    public SingleWorker(KvChecksum backend, ChecksumMetrics metrics) {
        this(backend, metrics, new PayloadSender(metrics));
    }

    /**
     * @param backend computes the checksums, shared by every request
     * @param metrics where checksum time is counted
     * @param sender decides, warns and counts on the producer (make it with the engine's logger)
     */
    public SingleWorker(KvChecksum backend, ChecksumMetrics metrics, PayloadSender sender) {
        this(backend, metrics, sender, io.kvchecksum.ChecksumMode.STANDARD);
    }

    /**
     * As {@link #SingleWorker(KvChecksum, ChecksumMetrics, PayloadSender)}, computing in checksum mode {@code mode}
     * (the engine's configuration; both sides must use the same one, see {@link UnverifiedReason#MODE_DIFFERS}).
     *
     * @throws IllegalArgumentException when the backend does not implement {@code mode}
     */
    public SingleWorker(KvChecksum backend, ChecksumMetrics metrics, PayloadSender sender, io.kvchecksum.ChecksumMode mode) {
        this(backend, metrics, sender, mode, io.kvchecksum.CellPadding.NONE);
    }

    /**
     * As {@link #SingleWorker(KvChecksum, ChecksumMetrics, PayloadSender, io.kvchecksum.ChecksumMode)}, with what to do
     * about cells that are not whole 8-byte pieces (see
     * {@link WorkerChecksummer#WorkerChecksummer(KvChecksum, int, int, List, Map, ChecksumMetrics, io.kvchecksum.ChecksumMode, io.kvchecksum.CellPadding)}):
     * without padding their groups are skipped with the reason, with {@link io.kvchecksum.CellPadding#ZEROS} padded.
     */
    public SingleWorker(KvChecksum backend, ChecksumMetrics metrics, PayloadSender sender, io.kvchecksum.ChecksumMode mode,
            io.kvchecksum.CellPadding padding) {
        this.padding = Objects.requireNonNull(padding, "padding");
        this.mode = Objects.requireNonNull(mode, "mode");
        // Every backend computes the standard mode; only another mode is asked about.
        if (mode != io.kvchecksum.ChecksumMode.STANDARD && !backend.supports(mode)) {
            throw new IllegalArgumentException("backend '" + backend.name() + "' does not implement the " + mode.wireName()
                    + " checksum mode");
        }
        this.backend = Objects.requireNonNull(backend, "backend");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.sender = Objects.requireNonNull(sender, "sender");
    }

    /** One group whose layers this worker holds whole, once: its layout entry. */
    public static WorkerChecksummer.WorkerGroup group(int groupId, long fingerprint, KvCacheGroup cache) {
        return new WorkerChecksummer.WorkerGroup(groupId, fingerprint,
                List.of(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, cache)));
    }

    /** The producer's checksums of one request, or why there are none (the reason and detail). */
    public Aggregator.Result producer(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection) {
        long n = numTokens(selection);
        WorkerRecord r = checksummer(layout).tryCompute(Side.PRODUCER, n, selection);
        return Aggregator.producer(1, 1, n, selection, List.of(r));
    }

    /**
     * The producer's payload as base64 text for the request's parameters, or empty when there is none to send
     * (warned once per reason and counted by the sender; the consumer then reports {@code MISSING_PAYLOAD}).
     */
    public Optional<String> producerBase64(String requestId, List<WorkerChecksummer.WorkerGroup> layout,
            List<BlockSelection> selection) {
        return sender.base64(requestId, producer(layout, selection));
    }

    /** The consumer's checksums of the loaded blocks, or why there are none. */
    public Aggregator.Result consumer(List<WorkerChecksummer.WorkerGroup> layout, List<BlockSelection> selection) {
        long n = numTokens(selection);
        WorkerRecord r = checksummer(layout).tryCompute(Side.CONSUMER, n, selection);
        return Aggregator.consumer(1, 1, n, selection, List.of(r));
    }

    /**
     * Checksums the loaded blocks and compares them with what {@code pending} holds for the request
     * ({@link PendingLoads#verify(String, Aggregator.Result)}): the verdict, or empty when the load was not pending
     * (never started, already verified, forgotten). Call once the load has landed, before any step writes its blocks.
     */
    public Optional<LoadVerdict> verify(PendingLoads pending, String requestId, List<WorkerChecksummer.WorkerGroup> layout,
            List<BlockSelection> selection) {
        Objects.requireNonNull(pending, "pending");
        Objects.requireNonNull(requestId, "requestId");
        return pending.verify(requestId, consumer(layout, selection));
    }

    private WorkerChecksummer checksummer(List<WorkerChecksummer.WorkerGroup> layout) {
        return new WorkerChecksummer(backend, 0, 0, layout, Map.of(), metrics, mode, padding);
    }

    private static long numTokens(List<BlockSelection> selection) {
        if (selection.isEmpty()) {
            throw new IllegalArgumentException("no group was selected");
        }
        long n = selection.get(0).numTokens();
        for (BlockSelection s : selection) {
            if (s.numTokens() != n) {
                throw new IllegalArgumentException("group " + s.groupId() + " was selected for " + s.numTokens()
                        + " tokens, group " + selection.get(0).groupId() + " for " + n);
            }
        }
        return n;
    }
}
