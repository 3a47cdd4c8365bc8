package io.kvchecksum.engine.worker;

import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PageProbeSection;
import io.kvchecksum.engine.wire.PayloadSection;
import io.kvchecksum.engine.wire.StateDigestsSection;
import io.kvchecksum.PageProbe;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Sums the workers' records of one request into the side's checksums: the scheduler's step, the only place that
 * sees every worker. Stateless and thread-safe.
 *
 * <p>Parts add up because every (layer, head) slice lies whole on one worker: TP splits heads, PP splits layers. The
 * fingerprint is summed over PP stages, taking one TP rank's value per stage (TP ranks hold the same layers).
 *
 * <p>Never a false match: a request not reported by exactly every worker ({@code tp x pp}) is
 * {@link UnverifiedReason#NOT_EVERY_WORKER_REPORTED}; a worker that reports other blocks, another token count, a group
 * it was not scheduled, no word on a scheduled group, or a fingerprint its TP peers do not share is
 * {@link UnverifiedReason#OTHER_BLOCKS_THAN_SCHEDULED}; a worker whose backend failed ({@link WorkerRecord#failed}) is
 * {@link UnverifiedReason#BACKEND_FAILED}, with the failure in the detail (one that refused the request's layout,
 * {@link WorkerRecord#refused}, is {@link UnverifiedReason#LAYOUT_REFUSED}); workers in different checksum modes are
 * {@link UnverifiedReason#MODE_DIFFERS}. The payload is in the workers' mode. A producer with such a result sends no
 * checksums (the consumer
 * then sees {@link UnverifiedReason#MISSING_PAYLOAD}); a consumer reports the load with that reason.
 *
 * <p>A group any worker skipped is skipped by the whole side and left out of the payload: the other side sees it as
 * checksummed by one side only, or, if it skipped the group too, leaves it out of the verdict.
 *
 * <p><b>Auxiliary parts.</b> The workers' state digests become the side's {@link StateDigestsSection} (the producer's
 * of copy 0 only; an entry reported twice, or a side where some workers digest state and others do not, is
 * {@link UnverifiedReason#OTHER_BLOCKS_THAN_SCHEDULED}). The workers' page-probe partials become its
 * {@link PageProbeSection} the way block checksums are summed: the producer's one probe adds copy 0 of every worker's
 * partials; the consumer's check {@code k} adds copy {@code k % r} of partials replicated {@code r} times. Partials over
 * other pages, or a side where only some workers probe, are {@link UnverifiedReason#OTHER_BLOCKS_THAN_SCHEDULED}.
 */
public final class Aggregator {

    private Aggregator() {
    }

    /** The result: the side's checksums, or why there are none. */
    public sealed interface Result permits Complete, Incomplete {
    }

    /**
     * Every worker reported the scheduled blocks.
     *
     * @param payload the side's checksums (a consumer's lists each group once per replica check)
     * @param skippedGroups groups left out because a worker skipped them, with the first reason given
     */
    public record Complete(ChecksumPayload payload, Map<Integer, String> skippedGroups) implements Result {
        /**
         * Copies {@code skippedGroups}.
         *
         * @throws NullPointerException when {@code skippedGroups} is null or holds a null key or value
         */
        public Complete {
            skippedGroups = Map.copyOf(skippedGroups);
        }
    }

    /**
     * The records cannot be summed into trustworthy checksums.
     *
     * @param reason why the records cannot be summed; not null
     * @param detail the specifics in words (which worker, which group), for logs; may be null
     */
    public record Incomplete(UnverifiedReason reason, String detail) implements Result {
        /**
         * Checks the reason is given.
         *
         * @throws NullPointerException when {@code reason} is null
         */
        public Incomplete {
            Objects.requireNonNull(reason, "reason");
        }

        /** {@return the consumer's verdict for a load whose records are incomplete} */
        public LoadVerdict verdict() {
            return LoadVerdict.unverified(reason, detail);
        }
    }

    /**
     * {@return the producer's payload: copy 0 of every replicated layer, summed over all workers}
     *
     * @param tpSize the tensor-parallel size of the producer, positive
     * @param ppSize the pipeline-parallel size of the producer, positive
     * @param numTokens the request's token count the scheduler built the work for
     * @param scheduled the blocks the scheduler gave the workers, one selection per group
     * @param records every worker's record for the request, in any order
     * @throws IllegalArgumentException when {@code tpSize} or {@code ppSize} is not positive
     */
    public static Result producer(int tpSize, int ppSize, long numTokens, Collection<BlockSelection> scheduled,
            Collection<WorkerRecord> records) {
        return aggregate(Side.PRODUCER, tpSize, ppSize, numTokens, scheduled, records);
    }

    /**
     * {@return the consumer's checks: per group, one entry per replica check} With {@code R} the largest replica count
     * among the group's columns, check {@code k} (for {@code k = 0 .. R-1}) sums copy {@code k % r} of every column
     * replicated {@code r} times, so each check covers every layer once and every copy is in some check.
     *
     * @param tpSize the tensor-parallel size of the consumer, positive
     * @param ppSize the pipeline-parallel size of the consumer, positive
     * @param numTokens the request's token count the scheduler built the work for
     * @param scheduled the blocks the scheduler gave the workers (those the load writes), one selection per group
     * @param records every worker's record for the request, in any order
     * @throws IllegalArgumentException when {@code tpSize} or {@code ppSize} is not positive
     */
    public static Result consumer(int tpSize, int ppSize, long numTokens, Collection<BlockSelection> scheduled,
            Collection<WorkerRecord> records) {
        return aggregate(Side.CONSUMER, tpSize, ppSize, numTokens, scheduled, records);
    }

    private static Result aggregate(Side side, int tpSize, int ppSize, long numTokens, Collection<BlockSelection> scheduled,
            Collection<WorkerRecord> records) {
        if (tpSize <= 0 || ppSize <= 0) {
            throw new IllegalArgumentException("TP " + tpSize + " x PP " + ppSize);
        }
        WorkerRecord[][] grid = new WorkerRecord[ppSize][tpSize];
        for (WorkerRecord r : records) {
            if (r.tpRank() >= tpSize || r.ppStage() >= ppSize) {
                return new Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "a record from TP rank " + r.tpRank()
                        + " PP stage " + r.ppStage() + " outside TP " + tpSize + " x PP " + ppSize);
            }
            if (grid[r.ppStage()][r.tpRank()] != null) {
                return new Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "TP rank " + r.tpRank() + " PP stage "
                        + r.ppStage() + " reported twice");
            }
            grid[r.ppStage()][r.tpRank()] = r;
        }
        // Before the missing-worker check: a worker that reported its backend's failure did report, and why it has
        // no checksums is the more useful account.
        for (WorkerRecord r : records) {
            if (r.isLayoutRefused()) {
                return new Incomplete(UnverifiedReason.LAYOUT_REFUSED, "TP rank " + r.tpRank() + " PP stage " + r.ppStage()
                        + " refused the request's layout: " + r.backendFailure().substring(WorkerRecord.LAYOUT_REFUSED.length()));
            }
            if (r.isFailed()) {
                return new Incomplete(UnverifiedReason.BACKEND_FAILED, "the checksum backend of TP rank " + r.tpRank()
                        + " PP stage " + r.ppStage() + " failed: " + r.backendFailure());
            }
        }
        for (int s = 0; s < ppSize; s++) {
            for (int t = 0; t < tpSize; t++) {
                if (grid[s][t] == null) {
                    return new Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "no record from TP rank " + t
                            + " PP stage " + s + " (" + records.size() + " of " + tpSize * ppSize + " workers reported)");
                }
                if (grid[s][t].numTokens() != numTokens) {
                    return otherBlocks("TP rank " + t + " PP stage " + s + " checksummed " + grid[s][t].numTokens()
                            + " tokens, " + numTokens + " were scheduled");
                }
                if (grid[s][t].mode() != grid[0][0].mode()) {
                    return new Incomplete(UnverifiedReason.MODE_DIFFERS, "TP rank " + t + " PP stage " + s + " checksummed in the "
                            + grid[s][t].mode().wireName() + " mode, TP rank 0 PP stage 0 in the "
                            + grid[0][0].mode().wireName() + " mode");
                }
            }
        }
        io.kvchecksum.ChecksumMode mode = grid[0][0].mode();
        BlockSelection.requireTokens(scheduled, numTokens);
        Map<Integer, BlockRange> ranges = new TreeMap<>();
        scheduled.stream().filter(sel -> !sel.isExcluded()).forEach(sel -> ranges.put(sel.groupId(), sel.range()));
        Map<Integer, String> skipped = new TreeMap<>();
        // Per group, per stage, per rank: the partial group.
        Map<Integer, PartialGroup[][]> parts = new TreeMap<>();
        for (WorkerRecord r : records) {
            String who = "TP rank " + r.tpRank() + " PP stage " + r.ppStage();
            Map<Integer, PartialGroup> mine = new HashMap<>();
            for (PartialGroup g : r.groups()) {
                BlockRange want = ranges.get(g.groupId());
                if (want == null) {
                    return otherBlocks(who + " checksummed group " + g.groupId() + ", which was not scheduled");
                }
                if (mine.put(g.groupId(), g) != null) {
                    return otherBlocks(who + " reported group " + g.groupId() + " twice");
                }
                if (!g.range().equals(want)) {
                    return otherBlocks(who + " checksummed " + g.range() + " of group " + g.groupId() + ", " + want
                            + " were scheduled");
                }
                for (long[] c : g.columns().values()) {
                    if (c.length != want.length()) {
                        return otherBlocks(who + " sent " + c.length + " values for " + want + " of group " + g.groupId());
                    }
                }
                parts.computeIfAbsent(g.groupId(), k -> new PartialGroup[ppSize][tpSize])[r.ppStage()][r.tpRank()] = g;
            }
            for (int id : ranges.keySet()) {
                String reason = r.skippedGroups().get(id);
                if (reason != null) {
                    if (mine.containsKey(id)) {
                        return otherBlocks(who + " both checksummed and skipped group " + id);
                    }
                    skipped.putIfAbsent(id, who + ": " + reason);
                } else if (!mine.containsKey(id)) {
                    return otherBlocks(who + " reported nothing for group " + id + ", which was scheduled");
                }
            }
        }
        List<GroupChecksums> groups = new ArrayList<>();
        for (Map.Entry<Integer, BlockRange> e : ranges.entrySet()) {
            int id = e.getKey();
            if (skipped.containsKey(id)) {
                continue;
            }
            PartialGroup[][] g = parts.get(id);
            long fingerprint = 0;
            for (int s = 0; s < ppSize; s++) {
                for (int t = 1; t < tpSize; t++) {
                    if (g[s][t].fingerprint() != g[s][0].fingerprint()) {
                        return otherBlocks("group " + id + ": TP rank " + t + " of PP stage " + s
                                + " holds other layers than rank 0 (fingerprints differ)");
                    }
                }
                fingerprint += g[s][0].fingerprint();
            }
            BlockRange range = e.getValue();
            List<Map.Entry<ReplicaKey, long[]>> columns = Arrays.stream(g).flatMap(Arrays::stream)
                    .flatMap(p -> p.columns().entrySet().stream()).toList();
            // The producer sends copy 0 only; the consumer one check per copy of the most replicated layers.
            int checks = side == Side.PRODUCER ? 1 : columns.stream().mapToInt(c -> c.getKey().replicas()).max().orElse(1);
            for (int k = 0; k < checks; k++) {
                long[] sum = new long[(int) range.length()];
                for (Map.Entry<ReplicaKey, long[]> c : columns) {
                    if (c.getKey().index() == k % c.getKey().replicas()) {
                        add(sum, c.getValue());
                    }
                }
                groups.add(new GroupChecksums(id, fingerprint, range.blockSize(), range.start(), sum));
            }
        }
        ChecksumPayload payload = ChecksumPayload.of(mode, tpSize, numTokens, groups);
        List<PayloadSection> sections = new ArrayList<>();
        Incomplete bad = auxiliary(side, mode, records, sections);
        if (bad != null) {
            return bad;
        }
        for (PayloadSection s : sections) {
            payload = payload.withSection(s);
        }
        return new Complete(payload, skipped);
    }

    /** Adds the side's auxiliary sections to {@code out}; returns why they cannot be combined, or {@code null}. */
    private static Incomplete auxiliary(Side side, io.kvchecksum.ChecksumMode mode, Collection<WorkerRecord> records,
            List<PayloadSection> out) {
        long digesting = records.stream().filter(r -> r.stateDigests() != null).count();
        if (digesting != 0 && digesting != records.size()) {
            return otherBlocks(digesting + " of " + records.size() + " workers sent state digests");
        }
        if (digesting > 0) {
            List<StateDigestsSection.Entry> entries = new ArrayList<>();
            java.util.Set<List<Object>> seen = new java.util.HashSet<>();
            for (WorkerRecord r : records) {
                for (StateDigestsSection.Entry e : r.stateDigests()) {
                    if (side == Side.PRODUCER && e.copy() != 0) {
                        continue;
                    }
                    if (!seen.add(List.of(e.name(), e.shard(), e.shards(), e.copy()))) {
                        return otherBlocks("TP rank " + r.tpRank() + " PP stage " + r.ppStage() + " sent state buffer "
                                + e.name() + " shard " + e.shard() + "/" + e.shards() + " copy " + e.copy()
                                + ", which another worker sent too");
                    }
                    entries.add(e);
                }
            }
            out.add(new StateDigestsSection(mode.wireName(), entries));
        }
        long probing = records.stream().filter(r -> r.probes() != null).count();
        if (probing != 0 && probing != records.size()) {
            return otherBlocks(probing + " of " + records.size() + " workers sent page probes");
        }
        List<Map.Entry<ReplicaKey, PageProbe.Probes>> partials = records.stream().filter(r -> r.probes() != null)
                .flatMap(r -> r.probes().entrySet().stream()).toList();
        if (partials.isEmpty()) {
            return null;
        }
        int checks = side == Side.PRODUCER ? 1 : partials.stream().mapToInt(p -> p.getKey().replicas()).max().orElse(1);
        List<PageProbe.Probes> sums = new ArrayList<>();
        try {
            for (int k = 0; k < checks; k++) {
                int check = k;
                List<PageProbe.Probes> in = partials.stream()
                        .filter(p -> p.getKey().index() == check % p.getKey().replicas()).map(Map.Entry::getValue).toList();
                // Only copies other than 0 (a producer's stray partials): the pages come from the others.
                sums.add(in.isEmpty() ? zero(partials.get(0).getValue()) : PageProbe.Probes.sum(in));
            }
            out.add(PageProbeSection.ofChecks(sums));
        } catch (IllegalArgumentException e) {
            return otherBlocks("workers probed other pages: " + e.getMessage());
        }
        return null;
    }

    private static PageProbe.Probes zero(PageProbe.Probes like) {
        return new PageProbe.Probes(like.pageSize(), like.probeBytes(), like.firstToken(), like.numTokens(),
                new long[like.head().length], new long[like.tail().length]);
    }

    private static Incomplete otherBlocks(String detail) {
        return new Incomplete(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, detail);
    }

    static void add(long[] sum, long[] col) {
        for (int i = 0; i < sum.length; i++) {
            sum[i] += col[i];
        }
    }
}
