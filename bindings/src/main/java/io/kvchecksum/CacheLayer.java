package io.kvchecksum;

import java.util.Objects;

/**
 * The KV of one layer (or of one distinct cache of a layer) held by this worker.
 *
 * @param layer the layer number from the layer's name (e.g. 12 for {@code model.layers.12.self_attn.attn}); it,
 *     not the position in the group, sets the layer's factor
 * @param firstHead the global KV head number of local head 0 (rank {@code r} of a TP group holding {@code k} heads
 *     has {@code firstHead = r*k}); a second cache of the same layer takes the head numbers after the first's
 * @param numHeads KV heads held here (1 for MLA latent caches)
 * @param k the K region; for MLA, the latent row
 * @param v the V region, or {@code null} when the cell is K only (MLA)
 */
public record CacheLayer(int layer, int firstHead, int numHeads, KvRegion k, KvRegion v) {

    /**
     * Validates the numbers; the regions' extents are checked by the {@link KvCacheGroup} that holds the layer.
     *
     * @throws InvalidLayoutException when {@code layer} or {@code firstHead} is negative, {@code numHeads} is not
     *     positive, or the heads reach past {@link Definition#MAX_KV_HEADS_PER_LAYER}
     * @throws NullPointerException when {@code k} is null
     */
    public CacheLayer {
        Objects.requireNonNull(k, "k");
        if (layer < 0) {
            throw new InvalidLayoutException("layer number must be non-negative, got " + layer);
        }
        if (firstHead < 0) {
            throw new InvalidLayoutException("layer " + layer + ": firstHead must be non-negative, got " + firstHead);
        }
        if (numHeads <= 0) {
            throw new InvalidLayoutException("layer " + layer + ": numHeads must be positive, got " + numHeads);
        }
        if ((long) firstHead + numHeads > Definition.MAX_KV_HEADS_PER_LAYER) {
            throw new InvalidLayoutException("layer " + layer + ": heads " + firstHead + ".." + (firstHead + (long) numHeads - 1)
                    + " exceed the limit of " + Definition.MAX_KV_HEADS_PER_LAYER + " KV heads per layer");
        }
    }

    /** {@return a layer whose cell is K bytes then V bytes} */
    public static CacheLayer of(int layer, int firstHead, int numHeads, KvRegion k, KvRegion v) {
        return new CacheLayer(layer, firstHead, numHeads, k, v);
    }

    /**
     * {@return a layer whose cell is one region only (MLA latent rows, or an indexer's K cache)}
     *
     * @param layer the layer number, as for the record's {@code layer}
     * @param firstHead the global KV head number of local head 0
     * @param numHeads KV heads held here (1 for an MLA latent cache)
     * @param k the only region of the cell
     */
    public static CacheLayer kOnly(int layer, int firstHead, int numHeads, KvRegion k) {
        return new CacheLayer(layer, firstHead, numHeads, k, null);
    }

    /** {@return pieces per cell, K bytes then V bytes: {@code ceil(cellBytes / 8)} (a padded cell's last piece counts)} */
    public int pieces() {
        return (int) Math.ceilDiv((long) cellBytes(), 8);
    }

    /** {@return bytes per cell, K and V together} */
    public int cellBytes() {
        return k.cellBytes() + (v == null ? 0 : v.cellBytes());
    }
}
