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
        SlicePlan.Part part = slice.k();
        if (p >= part.pieces()) {
            p -= part.pieces();
            part = slice.v();
        }
        MemorySegment segment = ((KvMemory.Host) part.memory()).segment();
        return segment.get(PIECE, part.cellOffset(plan.pageOf(t), plan.slotOf(t)) + 8L * p);
    }

    @Override
    public String toString() {
        return description();
    }
}
