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

import java.math.BigInteger;
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
 * <p>Segmented KV ({@link KvSegments}, Jlama's pages) is copied segment by segment, each segment's share in the blocks
 * {@link KvSegments} uses (a block straddling two segments is the sum of its two partial blocks), the received KV's
 * table cut at the share's first position: its page size must divide the distance from the load's first position to
 * every segment start inside the load, else the share is refused.
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
        int length = (int) s.range().length();
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
        long start = s.firstBlock() * s.blockSize();
        List<KvCacheGroup> restSegments = new ArrayList<>();
        for (Share share : shares(p.segments(), start, s.numTokens(), s.blockSize())) {
            for (ReceivedKv r : sources) {
                RequestBlocks sq = sourceRequest(r, share, start, s.groupId());
                CopyPlan plan = backend.compileCopy(r.cache(), sq, share.group(), share.request(), spec);
                into.add(new InBlocks(run(backend, plan, stream), share.request(), s, length));
            }
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

    /**
     * Positions {@code [from, to)} of one segment: its group, and the destination request over them in blocks of
     * {@code small} tokens ({@code small} divides {@code from} and the block size, so each small block lies in one
     * request block).
     */
    private record Share(KvCacheGroup group, RequestBlocks request, long from, long to, int small) {
    }

    /** The segments' shares of positions {@code [start, numTokens)}: the split {@link KvSegments} computes with. */
    private static List<Share> shares(KvSegments segments, long start, long numTokens, int blockSize) {
        if (numTokens > segments.endToken()) {
            throw new InvalidLayoutException("tokens " + start + ".." + (numTokens - 1) + " requested but the segments hold"
                    + " positions 0.." + (segments.endToken() - 1));
        }
        List<Share> out = new ArrayList<>();
        List<KvSegments.Segment> list = segments.segments();
        for (int i = 0; i < list.size(); i++) {
            KvSegments.Segment seg = list.get(i);
            long a = Math.max(seg.startToken(), start);
            long e = Math.min(seg.endToken(), numTokens);
            if (a >= e) {
                continue;
            }
            int pd = seg.group().pageSize();
            if ((a - seg.startToken()) % pd != 0) {
                throw new InvalidLayoutException("segment " + i + " (positions " + seg.startToken() + ".."
                        + (seg.endToken() - 1) + ", pages of " + pd + ") would be written from position " + a
                        + ", which is not a page boundary");
            }
            long body = Math.ceilDiv(a, (long) blockSize) * blockSize;
            if (body >= e || (body - seg.startToken()) % pd != 0) {
                out.add(share(seg, a, e, (int) gcd(a, blockSize)));
            } else {
                if (body > a) {
                    out.add(share(seg, a, body, (int) gcd(a, blockSize)));
                }
                out.add(share(seg, body, e, blockSize));
            }
        }
        return out;
    }

    private static Share share(KvSegments.Segment seg, long from, long to, int small) {
        int pd = seg.group().pageSize();
        long firstPage = (from - seg.startToken()) / pd;
        int[] table = new int[Math.toIntExact(Math.ceilDiv(to - from, (long) pd))];
        for (int i = 0; i < table.length; i++) {
            table[i] = Math.toIntExact(firstPage + i);
        }
        return new Share(seg.group(), RequestBlocks.of(table, to, from / small, small), from, to, small);
    }

    /** The received KV's request for one share: its table cut at the share's first position. */
    private static RequestBlocks sourceRequest(ReceivedKv r, Share share, long start, int groupId) {
        int ps = r.cache().pageSize();
        if ((share.from() - start) % ps != 0) {
            throw new InvalidLayoutException("group " + groupId + ": received KV in pages of " + ps + " tokens cannot be"
                    + " copied into the segment starting at position " + share.from() + ", " + (share.from() - start)
                    + " tokens after the load's first position " + start + ": give the received KV a page size that"
                    + " divides the distance from the load's first position to every segment start");
        }
        int from = Math.toIntExact((share.from() - start) / ps);
        int count = Math.toIntExact(Math.ceilDiv(share.to() - share.from(), (long) ps));
        if (from + count > r.tableLength()) {
            throw new InvalidLayoutException("group " + groupId + ": the received KV's table has " + r.tableLength()
                    + " entries; positions " + start + ".." + (share.to() - 1) + " need " + (from + count));
        }
        return RequestBlocks.of(r.tableRange(from, count), share.to(), share.request().firstBlock(), share.small());
    }

    private static long gcd(long a, long b) {
        return BigInteger.valueOf(a).gcd(BigInteger.valueOf(b)).longValue();
    }

    /** A share's values (blocks of {@code small} tokens) added into the selection's blocks. */
    private static final class InBlocks implements PendingChecksums {
        private final PendingChecksums inner;
        private final long firstSmall;
        private final int small;
        private final BlockSelection selection;
        private final int length;

        InBlocks(PendingChecksums inner, RequestBlocks shareRequest, BlockSelection selection, int length) {
            this.inner = inner;
            this.firstSmall = shareRequest.firstBlock();
            this.small = shareRequest.blockSize();
            this.selection = selection;
            this.length = length;
        }

        @Override
        public long[] get() {
            long[] values = inner.get();
            long[] out = new long[length];
            for (int k = 0; k < values.length; k++) {
                int b = (int) ((firstSmall + k) * small / selection.blockSize() - selection.firstBlock());
                out[b] += values[k];
            }
            return out;
        }

        @Override
        public boolean isDone() {
            return inner.isDone();
        }

        @Override
        public void close() {
            inner.close();
        }
    }
}
