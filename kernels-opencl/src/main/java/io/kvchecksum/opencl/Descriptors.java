package io.kvchecksum.opencl;

import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;
import java.util.stream.IntStream;

/**
 * The {@link SlicePlan}s of one kernel launch serialized for the OpenCL kernels: one plan, or a batch of plans over the
 * same slices that differ only in their request ({@link io.kvchecksum.CompiledPlan.Batch}). Which bytes of which host
 * segments to copy (those any plan's pages can reach), where they land in one packed device buffer, the descriptor
 * words of every slice, the plans' page tables one after the other and, for a batch, the request words of each plan
 * ({@code kvchecksum.cl} documents them; the word offsets below must equal its {@code DESC_*} and {@code REQ_*}
 * macros, which {@code DescriptorAbiTest} checks on a device). Nothing is validated here: the plans were. Pure Java,
 * so it is tested without a device.
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
    /** Words of one request of a batch, and the offset of each field ({@code REQ_*} in {@code kvchecksum.cl}). */
    static final int REQ_WORDS = 5;
    static final int REQ_START_TOKEN = 0;
    static final int REQ_FIRST_BLOCK = 1;
    static final int REQ_NUM_TOKENS = 2;
    static final int REQ_BLOCK_BEGIN = 3;
    static final int REQ_TABLE_OFFSET = 4;
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
    /** The plans' page tables (their pages in use) one after the other. */
    final int[] table;
    /**
     * A batch's request words ({@link #REQ_WORDS} per plan, then the end entry: the batch's blocks and table entries),
     * or {@code null} for one plan.
     */
    final long[] requests;
    final int numSlices;
    /** Largest pieces-per-cell of any slice: bounds how many work items one slice's block can use. */
    final int maxPieces;
    /**
     * For a window: the absolute host address of the buffer's first byte ({@code kv} of the kernels), a multiple of
     * the window alignment; 0 for a packed copy.
     */
    final long windowStart;

    private Descriptors(List<SlicePlan> plans, int[] table, List<Span> spans, long packedBytes, long[] desc,
                        long windowStart) {
        SlicePlan plan = plans.getFirst();
        this.windowStart = windowStart;
        this.spans = spans;
        this.packedBytes = packedBytes;
        this.desc = desc;
        this.table = table;
        this.requests = plans.size() == 1 ? null : requests(plans);
        this.numSlices = plan.numSlices();
        this.maxPieces = maxPieces(plan);
    }

    /** The copies and descriptors of plans over host memory (the same slices), each with at least one page in use. */
    static Descriptors of(List<SlicePlan> plans) {
        return of(plans, 0);
    }

    /**
     * Zero copy: the descriptors of a plan whose host segments are all native, addressed relative to one window of the
     * process's address space, from the lowest byte any used page can reach (rounded down to {@code align}, a power
     * of two of at least 64) to the highest. The kernels read only the regions' bytes, never the gaps between
     * segments, so a CPU device can use the window in place ({@code CL_MEM_USE_HOST_PTR}).
     *
     * @return the descriptors, or {@code null} when a segment is on the Java heap (it has no stable address)
     */
    static Descriptors window(List<SlicePlan> plans, long align) {
        for (SlicePlan.Slice s : plans.getFirst().slices()) {
            if (!segment(s.k()).isNative() || (s.v() != null && !segment(s.v()).isNative())) {
                return null;
            }
        }
        return of(plans, align);
    }

    /**
     * Device-resident KV: every region lies in one {@code cl_mem} of {@code bytes} bytes (the caller checked), whose
     * offsets are the regions' own; OpenCL aligns a buffer's start, so alignment classes are the regions' own.
     */
    static Descriptors device(List<SlicePlan> plans, long bytes) {
        long[] desc = words(plans.getFirst().slices(), SlicePlan.Part::base, p -> p.alignment() >= 8);
        return new Descriptors(plans, table(plans), List.of(), bytes, desc, 0);
    }

    private static Descriptors of(List<SlicePlan> plans, long windowAlign) {
        SlicePlan plan = plans.getFirst();
        int[] table = table(plans);
        long minPage = Long.MAX_VALUE;
        long maxPage = -1;
        for (int page : table) {
            minPage = Math.min(minPage, page);
            maxPage = Math.max(maxPage, page);
        }
        // Every segment's bytes between the lowest and the highest byte any used page can reach; the plans'
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
        long[] desc = words(plan.slices(), p -> {
            Span span = bySegment.get(segment(p));
            return span.packedOffset() - span.from() + p.base();
        }, p -> (absolute ? p.alignmentAt(segment(p).address()) : p.alignment()) >= 8);
        return new Descriptors(plans, table, List.copyOf(spans), packed, desc, windowStart);
    }

    private static int[] table(List<SlicePlan> plans) {
        return plans.size() == 1 ? plans.getFirst().pageTable()
                : plans.stream().flatMapToInt(p -> IntStream.of(p.pageTable())).toArray();
    }

    /** Each plan's request fields, where its blocks start among the batch's and its page ids in {@link #table}. */
    private static long[] requests(List<SlicePlan> plans) {
        long[] words = new long[(plans.size() + 1) * REQ_WORDS];
        long blocks = 0;
        long entries = 0;
        for (int i = 0; i < plans.size(); i++) {
            RequestBlocks r = plans.get(i).request();
            int at = i * REQ_WORDS;
            words[at + REQ_START_TOKEN] = r.startToken();
            words[at + REQ_FIRST_BLOCK] = r.firstBlock();
            words[at + REQ_NUM_TOKENS] = r.numTokens();
            words[at + REQ_BLOCK_BEGIN] = blocks;
            words[at + REQ_TABLE_OFFSET] = entries;
            blocks += plans.get(i).numBlocks();
            entries += plans.get(i).numPages();
        }
        words[plans.size() * REQ_WORDS + REQ_BLOCK_BEGIN] = blocks;
        words[plans.size() * REQ_WORDS + REQ_TABLE_OFFSET] = entries;
        return words;
    }

    /** The bytes needed from one segment; segments are equal when they start at the same place, whatever their size. */
    static final class Range {
        MemorySegment segment;
        long lo;
        long hi;
    }

    static void addRange(Map<MemorySegment, Range> ranges, SlicePlan.Part p, int pageSize, long minPage, long maxPage) {
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
    static long[] words(List<SlicePlan.Slice> slices, ToLongFunction<SlicePlan.Part> base, Predicate<SlicePlan.Part> aligned) {
        int ns = slices.size();
        long[] desc = new long[ns * WORDS];
        for (int i = 0; i < ns; i++) {
            SlicePlan.Slice s = slices.get(i);
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

    static MemorySegment segment(SlicePlan.Part p) {
        return ((KvMemory.Host) p.memory()).segment();
    }
}
