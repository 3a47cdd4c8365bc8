package io.kvchecksum;

import java.util.ArrayList;
import java.util.List;

/**
 * Ready-made descriptions of the KV layouts engines use, as strides over the engine's own tensors (no copy).
 *
 * <p>Shapes are the physical tensor shapes in row-major (C) order; {@code elemBytes} is the dtype's size (1 for fp8,
 * 2 for bf16/fp16, 4 for fp32). {@code layerNumbers[i]} is the layer number of {@code caches.get(i)}; {@code firstHead}
 * is the global number of this worker's head 0 ({@code rank * heads} under TP).
 */
public final class KvLayouts {
    private KvLayouts() {
    }

    /**
     * A paged cache's shape: pages, slots per page, KV heads, head dim, bytes per element.
     *
     * @param numPages physical pages in the cache (for SGLang, {@code slots / page_size}), positive
     * @param pageSize tokens (slots) per page, positive
     * @param heads KV heads held by this worker, positive (1 for MLA)
     * @param headDim elements per head and token, positive; {@code headDim * elemBytes} must be a multiple of 8
     * @param elemBytes bytes per element (1 for fp8, 2 for bf16/fp16, 4 for fp32), positive
     */
    public record PagedShape(long numPages, int pageSize, int heads, int headDim, int elemBytes) {
        /**
         * Validates that every dimension is positive; the cell size is checked when a layout uses it.
         *
         * @throws InvalidLayoutException naming every dimension when one is zero or negative
         */
        public PagedShape {
            if (numPages <= 0 || pageSize <= 0 || heads <= 0 || headDim <= 0 || elemBytes <= 0) {
                throw new InvalidLayoutException("paged shape must be positive in every dimension: " + numPages + " pages, "
                        + pageSize + " slots, " + heads + " heads, head dim " + headDim + ", " + elemBytes + "-byte elements");
            }
        }

        int cellBytes() {
            return checkedCell(headDim, elemBytes);
        }
    }

    /**
     * {@return one layer in vLLM FlashAttention's layout: per layer {@code (2, num_pages, page_size, heads, head_dim)},
     * K at [0] and V at [1]}
     *
     * @param layer the layer number from the layer's name
     * @param firstHead the global KV head number of this worker's head 0
     * @param cache the layer's whole KV tensor, K half first
     * @param s the tensor's shape
     * @throws InvalidLayoutException when a cell is not a whole number of 8-byte pieces, or the layer's numbers are
     *     invalid as {@link CacheLayer} checks them
     */
    public static CacheLayer vllmFlashLayer(int layer, int firstHead, KvMemory cache, PagedShape s) {
        long token = (long) s.heads() * s.cellBytes();
        long page = s.pageSize() * token;
        return kAndV(layer, firstHead, cache, s, s.numPages() * page, page, token, s.cellBytes());
    }

    /**
     * {@return one layer in FlashInfer/Triton's NHD layout: per layer
     * {@code (num_pages, 2, page_size, heads, head_dim)}}
     *
     * @param layer the layer number from the layer's name
     * @param firstHead the global KV head number of this worker's head 0
     * @param cache the layer's whole KV tensor, K and V interleaved per page
     * @param s the tensor's shape
     * @throws InvalidLayoutException when a cell is not a whole number of 8-byte pieces, or the layer's numbers are
     *     invalid as {@link CacheLayer} checks them
     */
    public static CacheLayer flashInferNhdLayer(int layer, int firstHead, KvMemory cache, PagedShape s) {
        long token = (long) s.heads() * s.cellBytes();
        long half = s.pageSize() * token;
        return kAndV(layer, firstHead, cache, s, half, 2 * half, token, s.cellBytes());
    }

