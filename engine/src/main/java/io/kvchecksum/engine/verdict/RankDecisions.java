package io.kvchecksum.engine.verdict;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Makes the decision about a batch's loads identical on every TP rank.
 *
 * <p>Corruption is per rank: each rank compares the KV it loaded, so ranks reach different verdicts for the same
 * request. If each rank dropped its own failures, the ranks would build different batches and hang on the next
 * collective. <b>The contract: every rank calls {@link #localVector} with the same batch in the same order, all-reduces
 * the vector with MAX over the TP group (e.g. {@code torch.distributed.all_reduce(op=MAX)} on the CPU group), and acts
 * only on {@link #actions} of the reduced vector.</b> The reduction is a MAX over {@link Action#ordinal()}, so the most
 * severe action any rank chose wins (a drop on any rank drops the request on all), and the result does not depend on
 * the order of ranks. {@link #maxReduce} computes the same reduction in-process, for engines that gather instead or
 * for tests.
 *
 * <p>To avoid a collective per step, gate the call on a rank-invariant condition (some request in the batch awaited
 * verification on every rank), never on the local verdict. Stateless and thread-safe.
 */
public final class RankDecisions {

    private RankDecisions() {
    }

    /**
     * {@return this rank's vector to all-reduce: {@code v[i]} is the ordinal of the action for {@code batch.get(i)}; a
     * request this rank made no decision for is {@link Action#USE_LOAD}}
     *
     * @param batch the batch's request ids, the same list in the same order on every rank, each id once
     * @param local this rank's decisions by request id; requests without one count as {@link Action#USE_LOAD}
     * @throws IllegalArgumentException when the batch lists a request twice
     */
    public static int[] localVector(List<String> batch, Map<String, Decision> local) {
        if (new HashSet<>(batch).size() != batch.size()) {
            throw new IllegalArgumentException("the batch lists a request twice");
        }
        return batch.stream().map(local::get).mapToInt(d -> d == null ? Action.USE_LOAD.ordinal() : d.action().ordinal())
                .toArray();
    }

    /**
     * {@return the element-wise MAX of every rank's vector: what the all-reduce computes}
     *
     * @param perRank every rank's {@link #localVector}, all of one length; at least one
     * @throws IllegalArgumentException when there is no vector or the vectors differ in length
     */
    public static int[] maxReduce(List<int[]> perRank) {
        if (perRank.isEmpty()) {
            throw new IllegalArgumentException("no ranks");
        }
        int[] out = perRank.get(0).clone();
        for (int[] v : perRank) {
            if (v.length != out.length) {
                throw new IllegalArgumentException("ranks passed batches of different sizes: " + v.length + " and " + out.length);
            }
            for (int i = 0; i < out.length; i++) {
                out[i] = Math.max(out[i], v[i]);
            }
        }
        return out;
    }

    /**
     * {@return the action per request of the batch, from the reduced vector, in batch order}
     *
     * @param batch the batch the vectors were built for, in the same order
     * @param reduced the all-reduced vector, one entry per request of {@code batch}
     * @throws IllegalArgumentException when the lengths differ or an entry is not an {@link Action} ordinal
     */
    public static Map<String, Action> actions(List<String> batch, int[] reduced) {
        if (reduced.length != batch.size()) {
            throw new IllegalArgumentException(reduced.length + " reduced entries for a batch of " + batch.size());
        }
        Action[] all = Action.values();
        Map<String, Action> out = new LinkedHashMap<>();
        for (int i = 0; i < reduced.length; i++) {
            if (reduced[i] < 0 || reduced[i] >= all.length) {
                throw new IllegalArgumentException("reduced entry " + i + " is " + reduced[i] + ", not an action");
            }
            out.put(batch.get(i), all[reduced[i]]);
        }
        return out;
    }

    /**
     * {@return the requests to drop from the batch (any action but {@link Action#USE_LOAD}), in batch order}
     *
     * @param actions the {@link #actions} of the reduced vector
     */
    public static List<String> dropped(Map<String, Action> actions) {
        return actions.entrySet().stream().filter(e -> e.getValue() != Action.USE_LOAD).map(Map.Entry::getKey).toList();
    }
}
