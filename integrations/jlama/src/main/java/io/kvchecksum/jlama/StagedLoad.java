package io.kvchecksum.jlama;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.engine.worker.ReceivedKv;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The consumer's staging buffer for one load, for the verifying copy: the transport ({@link KvTransfer}, with its
 * faults) writes the producer's KV here instead of into the decode session, and the consumer moves it from here into
 * its session's pages with one pass that copies and checksums ({@code SingleWorker.copyAndVerify}), as an engine moves
 * a host staging buffer into its cache.
 *
 * <p>The buffer is one host allocation, token-major, {@code [layer][K, V][position][kvHeads * headDim]}, holding
 * positions {@code 0 .. positions-1} (the local prefix's share is allocated but never written: the transport writes at
 * the request's positions). It is described to the checksum in pages of the decode session's checksum page size,
 * {@code gcd(positionsPerPage, blockSize)}, so that the load's first position and every Jlama page start inside the
 * load is a page boundary of the buffer: the copy goes segment by segment into the session's Jlama pages. To the
 * transport it is a {@link JlamaKv} of one Jlama page, so {@link KvTransfer#move} writes into it unchanged.
 */
public final class StagedLoad {
    private final JlamaKv kv;
    private final KvCacheGroup group;

    private StagedLoad(JlamaKv kv, KvCacheGroup group) {
        this.kv = kv;
        this.group = group;
    }

    /**
     * A zeroed staging buffer for the first {@code numTokens} positions of sessions like {@code session} (the decode
     * session the load is for: same model, same checksum page size), allocated in {@code arena}.
     *
     * @param session the decode session's view; its geometry and checksum page size are the buffer's
     * @param numTokens the request's token count, positive
     * @param arena owns the buffer; it must stay open until the load's late writes, if any, have run
     * @return the staging buffer
     */
    public static StagedLoad allocate(JlamaKv session, long numTokens, Arena arena) {
        KvCacheGroup like = session.segments().geometry();
        int pageSize = like.pageSize();
        int positions = Math.toIntExact(Math.ceilDiv(numTokens, (long) pageSize) * pageSize);
        long rowBytes = session.rowBytes();
        long region = positions * rowBytes;
        int layers = session.numLayers();
        MemorySegment memory = arena.allocate(2L * layers * region, 64);
        MemorySegment[][][] pages = new MemorySegment[layers][1][];
        List<CacheLayer> described = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            MemorySegment k = memory.asSlice(2L * l * region, region);
            MemorySegment v = memory.asSlice((2L * l + 1) * region, region);
            pages[l][0] = new MemorySegment[] {k, v};
            CacheLayer c = like.layers().get(l);
            described.add(CacheLayer.of(c.layer(), c.firstHead(), c.numHeads(), region(k, c.k(), pageSize, rowBytes),
                    region(v, c.v(), pageSize, rowBytes)));
        }
        KvCacheGroup group = KvCacheGroup.of(pageSize, positions / pageSize, described);
        return new StagedLoad(new JlamaKv(KvSegments.of(List.of(group)), pages, positions, positions, rowBytes), group);
    }

    private static KvRegion region(MemorySegment m, KvRegion like, int pageSize, long rowBytes) {
        return new KvRegion(KvMemory.host(m), 0, pageSize * rowBytes, rowBytes, like.headStride(), like.cellBytes());
    }

    /** {@return the buffer as the transport sees it: a session of one Jlama page} */
    public JlamaKv kv() {
        return kv;
    }

    /** {@return the buffer as the checksum sees it: one group over the whole buffer, in pages of the session's size} */
    public KvCacheGroup group() {
        return group;
    }

    /**
     * {@return what the load received: the buffer's pages holding positions {@code [start, numTokens)}, in order}
     *
     * @param groupId the group the KV belongs to
     * @param start the load's first position (the local prefix's length), a multiple of the buffer's page size
     * @param numTokens the request's token count
     */
    public ReceivedKv received(int groupId, long start, long numTokens) {
        int p = group.pageSize();
        if (start % p != 0) {
            throw new IllegalArgumentException("a load from position " + start + " does not start at a page boundary of"
                    + " the staging buffer's pages of " + p);
        }
        int[] table = IntStream.range(Math.toIntExact(start / p), Math.toIntExact(Math.ceilDiv(numTokens, (long) p)))
                .toArray();
        return new ReceivedKv(groupId, group, table);
    }
}
