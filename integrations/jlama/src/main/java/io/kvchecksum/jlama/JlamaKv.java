package io.kvchecksum.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A zero-copy view of one Jlama session's KV cache as a {@link KvCacheGroup}: the group describes Jlama's own
 * memory, nothing is copied.
 *
 * <p>Jlama keeps a session's KV in pages of shape {@code [layersPerPage, 2, positionsPerPage, kvHeads * headDim]}
 * (K at index 0, V at 1; F32 or BF16). For one layer, {@code KvBuffer.getKeyTensorsUptoPosition(layer, 0)[0]} is a
 * slice {@code [positionsPerPage, kvHeads * headDim]} whose memory segment starts at position 0: token-major, one
 * head's {@code headDim} values after another. Each layer therefore becomes one {@link CacheLayer} with a K and a V
 * {@link KvRegion} over those two segments: token stride {@code kvHeads * headDim * elem}, head stride
 * {@code headDim * elem}, cell {@code headDim * elem} bytes. The checksum's pages are runs of {@code pageSize}
 * positions of that segment, so a request's page table is simply {@code 0, 1, 2, ...}.
 *
 * <p>Limits, each refused with an {@link IllegalArgumentException} naming it: a session whose positions span several
 * Jlama context pages (several segments per layer; {@link KvRegion} takes one memory per region), a distributed model
 * whose KV is a sparse column range, and a working dtype other than F32 or BF16.
 */
public final class JlamaKv {

    private final KvCacheGroup group;
    private final List<MemorySegment> keys;
    private final List<MemorySegment> values;
    private final int positions;
    private final long rowBytes;

    private JlamaKv(KvCacheGroup group, List<MemorySegment> keys, List<MemorySegment> values, int positions, long rowBytes) {
        this.group = group;
        this.keys = keys;
        this.values = values;
        this.positions = positions;
        this.rowBytes = rowBytes;
    }

    /**
     * The view of {@code buffer}, a session cache of {@code model}, in pages of {@code pageSize} positions.
     *
     * @param pageSize positions per checksum page; must divide the positions Jlama keeps per page
     */
    public static JlamaKv of(AbstractModel model, KvBufferCache.KvBuffer buffer, int pageSize) {
        Config c = model.getConfig();
        int elem = switch (model.getWorkingDType()) {
            case F32 -> 4;
            case BF16 -> 2;
            default -> throw new IllegalArgumentException("Jlama KV of working dtype " + model.getWorkingDType()
                    + " is not supported (F32 or BF16)");
        };
        if (c.kvLength != c.dctx().kvSegmentLength) {
            throw new IllegalArgumentException("a distributed Jlama model holds KV columns " + c.dctx().kvSegmentStart + ".."
                    + c.dctx().kvSegmentEnd + " of " + c.kvLength + "; only whole-KV workers are supported");
        }
        int kvHeads = c.numberOfKeyValueHeads;
        int headDim = c.kvLength / kvHeads;
        long rowBytes = (long) c.kvLength * elem;
        List<MemorySegment> ks = new ArrayList<>();
        List<MemorySegment> vs = new ArrayList<>();
        List<CacheLayer> layers = new ArrayList<>();
        int positions = -1;
        for (int l = 0; l < c.dctx().numberOfLayers; l++) {
            MemorySegment k = onlyPage(buffer.getKeyTensorsUptoPosition(l, 0), l, "K");
            MemorySegment v = onlyPage(buffer.getValTensorsUptoPosition(l, 0), l, "V");
            int p = Math.toIntExact(k.byteSize() / rowBytes);
            if (p < c.contextLength) {
                throw new IllegalArgumentException("Jlama keeps " + p + " of the model's " + c.contextLength
                        + " positions per page, so a session spans several memory segments per layer; one region"
                        + " takes one segment");
            }
            if (p % pageSize != 0) {
                throw new IllegalArgumentException("page size " + pageSize + " does not divide Jlama's " + p + " positions");
            }
            positions = p;
            ks.add(k);
            vs.add(v);
            long pageStride = pageSize * rowBytes;
            KvRegion kr = new KvRegion(KvMemory.host(k), 0, pageStride, rowBytes, (long) headDim * elem, headDim * elem);
            KvRegion vr = new KvRegion(KvMemory.host(v), 0, pageStride, rowBytes, (long) headDim * elem, headDim * elem);
            // Jlama's layer index is the number in the weights' names (model.layers.<l>.self_attn).
            layers.add(CacheLayer.of(c.dctx().layerStart + l, c.dctx().kvSegmentStart / headDim, kvHeads, kr, vr));
        }
        return new JlamaKv(KvCacheGroup.of(pageSize, positions / pageSize, layers), List.copyOf(ks), List.copyOf(vs),
                positions, rowBytes);
    }

    private static MemorySegment onlyPage(AbstractTensor<?, ?>[] pages, int layer, String kind) {
        if (pages.length != 1) {
            throw new IllegalArgumentException("layer " + layer + " " + kind + ": expected one Jlama page at position 0, got "
                    + pages.length);
        }
        return pages[0].getMemorySegment();
    }

    /** The group over the session's memory. */
    public KvCacheGroup group() {
        return group;
    }

    /** The page table of the first {@code numTokens} positions: {@code 0 .. ceil(numTokens / pageSize) - 1}. */
    public int[] pageTable(long numTokens) {
        int n = Math.toIntExact(Math.ceilDiv(numTokens, (long) group.pageSize()));
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = i;
        }
        return t;
    }

    /** Layers in the session. */
    public int numLayers() {
        return keys.size();
    }

    /** Positions the session's segments hold. */
    public int positions() {
        return positions;
    }

    /** Bytes of one position of one layer's K (or V): all KV heads. */
    public long rowBytes() {
        return rowBytes;
    }

    /** Layer {@code l}'s K segment, positions {@code 0 .. positions()-1}: what a transfer engine reads and writes. */
    public MemorySegment keys(int l) {
        return keys.get(l);
    }

    /** Layer {@code l}'s V segment. */
    public MemorySegment values(int l) {
        return values.get(l);
    }
}
