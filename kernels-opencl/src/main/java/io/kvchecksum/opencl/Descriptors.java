package io.kvchecksum.opencl;

import io.kvchecksum.KvMemory;
import io.kvchecksum.SlicePlan;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * A {@link SlicePlan} serialized for the OpenCL kernels: which bytes of which host segments to copy, where they land
 * in one packed device buffer, and the descriptor words of every slice ({@code kvchecksum.cl} documents them; the
 * word offsets below must equal its {@code DESC_*} macros, which {@code DescriptorAbiTest} checks on a device).
 * Nothing is validated here: the plan was. Pure Java, so it is tested without a device.
 */
final class Descriptors {
    /** Descriptor words of one slice, and the offset of each field ({@code DESC_*} in {@code kvchecksum.cl}). */
    static final int WORDS = 10;
    static final int FACTOR = 0;
    static final int PIECES = 1;
    static final int K_PIECES = 2;
    static final int K_BASE = 3;
    static final int K_PAGE_STRIDE = 4;
    static final int K_TOKEN_STRIDE = 5;
    static final int V_BASE = 6;
    static final int V_PAGE_STRIDE = 7;
    static final int V_TOKEN_STRIDE = 8;
    static final int FLAGS = 9;
    /** {@link #FLAGS} bits: every K (V) piece address is a multiple of 8. */
    static final long K_ALIGNED = 1;
    static final long V_ALIGNED = 2;
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
    final int numSlices;
    /** Largest pieces-per-cell of any slice: bounds how many work items one slice's block can use. */
    final int maxPieces;
    /**
     * For a window: the absolute host address of the buffer's first byte ({@code kv} of the kernels), a multiple of
     * the window alignment; 0 for a packed copy.
     */
    final long windowStart;

    private Descriptors(List<Span> spans, long packedBytes, long[] desc, int[] table, int numSlices, int maxPieces,
                        long windowStart) {
        this.windowStart = windowStart;
        this.spans = spans;
        this.packedBytes = packedBytes;
        this.desc = desc;
        this.table = table;
        this.numSlices = numSlices;
        this.maxPieces = maxPieces;
    }

    /** The copies and descriptors of a plan over host memory with at least one page in use. */
    static Descriptors of(SlicePlan plan) {
        return of(plan, 0);
    }

    /**
     * Zero copy: the descriptors of a plan whose host segments are all native, addressed relative to one window of the
     * process's address space, from the lowest byte any used page can reach (rounded down to {@code align}, a power
     * of two of at least 64) to the highest. The kernels read only the regions' bytes, never the gaps between
     * segments, so a CPU device can use the window in place ({@code CL_MEM_USE_HOST_PTR}).
     *
     * @return the descriptors, or {@code null} when a segment is on the Java heap (it has no stable address)
     */
    static Descriptors window(SlicePlan plan, long align) {
        for (SlicePlan.Slice s : plan.slices()) {
            if (!segment(s.k()).isNative() || (s.v() != null && !segment(s.v()).isNative())) {
                return null;
            }
        }
        return of(plan, align);
    }

    /**
     * Device-resident KV: every region lies in one {@code cl_mem} of {@code bytes} bytes (the caller checked), whose
     * offsets are the regions' own; OpenCL aligns a buffer's start, so alignment classes are the regions' own.
     */
    static Descriptors device(SlicePlan plan, long bytes) {
        long[] desc = words(plan, SlicePlan.Part::base, p -> p.alignment() >= 8);
        return new Descriptors(List.of(), bytes, desc, plan.pageTable(), plan.numSlices(), maxPieces(plan), 0);
    }

