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

    /** A paged cache's shape: pages, slots per page, KV heads, head dim, bytes per element. */
    public record PagedShape(long numPages, int pageSize, int heads, int headDim, int elemBytes) {
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

    /** vLLM FlashAttention: per layer {@code (2, num_pages, page_size, heads, head_dim)}, K at [0] and V at [1]. */
    public static CacheLayer vllmFlashLayer(int layer, int firstHead, KvMemory cache, PagedShape s) {
        long cell = s.cellBytes();
        long token = s.heads() * cell;
        long page = s.pageSize() * token;
        long half = s.numPages() * page;
        return CacheLayer.of(layer, firstHead, s.heads(),
                new KvRegion(cache, 0, page, token, cell, s.cellBytes()),
                new KvRegion(cache, half, page, token, cell, s.cellBytes()));
    }

    /** FlashInfer/Triton NHD: per layer {@code (num_pages, 2, page_size, heads, head_dim)}. */
    public static CacheLayer flashInferNhdLayer(int layer, int firstHead, KvMemory cache, PagedShape s) {
        long cell = s.cellBytes();
        long token = s.heads() * cell;
        long half = s.pageSize() * token;
        return CacheLayer.of(layer, firstHead, s.heads(),
                new KvRegion(cache, 0, 2 * half, token, cell, s.cellBytes()),
                new KvRegion(cache, half, 2 * half, token, cell, s.cellBytes()));
    }

    /** FlashInfer HND: per layer {@code (num_pages, 2, heads, page_size, head_dim)}: each head's page is contiguous. */
    public static CacheLayer flashInferHndLayer(int layer, int firstHead, KvMemory cache, PagedShape s) {
        long cell = s.cellBytes();
        long head = s.pageSize() * cell;
        long half = s.heads() * head;
        return CacheLayer.of(layer, firstHead, s.heads(),
                new KvRegion(cache, 0, 2 * half, cell, head, s.cellBytes()),
                new KvRegion(cache, half, 2 * half, cell, head, s.cellBytes()));
    }

    /**
     * vLLM MLA: per layer {@code (num_pages, page_size, kv_lora_rank + rope_dim)} (576 for DeepSeek), one latent "head",
     * K only; {@code s.heads()} must be 1. {@code head} is 0, or the next number for a second cache of the layer.
     */
    public static CacheLayer vllmMlaLayer(int layer, int head, KvMemory cache, PagedShape s) {
        if (s.heads() != 1) {
            throw new InvalidLayoutException("an MLA cache has one latent head, got " + s.heads());
        }
        long cell = s.cellBytes();
        return CacheLayer.kOnly(layer, head, 1, new KvRegion(cache, 0, s.pageSize() * cell, cell, 0, s.cellBytes()));
    }

    /**
     * SGLang's per-layer pool: {@code k_buffer[l]} and {@code v_buffer[l]} of {@code (slots, heads, head_dim)}; page
     * {@code p} is slots {@code [p*page_size, (p+1)*page_size)}, so {@code numPages = slots / page_size}. For MLA pass
     * the {@code kv_buffer[l]} of {@code (slots, 1, 576)} as {@code k} and {@code null} as {@code v}.
     */
    public static CacheLayer sglangLayer(int layer, int firstHead, KvMemory k, KvMemory v, PagedShape s) {
        long cell = s.cellBytes();
        long token = s.heads() * cell;
        long page = s.pageSize() * token;
        KvRegion kr = new KvRegion(k, 0, page, token, cell, s.cellBytes());
        return v == null ? CacheLayer.kOnly(layer, firstHead, s.heads(), kr)
                : CacheLayer.of(layer, firstHead, s.heads(), kr, new KvRegion(v, 0, page, token, cell, s.cellBytes()));
    }

    /** A group of vLLM FlashAttention layers sharing one shape. */
    public static KvCacheGroup vllmFlash(PagedShape s, int firstHead, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> vllmFlashLayer(l, firstHead, c, s));
    }

    /** A group of FlashInfer NHD layers sharing one shape. */
    public static KvCacheGroup flashInferNhd(PagedShape s, int firstHead, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> flashInferNhdLayer(l, firstHead, c, s));
    }

    /** A group of FlashInfer HND layers sharing one shape. */
    public static KvCacheGroup flashInferHnd(PagedShape s, int firstHead, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> flashInferHndLayer(l, firstHead, c, s));
    }

    /** A group of vLLM MLA layers sharing one shape ({@code s.heads() == 1}). */
    public static KvCacheGroup vllmMla(PagedShape s, int[] layerNumbers, List<KvMemory> caches) {
        return group(s, layerNumbers, caches, (l, c) -> vllmMlaLayer(l, 0, c, s));
    }

    /**
     * An SGLang pool: {@code kBuffers.get(i)} and {@code vBuffers.get(i)} per layer ({@code vBuffers} null for MLA).
     * {@code s.numPages()} is {@code slots / page_size}.
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
     * GPULlama3.java style: one K array and one V array for all layers, each {@code [layer][pos][heads*head_dim]},
     * indexed by absolute position {@code 0..maxPos-1}. Described as pages of one slot, page id = position; pair it
     * with {@link #flatRequest}.
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

    /** The request for a {@link #flat} group: the block table is the positions themselves. */
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
