package io.kvchecksum.engine.worker;

import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvSegments;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * One worker's checksums of its requests: enqueues them on the engine's stream in the step that makes the KV final,
 * and turns them into the worker's {@link WorkerRecord} later, without waiting on the device in the step.
 *
 * <p><b>Where to call {@link #submit}.</b> On a producer, in the step whose scheduled tokens finish the prompt,
 * after its forward has been enqueued (on the v1 runner with a drafter that writes KV later, after the drafter). On
 * a consumer, in the step whose transfer results report the load finished, before any later forward can write into
 * its blocks. Pass the stream the engine's step runs on: the checksum is ordered after the writes enqueued on it and
 * the call does not synchronize (for CUDA: {@code torch.cuda.current_stream().cuda_stream}); CPU backends compute at
 * once. The scheduler side then {@link PendingRecord#poll polls} the handle each step and gets the record once the
 * device has finished, or the engine ships the handle's record with the step's output (vLLM's
 * {@code KVChecksumOutput.finalize}), which waits only for the result copy.
 *
 * <p><b>A failing backend.</b> An engine's step calls {@link #trySubmit} (or, synchronously, {@link #tryCompute}):
 * whatever the backend throws while enqueueing, polling or reading the checksums (device lost, driver error, out of
 * device memory, a cache it cannot read) becomes the worker's {@link WorkerRecord#failed failed record} instead of an
 * exception in the step. The scheduler aggregates it like any record: on the consumer the load is then
 * {@link UnverifiedReason#BACKEND_FAILED} with the failure in the verdict's detail (and the {@link FailurePolicy}
 * acts on it); on the producer {@link PayloadSender} sends no checksums, with its warning, and the consumer sees
 * {@link UnverifiedReason#MISSING_PAYLOAD}. {@link #submit} and {@link #compute} throw the backend's exception
 * instead, for tools and tests that want it. Errors ({@code OutOfMemoryError} of the JVM, ...) propagate either way.
 * A request whose layout is refused before anything is read ({@link InvalidLayoutException}: tokens past a segmented
 * cache's end, a selection in blocks of another size than configured) is {@link WorkerRecord#refused refused} instead,
 * which the side reports as {@link UnverifiedReason#LAYOUT_REFUSED}: not the backend's failure.
 *
 * <p><b>Segmented KV</b> ({@link ReplicaPart#segmented}) is checked when the worker is built, against the block size
 * its group is declared with ({@link Builder#blockSize}): segments some block boundary of which is not a page boundary
 * ({@link KvSegments#blockBoundaryProblem}) could not be read by a load starting there, so their group is skipped with
 * that reason, in every record, instead of failing request by request.
 *
 * <p><b>Verifying during the copy</b> (an option of the consumer path). A consumer that copies received KV into its
 * pages anyway (a host staging buffer into the cache, a rearrangement into its own layout or block size, a TP
 * re-shard of producer ranks' head ranges) hands the worker the received KV ({@link ReceivedKv}) and calls
 * {@link #tryCopyAndSubmit} instead of {@link #trySubmit}: the worker makes that copy with
 * {@link KvChecksum#submitCopy} and takes the copy's values as its record, one pass over the bytes. The record is
 * exactly the one {@link #trySubmit} would compute after a correct copy, so verdicts, wire format and aggregation
 * are unchanged; writes to the pages after the copy are not covered.
 *
 * <p>The worker's layout (its layers per group, by replica) and the groups it cannot checksum are fixed at startup
 * ({@link CacheGate}). Thread-safe if the backend is (every {@link KvChecksum} is); the caches must not be written
 * before the pending record is done.
 */
public final class WorkerChecksummer {

    /**
     * One copy of this worker's layers of a group, in one layout. A worker with layers of several replica counts (an
     * attention cache sharded across TP next to an indexer cache every rank holds) describes each as its own part.
     *
     * <p>A part is either one allocation ({@code segments} null: the selection's block ids are its pages) or a request's
     * KV held in several allocations ({@link #segmented}: an engine such as Jlama that keeps a session in pages of its
     * own, each its own memory, addressed by position, so the selection's block ids are not used).
     *
     * @param key the copy these layers are
     * @param cache the layers and where they are; for a segmented part, its first segment's group (every segment has
     *     the same layers)
     * @param segments the request's allocations in position order, or {@code null} for one allocation
     */
    public record ReplicaPart(ReplicaKey key, KvCacheGroup cache, KvSegments segments) {
        /**
         * Checks the key and cache are given, and that a segmented part's cache is its first segment's group.
         *
         * @throws NullPointerException when {@code key} or {@code cache} is null
         * @throws IllegalArgumentException when {@code segments} is given and its first group is not {@code cache}
         */
        public ReplicaPart {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(cache, "cache");
            if (segments != null && !segments.geometry().equals(cache)) {
                throw new IllegalArgumentException("a segmented part's cache must be its first segment's group");
            }
        }

        /**
         * One allocation, addressed through the selection's block ids.
         *
         * @param key the replica this part belongs to ({@link ReplicaKey#NONE} when the layers are not replicated)
         * @param cache the part's memory, not null
         * @throws NullPointerException when {@code key} or {@code cache} is null
         */
        public ReplicaPart(ReplicaKey key, KvCacheGroup cache) {
            this(key, cache, null);
        }

        /**
         * A request's KV in several allocations, addressed by position ({@link KvSegments}). A worker holding one needs
         * its group's block size ({@link Builder#blockSize}), against which it checks the segments when it is built.
         *
         * @param key the replica this part belongs to ({@link ReplicaKey#NONE} when the layers are not replicated)
         * @param segments the request's allocations in position order, not null
         * @return the part, its cache the first segment's group
         * @throws NullPointerException when {@code key} or {@code segments} is null
         */
        public static ReplicaPart segmented(ReplicaKey key, KvSegments segments) {
            Objects.requireNonNull(segments, "segments");
            return new ReplicaPart(key, segments.geometry(), segments);
        }
    }

    /**
     * This worker's layers of one group.
     *
     * @param groupId the group
     * @param fingerprint the sum of the hashes of these layers ({@link Fingerprints#ofGroup}), each layer counted once
     *     however many parts it appears in
     * @param parts the layers, by copy
     */
    public record WorkerGroup(int groupId, long fingerprint, List<ReplicaPart> parts) {
        /**
         * Copies {@code parts}.
         *
         * @throws NullPointerException when {@code parts} or one of its elements is null
         */
        public WorkerGroup {
            parts = List.copyOf(parts);
        }
    }

    /**
     * A worker's layout as decided once at startup: the groups it checksums, the groups it skips with the reason, and
     * what it does with cells that are not whole 8-byte pieces. {@link CacheGate} decides it from the engine's cache
     * specs; a worker {@linkplain Builder#layout built from one} uses exactly its three answers. This worker depends only on this interface,
     * never on how the layout was decided.
     */
    public interface GatedLayout {
        /** {@return the admitted groups, each once, ready for a {@link WorkerChecksummer}} */
        List<WorkerGroup> groups();

        /** {@return the groups that cannot be checksummed, with the reason, reported as skipped in every record} */
        Map<Integer, String> skipped();

        /** {@return what to do with cells that are not whole 8-byte pieces} */
        CellPadding padding();
    }

    private final KvChecksum backend;
    private final int tpRank;
    private final int ppStage;
    private final Map<Integer, WorkerGroup> layout;
    private final Map<Integer, String> skipped;
    private final ChecksumMetrics metrics;
    private final ChecksumSpec spec;
    private final Map<Integer, Integer> blockSizes;
    private final boolean stateDigests;
    private final Integer probeGroup;
    private final int probeBytes;

    private WorkerChecksummer(Builder b) {
        this.backend = b.backend;
        if (b.gate != null && (b.groups != null || b.skipped != null)) {
            throw new IllegalArgumentException("a worker takes either a gated layout or explicit groups, not both");
        }
        ChecksumSpec asked = b.spec != null ? b.spec : ChecksumSpec.STANDARD;
        CellPadding padding = b.gate != null ? b.gate.padding() : asked.padding();
        if (b.spec != null && padding != b.spec.padding()) {
            throw new IllegalArgumentException("the gate admitted cells for padding " + padding + ", the worker was asked for "
                    + b.spec.padding());
        }
        this.spec = asked.withPadding(padding);
        if (b.tpRank < 0 || b.ppStage < 0) {
            throw new IllegalArgumentException("TP rank " + b.tpRank + ", PP stage " + b.ppStage);
        }
        this.tpRank = b.tpRank;
        this.ppStage = b.ppStage;
        List<WorkerGroup> groups = b.gate != null ? b.gate.groups() : b.groups != null ? b.groups : List.of();
        Map<Integer, WorkerGroup> byId = new HashMap<>();
        Map<Integer, String> skips = new TreeMap<>(b.gate != null ? b.gate.skipped() : b.skipped != null ? b.skipped : Map.of());
        for (WorkerGroup g : groups) {
            if (byId.put(g.groupId(), g) != null) {
                throw new IllegalArgumentException("group " + g.groupId() + " is described twice");
            }
            String cells = padding == CellPadding.NONE ? unpaddedCells(g) : null;
            String pages = cells == null ? unreadableSegments(g, b.blockSizes.get(g.groupId())) : null;
            if (cells != null || pages != null) {
                byId.remove(g.groupId());
                skips.putIfAbsent(g.groupId(), cells != null ? cells : pages);
            }
        }
        this.layout = Map.copyOf(byId);
        this.skipped = Map.copyOf(skips);
        this.metrics = b.metrics;
        this.blockSizes = Map.copyOf(b.blockSizes);
        this.stateDigests = b.stateDigests;
        this.probeGroup = b.probeGroup;
        this.probeBytes = b.probeBytes;
        if (probeGroup != null) {
            if (probeBytes <= 0 || probeBytes % 8 != 0) {
                throw new IllegalArgumentException("probe bytes must be a positive multiple of 8, got " + probeBytes);
            }
            WorkerGroup g = byId.get(probeGroup);
            if (g != null && g.parts().stream().anyMatch(p -> p.segments() != null)) {
                throw new IllegalArgumentException("group " + probeGroup + " is segmented: the page probe reads one"
                        + " allocation per part (probe another group, or use AuxiliaryChecks per segment engine)");
            }
        }
    }

    /**
     * Why the segmented parts of {@code g} could not be read at some block boundary, as a skip reason, or {@code null}.
     *
     * @throws IllegalArgumentException when {@code g} has segmented parts but no declared block size
     */
    private static String unreadableSegments(WorkerGroup g, Integer blockSize) {
        List<KvSegments> segmented = g.parts().stream().map(ReplicaPart::segments).filter(Objects::nonNull).toList();
        if (segmented.isEmpty()) {
            return null;
        }
        if (blockSize == null) {
            throw new IllegalArgumentException("group " + g.groupId() + " holds segmented KV: declare its block size"
                    + " (Builder.blockSize(" + g.groupId() + ", tokens)) so that its segments' pages are checked against"
                    + " its block boundaries when the worker is built");
        }
        return segmented.stream().map(k -> k.blockBoundaryProblem(blockSize)).filter(Objects::nonNull).findFirst()
                .map(p -> "segmented KV in blocks of " + blockSize + " tokens: " + p).orElse(null);
    }

    /**
     * {@return a builder of a worker computing with {@code backend}: TP rank 0, PP stage 0, no groups, the standard
     * mode, {@link ChecksumMetrics#NONE}}
     *
     * @param backend computes the block checksums, shared by every request; not null
     * @throws NullPointerException when {@code backend} is null
     */
    public static Builder builder(KvChecksum backend) {
        return new Builder(backend);
    }

    /**
     * The worker's configuration, by name. Its layout is either a {@link GatedLayout} ({@link CacheGate}: the groups,
     * the skipped groups and the padding the gate decided at startup) or explicit {@link #groups} and {@link #skipped}
     * groups, which {@link #build} checks the same way (a group of cells that are not whole 8-byte pieces is skipped
     * with the reason unless the spec pads them). Not thread-safe; each {@link #build} makes an independent worker.
     */
    public static final class Builder {
        private final KvChecksum backend;
        private int tpRank;
        private int ppStage;
        private GatedLayout gate;
        private List<WorkerGroup> groups;
        private Map<Integer, String> skipped;
        private ChecksumSpec spec;
        private ChecksumMetrics metrics = ChecksumMetrics.NONE;
        private final Map<Integer, Integer> blockSizes = new HashMap<>();
        private boolean stateDigests;
        private Integer probeGroup;
        private int probeBytes;

        private Builder(KvChecksum backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
        }

        /**
         * {@return this builder, digesting each request's state rows} Default off. The rows are passed per request
         * ({@link WorkerChecksummer#submit(Side, long, List, List, long)}); the record carries one
         * {@link io.kvchecksum.engine.wire.StateDigestsSection.Entry} per row (a producer: copy 0 rows only), and the
         * aggregated payload a {@link io.kvchecksum.engine.wire.StateDigestsSection}. Every worker of a side, and both
         * sides, use the same setting.
         *
         * @param on whether to digest the request's state rows
         */
        public Builder stateDigests(boolean on) {
            this.stateDigests = on;
            return this;
        }

        /**
         * {@return this builder, probing the pages of group {@code groupId}} Default off. The record carries this
         * worker's probe partials by copy ({@link io.kvchecksum.PageProbe}: a producer copy 0 only, a consumer every
         * copy) and the aggregated payload a {@link io.kvchecksum.engine.wire.PageProbeSection}. One group is probed
         * because the probe's pages are one page table's; choose the group whose pages a transfer writes last, the
         * same on both sides.
         *
         * @param groupId the probed group
         * @param probeBytes bytes probed at each end of each cell, a positive multiple of 8 (checked by {@link #build};
         *     {@link io.kvchecksum.PageProbe#DEFAULT_PROBE_BYTES} when the engine does not choose)
         */
        public Builder pageProbe(int groupId, int probeBytes) {
            this.probeGroup = groupId;
            this.probeBytes = probeBytes;
            return this;
        }

        /**
         * {@return this builder, for TP rank {@code rank}} Default 0.
         *
         * @param rank this worker's TP rank, non-negative (checked by {@link #build})
         */
        public Builder tpRank(int rank) {
            this.tpRank = rank;
            return this;
        }

        /**
         * {@return this builder, for PP stage {@code stage}} Default 0.
         *
         * @param stage this worker's PP stage, non-negative (checked by {@link #build})
         */
        public Builder ppStage(int stage) {
            this.ppStage = stage;
            return this;
        }

        /**
         * {@return this builder, with the layout a gate decided at startup: its groups, its skipped groups and its
         * padding} Excludes {@link #groups} and {@link #skipped}.
         *
         * @param layout the gated layout ({@link CacheGate}); not null
         * @throws NullPointerException when {@code layout} is null
         */
        public Builder layout(GatedLayout layout) {
            this.gate = Objects.requireNonNull(layout, "layout");
            return this;
        }

        /**
         * {@return this builder, with an explicit layout} A scheduled group absent here is one this PP stage holds no
         * layer of, reported with fingerprint 0 and no values. Excludes {@link #layout}.
         *
         * @param groups this worker's layers per group, each group once; copied at {@link #build}; not null
         * @throws NullPointerException when {@code groups} is null
         */
        public Builder groups(List<WorkerGroup> groups) {
            this.groups = List.copyOf(groups);
            return this;
        }

        /**
         * {@return this builder, with groups this worker cannot checksum} Reported as skipped in every record, with
         * the reason. Excludes {@link #layout}.
         *
         * @param skipped the groups and their reasons; not null
         * @throws NullPointerException when {@code skipped} is null
         */
        public Builder skipped(Map<Integer, String> skipped) {
            this.skipped = Map.copyOf(skipped);
            return this;
        }

        /**
         * {@return this builder, computing as {@code spec} asks} The engine's configuration, the same on every
         * worker of a side and on both sides: a producer and a consumer in different modes verify as
         * {@link UnverifiedReason#MODE_DIFFERS}; a group padded on one side only ({@link CellPadding#ZEROS}, the
         * opt-in extension of {@code docs/definition.md}) as {@link UnverifiedReason#ONE_SIDE_ONLY}, never a
         * mismatch. With a {@link #layout}, the padding must be the gate's. Default: the standard mode, with the
         * gate's padding or none.
         *
         * @param spec the mode and padding; not null
         * @throws NullPointerException when {@code spec} is null
         */
        public Builder spec(ChecksumSpec spec) {
            this.spec = Objects.requireNonNull(spec, "spec");
            return this;
        }

        /**
         * {@return this builder, declaring group {@code groupId}'s block size} Required for a group holding segmented
         * KV ({@link ReplicaPart#segmented}), whose segments {@link #build} checks against every block boundary
         * ({@link KvSegments#blockBoundaryProblem}): segments a load starting at some block could not read skip the
         * group, with the reason, in every record. A request selecting the group in blocks of another size is then
         * {@link UnverifiedReason#LAYOUT_REFUSED}. Optional for other groups (not used).
         *
         * @param groupId the group
         * @param tokens tokens per block of the group, as its selections give it; positive
         * @throws IllegalArgumentException when {@code tokens} is not positive
         */
        public Builder blockSize(int groupId, int tokens) {
            if (tokens <= 0) {
                throw new IllegalArgumentException("group " + groupId + ": block size must be positive, got " + tokens);
            }
            blockSizes.put(groupId, tokens);
            return this;
        }

        /**
         * {@return this builder, counting checksum time in {@code metrics}} Default {@link ChecksumMetrics#NONE}.
         *
         * @param metrics where checksum time is counted; not null
         * @throws NullPointerException when {@code metrics} is null
         */
        public Builder metrics(ChecksumMetrics metrics) {
            this.metrics = Objects.requireNonNull(metrics, "metrics");
            return this;
        }

        /**
         * {@return the worker} Groups whose cells are not whole 8-byte pieces are skipped with the reason unless the
         * padding pads them, and groups of segmented KV some block boundary of which is not a page boundary are
         * skipped with the reason: decided here, at startup, never an exception mid-request.
         *
         * @throws IllegalArgumentException when a rank or stage is negative, a group is described twice, both a gated
         *     layout and explicit groups or skipped groups were given, the spec's padding is not the gate's, a group
         *     holding segmented KV has no declared {@link #blockSize}, or the page probe's bytes are not a positive
         *     multiple of 8 or its group is segmented
         */
        public WorkerChecksummer build() {
            return new WorkerChecksummer(this);
        }
    }

    /** The first layer of {@code g} whose cells are not whole pieces, as a skip reason, or {@code null}. */
    private static String unpaddedCells(WorkerGroup g) {
        return g.parts().stream().flatMap(p -> p.cache().layers().stream()).map(SlicePlan::unpaddedCellProblem)
                .filter(Objects::nonNull).findFirst().orElse(null);
    }

    /**
     * {@return the groups this worker skips in every record, with the reasons, as decided when it was built (by a gate,
     * by the caller, or by the worker: cells not whole pieces, segments not readable at every block boundary)}
     */
    public Map<Integer, String> skippedGroups() {
        return skipped;
    }

    /** {@return the mode this worker computes in and what it does with cells that are not whole 8-byte pieces} */
    public ChecksumSpec spec() {
        return spec;
    }

    /**
     * Enqueues this worker's checksums of one request on {@code stream} and returns without waiting for them.
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param stream the engine's stream or queue handle ({@link KvChecksum#submit(KvCacheGroup, RequestBlocks, long)})
     * @return the pending record; poll it, take its record, or close it
     * @throws RuntimeException what the backend throws (bad layout, device error); whatever was already enqueued for
     *     this request is released first
     */
    public PendingRecord submit(Side side, long numTokens, List<BlockSelection> scheduled, long stream) {
        return enqueue(side, numTokens, scheduled, List.of(), stream, false);
    }

    /**
     * As {@link #submit(Side, long, List, long)}, with the request's state rows on this worker (digested when the
     * worker was built with {@link Builder#stateDigests}; a producer digests copy 0 rows only).
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param state this worker's state rows of the request, with their shard and copy; not null, may be empty
     * @param stream the engine's stream or queue handle
     * @return the pending record; poll it, take its record, or close it
     * @throws RuntimeException what the backend throws; whatever was already enqueued is released first
     */
    public PendingRecord submit(Side side, long numTokens, List<BlockSelection> scheduled, List<StateShard> state,
            long stream) {
        return enqueue(side, numTokens, scheduled, state, stream, false);
    }

    /**
     * As {@link #submit}, but a backend failure is reported, never thrown: if enqueueing fails, the returned record is
     * already done and {@link WorkerRecord#isFailed failed} ({@link WorkerRecord#refused refused} when the request's
     * layout was refused before anything was read); if polling or reading the results fails,
     * {@link PendingRecord#poll}/{@link PendingRecord#record} return the failed record. What an engine's step calls.
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param stream the engine's stream or queue handle ({@link KvChecksum#submit(KvCacheGroup, RequestBlocks, long)})
     * @return the pending record, possibly already failed; poll it, take its record, or close it
     * @throws IllegalArgumentException only for a selection of another token count than {@code numTokens} (a
     *     scheduler bug, found before anything is enqueued)
     */
    public PendingRecord trySubmit(Side side, long numTokens, List<BlockSelection> scheduled, long stream) {
        return enqueue(side, numTokens, scheduled, List.of(), stream, true);
    }

    /**
     * As {@link #trySubmit(Side, long, List, long)}, with the request's state rows on this worker.
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param state this worker's state rows of the request, with their shard and copy; not null, may be empty
     * @param stream the engine's stream or queue handle
     * @return the pending record, possibly already failed
     * @throws IllegalArgumentException only for a selection of another token count than {@code numTokens}
     */
    public PendingRecord trySubmit(Side side, long numTokens, List<BlockSelection> scheduled, List<StateShard> state,
            long stream) {
        return enqueue(side, numTokens, scheduled, state, stream, true);
    }

    /**
     * The consumer's record computed while its KV is copied into its pages: for every scheduled group with
     * {@code received} KV, this worker moves that KV into its own pages with verifying copies
     * ({@link KvChecksum#submitCopy} on {@code stream}) and takes the copies' values as its columns, instead of
     * checksumming its pages after the engine's copy. The record is exactly the one {@link #submit} would compute
     * after a correct copy into the same pages (the destination's block checksums, weighted by its own table), so
     * verdicts, wire format and aggregation over TP/PP workers are unchanged, and a corrupted received byte, a page
     * copied where another belongs, or a wrong head range is a mismatch at the blocks it touched.
     *
     * <p>What is copied: each part's (layer, head) slices that some received KV of the group holds (a TP re-shard
     * passes one received KV per producer rank: their values add up); a slice no received KV holds is not written
     * and is checksummed from the pages after the copies, as {@link #submit} would, and a slice two received KVs hold
     * is refused. Groups without received KV are checksummed in place, as {@link #submit} does. Received KV of a group
     * this call does not copy (not scheduled, excluded, skipped by this worker, or holding no layer here) is a caller
     * bug, thrown before anything runs: the engine would be left to copy it itself.
     *
     * <p>Not covered: writes to the pages after the copy (the values describe what the copy wrote). When the backend
     * fails, the pages may be partly written: the load is {@link UnverifiedReason#BACKEND_FAILED} and must not be
     * used (recompute, as a fail-closed {@link FailurePolicy} does). The received memory must stay unchanged until the
     * record is done; the received and destination memory must not overlap (refused).
     *
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group (the blocks the load writes); excluded groups are not
     *     computed
     * @param received the KV the load received, any number per group; not null
     * @param state this worker's state rows of the request, with their shard and copy; not null, may be empty
     * @param stream the engine's stream or queue handle ({@link KvChecksum#submitCopy})
     * @return the pending record, possibly already failed ({@link WorkerRecord#refused refused} for a copy the
     *     backend refuses before anything is written, such as unequal cell geometry)
     * @throws IllegalArgumentException for a selection of another token count than {@code numTokens}, or received KV
     *     of a group this call does not copy
     */
    public PendingRecord tryCopyAndSubmit(long numTokens, List<BlockSelection> scheduled, List<ReceivedKv> received,
            List<StateShard> state, long stream) {
        return enqueue(Side.CONSUMER, numTokens, scheduled, state, stream, true, byGroup(received, scheduled));
    }

    /**
     * As {@link #tryCopyAndSubmit}, but what the backend throws propagates (after releasing what was enqueued).
     *
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param received the KV the load received, any number per group; not null
     * @param state this worker's state rows of the request; not null, may be empty
     * @param stream the engine's stream or queue handle
     * @return the pending record
     * @throws IllegalArgumentException as {@link #tryCopyAndSubmit} does
     * @throws RuntimeException what the backend throws (a refused copy, a device error)
     */
    public PendingRecord copyAndSubmit(long numTokens, List<BlockSelection> scheduled, List<ReceivedKv> received,
            List<StateShard> state, long stream) {
        return enqueue(Side.CONSUMER, numTokens, scheduled, state, stream, false, byGroup(received, scheduled));
    }

    /**
     * {@link #tryCopyAndSubmit} with the backend's synchronous copy ({@link KvChecksum#copyAndChecksum}), waited for:
     * for CPU engines (Jlama) whose step copies and verifies synchronously. A backend failure is the worker's
     * {@link WorkerRecord#failed failed record}, never an exception.
     *
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param received the KV the load received, any number per group; not null
     * @return this worker's record of the load, {@link WorkerRecord#isFailed failed} when the backend failed
     * @throws IllegalArgumentException as {@link #tryCopyAndSubmit} does
     */
    public WorkerRecord tryCopyAndCompute(long numTokens, List<BlockSelection> scheduled, List<ReceivedKv> received) {
        return tryCopyAndCompute(numTokens, scheduled, received, List.of());
    }

    /**
     * As {@link #tryCopyAndCompute(long, List, List)}, with the request's state rows on this worker.
     *
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param received the KV the load received, any number per group; not null
     * @param state this worker's state rows of the request; not null, may be empty
     * @return this worker's record of the load, {@link WorkerRecord#isFailed failed} when the backend failed
     * @throws IllegalArgumentException as {@link #tryCopyAndSubmit} does
     */
    public WorkerRecord tryCopyAndCompute(long numTokens, List<BlockSelection> scheduled, List<ReceivedKv> received,
            List<StateShard> state) {
        try (PendingRecord p = enqueue(Side.CONSUMER, numTokens, scheduled, state, null, true, byGroup(received, scheduled))) {
            return p.record();
        }
    }

    /**
     * As {@link #tryCopyAndCompute(long, List, List)}, but what the backend throws propagates: for tools and tests.
     *
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param received the KV the load received, any number per group; not null
     * @return this worker's record of the load
     * @throws IllegalArgumentException as {@link #tryCopyAndSubmit} does
     * @throws RuntimeException what the backend throws, after releasing what was enqueued
     */
    public WorkerRecord copyAndCompute(long numTokens, List<BlockSelection> scheduled, List<ReceivedKv> received) {
        try (PendingRecord p = enqueue(Side.CONSUMER, numTokens, scheduled, List.of(), null, false,
                byGroup(received, scheduled))) {
            return p.record();
        }
    }

    /**
     * {@code received} by group, each group one this worker copies for {@code scheduled}.
     *
     * @throws IllegalArgumentException naming a group it would not copy, and why
     */
    private Map<Integer, List<ReceivedKv>> byGroup(List<ReceivedKv> received, List<BlockSelection> scheduled) {
        Objects.requireNonNull(received, "received");
        Map<Integer, List<ReceivedKv>> out = new LinkedHashMap<>();
        for (ReceivedKv r : received) {
            int g = Objects.requireNonNull(r, "received KV").groupId();
            BlockSelection s = scheduled.stream().filter(x -> x.groupId() == g).findFirst().orElse(null);
            String why = s == null ? "it is not scheduled" : s.isExcluded() ? "it is excluded: " + s.excludedReason()
                    : skipped.containsKey(g) ? "this worker skips it: " + skipped.get(g)
                    : !layout.containsKey(g) ? "this worker holds none of its layers" : null;
            if (why != null) {
                throw new IllegalArgumentException("received KV of group " + g + " would not be copied: " + why
                        + "; copy it without verification, or leave it out");
            }
            out.computeIfAbsent(g, k -> new ArrayList<>()).add(r);
        }
        return out;
    }

    /**
     * {@code stream} null: the backend's own {@link KvChecksum#submit(KvCacheGroup, RequestBlocks)}.
     * {@code reportFailures}: a backend failure becomes a failed record instead of an exception.
     */
    private PendingRecord enqueue(Side side, long numTokens, List<BlockSelection> scheduled, List<StateShard> state,
            Long stream, boolean reportFailures) {
        return enqueue(side, numTokens, scheduled, state, stream, reportFailures, Map.of());
    }

    /** As above; the groups in {@code received} are copied into this worker's pages by verifying copies. */
    private PendingRecord enqueue(Side side, long numTokens, List<BlockSelection> scheduled, List<StateShard> state,
            Long stream, boolean reportFailures, Map<Integer, List<ReceivedKv>> received) {
        Objects.requireNonNull(side, "side");
        Objects.requireNonNull(state, "state");
        long started = System.nanoTime();
        List<BlockSelection> selected = scheduled.stream().filter(s -> !s.isExcluded()).toList();
        BlockSelection.requireTokens(selected, numTokens);
        Map<Integer, String> skippedHere = new LinkedHashMap<>();
        List<Part> parts = new ArrayList<>();
        AuxiliaryParts.Started aux = AuxiliaryParts.NONE;
        try {
            for (BlockSelection s : selected) {
                String reason = skipped.get(s.groupId());
                if (reason != null) {
                    skippedHere.put(s.groupId(), reason);
                    continue;
                }
                WorkerGroup g = layout.get(s.groupId());
                Part part = new Part(s, g == null ? 0 : g.fingerprint(), new LinkedHashMap<>());
                parts.add(part);
                if (g == null) {
                    continue;
                }
                for (ReplicaPart p : g.parts()) {
                    if (side == Side.PRODUCER && p.key().index() != 0) {
                        continue;
                    }
                    List<PendingChecksums> list = part.pending().computeIfAbsent(p.key(), k -> new ArrayList<>());
                    if (p.segments() != null) {
                        int configured = blockSizes.get(s.groupId());
                        if (s.blockSize() != configured) {
                            throw new InvalidLayoutException("group " + s.groupId() + " was selected in blocks of "
                                    + s.blockSize() + " tokens; its segmented KV was checked for blocks of " + configured);
                        }
                    }
                    List<ReceivedKv> copies = received.get(s.groupId());
                    if (copies != null) {
                        CopyParts.submit(backend, spec, s, p, copies, stream, list);
                        continue;
                    }
                    if (p.segments() != null) {
                        KvSegments.Plan plan = p.segments().plan(s.numTokens(), s.firstBlock(), s.blockSize(), spec);
                        list.add(stream == null ? plan.submit(backend) : plan.submit(backend, stream));
                        continue;
                    }
                    RequestBlocks r = s.request(p.cache().pageSize());
                    SlicePlan plan = SlicePlan.of(p.cache(), r, spec);
                    list.add(stream == null ? backend.submit(plan) : backend.submit(plan, stream));
                }
            }
            aux = AuxiliaryParts.submit(backend, spec.mode(), ppStage, stateDigests ? state.stream()
                    .filter(r -> side == Side.CONSUMER || r.copy() == 0).toList() : null,
                    probePlans(side, selected), probeBytes, stream);
        } catch (RuntimeException e) {
            closeAll(parts, e);
            aux.close();
            if (!reportFailures) {
                throw e;
            }
            PendingRecord failed = new PendingRecord(numTokens, List.of(), Map.of(), AuxiliaryParts.NONE, started, true);
            failed.fail(e);
            return failed;
        }
        skipped.forEach(skippedHere::putIfAbsent);
        return new PendingRecord(numTokens, parts, skippedHere, aux, started, reportFailures);
    }

    /**
     * The probed group's plans on this worker, by copy (a producer: copy 0 only); empty when this worker holds none of
     * it or it is skipped or not scheduled; {@code null} when the probe is off.
     */
    private Map<ReplicaKey, List<SlicePlan>> probePlans(Side side, List<BlockSelection> selected) {
        if (probeGroup == null) {
            return null;
        }
        Map<ReplicaKey, List<SlicePlan>> out = new LinkedHashMap<>();
        WorkerGroup g = layout.get(probeGroup);
        BlockSelection s = selected.stream().filter(x -> x.groupId() == probeGroup).findFirst().orElse(null);
        if (g == null || s == null || skipped.containsKey(probeGroup)) {
            return out;
        }
        for (ReplicaPart p : g.parts()) {
            if (side == Side.PRODUCER && p.key().index() != 0) {
                continue;
            }
            out.computeIfAbsent(p.key(), k -> new ArrayList<>())
                    .add(SlicePlan.of(p.cache(), s.request(p.cache().pageSize()), spec));
        }
        return out;
    }

    /**
     * Computes the record with the backend's own {@link KvChecksum#submit(KvCacheGroup, RequestBlocks)}
     * (not ordered after any engine stream) and waits for it: for CPU backends, tools and tests, not an engine's GPU
     * step.
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @return this worker's record of the request
     * @throws IllegalArgumentException for a selection of another token count than {@code numTokens}
     * @throws RuntimeException what the backend throws (bad layout, device error), after releasing what was enqueued
     */
    public WorkerRecord compute(Side side, long numTokens, List<BlockSelection> scheduled) {
        return compute(side, numTokens, scheduled, List.of());
    }

    /**
     * As {@link #compute(Side, long, List)}, with the request's state rows on this worker.
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param state this worker's state rows of the request, with their shard and copy; not null, may be empty
     * @return this worker's record of the request
     * @throws IllegalArgumentException for a selection of another token count than {@code numTokens}
     * @throws RuntimeException what the backend throws, after releasing what was enqueued
     */
    public WorkerRecord compute(Side side, long numTokens, List<BlockSelection> scheduled, List<StateShard> state) {
        try (PendingRecord p = enqueue(side, numTokens, scheduled, state, null, false)) {
            return p.record();
        }
    }

    /**
     * As {@link #compute}, but a backend failure is the worker's {@link WorkerRecord#failed failed record}, never an
     * exception: for CPU engines (Jlama) whose step computes synchronously.
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @return this worker's record of the request, {@link WorkerRecord#isFailed failed} when the backend failed
     * @throws IllegalArgumentException only for a selection of another token count than {@code numTokens}
     */
    public WorkerRecord tryCompute(Side side, long numTokens, List<BlockSelection> scheduled) {
        return tryCompute(side, numTokens, scheduled, List.of());
    }

    /**
     * As {@link #tryCompute(Side, long, List)}, with the request's state rows on this worker.
     *
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param numTokens the request's token count on this side
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param state this worker's state rows of the request, with their shard and copy; not null, may be empty
     * @return this worker's record of the request, {@link WorkerRecord#isFailed failed} when the backend failed
     * @throws IllegalArgumentException only for a selection of another token count than {@code numTokens}
     */
    public WorkerRecord tryCompute(Side side, long numTokens, List<BlockSelection> scheduled, List<StateShard> state) {
        try (PendingRecord p = enqueue(side, numTokens, scheduled, state, null, true)) {
            return p.record();
        }
    }

    /** One scheduled group's pending columns on this worker, by copy. */
    private record Part(BlockSelection selection, long fingerprint, Map<ReplicaKey, List<PendingChecksums>> pending) {
        /** {@return every pending handle of the parts, in order} */
        static Stream<PendingChecksums> handles(List<Part> parts) {
            return parts.stream().flatMap(p -> p.pending.values().stream()).flatMap(List::stream);
        }
    }

    /** Closes every handle, adding what closing throws to {@code failure}. */
    private static void closeAll(List<Part> parts, RuntimeException failure) {
        Part.handles(parts).forEach(pc -> {
            try {
                pc.close();
            } catch (RuntimeException e) {
                failure.addSuppressed(e);
            }
        });
    }

    /**
     * A worker's record of one request while the device computes it. Not thread-safe: the scheduler's thread polls it
     * (or the output's serializer takes its record); close it when it is no longer needed (after {@link #record()}
     * closing is optional), which releases whatever the backend still holds. One made by {@link #trySubmit} reports a
     * backend failure as a failed record from {@link #isDone}/{@link #poll}/{@link #record} instead of throwing it.
     */
    public final class PendingRecord implements AutoCloseable {
        private final long numTokens;
        private final List<Part> parts;
        private final Map<Integer, String> skipped;
        private final AuxiliaryParts.Started aux;
        private final long started;
        private final boolean reportFailures;
        private WorkerRecord record;
        private boolean closed;

        private PendingRecord(long numTokens, List<Part> parts, Map<Integer, String> skipped, AuxiliaryParts.Started aux,
                long started, boolean reportFailures) {
            this.numTokens = numTokens;
            this.parts = parts;
            this.skipped = skipped;
            this.aux = aux;
            this.started = started;
            this.reportFailures = reportFailures;
        }

        /**
         * Ends this record as failed: handles released, the failure its record; a refused layout (nothing read) is a
         * {@link WorkerRecord#refused refused} record, not the backend's failure.
         */
        private WorkerRecord fail(RuntimeException e) {
            close(e);
            record = e instanceof InvalidLayoutException refusal ? WorkerRecord.refused(tpRank, ppStage, numTokens, refusal)
                    : WorkerRecord.failed(tpRank, ppStage, numTokens, e);
            return record;
        }

        /** {@return true when {@link #record()} would not wait on the device} Never waits. */
        public boolean isDone() {
            if (record != null) {
                return true;
            }
            ensureOpen();
            try {
                if (!Part.handles(parts).allMatch(PendingChecksums::isDone) || !aux.isDone()) {
                    return false;
                }
            } catch (RuntimeException e) {
                if (!reportFailures) {
                    throw e;
                }
                fail(e);
            }
            return true;
        }

        /** {@return the record if the device has finished it, else empty; never waits on the device} */
        public Optional<WorkerRecord> poll() {
            return isDone() ? Optional.of(record()) : Optional.empty();
        }

        /**
         * {@return the record, waiting for the device if it has not finished} If reading a result throws, every handle
         * is released before the exception propagates (or, for a {@link #trySubmit} record, becomes the failed record).
         */
        public WorkerRecord record() {
            if (record != null) {
                return record;
            }
            ensureOpen();
            List<PartialGroup> out = new ArrayList<>();
            AuxiliaryParts.Result extra;
            try {
                for (Part p : parts) {
                    Map<ReplicaKey, long[]> columns = new LinkedHashMap<>();
                    for (Map.Entry<ReplicaKey, List<PendingChecksums>> e : p.pending.entrySet()) {
                        long[] sum = new long[(int) p.selection.range().length()];
                        for (PendingChecksums pc : e.getValue()) {
                            Aggregator.add(sum, pc.get());
                        }
                        columns.put(e.getKey(), sum);
                    }
                    out.add(new PartialGroup(p.selection.groupId(), p.fingerprint, p.selection.range(), columns));
                }
                extra = aux.get();
            } catch (RuntimeException e) {
                if (reportFailures) {
                    return fail(e);
                }
                close(e);
                throw e;
            }
            close(null);
            record = new WorkerRecord(tpRank, ppStage, numTokens, out, skipped, null, spec.mode(), extra.stateDigests(),
                    extra.probes());
            metrics.checksumNanos(System.nanoTime() - started);
            return record;
        }

        private void ensureOpen() {
            if (closed) {
                throw new IllegalStateException("the pending record was closed before its record was taken");
            }
        }

        /** Releases what the backend holds for the handles not yet read. Idempotent. */
        @Override
        public void close() {
            if (!closed && record == null) {
                RuntimeException f = new RuntimeException("closing pending checksums");
                close(f);
                if (f.getSuppressed().length > 0) {
                    throw f;
                }
            }
        }

        private void close(RuntimeException failure) {
            if (closed) {
                return;
            }
            closed = true;
            RuntimeException f = failure != null ? failure : new RuntimeException();
            closeAll(parts, f);
            try {
                aux.close();
            } catch (RuntimeException e) {
                f.addSuppressed(e);
            }
        }
    }
}