    /**
     * {@return one layer in FlashInfer's HND layout: per layer {@code (num_pages, 2, heads, page_size, head_dim)}: each
     * head's page is contiguous}
     *
     * @param layer the layer number from the layer's name
     * @param firstHead the global KV head number of this worker's head 0
     * @param cache the layer's whole KV tensor, K and V interleaved per page
     * @param s the tensor's shape
     * @throws InvalidLayoutException when a cell is not a whole number of 8-byte pieces, or the layer's numbers are
     *     invalid as {@link CacheLayer} checks them
     */
    public static CacheLayer flashInferHndLayer(int layer, int firstHead, KvMemory cache, PagedShape s) {
        long head = (long) s.pageSize() * s.cellBytes();
        long half = s.heads() * head;
        return kAndV(layer, firstHead, cache, s, half, 2 * half, s.cellBytes(), head);
    }

    /** The paged layouts' layer: K from the tensor's start, V from {@code vOffset}, both with the same strides. */
    private static CacheLayer kAndV(int layer, int firstHead, KvMemory cache, PagedShape s, long vOffset, long page,
            long token, long head) {
        return CacheLayer.of(layer, firstHead, s.heads(),
                new KvRegion(cache, 0, page, token, head, s.cellBytes()),
                new KvRegion(cache, vOffset, page, token, head, s.cellBytes()));
    }

    /**
     * {@return one layer in vLLM's MLA layout: per layer {@code (num_pages, page_size, kv_lora_rank + rope_dim)} (576
     * for DeepSeek), one latent "head", K only; {@code s.heads()} must be 1} {@code head} is 0, or the next number for
     * a second cache of the layer.
     *
     * @param layer the layer number from the layer's name
     * @param head the latent head's number: 0, or the next free number for a second cache of the same layer
     * @param cache the layer's latent tensor
     * @param s the tensor's shape, with {@code heads == 1} and {@code headDim = kv_lora_rank + rope_dim}
     * @throws InvalidLayoutException when {@code s.heads() != 1} or a cell is not a whole number of 8-byte pieces
     */
    public static CacheLayer vllmMlaLayer(int layer, int head, KvMemory cache, PagedShape s) {
        if (s.heads() != 1) {
            throw new InvalidLayoutException("an MLA cache has one latent head, got " + s.heads());
        }
        long cell = s.cellBytes();
        return CacheLayer.kOnly(layer, head, 1, new KvRegion(cache, 0, s.pageSize() * cell, cell, 0, s.cellBytes()));
    }

    /**
     * {@return one layer of SGLang's per-layer pool: {@code k_buffer[l]} and {@code v_buffer[l]} of
     * {@code (slots, heads, head_dim)}; page {@code p} is slots {@code [p*page_size, (p+1)*page_size)}, so
     * {@code numPages = slots / page_size}} For MLA pass the {@code kv_buffer[l]} of {@code (slots, 1, 576)} as
     * {@code k} and {@code null} as {@code v}.
     *
     * @param layer the layer number from the layer's name
     * @param firstHead the global KV head number of this worker's head 0
     * @param k the layer's {@code k_buffer} (for MLA, its {@code kv_buffer})
     * @param v the layer's {@code v_buffer}, or {@code null} for MLA
     * @param s the pool's shape, {@code numPages = slots / page_size}
     * @throws InvalidLayoutException when a cell is not a whole number of 8-byte pieces, or the layer's numbers are
     *     invalid as {@link CacheLayer} checks them
     */
    public static CacheLayer sglangLayer(int layer, int firstHead, KvMemory k, KvMemory v, PagedShape s) {
        long cell = s.cellBytes();
        long token = s.heads() * cell;
        long page = s.pageSize() * token;
        KvRegion kr = new KvRegion(k, 0, page, token, cell, s.cellBytes());
        return v == null ? CacheLayer.kOnly(layer, firstHead, s.heads(), kr)
                : CacheLayer.of(layer, firstHead, s.heads(), kr, new KvRegion(v, 0, page, token, cell, s.cellBytes()));
    }

