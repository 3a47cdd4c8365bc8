package io.kvchecksum.internal;

import io.kvchecksum.Definition;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.stream.IntStream;

/**
 * The fast CPU backend's mixed mode ({@link io.kvchecksum.ChecksumMode#MIXED}): every piece through
 * {@link Definition#feistel3} before it is summed, kept apart from the standard kernels so that they stay exactly as
 * tuned. Per slice, block and part (K, V), a piece position {@code p} (a vector lane) runs over the block's tokens with
 * {@code A += f(x); T += A}; then {@code sum_i f(x_i)*(2((t0+i)P + base + p) + 1) = (2(t0 P + base + p) + 1 + 2Pn)A - 2P T}:
 * no 64-bit multiply per piece, only the mixer's three 32 x 32 -> 64-bit ones.
 */
final class MixedSliceSums {
    private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** One part of one slice over one block's tokens: pieces {@code 0..pieces-1} at {@code off[i] + 8p}. */
    interface Part {
        long sum(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int pieces);

        String describe();
    }

    private static final Part PART = load();

    private MixedSliceSums() {
    }

    /** What runs the mixed mode, for descriptions. */
    static String describe() {
        return PART.describe();
    }

    /** The slice sums of a host plan in the mixed mode, row {@code i} at {@code i*numBlocks}; slices in parallel if asked. */
    static long[] values(SlicePlan plan, boolean parallel) {
        int nb = plan.numBlocks();
        long[] values = new long[plan.numSlices() * nb];
        IntStream slices = IntStream.range(0, plan.numSlices());
        (parallel ? slices.parallel() : slices).forEach(i -> slice(plan, i, values));
        return values;
    }

    private static void slice(SlicePlan plan, int i, long[] values) {
        RequestBlocks request = plan.request();
        SlicePlan.Slice s = plan.slice(i);
        int nb = plan.numBlocks();
        int pieces = s.pieces();
        int maxTokens = (int) Math.min(request.blockSize(), request.numTokens() - request.startToken());
        long[] kOff = new long[maxTokens];
        long[] vOff = s.v() == null ? null : new long[maxTokens];
        MemorySegment kSeg = ((KvMemory.Host) s.k().memory()).segment();
        MemorySegment vSeg = s.v() == null ? null : ((KvMemory.Host) s.v().memory()).segment();
        int pageSize = plan.pageSize();
        for (int b = 0; b < nb; b++) {
            long block = request.firstBlock() + b;
            long t0 = request.blockStart(block);
            int n = (int) (request.blockEnd(block) - t0);
            long index = t0 - request.startToken();
            int tableIndex = (int) (index / pageSize);
            int slot = (int) (index % pageSize);
            long page = plan.page(tableIndex);
            for (int t = 0; t < n; t++) {
                kOff[t] = s.k().cellOffset(page, slot);
                if (vOff != null) {
                    vOff[t] = s.v().cellOffset(page, slot);
                }
                if (++slot == pageSize && t + 1 < n) {
                    slot = 0;
                    page = plan.page(++tableIndex);
                }
            }
            long sum = PART.sum(kSeg, kOff, n, t0, pieces, 0, s.k().pieces());
            if (vSeg != null) {
                sum += PART.sum(vSeg, vOff, n, t0, pieces, s.k().pieces(), s.v().pieces());
            }
            values[i * nb + b] = sum;
        }
    }

    /** Pieces {@code from..pieces-1} one at a time: the scalar loop, and the vector loop's tail. */
    static long scalar(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int from, int pieces) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            long w = 2 * ((t0 + i) * cellPieces + pieceBase + from) + 1;
            for (int p = from; p < pieces; p++) {
                s += Definition.feistel3(seg.get(PIECE, off[i] + 8L * p)) * w;
                w += 2;
            }
        }
        return s;
    }

    private static Part load() {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
                && !Boolean.getBoolean("kvchecksum.cpu.scalar")) {
            try {
                return new MixedVectorPart();
            } catch (LinkageError e) {
                // fall through to the scalar loop
            }
        }
        return new Part() {
            @Override
            public long sum(MemorySegment seg, long[] off, int n, long t0, int cellPieces, int pieceBase, int pieces) {
                return scalar(seg, off, n, t0, cellPieces, pieceBase, 0, pieces);
            }

            @Override
            public String describe() {
                return "mixed mode: scalar";
            }
        };
    }
}
