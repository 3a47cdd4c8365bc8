package io.kvchecksum.internal;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.Definition;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The CPU's byte-assembling path, for slices with {@link SlicePlan.Slice#byteCells() byte cells}: a piece straddling
 * K's end and V's start, or a cell zero-padded to whole pieces ({@link io.kvchecksum.CellPadding#ZEROS}). Each cell's
 * K and V bytes are copied side by side into a zeroed buffer of whole pieces and read from there, so V's pieces need
 * not lie at multiples of 8 from its base. Single-threaded and simple: such caches (indexer caches, odd MLA splits)
 * are a small share of a request's bytes, and the whole-piece loops stay as they are for everything else.
 */
final class ByteCellSums {
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private ByteCellSums() {
    }

    /** Slice sums, row-major {@code [slice][block]}, of a plan whose slices all have byte cells, in host memory. */
    static long[] values(SlicePlan plan) {
        ChecksumMode mode = plan.mode();
        RequestBlocks request = plan.request();
        int nb = plan.numBlocks();
        long[] values = new long[plan.numSlices() * nb];
        for (int i = 0; i < plan.numSlices(); i++) {
            SlicePlan.Slice s = plan.slice(i);
            int pieces = s.pieces();
            int kBytes = s.k().bytes();
            int vBytes = s.v() == null ? 0 : s.v().bytes();
            MemorySegment kSeg = ((KvMemory.Host) s.k().memory()).segment();
            MemorySegment vSeg = s.v() == null ? null : ((KvMemory.Host) s.v().memory()).segment();
            byte[] cell = new byte[8 * pieces];  // bytes past kBytes + vBytes stay zero: the padding
            MemorySegment cellSeg = MemorySegment.ofArray(cell);
            for (int b = 0; b < nb; b++) {
                long block = request.firstBlock() + b;
                long sum = 0;
                for (long t = request.blockStart(block); t < request.blockEnd(block); t++) {
                    int page = plan.pageOf(t);
                    long slot = plan.slotOf(t);
                    MemorySegment.copy(kSeg, s.k().cellOffset(page, slot), cellSeg, 0, kBytes);
                    if (vSeg != null) {
                        MemorySegment.copy(vSeg, s.v().cellOffset(page, slot), cellSeg, kBytes, vBytes);
                    }
                    long w = Definition.weight(t * pieces);
                    for (int p = 0; p < pieces; p++, w += 2) {
                        sum += Definition.pieceValue((long) LONG_LE.get(cell, 8 * p), mode) * w;
                    }
                }
                values[i * nb + b] = sum;
            }
        }
        return values;
    }
}