    private static Descriptors of(SlicePlan plan, long windowAlign) {
        int[] table = plan.pageTable();
        long minPage = Long.MAX_VALUE;
        long maxPage = -1;
        for (int page : table) {
            minPage = Math.min(minPage, page);
            maxPage = Math.max(maxPage, page);
        }
        // Every segment's bytes between the lowest and the highest byte any used page can reach; the plan's
        // validation already proved those lie inside the segment.
        Map<MemorySegment, Range> ranges = new LinkedHashMap<>();
        for (SlicePlan.Slice s : plan.slices()) {
            addRange(ranges, s.k(), plan.pageSize(), minPage, maxPage);
            if (s.v() != null) {
                addRange(ranges, s.v(), plan.pageSize(), minPage, maxPage);
            }
        }
        List<Span> spans = new ArrayList<>();
        Map<MemorySegment, Span> bySegment = new LinkedHashMap<>();
        long packed = 0;
        long windowStart = 0;
        if (windowAlign > 0) {
            long lo = Long.MAX_VALUE;
            long hi = 0;
            for (Range r : ranges.values()) {
                lo = Math.min(lo, r.segment.address() + r.lo);
                hi = Math.max(hi, r.segment.address() + r.hi);
            }
            windowStart = lo & -windowAlign;
            for (Map.Entry<MemorySegment, Range> e : ranges.entrySet()) {
                Range r = e.getValue();
                Span s = new Span(r.segment, r.lo, r.hi, r.segment.address() + r.lo - windowStart);
                spans.add(s);
                bySegment.put(e.getKey(), s);
            }
            packed = hi - windowStart;
        } else {
            for (Map.Entry<MemorySegment, Range> e : ranges.entrySet()) {
                Range r = e.getValue();
                Span s = new Span(r.segment, r.lo & ~7L, r.hi, packed);
                spans.add(s);
                bySegment.put(e.getKey(), s);
                packed = Math.addExact(packed, Math.ceilDiv(s.length(), SPAN_ALIGN) * SPAN_ALIGN);
            }
        }
        // The base is the address of page 0 relative to the buffer, which may lie before the copied span: it is stored
        // modulo 2^64 and the kernel's wrapping base + page*pageStride lands inside the span for every page in use.
        // Spans start at a multiple of 8 of their segment and at a multiple of 64 of the buffer, so a part keeps its
        // alignment class; in a window the buffer starts at an aligned host address, so the class is that of the
        // absolute addresses.
        boolean absolute = windowAlign > 0;
        long[] desc = words(plan, p -> {
            Span span = bySegment.get(segment(p));
            return span.packedOffset() - span.from() + p.base();
        }, p -> (absolute ? p.alignmentAt(segment(p).address()) : p.alignment()) >= 8);
        return new Descriptors(List.copyOf(spans), packed, desc, table, plan.numSlices(), maxPieces(plan), windowStart);
    }

    /** The bytes needed from one segment; segments are equal when they start at the same place, whatever their size. */
    private static final class Range {
        MemorySegment segment;
        long lo;
        long hi;
    }

    private static void addRange(Map<MemorySegment, Range> ranges, SlicePlan.Part p, int pageSize, long minPage, long maxPage) {
        MemorySegment seg = segment(p);
        long lo = p.cellOffset(minPage, 0);
        long hi = p.cellOffset(maxPage, pageSize - 1) + p.bytes();
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
     * The descriptor words of every slice, the one place they are written: factor, pieces, K pieces, then per part its
     * base (where {@code base} puts page 0 in the buffer the kernels read), page stride and token stride (three
     * consecutive words, the same for K and V), and the flags saying which parts {@code aligned} finds 8-byte aligned.
     */
    private static long[] words(SlicePlan plan, ToLongFunction<SlicePlan.Part> base, Predicate<SlicePlan.Part> aligned) {
        int ns = plan.numSlices();
        long[] desc = new long[ns * WORDS];
        for (int i = 0; i < ns; i++) {
            SlicePlan.Slice s = plan.slice(i);
            int d = i * WORDS;
            desc[d + FACTOR] = s.factor();
            desc[d + PIECES] = s.pieces();
            desc[d + K_PIECES] = s.k().pieces();
            long flags = part(desc, d + K_BASE, s.k(), base, aligned) ? K_ALIGNED : 0;
            if (s.v() != null) {
                flags |= part(desc, d + V_BASE, s.v(), base, aligned) ? V_ALIGNED : 0;
            }
            desc[d + FLAGS] = flags;
        }
        return desc;
    }

    private static boolean part(long[] desc, int at, SlicePlan.Part p, ToLongFunction<SlicePlan.Part> base,
                                Predicate<SlicePlan.Part> aligned) {
        desc[at] = base.applyAsLong(p);
        desc[at + (K_PAGE_STRIDE - K_BASE)] = p.pageStride();
        desc[at + (K_TOKEN_STRIDE - K_BASE)] = p.tokenStride();
        return aligned.test(p);
    }

    private static int maxPieces(SlicePlan plan) {
        int max = 0;
        for (SlicePlan.Slice s : plan.slices()) {
            max = Math.max(max, s.pieces());
        }
        return max;
    }

    private static MemorySegment segment(SlicePlan.Part p) {
        return ((KvMemory.Host) p.memory()).segment();
    }
}
