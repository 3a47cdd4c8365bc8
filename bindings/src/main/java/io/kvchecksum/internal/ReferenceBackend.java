package io.kvchecksum.internal;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.Definition;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.Rechunked;
import io.kvchecksum.RequestBlocks;
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
    public long[] blockChecksums(KvCacheGroup group, RequestBlocks request) {
        return combine(sliceSums(group, request));
    }

    @Override
    public SliceSums sliceSums(KvCacheGroup group, RequestBlocks request) {
        Checks.validate(group, request, name(), true);
        int nb = request.numBlocks();
        int ns = group.numSlices();
        int[] layers = new int[ns];
        int[] heads = new int[ns];
        long[] values = new long[ns * nb];
        int slice = 0;
        for (CacheLayer layer : group.layers()) {
            int pieces = layer.pieces();
            for (int h = 0; h < layer.numHeads(); h++) {
                layers[slice] = layer.layer();
                heads[slice] = layer.firstHead() + h;
                for (int b = 0; b < nb; b++) {
                    long block = request.firstBlock() + b;
                    long s = 0;
                    for (long t = request.blockStart(block); t < request.blockEnd(block); t++) {
                        for (int p = 0; p < pieces; p++) {
                            long x = Definition.pieceValue(piece(group, request, layer, h, t, p));
                            long j = t * pieces + p;
                            s += x * (2 * j + 1);
                        }
                    }
                    values[slice * nb + b] = s;
                }
                slice++;
            }
        }
        return new SliceSums(layers, heads, request.firstBlock(), nb, values);
    }

    private static long piece(KvCacheGroup group, RequestBlocks request, CacheLayer layer, int head, long t, int p) {
        KvRegion region = layer.k();
        if (p >= layer.k().pieces()) {
            region = layer.v();
            p -= layer.k().pieces();
        }
        long index = t - request.startToken();
        int page = request.page((int) (index / group.pageSize()));
        long slot = index % group.pageSize();
        MemorySegment segment = ((KvMemory.Host) region.memory()).segment();
        return segment.get(PIECE, region.cellOffset(page, slot, head) + 8L * p);
    }

    @Override
    public long[] combine(SliceSums sums) {
        return Arithmetic.combine(sums);
    }

    @Override
    public Rechunked rechunk(long[] values, long firstBlock, int factor) {
        return Arithmetic.rechunk(values, firstBlock, factor);
    }

    @Override
    public String toString() {
        return description();
    }
}
