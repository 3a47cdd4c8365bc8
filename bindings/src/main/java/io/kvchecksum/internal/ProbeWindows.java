package io.kvchecksum.internal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The page probe's inner loop over 64-byte windows ({@code io.kvchecksum.PageProbe}, 8 pieces each, its default): for
 * the parts {@code from .. to-1} of one memory, {@code sum_j w[j] * D(head window j)} and the same over the tail
 * windows, {@code D(x) = sum_{p<8} x_p*(2p+1)}. The Vector API form ({@link #INSTANCE} where the JVM has
 * {@code jdk.incubator.vector}) accumulates {@code w[j] * window} lane by lane and applies the piece weights once per
 * call, a load and a multiply-add per window where the scalar form does eight of each (measured in cache: ten times
 * fewer cycles, and from memory faster than a plain read of the same lines, which the scalar form is not).
 *
 * <p>Window {@code j} of page {@code page} starts at {@code base[j] + page*pageStride[j]} (head) and at that plus
 * {@code lastSlot*tokenStride[j] + tailSkip[j]} (tail); offsets have been validated.
 */
public class ProbeWindows {
    /** A piece: 8 bytes, little-endian, at any alignment. */
    static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The Vector API form where the JVM has {@code jdk.incubator.vector}, else the scalar one. */
    public static final ProbeWindows INSTANCE = load();

    /** The scalar form (for tests and JVMs without the Vector API). */
    public ProbeWindows() {
    }

    /**
     * Adds the parts' weighted window digests of one page to {@code out[0]} (head windows) and {@code out[1]} (tail).
     *
     * @param m the parts' memory
     * @param base per part, the offset of page 0's head window
     * @param pageStride per part, bytes per page
     * @param tokenStride per part, bytes per token
     * @param tailSkip per part, the cell's bytes before its tail window
     * @param w per part, the window weight
     * @param from the first part
     * @param to one past the last part
     * @param page the page id
     * @param lastSlot the slot of the page's last token in the request
     * @param out the head and tail sums, added to
     */
    public void sum8(MemorySegment m, long[] base, long[] pageStride, long[] tokenStride, long[] tailSkip, long[] w,
            int from, int to, long page, long lastSlot, long[] out) {
        long h = 0;
        long t = 0;
        for (int j = from; j < to; j++) {
            long at = base[j] + page * pageStride[j];
            h += w[j] * window(m, at);
            t += w[j] * window(m, at + lastSlot * tokenStride[j] + tailSkip[j]);
        }
        out[0] += h;
        out[1] += t;
    }

    /**
     * Adds the weighted window digests of one page over every run of 64-byte windows ({@code of8[r]}) to
     * {@code out[0]} (head windows) and {@code out[1]} (tail): {@link #sum8} for each such run, with the Vector API
     * form's sums carried across the runs, so the piece weights and the reduction to one value are applied once per
     * page instead of once per run (a run is a layer's 8 heads of one kind: 16 windows).
     *
     * @param runSeg per run, its memory
     * @param runStart per run, its first part; {@code runStart[runSeg.length]} ends the last run
     * @param of8 per run, whether all its windows are 64 bytes; runs without are skipped
     * @param base per part, the offset of page 0's head window
     * @param pageStride per part, bytes per page
     * @param tokenStride per part, bytes per token
     * @param tailSkip per part, the cell's bytes before its tail window
     * @param w per part, the window weight
     * @param page the page id
     * @param lastSlot the slot of the page's last token in the request
     * @param out the head and tail sums, added to
     */
    public void sumRuns(MemorySegment[] runSeg, int[] runStart, boolean[] of8, long[] base, long[] pageStride,
            long[] tokenStride, long[] tailSkip, long[] w, long page, long lastSlot, long[] out) {
        for (int r = 0; r < runSeg.length; r++) {
            if (of8[r]) {
                sum8(runSeg[r], base, pageStride, tokenStride, tailSkip, w, runStart[r], runStart[r + 1], page, lastSlot,
                        out);
            }
        }
    }

    /** {@return {@code D} of the 8 pieces at {@code at}} */
    static long window(MemorySegment m, long at) {
        return m.get(PIECE, at) + 3 * m.get(PIECE, at + 8) + 5 * m.get(PIECE, at + 16) + 7 * m.get(PIECE, at + 24)
                + 9 * m.get(PIECE, at + 32) + 11 * m.get(PIECE, at + 40) + 13 * m.get(PIECE, at + 48)
                + 15 * m.get(PIECE, at + 56);
    }

    /**
     * {@return whether the probe reads one byte of each window of the next page before it sums a page} Those reads are
     * issued back to back, so the next page's lines are in flight while this page is summed (docs/bench-cpu.md, "Page
     * probe cost"); where they measured slower the loop says so ({@link VectorProbeWindows}). Either way the values are
     * the same.
     */
    public boolean touchAhead() {
        return true;
    }

    /** {@return a description of the loop: {@code "scalar"} or the vector width} */
    public String describe() {
        return "scalar";
    }

    private static ProbeWindows load() {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            try {
                return new VectorProbeWindows();
            } catch (LinkageError e) {
                // fall through to the scalar loop
            }
        }
        return new ProbeWindows();
    }
}
