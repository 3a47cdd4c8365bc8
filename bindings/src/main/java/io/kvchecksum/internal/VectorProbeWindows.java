package io.kvchecksum.internal;

import io.kvchecksum.spi.CpuModel;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * {@link ProbeWindows} on the Vector API at the JVM's preferred width: a 64-byte window is {@code 8 / lanes} vectors;
 * each is multiplied by its part's weight and added lane by lane, and the piece weights {@code 2p+1} are applied once
 * per call ({@code sum_j w_j sum_p x_jp (2p+1) = sum_p (2p+1) sum_j w_j x_jp}, exact modulo 2^64).
 */
final class VectorProbeWindows extends ProbeWindows {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    /** Vectors per window: 8 pieces of {@code S.length()} lanes (1 at 512 bits, 2 at 256, 4 at 128). */
    private static final int PER = Math.max(1, 8 / S.length());
    /** Whether this JVM's loop skips the touch ahead ({@link #touchAhead}): one vector a window (512 bits) on Intel. */
    private static final boolean TOUCHLESS = PER == 1 && CpuModel.intel();
    private static final LongVector[] WEIGHTS = new LongVector[PER];
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    static {
        if (8 % S.length() != 0) {
            throw new LinkageError("a window of 8 pieces is not whole vectors of " + S.length() + " lanes");
        }
        for (int k = 0; k < PER; k++) {
            long[] w = new long[S.length()];
            for (int q = 0; q < w.length; q++) {
                w[q] = 2L * (k * S.length() + q) + 1;
            }
            WEIGHTS[k] = LongVector.fromArray(S, w, 0);
        }
    }

    @Override
    public void sum8(MemorySegment m, long[] base, long[] pageStride, long[] tokenStride, long[] tailSkip, long[] w,
            int from, int to, long page, long lastSlot, long[] out) {
        if (PER == 1) {
            LongVector h = LongVector.zero(S);
            LongVector t = LongVector.zero(S);
            for (int j = from; j < to; j++) {
                long at = base[j] + page * pageStride[j];
                long wj = w[j];
                h = h.add(LongVector.fromMemorySegment(S, m, at, LE).mul(wj));
                t = t.add(LongVector.fromMemorySegment(S, m, at + lastSlot * tokenStride[j] + tailSkip[j], LE).mul(wj));
            }
            out[0] += h.mul(WEIGHTS[0]).reduceLanes(VectorOperators.ADD);
            out[1] += t.mul(WEIGHTS[0]).reduceLanes(VectorOperators.ADD);
            return;
        }
        long hs = 0;
        long ts = 0;
        int step = S.vectorByteSize();
        for (int k = 0; k < PER; k++) {
            LongVector h = LongVector.zero(S);
            LongVector t = LongVector.zero(S);
            long off = (long) k * step;
            for (int j = from; j < to; j++) {
                long at = base[j] + page * pageStride[j] + off;
                long wj = w[j];
                h = h.add(LongVector.fromMemorySegment(S, m, at, LE).mul(wj));
                t = t.add(LongVector.fromMemorySegment(S, m, at + lastSlot * tokenStride[j] + tailSkip[j], LE).mul(wj));
            }
            hs += h.mul(WEIGHTS[k]).reduceLanes(VectorOperators.ADD);
            ts += t.mul(WEIGHTS[k]).reduceLanes(VectorOperators.ADD);
        }
        out[0] += hs;
        out[1] += ts;
    }

    @Override
    public void sumRuns(MemorySegment[] runSeg, int[] runStart, boolean[] of8, long[] base, long[] pageStride,
            long[] tokenStride, long[] tailSkip, long[] w, long page, long lastSlot, long[] out) {
        if (PER == 1) {
            LongVector h = LongVector.zero(S);
            LongVector t = LongVector.zero(S);
            for (int r = 0; r < runSeg.length; r++) {
                if (!of8[r]) {
                    continue;
                }
                MemorySegment m = runSeg[r];
                for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                    long at = base[j] + page * pageStride[j];
                    long wj = w[j];
                    h = h.add(LongVector.fromMemorySegment(S, m, at, LE).mul(wj));
                    t = t.add(LongVector.fromMemorySegment(S, m, at + lastSlot * tokenStride[j] + tailSkip[j], LE).mul(wj));
                }
            }
            out[0] += h.mul(WEIGHTS[0]).reduceLanes(VectorOperators.ADD);
            out[1] += t.mul(WEIGHTS[0]).reduceLanes(VectorOperators.ADD);
            return;
        }
        if (PER == 2) {
            // 256-bit: a window is two vectors, each with its own sums (its own piece weights)
            long step = S.vectorByteSize();
            LongVector h0 = LongVector.zero(S);
            LongVector h1 = h0;
            LongVector t0 = h0;
            LongVector t1 = h0;
            for (int r = 0; r < runSeg.length; r++) {
                if (!of8[r]) {
                    continue;
                }
                MemorySegment m = runSeg[r];
                for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                    long at = base[j] + page * pageStride[j];
                    long tail = at + lastSlot * tokenStride[j] + tailSkip[j];
                    long wj = w[j];
                    h0 = h0.add(LongVector.fromMemorySegment(S, m, at, LE).mul(wj));
                    h1 = h1.add(LongVector.fromMemorySegment(S, m, at + step, LE).mul(wj));
                    t0 = t0.add(LongVector.fromMemorySegment(S, m, tail, LE).mul(wj));
                    t1 = t1.add(LongVector.fromMemorySegment(S, m, tail + step, LE).mul(wj));
                }
            }
            out[0] += h0.mul(WEIGHTS[0]).add(h1.mul(WEIGHTS[1])).reduceLanes(VectorOperators.ADD);
            out[1] += t0.mul(WEIGHTS[0]).add(t1.mul(WEIGHTS[1])).reduceLanes(VectorOperators.ADD);
            return;
        }
        super.sumRuns(runSeg, runStart, of8, base, pageStride, tokenStride, tailSkip, w, page, lastSlot, out);
    }

    /**
     * No touch of the next page on Intel at 512 bits: there the probe without it took 0.78-0.89 of the time with it
     * (best of 41 calls, caches evicted, 256 MiB, three runs each of vLLM flash 16 and SGLang page size 1 on an
     * Emerald Rapids VM), where at 256 bits it took 1.07-1.16 and on AMD Zen 4 it was faster in half the runs and
     * slower in the other half (docs/bench-cpu.md, "Page probe cost").
     */
    @Override
    public boolean touchAhead() {
        return !TOUCHLESS;
    }

    @Override
    public String describe() {
        return "Vector API " + S.vectorBitSize() + "-bit";
    }
}
