package io.kvchecksum.bench;

import io.kvchecksum.KvMemory;
import io.kvchecksum.SlicePlan;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The read bound of the page probe ({@code io.kvchecksum.PageProbe} with 64-byte windows, its default): a plain read of
 * exactly the probe's windows (the first 64 bytes of each cell of every page's first token and the last 64 bytes of
 * each cell of its last token), in the probe's order (pages by page id, then memory by memory, parts in order, head
 * window then tail window), in the probe's chunks of about 4096 windows spread over the common pool once a request
 * has 2^14 windows. Each window is one vector load and an add (the Vector API where the JVM has it, else eight word
 * loads), no weights, no reads ahead.
 *
 * <p>Why a bound of its own ({@code docs/bench-cpu.md}, "Page probe cost"): the probe's windows are 64-byte lines a few
 * hundred bytes apart in runs of a few per 4 KiB page, so per byte they cost the memory system several times what a
 * sequential pass does (the adjacent line the hardware fetches with each, a TLB miss per run, the misses a core keeps
 * in flight); the full pass's time scaled by the byte fraction is no bound for them, a read of the same lines in the
 * same order is.
 *
 * <p>Host memory only; not part of the checksum API: a measuring tool.
 */
public final class ProbeWindowBound {
    /** Windows per chunk of pages one thread takes, as the probe. */
    static final int CHUNK_WINDOWS = 1 << 12;
    /** Windows from which the read spreads chunks over the common pool, as the probe. */
    static final long PARALLEL_WINDOWS = 1 << 14;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final boolean HAS_VECTOR = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    private final SlicePlan plan;
    private final MemorySegment[] runSeg;
    private final int[] runStart;
    private final long[] base;
    private final long[] pageStride;
    private final long[] tailStep;
    private final long[] tailSkip;
    private final int[] order;
    private final long[] lastSlot;

    private ProbeWindowBound(SlicePlan plan) {
        this.plan = plan;
        List<SlicePlan.Slice> slices = plan.slices();
        List<SlicePlan.Part> parts = new ArrayList<>();
        List<MemorySegment> segs = new ArrayList<>();
        List<Integer> starts = new ArrayList<>();
        for (int kind = 0; kind < 2; kind++) {
            for (SlicePlan.LayerRun run : plan.layerRuns()) {
                for (int h = 0; h < run.numHeads(); h++) {
                    SlicePlan.Slice s = slices.get(run.firstSlice() + h);
                    SlicePlan.Part part = kind == 0 ? s.k() : s.v();
                    if (part == null) {
                        continue;
                    }
                    if (!(part.memory() instanceof KvMemory.Host host)) {
                        throw new IllegalArgumentException("the probe's window bound reads host memory only");
                    }
                    if (part.pieces() < 8) {
                        throw new IllegalArgumentException("cells of " + part.pieces() * 8 + " bytes: under a 64-byte window");
                    }
                    if (segs.isEmpty() || segs.get(segs.size() - 1) != host.segment()) {
                        segs.add(host.segment());
                        starts.add(parts.size());
                    }
                    parts.add(part);
                }
            }
        }
        starts.add(parts.size());
        runSeg = segs.toArray(new MemorySegment[0]);
        runStart = starts.stream().mapToInt(Integer::intValue).toArray();
        int n = parts.size();
        base = new long[n];
        pageStride = new long[n];
        tailStep = new long[n];
        tailSkip = new long[n];
        for (int j = 0; j < n; j++) {
            SlicePlan.Part p = parts.get(j);
            base[j] = p.base();
            pageStride[j] = p.pageStride();
            tailStep[j] = p.tokenStride();
            tailSkip[j] = p.pieces() * 8L - 64;
        }
        int pages = plan.numPages();
        long[] keys = new long[pages];
        lastSlot = new long[pages];
        long first = plan.request().startToken();
        for (int i = 0; i < pages; i++) {
            keys[i] = (long) plan.page(i) << 32 | i;
            lastSlot[i] = Math.min(plan.pageSize(), plan.request().numTokens() - first - (long) i * plan.pageSize()) - 1;
        }
        Arrays.sort(keys);
        order = new int[pages];
        for (int p = 0; p < pages; p++) {
            order[p] = (int) keys[p];
        }
    }

    /**
     * {@return the bound of {@code plan}'s probe}
     *
     * @param plan a validated plan on host memory whose cells are at least 64 bytes
     * @throws IllegalArgumentException when a part is not on host memory or its cells are under 64 bytes
     */
    public static ProbeWindowBound of(SlicePlan plan) {
        return new ProbeWindowBound(plan);
    }

    /** {@return the windows read per call: two per part and page} */
    public long windows() {
        return 2L * base.length * plan.numPages();
    }

    /**
     * Reads every window once, as the probe spreads them (over the common pool from 2^14 windows).
     *
     * @return the sum of every window's little-endian 64-bit words modulo 2^64 (so nothing is skipped)
     */
    public long read() {
        int pages = plan.numPages();
        int chunk = Math.max(1, CHUNK_WINDOWS / (2 * base.length));
        long[] out = new long[Math.ceilDiv(pages, chunk)];
        IntStream range = IntStream.range(0, out.length);
        (windows() >= PARALLEL_WINDOWS ? range.parallel() : range).forEach(c -> out[c] = chunk(c * chunk,
                Math.min(pages, (c + 1) * chunk)));
        long s = 0;
        for (long x : out) {
            s += x;
        }
        return s;
    }

    /** {@return {@link #read()}'s sum, read on the calling thread alone} */
    public long readOnCaller() {
        return chunk(0, plan.numPages());
    }

    /** {@return whether the windows are read with the Vector API} */
    public static boolean vector() {
        return HAS_VECTOR;
    }

    private long chunk(int p0, int p1) {
        if (HAS_VECTOR) {
            return VectorRead.windows(runSeg, runStart, base, pageStride, tailStep, tailSkip, plan, order, lastSlot, p0, p1);
        }
        long sum = 0;
        for (int p = p0; p < p1; p++) {
            int i = order[p];
            long page = plan.page(i);
            long ls = lastSlot[i];
            for (int r = 0; r < runSeg.length; r++) {
                MemorySegment m = runSeg[r];
                for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                    long at = base[j] + page * pageStride[j];
                    sum += window(m, at) + window(m, at + ls * tailStep[j] + tailSkip[j]);
                }
            }
        }
        return sum;
    }

    private static long window(MemorySegment m, long at) {
        return m.get(WORD, at) + m.get(WORD, at + 8) + m.get(WORD, at + 16) + m.get(WORD, at + 24) + m.get(WORD, at + 32)
                + m.get(WORD, at + 40) + m.get(WORD, at + 48) + m.get(WORD, at + 56);
    }
}