    /**
     * {@return a group of vLLM FlashAttention layers sharing one shape}
     *
     * @param s the shape every layer's tensor has
     * @param firstHead the global KV head number of this worker's head 0
     * @param layerNumbers the layer number of each cache, or {@code null} for {@code 0 .. caches.size()-1}
     * @param caches one KV tensor per layer
     * @throws InvalidLayoutException when {@code layerNumbers} and {@code caches} differ in length, or the group is
     *     invalid as {@link KvCacheGroup} checks it
     */
    public static KvCacheGroup vllmFlash(PagedShape s, int firstHead, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> vllmFlashLayer(l, firstHead, c, s));
    }

    /**
     * {@return a group of FlashInfer NHD layers sharing one shape}
     *
     * @param s the shape every layer's tensor has
     * @param firstHead the global KV head number of this worker's head 0
     * @param layerNumbers the layer number of each cache, or {@code null} for {@code 0 .. caches.size()-1}
     * @param caches one KV tensor per layer
     * @throws InvalidLayoutException when {@code layerNumbers} and {@code caches} differ in length, or the group is
     *     invalid as {@link KvCacheGroup} checks it
     */
    public static KvCacheGroup flashInferNhd(PagedShape s, int firstHead, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> flashInferNhdLayer(l, firstHead, c, s));
    }

    /**
     * {@return a group of FlashInfer HND layers sharing one shape}
     *
     * @param s the shape every layer's tensor has
     * @param firstHead the global KV head number of this worker's head 0
     * @param layerNumbers the layer number of each cache, or {@code null} for {@code 0 .. caches.size()-1}
     * @param caches one KV tensor per layer
     * @throws InvalidLayoutException when {@code layerNumbers} and {@code caches} differ in length, or the group is
     *     invalid as {@link KvCacheGroup} checks it
     */
    public static KvCacheGroup flashInferHnd(PagedShape s, int firstHead, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> flashInferHndLayer(l, firstHead, c, s));
    }

    /**
     * {@return a group of vLLM MLA layers sharing one shape ({@code s.heads() == 1})}
     *
     * @param s the shape every layer's latent tensor has ({@code heads == 1})
     * @param layerNumbers the layer number of each cache, or {@code null} for {@code 0 .. caches.size()-1}
     * @param caches one latent tensor per layer
     * @throws InvalidLayoutException when {@code s.heads() != 1}, {@code layerNumbers} and {@code caches} differ in
     *     length, or the group is invalid as {@link KvCacheGroup} checks it
     */
    public static KvCacheGroup vllmMla(PagedShape s, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> vllmMlaLayer(l, 0, c, s));
    }

    /**
     * {@return a group over an SGLang pool: {@code kBuffers.get(i)} and {@code vBuffers.get(i)} per layer
     * ({@code vBuffers} null for MLA)} {@code s.numPages()} is {@code slots / page_size}.
     *
     * @param s the shape every layer's buffers have
     * @param firstHead the global KV head number of this worker's head 0
     * @param layerNumbers the layer number of each buffer pair, or {@code null} for {@code 0 .. kBuffers.size()-1}
     * @param kBuffers one {@code k_buffer} (MLA: {@code kv_buffer}) per layer
     * @param vBuffers one {@code v_buffer} per layer, as many as {@code kBuffers}; {@code null} for MLA
     * @throws InvalidLayoutException when the lists or {@code layerNumbers} differ in length, or the group is invalid
     *     as {@link KvCacheGroup} checks it
     */
    public static KvCacheGroup sglang(PagedShape s, int firstHead, int[] layerNumbers, List<KvMemory> kBuffers,
            List<KvMemory> vBuffers) {
        if (vBuffers != null && vBuffers.size() != kBuffers.size()) {
            throw new InvalidLayoutException(kBuffers.size() + " K buffers but " + vBuffers.size() + " V buffers");
        }
        List<CacheLayer> layers = new ArrayList<>();
        int[] numbers = numbers(layerNumbers, kBuffers.size());
        for (int i = 0; i < kBuffers.size(); i++) {
            layers.add(sglangLayer(numbers[i], firstHead, kBuffers.get(i), vBuffers == null ? null : vBuffers.get(i), s));
        }
        return KvCacheGroup.of(s.pageSize(), s.numPages(), layers);
    }

    /**
     * {@return a group in the GPULlama3.java style: one K array and one V array for all layers, each
     * {@code [layer][pos][heads*head_dim]}, indexed by absolute position {@code 0..maxPos-1}} Described as pages of one
     * slot, page id = position; pair it with {@link #flatRequest}.
     *
     * @param layerNumbers the layer number of each layer, in array order; its length is the number of layers
     * @param firstHead the global KV head number of this worker's head 0
     * @param k the K array of all layers
     * @param v the V array of all layers
     * @param maxPos positions per layer (the arrays' second dimension), positive
     * @param heads KV heads per position, positive
     * @param headDim elements per head, positive
     * @param elemBytes bytes per element; {@code headDim * elemBytes} must be a multiple of 8
     * @throws InvalidLayoutException when a cell is not a whole number of 8-byte pieces or the arrays are too small
     */
    public static KvCacheGroup flat(int[] layerNumbers, int firstHead, KvMemory k, KvMemory v, int maxPos, int heads,
            int headDim, int elemBytes) {
        int numLayers = layerNumbers.length;
        int cell = checkedCell(headDim, elemBytes);
        long row = (long) heads * cell;
        long layerBytes = maxPos * row;
        List<CacheLayer> layers = new ArrayList<>();
        for (int i = 0; i < numLayers; i++) {
            layers.add(CacheLayer.of(layerNumbers[i], firstHead, heads,
                    new KvRegion(k, i * layerBytes, row, 0, cell, cell),
                    new KvRegion(v, i * layerBytes, row, 0, cell, cell)));
        }
        return KvCacheGroup.of(1, maxPos, layers);
    }

    /**
     * {@return the request for a {@link #flat} group: the block table is the positions themselves}
     *
     * @param numTokens the request's token count (its positions are {@code 0 .. numTokens-1})
     * @param firstBlock the first block position to checksum
     * @param blockSize tokens per checksum block, positive
     * @throws InvalidLayoutException when the checksummed range is negative or longer than an array holds
     */
    public static RequestBlocks flatRequest(long numTokens, long firstBlock, int blockSize) {
        long start = firstBlock * blockSize;
        long n = numTokens - start;
        if (n < 0 || n > Integer.MAX_VALUE) {
            throw new InvalidLayoutException("flat request: tokens " + start + ".." + numTokens + " do not form a table");
        }
        int[] table = new int[(int) n];
        for (int i = 0; i < table.length; i++) {
            table[i] = Math.toIntExact(start + i);
        }
        return RequestBlocks.of(table, numTokens, firstBlock, blockSize);
    }

    private interface LayerMaker {
        CacheLayer make(int layer, KvMemory cache);
    }

    private static KvCacheGroup group(PagedShape s, int[] layerNumbers, List<KvMemory> caches, LayerMaker maker) {
        int[] numbers = numbers(layerNumbers, caches.size());
        List<CacheLayer> layers = new ArrayList<>();
        for (int i = 0; i < caches.size(); i++) {
            layers.add(maker.make(numbers[i], caches.get(i)));
        }
        return KvCacheGroup.of(s.pageSize(), s.numPages(), layers);
    }

    private static int[] numbers(int[] layerNumbers, int n) {
        if (layerNumbers == null) {
            int[] r = new int[n];
            for (int i = 0; i < n; i++) {
                r[i] = i;
            }
            return r;
        }
        if (layerNumbers.length != n) {
            throw new InvalidLayoutException(layerNumbers.length + " layer numbers for " + n + " caches");
        }
        return layerNumbers;
    }

    private static int checkedCell(int headDim, int elemBytes) {
        long cell = (long) headDim * elemBytes;
        if (cell > Integer.MAX_VALUE) {
            throw new InvalidLayoutException("head dim " + headDim + " x " + elemBytes + " bytes is too large a cell");
        }
        // Whether K + V is whole 8-byte pieces is the plan's to check (SlicePlan.of), where padding may be asked for.
        return (int) cell;
    }
}
