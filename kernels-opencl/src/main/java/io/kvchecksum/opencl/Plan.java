package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.Definition;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a request needs on the device, worked out on the host from a validated group and request: which bytes of
 * which host segments to copy, where they land in one packed device buffer, and the per-slice descriptors the kernels
 * read (layout documented in {@code kvchecksum.cl}). Pure Java, so it is tested without a device.
 */
final class Plan {
    static final int DESC_WORDS = 10;
    /** Where each copied span starts in the packed buffer: a multiple of 64, so offsets keep their value mod 8. */
    private static final long SPAN_ALIGN = 64;

    /** A range {@code [from, to)} of one host segment, copied to {@code packedOffset} of the device buffer. */
    record Span(MemorySegment segment, long from, long to, long packedOffset) {
        long length() {
            return to - from;
        }
    }

    final List<Span> spans;
    final long packedBytes;
    final long[] desc;
    final int[] table;
    final int[] layers;
    final int[] heads;
    final int numSlices;
    final int numBlocks;
    /** Largest pieces-per-cell of any slice: bounds how many work items one slice's block can use. */
    final int maxPieces;
    final int pageSize;

    private Plan(List<Span> spans, long packedBytes, long[] desc, int[] table, int[] layers, int[] heads, int numBlocks,
                 int maxPieces, int pageSize) {
        this.pageSize = pageSize;
        this.spans = spans;
        this.packedBytes = packedBytes;
        this.desc = desc;
        this.table = table;
        this.layers = layers;
        this.heads = heads;
        this.numSlices = layers.length;
        this.numBlocks = numBlocks;
        this.maxPieces = maxPieces;
    }

    /**
     * The plan for a group and request that {@link io.kvchecksum.internal.Checks#validate} accepted with host memory
     * only, and with at least one block.
     */
    static Plan of(KvCacheGroup group, RequestBlocks request) {
        int numBlocks = request.numBlocks();
        int needed = Math.toIntExact(request.pagesNeeded(group.pageSize()));
        int[] table = new int[needed];
        long minPage = Long.MAX_VALUE;
        long maxPage = -1;
        for (int i = 0; i < needed; i++) {
            table[i] = request.page(i);
            minPage = Math.min(minPage, table[i]);
            maxPage = Math.max(maxPage, table[i]);
        }
        // Every segment's bytes between the lowest and the highest byte any used page can reach; the group's
        // validation already proved those lie inside the segment.
        Map<MemorySegment, Range> ranges = new LinkedHashMap<>();
        for (CacheLayer l : group.layers()) {
            addRange(ranges, l.k(), l.numHeads(), group.pageSize(), minPage, maxPage);
            if (l.v() != null) {
                addRange(ranges, l.v(), l.numHeads(), group.pageSize(), minPage, maxPage);
            }
        }
        List<Span> spans = new ArrayList<>();
        Map<MemorySegment, Span> bySegment = new LinkedHashMap<>();
        long packed = 0;
        for (Map.Entry<MemorySegment, Range> e : ranges.entrySet()) {
            Range r = e.getValue();
            Span s = new Span(r.segment, r.lo & ~7L, r.hi, packed);
            spans.add(s);
            bySegment.put(e.getKey(), s);
            packed = Math.addExact(packed, Math.ceilDiv(s.length(), SPAN_ALIGN) * SPAN_ALIGN);
        }
        int ns = group.numSlices();
        long[] desc = new long[ns * DESC_WORDS];
        int[] layers = new int[ns];
        int[] heads = new int[ns];
        int maxPieces = 0;
        int i = 0;
        for (CacheLayer l : group.layers()) {
            maxPieces = Math.max(maxPieces, l.pieces());
            for (int h = 0; h < l.numHeads(); h++) {
                layers[i] = l.layer();
                heads[i] = l.firstHead() + h;
                int d = i * DESC_WORDS;
                desc[d] = Definition.factor(layers[i], heads[i]);
                desc[d + 1] = l.pieces();
                desc[d + 2] = l.k().pieces();
                long flags = region(desc, d + 3, l.k(), h, bySegment) ? 1 : 0;
                if (l.v() != null) {
                    flags |= region(desc, d + 6, l.v(), h, bySegment) ? 2 : 0;
                }
                desc[d + 9] = flags;
                i++;
            }
        }
        return new Plan(List.copyOf(spans), packed, desc, table, layers, heads, numBlocks, maxPieces, group.pageSize());
    }

    /** The bytes needed from one segment; segments are equal when they start at the same place, whatever their size. */
    private static final class Range {
        MemorySegment segment;
        long lo;
        long hi;
    }

    private static void addRange(Map<MemorySegment, Range> ranges, KvRegion r, int numHeads, int pageSize, long minPage,
                                 long maxPage) {
        MemorySegment seg = segment(r);
        long lo = r.offset() + minPage * r.pageStride();
        long hi = r.cellOffset(maxPage, pageSize - 1, numHeads - 1) + r.cellBytes();
        Range range = ranges.get(seg);
        if (range == null) {
            range = new Range();
            range.segment = seg;
            range.lo = lo;
            range.hi = hi;
            ranges.put(seg, range);
        } else {
            range.lo = Math.min(range.lo, lo);
            range.hi = Math.max(range.hi, hi);
            // Copy from the longest view of that memory: every region's bytes lie within its own segment's size.
            if (seg.byteSize() > range.segment.byteSize()) {
                range.segment = seg;
            }
        }
    }

    /**
     * Writes a region's base address and strides for local head {@code h}; true when every piece address is a
     * multiple of 8. The base is the address of page 0, which may lie before the copied span: it is stored modulo
     * 2^64 and the kernel's wrapping {@code base + page*pageStride} lands inside the span for every page in use.
     */
    private static boolean region(long[] desc, int at, KvRegion r, int h, Map<MemorySegment, Span> bySegment) {
        Span s = bySegment.get(segment(r));
        long base = s.packedOffset() - s.from() + r.offset() + h * r.headStride();
        desc[at] = base;
        desc[at + 1] = r.pageStride();
        desc[at + 2] = r.tokenStride();
        return base % 8 == 0 && r.pageStride() % 8 == 0 && r.tokenStride() % 8 == 0;
    }

    private static MemorySegment segment(KvRegion r) {
        if (!(r.memory() instanceof KvMemory.Host host)) {
            throw new InvalidLayoutException("not host memory: " + r.memory());
        }
        return host.segment();
    }
}
