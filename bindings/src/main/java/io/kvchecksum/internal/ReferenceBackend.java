package io.kvchecksum.internal;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.Definition;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.KvSource;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import java.util.OptionalLong;

/**
 * The definition, read literally: for every request, block, (layer, head), token and piece, {@code x * (2j+1)},
 * each byte found from the source's regions and the request's page table (or, for a segmented cache, the segment
 * holding the position). It does not use the compiled plan's launches, slices or tables: the compiler cannot make
 * every backend agree by a mistake of its own. Single-threaded and slow on purpose; every other backend is tested
 * against it.
 */
public final class ReferenceBackend implements Backend {

    @Override
    public String name() {
        return "reference";
    }

    @Override
    public String description() {
        return "reference (pure Java, single-threaded, literal definition)";
    }

    @Override
    public BackendLimits limits() {
        return BackendLimits.CPU;
    }

    @Override
    public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
        ChecksumMode mode = plan.spec().mode();
        long[] out = new long[plan.offset(output, plan.requests().size())];
        KvCacheGroup geometry = plan.source().geometry();
        for (int r = 0; r < plan.requests().size(); r++) {
            RequestBlocks request = plan.requests().get(r);
            int nb = request.numBlocks();
            int base = plan.offset(output, r);
            int row = 0;
            for (int li = 0; li < geometry.layers().size(); li++) {
                CacheLayer l = geometry.layers().get(li);
                int pieces = (int) Math.ceilDiv((long) l.cellBytes(), 8);
                for (int h = 0; h < l.numHeads(); h++, row++) {
                    long factor = Definition.factor(l.layer(), l.firstHead() + h);
                    for (int b = 0; b < nb; b++) {
                        long block = request.firstBlock() + b;
                        long s = 0;
                        for (long t = request.blockStart(block); t < request.blockEnd(block); t++) {
                            Cell cell = Cell.of(plan.source(r), request, li, h, t);
                            for (int p = 0; p < pieces; p++) {
                                long x = Definition.pieceValue(cell.piece(p), mode);
                                s += x * Definition.weight(t * pieces + p);
                            }
                        }
                        if (output == CompiledPlan.Output.BLOCK_CHECKSUMS) {
                            out[base + b] += factor * s;
                        } else {
                            out[base + row * nb + b] = s;
                        }
                    }
                }
            }
        }
        return PendingChecksums.completed(out);
    }

    /**
     * The copy read literally, in two steps: every cell of every destination (layer, head) that the source also holds
     * is copied byte for byte, position by position, each position's source and destination cells found from the two
     * requests' tables and the groups' regions (not from the plan's pairs or launches); then the destination is
     * checksummed by this backend's own reading of the definition ({@link #run}) over the copied slices. A backend
     * that computes the values while copying must agree with the checksum of what it wrote. A segmented plan is run
     * segment plan by segment plan. Where source and destination memory overlap ({@link CopyPlan#staged()}), every
     * source cell is read before any destination cell is written: the copy's meaning, not the staging units' order
     * (so the units' classification is checked by this backend too, not assumed).
     */
    @Override
    public PendingChecksums runCopy(CopyPlan plan, OptionalLong stream) {
        if (plan.isSegmented()) {   // literally too: each segment plan as below, its values added into their blocks
            long[] out = new long[plan.numBlocks()];
            for (int i = 0; i < plan.segments().size(); i++) {
                plan.addSegment(i, runCopy(plan.segments().get(i), stream).get(), out);
            }
            return PendingChecksums.completed(out);
        }
        KvCacheGroup src = plan.source();
        KvCacheGroup dst = plan.destination();
        RequestBlocks sq = plan.sourceRequest();
        RequestBlocks dq = plan.destinationRequest();
        List<Runnable> writes = plan.overlaps() ? new java.util.ArrayList<>() : null;
        for (CacheLayer d : dst.layers()) {
            for (int h = 0; h < d.numHeads(); h++) {
                int head = d.firstHead() + h;
                for (CacheLayer s : src.layers()) {
                    if (s.layer() != d.layer() || head < s.firstHead() || head >= s.firstHead() + s.numHeads()) {
                        continue;
                    }
                    int sh = head - s.firstHead();
                    for (long t = dq.startToken(); t < dq.numTokens(); t++) {
                        long si = t - sq.startToken();
                        long di = t - dq.startToken();
                        long sp = sq.page((int) (si / src.pageSize()));
                        long ss = si % src.pageSize();
                        long dp = dq.page((int) (di / dst.pageSize()));
                        long ds = di % dst.pageSize();
                        copyCell(s.k(), sp, ss, sh, d.k(), dp, ds, h, writes);
                        if (d.v() != null) {
                            copyCell(s.v(), sp, ss, sh, d.v(), dp, ds, h, writes);
                        }
                    }
                }
            }
        }
        if (writes != null) {
            writes.forEach(Runnable::run);
        }
        CompiledPlan check = CompiledPlan.compile(plan.copiedDestination(), List.of(dq), plan.spec());
        return run(check, CompiledPlan.Output.BLOCK_CHECKSUMS, OptionalLong.empty());
    }

    /** Copies one cell, or (with {@code writes}) reads it now and adds its write to {@code writes}. */
    private static void copyCell(KvRegion from, long fromPage, long fromSlot, int fromHead, KvRegion to, long toPage,
            long toSlot, int toHead, List<Runnable> writes) {
        MemorySegment a = ((KvMemory.Host) from.memory()).segment();
        MemorySegment b = ((KvMemory.Host) to.memory()).segment();
        long x = from.cellOffset(fromPage, fromSlot, fromHead);
        long y = to.cellOffset(toPage, toSlot, toHead);
        if (writes != null) {
            byte[] cell = new byte[from.cellBytes()];
            MemorySegment.copy(a, ValueLayout.JAVA_BYTE, x, cell, 0, cell.length);
            writes.add(() -> MemorySegment.copy(cell, 0, b, ValueLayout.JAVA_BYTE, y, cell.length));
            return;
        }
        for (int i = 0; i < from.cellBytes(); i++) {
            b.set(ValueLayout.JAVA_BYTE, y + i, a.get(ValueLayout.JAVA_BYTE, x + i));
        }
    }

    /**
     * Where one token's cell of one head lies: its K bytes and V bytes, found from the request's source's regions and
     * its page table (a segmented cache: the segment holding the position, its pages in order).
     */
    private record Cell(MemorySegment k, long kAt, int kBytes, MemorySegment v, long vAt, int vBytes) {
        private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

        static Cell of(KvSource source, RequestBlocks request, int layerIndex, int head, long t) {
            KvCacheGroup group;
            long index;
            switch (source) {
                case KvCacheGroup g -> {
                    group = g;
                    long i = t - request.startToken();
                    index = (long) request.page((int) (i / g.pageSize())) * g.pageSize() + i % g.pageSize();
                }
                case KvSegments s -> {
                    KvSegments.Segment seg = null;
                    for (KvSegments.Segment x : s.segments()) {
                        if (x.startToken() <= t && t < x.endToken()) {
                            seg = x;
                            break;
                        }
                    }
                    group = seg.group();
                    index = t - seg.startToken();
                }
            }
            CacheLayer l = group.layers().get(layerIndex);
            long page = index / group.pageSize();
            long slot = index % group.pageSize();
            KvRegion k = l.k();
            KvRegion v = l.v();
            return new Cell(host(k), at(k, page, slot, head), k.cellBytes(), v == null ? null : host(v),
                    v == null ? 0 : at(v, page, slot, head), v == null ? 0 : v.cellBytes());
        }

        private static MemorySegment host(KvRegion r) {
            return ((KvMemory.Host) r.memory()).segment();
        }

        private static long at(KvRegion r, long page, long slot, int head) {
            return r.offset() + page * r.pageStride() + slot * r.tokenStride() + head * r.headStride();
        }

        /** Piece {@code p}: bytes {@code 8p .. 8p+7} of K's bytes, then V's, then zeros, little-endian. */
        long piece(int p) {
            int q = 8 * p;
            if (q + 8 <= kBytes) {
                return k.get(PIECE, kAt + q);
            }
            if (q >= kBytes && q + 8 - kBytes <= vBytes) {
                return v.get(PIECE, vAt + q - kBytes);
            }
            long x = 0;
            for (int b = 7; b >= 0; b--) {
                x = (x << 8) | (cellByte(q + b) & 0xFF);
            }
            return x;
        }

        private byte cellByte(int q) {
            if (q < kBytes) {
                return k.get(ValueLayout.JAVA_BYTE, kAt + q);
            }
            return q - kBytes < vBytes ? v.get(ValueLayout.JAVA_BYTE, vAt + q - kBytes) : 0;
        }
    }

    /** zlib's Adler-32 of the stream, on the calling thread. */
    @Override
    public long pageDigest(PageDigestPlan plan) {
        return PageDigestReference.digest(plan, name());
    }

    @Override
    public void close() {
    }

    @Override
    public String toString() {
        return description();
    }
}
