package io.kvchecksum.opencl;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SlicePlan;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * The verifying copy ({@link CopyPlan}) as launches of {@code kvchecksum_copy.cl}, all in one operation on the
 * backend's in-order queue ({@link Enqueuer}): {@code copy_pieces} for the whole-piece launch, {@code copy_byte_cells}
 * for the byte-cell one, their partial sums in one buffer added by {@code sum_parts} (the two launches' values add).
 * A staged plan ({@link CopyPlan#staged()}: source and destination memory overlap, vLLM's in-place rearrangement)
 * runs {@code copy_staged} for each launch instead: one work-group per staging unit (one layer's pairs, one
 * destination page), the unit read whole into local memory before any of it is written; the backend declares units up
 * to its device's local memory ({@link #stagedUnitLimit}).
 *
 * <p><b>Memory.</b> The kernels read one buffer ({@code src}) and write one ({@code dst}), which may be the same:
 * <ul>
 *   <li>device memory: the registered {@code cl_mem} every region of that side lies in, used in place (registered
 *       sub-buffers of one {@code cl_mem} through that buffer, each region at its sub-buffer's origin);</li>
 *   <li>host memory on a device that shares it (the CPU tuning): a window ({@code CL_MEM_USE_HOST_PTR}) over the
 *       native segments, one window for both sides when their bytes fit one buffer (two windows over overlapping host
 *       memory would be undefined in OpenCL), and after the kernels each destination span is mapped and unmapped, so
 *       that the host memory holds what they wrote as OpenCL requires of such buffers;</li>
 *   <li>source host memory otherwise (a GPU, a segment on the Java heap): a packed copy of the spans the source pages
 *       reach, uploaded before the kernels, as the checksums read host memory there.</li>
 * </ul>
 * Destination host memory is written only in place: on a device that does not share host memory the backend's limits
 * do not declare it, and a heap segment (no stable address) or a window larger than one buffer is refused with
 * {@link InvalidLayoutException} before anything is enqueued.
 */
final class CopyKernels {
    /** Where each copied span starts in a packed buffer: a multiple of 64, so offsets keep their value mod 8. */
    private static final long SPAN_ALIGN = 64;
    /** Largest single host-to-device write: {@code ByteBuffer} views of a segment stop at 2 GiB. */
    private static final long MAX_WRITE = 1L << 30;

    /** The work-group size a kernel of the program allows on the device ({@code CL_KERNEL_WORK_GROUP_SIZE}). */
    interface KernelLimit {
        long workGroupSize(String kernel);
    }

    private final Enqueuer enqueuer;
    private final MemoryPlacement memory;
    private final LaunchGeometry geometry;
    private final KernelLimit kernelLimit;
    private volatile int localSize;

    CopyKernels(Enqueuer enqueuer, MemoryPlacement memory, LaunchGeometry geometry, KernelLimit kernelLimit) {
        this.enqueuer = enqueuer;
        this.memory = memory;
        this.geometry = geometry;
        this.kernelLimit = kernelLimit;
    }

    /** How one side's memory reaches the kernels. */
    private static final class Side {
        final String name;
        final boolean destination;
        /** Device memory: a registration of the buffer every region lies in (its root read), or null for host memory. */
        RegisteredBuffers.Registration device;
        /** Device memory: each region memory's offset in the root buffer, by its address. */
        final Map<Long, Long> origins = new java.util.HashMap<>();
        /** Host memory: the bytes the side's pages reach, per segment. */
        Map<MemorySegment, Descriptors.Range> ranges;
        /** Host memory: lowest and highest absolute address of those bytes (meaningful when every segment is native). */
        long lo;
        long hi;
        boolean allNative;
        /** Host memory used in place: the window's first byte (an absolute address); else packed. */
        boolean window;
        long windowStart;
        /** The buffer's size: the window's, or the packed copy's. */
        long bytes;
        /** Packed copy: the spans and where each segment's span lies in the buffer. */
        List<Descriptors.Span> spans;
        Map<MemorySegment, Descriptors.Span> bySegment;
        /** Both sides lie in one window buffer (the source's, made read-write). */
        boolean shared;

        Side(String name, boolean destination) {
            this.name = name;
            this.destination = destination;
        }

        long base(SlicePlan.Part p) {
            if (device != null) {
                return origins.get(((KvMemory.Device) p.memory()).address()) + p.base();
            }
            MemorySegment seg = Descriptors.segment(p);
            if (window) {
                return seg.address() + p.base() - windowStart;
            }
            Descriptors.Span span = bySegment.get(seg);
            return span.packedOffset() - span.from() + p.base();
        }

        boolean aligned(SlicePlan.Part p) {
            return (window ? p.alignmentAt(Descriptors.segment(p).address()) : p.alignment()) >= 8;
        }
    }

    /**
     * Enqueues the copy and returns without waiting: the destination's {@link CopyPlan#numBlocks()} block checksums.
     * Everything that can be refused is refused before the first command is enqueued.
     */
    PendingChecksums start(CopyPlan plan) {
        List<CopyPlan.Launch> launches = plan.launches();
        CopyPlan.Launch first = launches.getFirst();
        List<SlicePlan.Slice> sources = new ArrayList<>();
        List<SlicePlan.Slice> destinations = new ArrayList<>();
        for (CopyPlan.Launch l : launches) {
            for (CopyPlan.Pair p : l.pairs()) {
                sources.add(p.source());
                destinations.add(p.destination());
            }
        }
        Side src = side(new Side("source", false), sources, first.sourceTable(), first.sourcePageSize());
        Side dst = side(new Side("destination", true), destinations, first.destinationTable(), first.destinationPageSize());
        place(src, dst);

        int nb = first.numBlocks();
        int local = localSize();
        boolean staged = plan.staged();
        int[][] groups = new int[launches.size()][];
        long[] stage = new long[launches.size()];
        int[][] cells = new int[launches.size()][];
        int units = (int) Math.ceilDiv(first.numTokens() - first.startToken(), (long) first.destinationPageSize());
        int[] parts = new int[launches.size()];
        long[][] sdesc = new long[launches.size()][];
        long[][] ddesc = new long[launches.size()][];
        int total = 0;
        for (int i = 0; i < launches.size(); i++) {
            CopyPlan.Launch l = launches.get(i);
            CopyPlan.Staging staging = staged ? l.staging() : null;
            List<CopyPlan.Pair> pairs = staged ? staging.pairs() : l.pairs();
            List<SlicePlan.Slice> ls = pairs.stream().map(CopyPlan.Pair::source).toList();
            List<SlicePlan.Slice> ld = pairs.stream().map(CopyPlan.Pair::destination).toList();
            sdesc[i] = Descriptors.words(ls, src::base, src::aligned);
            ddesc[i] = Descriptors.words(ld, dst::base, dst::aligned);
            if (staged) {
                // the plan's units: where each starts, its cells' bytes, the largest one's local memory
                groups[i] = staging.starts();
                cells[i] = cellBytes(staging.pairs());
                stage[i] = staging.largest();
                parts[i] = Math.multiplyExact(staging.units(), l.blockSize());
            } else if (l.cellKind() == CompiledPlan.CellKind.WHOLE_PIECES) {
                long pieces = 0;
                for (CopyPlan.Pair p : l.pairs()) {
                    pieces += p.pieces();
                }
                parts[i] = geometry.copyParts(nb, pieces, local);
            } else {
                parts[i] = l.pairs().size();
            }
            total = Math.addExact(total, parts[i]);
        }
        int stride = total;
        return enqueuer.enqueue(nb, op -> {
            cl_mem srcMem = buffer(op, src, null);
            cl_mem dstMem = dst.shared ? srcMem : buffer(op, dst, srcMem);
            cl_mem stable = op.upload(first.sourceTable());
            cl_mem dtable = op.upload(first.destinationTable());
            cl_mem partials = op.buffer((long) nb * stride * Sizeof.cl_ulong);
            int offset = 0;
            for (int i = 0; i < launches.size(); i++) {
                CopyPlan.Launch l = launches.get(i);
                boolean whole = l.cellKind() == CompiledPlan.CellKind.WHOLE_PIECES;
                cl_kernel k = op.kernel((staged ? "copy_staged" : whole ? "copy_pieces" : "copy_byte_cells")
                        + (l.mode() == ChecksumMode.MIXED ? "_mixed" : ""));
                op.arg(k, 0, srcMem);
                op.arg(k, 1, dstMem);
                op.arg(k, 2, op.upload(sdesc[i]));
                op.arg(k, 3, op.upload(ddesc[i]));
                op.arg(k, 4, stable);
                op.arg(k, 5, dtable);
                op.arg(k, 6, l.startToken());
                op.arg(k, 7, (long) l.sourcePageSize());
                op.arg(k, 8, (long) l.destinationPageSize());
                op.arg(k, 9, l.firstBlock());
                op.arg(k, 10, (long) l.blockSize());
                op.arg(k, 11, l.numTokens());
                op.arg(k, 12, l.pairs().size());
                op.arg(k, 13, stride);
                op.arg(k, 14, offset);
                op.arg(k, 15, partials);
                if (staged) {
                    op.arg(k, 16, op.upload(cells[i]));
                    op.arg(k, 17, op.upload(groups[i]));
                    int ls = stagedLocalSize();
                    op.local(k, 18, stage[i] + (long) ls * Sizeof.cl_ulong);   // the unit, then group_sum's scratch
                    op.launch(k, new long[] {(long) ls * (groups[i].length - 1), units}, new long[] {ls, 1});
                } else if (whole) {
                    op.arg(k, 16, parts[i]);
                    op.local(k, 17, (long) local * Sizeof.cl_ulong);
                    op.launch(k, new long[] {(long) local * parts[i], nb}, new long[] {local, 1});
                } else {
                    op.arg(k, 16, op.upload(cellBytes(l.pairs())));
                    op.launch(k, new long[] {nb, l.pairs().size()}, null);
                }
                offset += parts[i];
            }
            if (dst.device == null) {
                // Only the destination's own spans: a shared window also covers the source and the gaps between.
                for (Descriptors.Range r : dst.ranges.values()) {
                    op.syncToHost(dstMem, r.segment.address() + r.lo - dst.windowStart, r.hi - r.lo);
                }
            }
            return ChecksumKernels.sumParts(op, partials, stride, nb);
        });
    }

    /** Each pair's K and V bytes per cell, {@code [2p]} and {@code [2p+1]}. */
    private static int[] cellBytes(List<CopyPlan.Pair> pairs) {
        int[] bytes = new int[2 * pairs.size()];
        for (int p = 0; p < pairs.size(); p++) {
            SlicePlan.Slice d = pairs.get(p).destination();
            bytes[2 * p] = d.k().bytes();
            bytes[2 * p + 1] = d.v() == null ? 0 : d.v().bytes();
        }
        return bytes;
    }

    /**
     * Work items per work-group of {@code copy_staged} at most: its reduction's scratch (a word each) follows the unit in
     * its one {@code __local} array.
     */
    static final int STAGED_MAX_LOCAL = 128;

    /**
     * The largest staging unit {@code copy_staged} takes on a device with {@code localMemBytes} of local memory: all of
     * it but 1 KiB, which the compiler may take for the kernel's own use, and the reduction's scratch
     * ({@link #STAGED_MAX_LOCAL} words) after the unit in its one {@code __local} array.
     *
     * @param localMemBytes {@code CL_DEVICE_LOCAL_MEM_SIZE}
     */
    static long stagedUnitLimit(long localMemBytes) {
        return Math.max(0, localMemBytes - 1024 - STAGED_MAX_LOCAL * Sizeof.cl_ulong);
    }

    /**
     * Work items per work-group of {@code copy_staged}: the copy's size, at most what the staged kernels allow and
     * {@link #STAGED_MAX_LOCAL}, rounded down to a power of two (its reduction, {@code group_sum}, halves it).
     */
    private int stagedLocalSize() {
        long n = localSize();
        n = Math.min(n, kernelLimit.workGroupSize("copy_staged"));
        n = Math.min(n, kernelLimit.workGroupSize("copy_staged_mixed"));
        n = Math.min(n, STAGED_MAX_LOCAL);
        return Integer.highestOneBit((int) Math.max(1, n));
    }

    /**
     * The side's memory: the one registered cl_mem of its device regions, or the bytes its pages reach in each host
     * segment (between the cells of the lowest and the highest page in use).
     */
    private Side side(Side side, List<SlicePlan.Slice> slices, int[] table, int pageSize) {
        List<SlicePlan.Part> parts = new ArrayList<>();
        for (SlicePlan.Slice s : slices) {
            parts.add(s.k());
            if (s.v() != null) {
                parts.add(s.v());
            }
        }
        if (parts.getFirst().memory() instanceof KvMemory.Device) {
            // Every region in one buffer: one cl_mem, or sub-buffers of one (read through their parent).
            for (SlicePlan.Slice s : slices) {
                for (SlicePlan.Part p : s.v() == null ? List.of(s.k()) : List.of(s.k(), s.v())) {
                    KvMemory.Device dm = (KvMemory.Device) p.memory();
                    String where = "the copy's " + side.name + ": layer " + s.layer() + " head " + s.head() + " "
                            + (p == s.k() ? "K" : "V") + " region's " + dm;
                    RegisteredBuffers.Registration r = memory.registered().registration(dm, where);
                    if (side.device == null) {
                        side.device = r;
                    } else if (r.root() != side.device.root()) {
                        throw new InvalidLayoutException(where + " lies in another cl_mem than the first region's (0x"
                                + Long.toHexString(side.device.root()) + "): the copy kernels read one buffer and write"
                                + " one (sub-buffers of one buffer count as that buffer)");
                    }
                    side.origins.put(dm.address(), r.origin());
                }
            }
            return side;
        }
        long minPage = Long.MAX_VALUE;
        long maxPage = -1;
        for (int page : table) {
            minPage = Math.min(minPage, page);
            maxPage = Math.max(maxPage, page);
        }
        side.ranges = new LinkedHashMap<>();
        for (SlicePlan.Part p : parts) {
            Descriptors.addRange(side.ranges, p, pageSize, minPage, maxPage);
        }
        side.allNative = true;
        side.lo = Long.MAX_VALUE;
        side.hi = 0;
        for (Descriptors.Range r : side.ranges.values()) {
            side.allNative &= r.segment.isNative();
            side.lo = Math.min(side.lo, r.segment.address() + r.lo);
            side.hi = Math.max(side.hi, r.segment.address() + r.hi);
        }
        return side;
    }

    /**
     * Decides how host sides reach the kernels: in place where the device shares host memory (one window for both
     * sides where it fits one buffer, else one each where they do not overlap), else the source packed; refuses a
     * destination that cannot be written in place.
     */
    private void place(Side src, Side dst) {
        long align = memory.windowAlign();
        long max = memory.maxAlloc();
        boolean srcWindow = src.device == null && memory.zeroCopy() && src.allNative;
        if (dst.device == null) {
            if (!memory.zeroCopy()) {
                throw new InvalidLayoutException("the copy's destination is host memory, which opencl writes only in"
                        + " place, on a CPU device sharing host memory (here " + memory.noZeroCopy() + "): copy into a"
                        + " cl_mem registered with buffer(cl_mem)");
            }
            if (!dst.allNative) {
                throw new InvalidLayoutException("the copy's destination is a segment on the Java heap (no stable"
                        + " address): opencl writes host memory only in place; allocate it natively (an Arena)");
            }
            long start = dst.lo & -align;
            if (srcWindow && Math.max(src.hi, dst.hi) - (Math.min(src.lo, dst.lo) & -align) <= max) {
                window(src, Math.min(src.lo, dst.lo) & -align, Math.max(src.hi, dst.hi));
                window(dst, src.windowStart, src.windowStart + src.bytes);
                src.shared = true;
                dst.shared = true;
                return;
            }
            if (dst.hi - start > max) {
                throw new InvalidLayoutException("the copy's destination segments lie " + (dst.hi - start) + " bytes"
                        + " apart, more than one buffer of the device may span (" + max + "): split the copy");
            }
            window(dst, start, dst.hi);
            if (srcWindow && (src.lo & -align) < dst.hi && start < src.hi) {
                // Two windows over overlapping host memory would be undefined in OpenCL: copy the source instead.
                srcWindow = false;
            }
        }
        if (src.device != null) {
            return;
        }
        if (srcWindow && src.hi - (src.lo & -align) <= max) {
            window(src, src.lo & -align, src.hi);
            return;
        }
        packed(src);
        if (src.bytes > max) {
            throw new InvalidLayoutException("the copy's source spans " + src.bytes + " bytes of host memory, more than"
                    + " one buffer of the device may hold (" + max + " bytes): split the copy");
        }
    }

    private static void window(Side side, long start, long end) {
        side.window = true;
        side.windowStart = start;
        side.bytes = end - start;
    }

    /** The source's spans packed one after the other, each from a multiple of 8 of its segment to a multiple of 64. */
    private static void packed(Side side) {
        side.spans = new ArrayList<>();
        side.bySegment = new LinkedHashMap<>();
        long packed = 0;
        for (Map.Entry<MemorySegment, Descriptors.Range> e : side.ranges.entrySet()) {
            Descriptors.Range r = e.getValue();
            Descriptors.Span s = new Descriptors.Span(r.segment, r.lo & ~7L, r.hi, packed);
            side.spans.add(s);
            side.bySegment.put(e.getKey(), s);
            packed = Math.addExact(packed, Math.ceilDiv(s.length(), SPAN_ALIGN) * SPAN_ALIGN);
        }
        side.bytes = packed;
    }

    /**
     * The buffer of one side in {@code op}: its registered cl_mem, a window over its host memory (read-write for the
     * destination), or the packed copy of its spans (written non-blocking; heap memory staged first).
     */
    private cl_mem buffer(Enqueuer.Op op, Side side, cl_mem other) {
        if (side.device != null) {
            return side.device.rootMem();
        }
        if (side.window) {
            Descriptors.Range any = side.ranges.values().iterator().next();
            long at = any.segment.address() + any.lo;
            Pointer host = Pointer.to(any.segment.asSlice(any.lo, Math.min(any.hi - any.lo, MAX_WRITE)).asByteBuffer())
                    .withByteOffset(side.windowStart - at);
            return op.hostBuffer(side.bytes, host, side.destination || side.shared ? CL.CL_MEM_READ_WRITE
                    : CL.CL_MEM_READ_ONLY);
        }
        return memory.hostBuffer(op, side.spans, side.bytes, false, "the copy's " + side.name);
    }

    /**
     * Work items per work-group of {@code copy_pieces}: the checksum kernels' size, at most what the copy kernels allow
     * on the device (a power of two, for the reduction); asked of the device once, on the first copy, so opening a
     * backend does not compile them.
     */
    private int localSize() {
        int l = localSize;
        if (l == 0) {
            long n = geometry.localSize();
            n = Math.min(n, kernelLimit.workGroupSize("copy_pieces"));
            n = Math.min(n, kernelLimit.workGroupSize("copy_pieces_mixed"));
            l = Integer.highestOneBit((int) Math.max(1, n));
            localSize = l;
        }
        return l;
    }
}
