package io.kvchecksum.engine;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.PendingChecksums;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A worker's side of a request: checksums the layers it holds over the blocks its scheduler selected and returns
 * its {@link WorkerRecord}.
 *
 * <p>Call it after the KV is final: on a producer after the forward that finishes the prompt has written it, on a
 * consumer when the load has landed and before any later step can write into its blocks. Thread-safe if the
 * backend is (every {@link KvChecksum} is); the caches must not change while it runs.
 */
public final class WorkerChecksums {

    private WorkerChecksums() {
    }

    /**
     * One copy of this worker's layers of a group, in one layout. A worker with layers of several replica counts (an
     * attention cache sharded across TP next to an indexer cache every rank holds) describes each as its own part.
     *
     * @param key the copy these layers are
     * @param cache the layers and where they are
     */
    public record ReplicaPart(ReplicaKey key, KvCacheGroup cache) {
        public ReplicaPart {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(cache, "cache");
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
        public WorkerGroup {
            parts = List.copyOf(parts);
        }
    }

    /**
     * Checksums one request on this worker.
     *
     * @param backend computes the block checksums
     * @param side a producer checksums copy 0 only; a consumer every copy
     * @param scheduled the scheduler's selection per group; excluded groups are not computed
     * @param layout this worker's layers per group; a scheduled group absent here is one this PP stage holds no layer
     *     of, reported with fingerprint 0 and no values
     * @param skipped groups this worker cannot checksum, with the reason; reported as skipped
     */
    public static WorkerRecord compute(KvChecksum backend, Side side, int tpRank, int ppStage, long numTokens,
            List<BlockSelection> scheduled, List<WorkerGroup> layout, Map<Integer, String> skipped) {
        Map<Integer, WorkerGroup> byId = new HashMap<>();
        for (WorkerGroup g : layout) {
            byId.put(g.groupId(), g);
        }
        Map<Integer, String> skippedHere = new LinkedHashMap<>();
        List<PartialGroup> out = new ArrayList<>();
        // Submit every part before waiting for any, so asynchronous backends overlap them.
        List<Runnable> finish = new ArrayList<>();
        for (BlockSelection s : scheduled) {
            if (s.isExcluded()) {
                continue;
            }
            if (s.numTokens() != numTokens) {
                throw new IllegalArgumentException("group " + s.groupId() + " was selected for " + s.numTokens()
                        + " tokens, the request has " + numTokens);
            }
            String reason = skipped.get(s.groupId());
            if (reason != null) {
                skippedHere.put(s.groupId(), reason);
                continue;
            }
            WorkerGroup g = byId.get(s.groupId());
            if (g == null) {
                out.add(new PartialGroup(s.groupId(), 0, s.range(), Map.of()));
                continue;
            }
            Map<ReplicaKey, List<PendingChecksums>> pending = new LinkedHashMap<>();
            for (ReplicaPart p : g.parts()) {
                if (side == Side.PRODUCER && p.key().index() != 0) {
                    continue;
                }
                pending.computeIfAbsent(p.key(), k -> new ArrayList<>())
                        .add(backend.submit(p.cache(), s.request(p.cache().pageSize())));
            }
            int slot = out.size();
            out.add(null);
            finish.add(() -> {
                Map<ReplicaKey, long[]> columns = new LinkedHashMap<>();
                for (Map.Entry<ReplicaKey, List<PendingChecksums>> e : pending.entrySet()) {
                    long[] sum = new long[(int) s.range().length()];
                    for (PendingChecksums pc : e.getValue()) {
                        try (pc) {
                            long[] v = pc.get();
                            for (int i = 0; i < sum.length; i++) {
                                sum[i] += v[i];
                            }
                        }
                    }
                    columns.put(e.getKey(), sum);
                }
                out.set(slot, new PartialGroup(s.groupId(), g.fingerprint(), s.range(), columns));
            });
        }
        finish.forEach(Runnable::run);
        for (Map.Entry<Integer, String> e : skipped.entrySet()) {
            skippedHere.putIfAbsent(e.getKey(), e.getValue());
        }
        return new WorkerRecord(tpRank, ppStage, numTokens, out, skippedHere);
    }
}
