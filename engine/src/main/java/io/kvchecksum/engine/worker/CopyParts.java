package io.kvchecksum.engine.worker;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A consumer part's column computed by verifying copies ({@link KvChecksum#copyAndChecksum}) from the KV it received
 * into its own pages: the one place the worker asks the backend to copy. The values equal the part's block checksums
 * after the copy ({@link CopyPlan}: the destination's block checksums over the copied slices), so the record is the one
 * the worker would have computed by checksumming its pages after the copy, and verdicts, wire format and aggregation
 * are unchanged.
 *
 * <p>A part's (layer, head) slices are covered by the received KV that holds them (a TP re-shard: several producer
 * ranks' head ranges into one consumer's pages; the records of the copies add up as TP workers' do); a slice no received
 * KV holds is checksummed from the part's pages after the copies, as the worker would have, so an incomplete copy is a
 * mismatch and not a silent gap. A slice two received KVs hold is refused: both copies would write it.
 *
 * <p>Segmented KV ({@link KvSegments}, Jlama's pages) is copied by one plan per received KV over all segments
 * ({@link KvChecksum#compileCopy(KvCacheGroup, RequestBlocks, KvSegments, RequestBlocks, ChecksumSpec)}: each
 * segment's share in the blocks {@link KvSegments} uses, a block straddling two segments the sum of its two partial
 * blocks, the received KV's table cut at each share's first position: its page size must divide the distance from the
 * load's first position to every segment start inside the load, else the copy is refused), one backend call.
 */
final class CopyParts {
    private CopyParts() {
    }

    /**
     * Enqueues part {@code p}'s copies of selection {@code s} (and the checksum of what no received KV covers) into
     * {@code into}, each handle's values in the selection's blocks. Handles added before a failure stay in {@code into}
     * for the caller to close.
     *
     * @param stream the engine's stream, or null for the backend's synchronous copy
     * @throws InvalidLayoutException when a slice is received twice, a received KV's table does not fit, or the copy
     *     is refused ({@link KvChecksum#compileCopy})
     */
    static void submit(KvChecksum backend, ChecksumSpec spec, BlockSelection s, WorkerChecksummer.ReplicaPart p,
            List<ReceivedKv> received, Long stream, List<PendingChecksums> into) {
        KvCacheGroup geometry = p.cache();
        List<ReceivedKv> sources = new ArrayList<>();
        Map<Long, Integer> covered = new HashMap<>();
        for (int i = 0; i < received.size(); i++) {
            ReceivedKv r = received.get(i);
            if (claim(covered, r.cache(), geometry, i, s.groupId())) {
                sources.add(r);
            }
        }
        if (p.segments() == null) {
            RequestBlocks dq = s.request(p.cache().pageSize());
            for (ReceivedKv r : sources) {
                RequestBlocks sq = RequestBlocks.of(r.pageTable(), s.numTokens(), s.firstBlock(), s.blockSize());
                into.add(run(backend, backend.compileCopy(r.cache(), sq, p.cache(), dq, spec), stream));
            }
            KvCacheGroup rest = restrict(p.cache(), covered);
            if (rest != null) {
                SlicePlan plan = SlicePlan.of(rest, dq, spec);
                into.add(stream == null ? backend.submit(plan) : backend.submit(plan, stream));
            }
            return;
        }
        RequestBlocks dq = KvSegments.request(s.numTokens(), s.firstBlock(), s.blockSize());
        List<KvCacheGroup> restSegments = new ArrayList<>();
        for (ReceivedKv r : sources) {
            RequestBlocks sq = RequestBlocks.of(r.pageTable(), s.numTokens(), s.firstBlock(), s.blockSize());
            CopyPlan plan;
            try {
                plan = backend.compileCopy(r.cache(), sq, p.segments(), dq, spec);
            } catch (InvalidLayoutException e) {
                throw new InvalidLayoutException("group " + s.groupId() + ": " + e.getMessage());
            }
            into.add(run(backend, plan, stream));
        }
        for (KvSegments.Segment seg : p.segments().segments()) {
            KvCacheGroup rest = restrict(seg.group(), covered);
            if (rest == null) {
                break;
            }
            restSegments.add(rest);
        }
        if (!restSegments.isEmpty()) {
            KvSegments.Plan plan = KvSegments.of(restSegments).plan(s.numTokens(), s.firstBlock(), s.blockSize(), spec);
            into.add(stream == null ? plan.submit(backend) : plan.submit(backend, stream));
        }
    }

    private static PendingChecksums run(KvChecksum backend, CopyPlan plan, Long stream) {
        return stream == null ? PendingChecksums.completed(backend.copyAndChecksum(plan)) : backend.submitCopy(plan, stream);
    }

    /**
     * Records the (layer, head) slices of {@code destination} that {@code source} holds as covered by source
     * {@code index}; {@code false} when it holds none of them.
     *
     * @throws InvalidLayoutException when an earlier source already covers one of them
     */
    private static boolean claim(Map<Long, Integer> covered, KvCacheGroup source, KvCacheGroup destination, int index,
            int groupId) {
        Map<Long, Boolean> held = new HashMap<>();
        for (CacheLayer l : source.layers()) {
            for (int h = 0; h < l.numHeads(); h++) {
                held.put(key(l.layer(), l.firstHead() + h), Boolean.TRUE);
            }
        }
        boolean any = false;
        for (CacheLayer l : destination.layers()) {
            for (int h = 0; h < l.numHeads(); h++) {
                long k = key(l.layer(), l.firstHead() + h);
                if (!held.containsKey(k)) {
                    continue;
                }
                Integer before = covered.putIfAbsent(k, index);
                if (before != null) {
                    throw new InvalidLayoutException("group " + groupId + ": layer " + l.layer() + " head "
                            + (l.firstHead() + h) + " is in received KV " + before + " and " + index
                            + ": both copies would write it; pass each slice once");
                }
                any = true;
            }
        }
        return any;
    }

    /** {@code group} cut to the runs of heads not in {@code covered}, or null when every slice is covered. */
    private static KvCacheGroup restrict(KvCacheGroup group, Map<Long, Integer> covered) {
        List<CacheLayer> layers = new ArrayList<>();
        for (CacheLayer l : group.layers()) {
            int h = 0;
            while (h < l.numHeads()) {
                if (covered.containsKey(key(l.layer(), l.firstHead() + h))) {
                    h++;
                    continue;
                }
                int from = h;
                while (h < l.numHeads() && !covered.containsKey(key(l.layer(), l.firstHead() + h))) {
                    h++;
                }
                layers.add(new CacheLayer(l.layer(), l.firstHead() + from, h - from, shift(l.k(), from),
                        l.v() == null ? null : shift(l.v(), from)));
            }
        }
        return layers.isEmpty() ? null : new KvCacheGroup(layers, group.pageSize(), group.numPages());
    }

    private static KvRegion shift(KvRegion r, int heads) {
        return new KvRegion(r.memory(), r.offset() + heads * r.headStride(), r.pageStride(), r.tokenStride(),
                r.headStride(), r.cellBytes());
    }

    private static long key(int layer, int head) {
        return ((long) layer << 32) | (head & 0xFFFFFFFFL);
    }
}
