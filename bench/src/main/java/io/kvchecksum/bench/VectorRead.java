package io.kvchecksum.bench;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The read bound's Vector API loop; loaded only where the JVM has {@code jdk.incubator.vector}. Its unrolled loads have
 * the shape of the CPU kernel's ({@code VectorSliceKernel}, package-private in bindings): a copy on purpose, as a bound
 * reads without the kernel's code, and one loop per species, which must be a constant for the JIT.
 */
final class VectorRead {
    private static final VectorSpecies<Long> SPECIES = LongVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private VectorRead() {
    }

    /**
     * Sums every little-endian word of the parts ({@code src[p]} from {@code offset[p]}, {@code length[p]} bytes; a
     * byte tail under a word is not read) in the preferred width, as the C reader (../shared/tools/readbound) reads:
     * eight loads per step into eight independent vector sums, so the loop waits on loads, not on an add chain, and
     * two streams: parts {@code 2k} and {@code 2k+1} (cut to about the same length by {@code MemoryBound}; an even
     * number of them) read in lockstep, four loads from each per step, then each one's rest word by word. One loop
     * only, so the method is no larger than the old one-part loop: a JVM whose reader ran at 1.5 GB/s for its whole
     * life (the Vector API's calls compiled without their intrinsics) was seen with a second loop for a lone part.
     * The sums run on across the parts: one reduction per
     * task, not per part (a layer of a 1 MiB case is 18-64 KiB). The loop counts an {@code int} (C2 unrolls it and
     * checks ranges once per loop), hence parts of at most {@link #MAX_PART} bytes. Measured in cache
     * (docs/bench-cpu.md, "The read bound"): a {@code long} index, or a reduction and loop exit per part, read the
     * 1 MiB cases 3-7 % slower, and one part at a time instead of two in lockstep about 3 % slower.
     */
    static long read(MemorySegment[] src, long[] offset, long[] length) {
        final long vb = SPECIES.vectorByteSize();
        final long half = 4 * vb;
        LongVector a0 = LongVector.zero(SPECIES);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        LongVector a4 = a0;
        LongVector a5 = a0;
        LongVector a6 = a0;
        LongVector a7 = a0;
        long words = 0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (int p = 0; p + 1 < src.length; p += 2) {
            MemorySegment s = src[p];
            MemorySegment t = src[p + 1];
            long o = offset[p];
            long u = offset[p + 1];
            int n = Math.toIntExact(Math.min(length[p], length[p + 1]) / half);
            for (int i = 0; i < n; i++) {
                long q = o + i * half;
                long r = u + i * half;
                a0 = a0.add(LongVector.fromMemorySegment(SPECIES, s, q, le));
                a1 = a1.add(LongVector.fromMemorySegment(SPECIES, s, q + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(SPECIES, s, q + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(SPECIES, s, q + 3 * vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(SPECIES, t, r, le));
                a5 = a5.add(LongVector.fromMemorySegment(SPECIES, t, r + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(SPECIES, t, r + 2 * vb, le));
                a7 = a7.add(LongVector.fromMemorySegment(SPECIES, t, r + 3 * vb, le));
            }
            long done = n * half;
            words += tail(s, o + done, o + length[p]) + tail(t, u + done, u + length[p + 1]);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }

    /**
     * {@link #read}'s sums for many short parts (SGLang's 2 KiB pages), one part at a time: four loads per step into
     * four sums, then the part's rest word by word. Over such parts it read 1.2-1.3x as fast as the lockstep loop,
     * whose entry and exit per pair of parts dominate when a pair is eight steps long.
     */
    static long readEach(MemorySegment[] src, long[] offset, long[] length) {
        final long vb = SPECIES.vectorByteSize();
        LongVector a0 = LongVector.zero(SPECIES);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        long words = 0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (int p = 0; p < src.length; p++) {
            MemorySegment s = src[p];
            long o = offset[p];
            // the step's offset as i * 4 * vb (an int product first): with i * step (step a long local) the loop
            // read 2 KiB pages 15 % slower; the cast and the rest's loop inline made no difference
            int n = (int) (length[p] / (4 * vb));
            for (int i = 0; i < n; i++) {
                long q = o + i * 4 * vb;
                a0 = a0.add(LongVector.fromMemorySegment(SPECIES, s, q, le));
                a1 = a1.add(LongVector.fromMemorySegment(SPECIES, s, q + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(SPECIES, s, q + 2 * vb, le));
                a3 = a3.add(LongVector.fromMemorySegment(SPECIES, s, q + 3 * vb, le));
            }
            for (long e = o + n * 4 * vb; e + 8 <= o + length[p]; e += 8) {
                words += s.get(WORD, e);
            }
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD) + words;
    }

    /** The words of {@code [o, end)} one at a time (a part's last bytes under a vector step). */
    private static long tail(MemorySegment s, long o, long end) {
        long sum = 0;
        for (; o + 8 <= end; o += 8) {
            sum += s.get(WORD, o);
        }
        return sum;
    }

    /** Whether the preferred width is 512 bits or more, where {@code MemoryBound} takes {@link #read4} on Intel. */
    static final boolean WIDE = SPECIES.vectorBitSize() >= 512;

    /** The longest part {@link #read} takes: its step count must be an {@code int}. */
    static final long MAX_PART = 1L << 30;

    /** The streams {@link #read256} reads in lockstep: {@code MemoryBound} cuts a task's words into groups of as many. */
    static final int STREAMS = 4;

    private static final VectorSpecies<Long> S256 = LongVector.SPECIES_256;

    /**
     * {@link #read} in 256-bit vectors (a separate loop, since a species must be a constant for the JIT), reading
     * {@value #STREAMS} streams: slices {@code 4k .. 4k+3} of {@code src} (cut to the same length by
     * {@code MemoryBound}, each a slice so that one index from 0 addresses all four) in lockstep, two loads (one
     * 64-byte line) from each per step into eight sums, then each one's rest word by word. Four streams, not two:
     * a task of many short parts (DeepSeek MLA's 18 KiB layers) leaves an inner loop, with its mispredicted exit
     * and a cold start on the next parts' lines, half as often; measured in cache with {@code -XX:UseAVX=2}
     * (docs/bench-cpu.md, "The read bound") it read the 1 MiB cases 0-6 % faster than the two-stream loop. At 512
     * bits two streams of four loads stayed ahead, so {@link #read} keeps them.
     */
    static long read256(MemorySegment[] src) {
        final long vb = 32;
        final long step = 2 * vb;
        LongVector a0 = LongVector.zero(S256);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        LongVector a4 = a0;
        LongVector a5 = a0;
        LongVector a6 = a0;
        LongVector a7 = a0;
        long words = 0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (int p = 0; p + 3 < src.length; p += 4) {
            MemorySegment s = src[p];
            MemorySegment t = src[p + 1];
            MemorySegment v = src[p + 2];
            MemorySegment w = src[p + 3];
            long ls = s.byteSize();
            long lt = t.byteSize();
            long lv = v.byteSize();
            long lw = w.byteSize();
            int n = Math.toIntExact(Math.min(Math.min(ls, lt), Math.min(lv, lw)) / step);
            for (int i = 0; i < n; i++) {
                long d = i * step;
                a0 = a0.add(LongVector.fromMemorySegment(S256, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(S256, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(S256, t, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(S256, t, d + vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(S256, v, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(S256, v, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(S256, w, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(S256, w, d + vb, le));
            }
            long done = n * step;
            words += tail(s, done, ls) + tail(t, done, lt) + tail(v, done, lv) + tail(w, done, lw);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }

    /**
     * {@link #read}'s sums on Intel ({@code MemoryBound} picks it there: docs/bench-cpu.md, "On Intel (Emerald Rapids):
     * the in-cache bound"): slices {@code 4k .. 4k+3} of {@code src} (cut to the same length, as for {@link #read256})
     * in lockstep, two loads (at 512 bits two 64-byte lines) from each per step into eight sums, then each one's rest
     * word by word. The offset is a {@code long} stepped by the loop, not an {@code int} step count times the step:
     * C2 turns it into an int loop nest whose inner loop is the eight loads, their adds and one compare (no
     * unrolling), where the {@code int}-counted form is unrolled eight times with the eight adds of each sum in one
     * chain; measured on Emerald Rapids in cache at 512 bits the 1 MiB cases read 5-9 % faster than {@link #read}.
     */
    static long read4(MemorySegment[] src) {
        final long vb = SPECIES.vectorByteSize();
        final long step = 2 * vb;
        LongVector a0 = LongVector.zero(SPECIES);
        LongVector a1 = a0;
        LongVector a2 = a0;
        LongVector a3 = a0;
        LongVector a4 = a0;
        LongVector a5 = a0;
        LongVector a6 = a0;
        LongVector a7 = a0;
        long words = 0;
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (int p = 0; p + 3 < src.length; p += 4) {
            MemorySegment s = src[p];
            MemorySegment t = src[p + 1];
            MemorySegment v = src[p + 2];
            MemorySegment w = src[p + 3];
            long ls = s.byteSize();
            long lt = t.byteSize();
            long lv = v.byteSize();
            long lw = w.byteSize();
            long end = Math.min(Math.min(ls, lt), Math.min(lv, lw)) / step * step;
            long d = 0;
            for (; d < end; d += step) {
                a0 = a0.add(LongVector.fromMemorySegment(SPECIES, s, d, le));
                a1 = a1.add(LongVector.fromMemorySegment(SPECIES, s, d + vb, le));
                a2 = a2.add(LongVector.fromMemorySegment(SPECIES, t, d, le));
                a3 = a3.add(LongVector.fromMemorySegment(SPECIES, t, d + vb, le));
                a4 = a4.add(LongVector.fromMemorySegment(SPECIES, v, d, le));
                a5 = a5.add(LongVector.fromMemorySegment(SPECIES, v, d + vb, le));
                a6 = a6.add(LongVector.fromMemorySegment(SPECIES, w, d, le));
                a7 = a7.add(LongVector.fromMemorySegment(SPECIES, w, d + vb, le));
            }
            words += tail(s, d, ls) + tail(t, d, lt) + tail(v, d, lv) + tail(w, d, lw);
        }
        return a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).reduceLanes(VectorOperators.ADD) + words;
    }

    /**
     * {@link ProbeWindowBound}'s loop over pages {@code p0 .. p1-1} of {@code order}: each 64-byte window one load
     * of the preferred width (several where it is under 512 bits) added lane by lane.
     */
    static long windows(MemorySegment[] runSeg, int[] runStart, long[] base, long[] pageStride, long[] tailStep,
            long[] tailSkip, io.kvchecksum.SlicePlan plan, int[] order, long[] lastSlot, int p0, int p1) {
        final long vb = SPECIES.vectorByteSize();
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        LongVector h = LongVector.zero(SPECIES);
        LongVector t = h;
        for (int p = p0; p < p1; p++) {
            int i = order[p];
            long page = plan.page(i);
            long ls = lastSlot[i];
            for (int r = 0; r < runSeg.length; r++) {
                MemorySegment m = runSeg[r];
                for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                    long at = base[j] + page * pageStride[j];
                    long tail = at + ls * tailStep[j] + tailSkip[j];
                    for (long o = 0; o < 64; o += vb) {
                        h = h.add(LongVector.fromMemorySegment(SPECIES, m, at + o, le));
                        t = t.add(LongVector.fromMemorySegment(SPECIES, m, tail + o, le));
                    }
                }
            }
        }
        return h.add(t).reduceLanes(VectorOperators.ADD);
    }
}
