package io.kvchecksum.internal;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.Definition;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The definition, read literally: for every block, slice, token and piece, {@code x * (2j+1)}. Single-threaded and
 * slow on purpose; every other backend is tested against it.
 */
public final class ReferenceBackend implements KvChecksum {
    private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Override
    public String name() {
        return "reference";
    }

    @Override
    public String description() {
        return "reference (pure Java, single-threaded, literal definition)";
    }

    @Override
    public boolean supports(ChecksumMode mode) {
        return true;
    }

    @Override
    public long[] blockChecksums(SlicePlan plan) {
        return sliceSums(plan).combine();
    }

    @Override
    public SliceSums sliceSums(SlicePlan plan) {
        plan.requireHost(name(), "");
        plan.requireMode(this);
        ChecksumMode mode = plan.mode();
        RequestBlocks request = plan.request();
        int nb = plan.numBlocks();
        long[] values = new long[plan.numSlices() * nb];
        for (int i = 0; i < plan.numSlices(); i++) {
            SlicePlan.Slice slice = plan.slice(i);
            int pieces = slice.pieces();
            for (int b = 0; b < nb; b++) {
                long block = request.firstBlock() + b;
                long s = 0;
                for (long t = request.blockStart(block); t < request.blockEnd(block); t++) {
                    for (int p = 0; p < pieces; p++) {
                        long x = Definition.pieceValue(piece(plan, slice, t, p), mode);
                        long j = t * pieces + p;
                        s += x * Definition.weight(j);
                    }
                }
                values[i * nb + b] = s;
            }
        }
        return plan.sliceSums(values);
    }

    private static long piece(SlicePlan plan, SlicePlan.Slice slice, long t, int p) {
        if (slice.byteCells()) {
            return assembledPiece(plan, slice, t, p);
        }
        SlicePlan.Part part = slice.k();
        if (p >= part.pieces()) {
            p -= part.pieces();
            part = slice.v();
        }
        MemorySegment segment = ((KvMemory.Host) part.memory()).segment();
        return segment.get(PIECE, part.cellOffset(plan.pageOf(t), plan.slotOf(t)) + 8L * p);
    }

    /**
     * Piece {@code p} of a cell whose K or V is not whole pieces, literally: bytes {@code 8p .. 8p+7} of the cell's
     * byte sequence (K bytes, then V bytes, then zeros when the plan pads cells), little-endian.
     */
    private static long assembledPiece(SlicePlan plan, SlicePlan.Slice slice, long t, int p) {
        long x = 0;
        for (int b = 7; b >= 0; b--) {
            x = (x << 8) | (cellByte(plan, slice, t, 8 * p + b) & 0xFF);
        }
        return x;
    }

    private static byte cellByte(SlicePlan plan, SlicePlan.Slice slice, long t, int q) {
        SlicePlan.Part part = slice.k();
        if (q >= part.bytes()) {
            q -= part.bytes();
            part = slice.v();
            if (part == null || q >= part.bytes()) {
                return 0;
            }
        }
        MemorySegment segment = ((KvMemory.Host) part.memory()).segment();
        return segment.get(ValueLayout.JAVA_BYTE, part.cellOffset(plan.pageOf(t), plan.slotOf(t)) + q);
    }

    @Override
    public String toString() {
        return description();
    }
}
