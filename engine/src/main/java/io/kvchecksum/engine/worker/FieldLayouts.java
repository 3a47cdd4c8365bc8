package io.kvchecksum.engine.worker;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvLayouts.PagedShape;
import io.kvchecksum.KvMemory;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * A worker's {@link CacheGate.CacheSpec}s for the KV layouts in the field, so that a producer's layout is one line
 * that goes through the gate's checks:
 *
 * <pre>{@code
 * CacheGate gate = CacheGate.of(FieldLayouts.vllmFlash(shape, tpRank, tpSize, layerNames, caches), numBlocks, padding);
 * }</pre>
 *
 * <p>Each is {@link KvLayouts}' layer of that layout, one per layer name (the layer number is the name's), in KV cache
 * group 0 with blocks of one page ({@code shape.pageSize()}). Attention heads are sharded: {@code shape.heads()} is
 * this rank's, so the cache has {@code heads * tpSize} and this rank's first is {@code tpRank * heads}. MLA latents
 * are held whole by every rank (replica {@code tpRank} of {@code tpSize}). The fingerprint hashes the layer name, the
 * attention kind ({@code FullAttentionSpec}, {@code MLAAttentionSpec}) and the element size (such as {@code 2-byte}),
 * not the layout: a producer and a consumer in different layouts (vLLM flash and FlashInfer HND) compare. Another
 * group, blocks of several pages, GQA heads replicated across ranks, or an engine's own fingerprint names:
 * {@link CacheGate.CacheSpec#builder}.
 */
public final class FieldLayouts {
    /** vLLM's {@code fp8_ds_mla} row: 512 fp8 latent bytes, 4 float32 scales, 64 bf16 rope values. */
    public static final int FP8_DS_MLA_ROW_BYTES = 512 + 4 * 4 + 64 * 2;

    private FieldLayouts() {
    }

    /** One layer's description from its number, global first head and index in the lists. */
    private interface Layer {
        CacheLayer of(int layer, int firstHead, int i);
    }

    /**
     * {@return vLLM FlashAttention's caches: per layer {@code (2, num_pages, page_size, heads, head_dim)}, K at [0]}
     *
     * @param s each layer's shape, {@code heads} this rank's
     * @param tpRank this worker's TP rank
     * @param tpSize the TP size
     * @param layerNames the layers' names, one per cache
     * @param caches each layer's KV tensor, as many as names
     * @throws IllegalArgumentException when the lists differ in length or the TP numbers are out of range
     */
    public static List<CacheGate.CacheSpec> vllmFlash(PagedShape s, int tpRank, int tpSize, List<String> layerNames,
            List<KvMemory> caches) {
        return attention(s, tpRank, tpSize, layerNames, caches.size(), (l, h, i) -> KvLayouts.vllmFlashLayer(l, h, caches.get(i), s));
    }

    /**
     * {@return FlashInfer's (and Triton's) NHD caches: per layer {@code (num_pages, 2, page_size, heads, head_dim)}}
     *
     * @param s each layer's shape, {@code heads} this rank's
     * @param tpRank this worker's TP rank
     * @param tpSize the TP size
     * @param layerNames the layers' names, one per cache
     * @param caches each layer's KV tensor, as many as names
     * @throws IllegalArgumentException when the lists differ in length or the TP numbers are out of range
     */
    public static List<CacheGate.CacheSpec> flashInferNhd(PagedShape s, int tpRank, int tpSize, List<String> layerNames,
            List<KvMemory> caches) {
        return attention(s, tpRank, tpSize, layerNames, caches.size(), (l, h, i) -> KvLayouts.flashInferNhdLayer(l, h, caches.get(i), s));
    }

    /**
     * {@return FlashInfer's HND caches: per layer {@code (num_pages, 2, heads, page_size, head_dim)}}
     *
     * @param s each layer's shape, {@code heads} this rank's
     * @param tpRank this worker's TP rank
     * @param tpSize the TP size
     * @param layerNames the layers' names, one per cache
     * @param caches each layer's KV tensor, as many as names
     * @throws IllegalArgumentException when the lists differ in length or the TP numbers are out of range
     */
    public static List<CacheGate.CacheSpec> flashInferHnd(PagedShape s, int tpRank, int tpSize, List<String> layerNames,
            List<KvMemory> caches) {
        return attention(s, tpRank, tpSize, layerNames, caches.size(), (l, h, i) -> KvLayouts.flashInferHndLayer(l, h, caches.get(i), s));
    }

    /**
     * {@return K and V in separate paged pools, SGLang's {@code k_buffer[l]} and {@code v_buffer[l]} among them: per
     * layer a K and a V tensor of {@code (num_pages, page_size, heads, head_dim)} each (SGLang's {@code (slots, heads,
     * head_dim)} with {@code numPages = slots / page_size})}
     *
     * @param s each pool's shape, {@code heads} this rank's
     * @param tpRank this worker's TP rank
     * @param tpSize the TP size
     * @param layerNames the layers' names, one per pair of pools
     * @param kPools each layer's K pool, as many as names
     * @param vPools each layer's V pool, as many as names
     * @throws IllegalArgumentException when the lists differ in length or the TP numbers are out of range
     */
    public static List<CacheGate.CacheSpec> splitPages(PagedShape s, int tpRank, int tpSize, List<String> layerNames,
            List<KvMemory> kPools, List<KvMemory> vPools) {
        sameSize(kPools.size(), vPools.size());
        return attention(s, tpRank, tpSize, layerNames, kPools.size(),
                (l, h, i) -> KvLayouts.sglangLayer(l, h, kPools.get(i), vPools.get(i), s));
    }

    /**
     * {@return vLLM's MLA caches: per layer {@code (num_pages, page_size, kv_lora_rank + rope_dim)}, one latent head,
     * K only (DeepSeek in bf16: 576 elements of 2 bytes), held whole by every TP rank; SGLang's MLA {@code kv_buffer}
     * of {@code (slots, 1, 576)} is the same}
     *
     * @param s each layer's shape, {@code heads == 1}
     * @param tpRank this worker's TP rank
     * @param tpSize the TP size
     * @param layerNames the layers' names, one per cache
     * @param caches each layer's latent tensor, as many as names
     * @throws IllegalArgumentException when {@code s.heads() != 1}, the lists differ in length or the TP numbers are
     *     out of range
     */
    public static List<CacheGate.CacheSpec> vllmMla(PagedShape s, int tpRank, int tpSize, List<String> layerNames,
            List<KvMemory> caches) {
        return mla(s, s.elemBytes() + "-byte", tpRank, tpSize, layerNames, caches);
    }

    /**
     * {@return vLLM's {@code fp8_ds_mla} caches (DeepSeek V3.2): per layer {@code (num_pages, page_size, 656)} bytes,
     * each row 512 fp8 latent bytes, 4 float32 scales and 64 bf16 rope values ({@link #FP8_DS_MLA_ROW_BYTES}), one K-only
     * cell of whole 8-byte pieces, held whole by every TP rank}
     *
     * @param numPages pages per layer
     * @param pageSize tokens per page
     * @param tpRank this worker's TP rank
     * @param tpSize the TP size
     * @param layerNames the layers' names, one per cache
     * @param caches each layer's tensor, as many as names
     * @throws IllegalArgumentException when the lists differ in length or the TP numbers are out of range
     */
    public static List<CacheGate.CacheSpec> vllmMlaFp8Ds(long numPages, int pageSize, int tpRank, int tpSize,
            List<String> layerNames, List<KvMemory> caches) {
        return mla(new PagedShape(numPages, pageSize, 1, FP8_DS_MLA_ROW_BYTES, 1), "fp8_ds_mla", tpRank, tpSize, layerNames,
                caches);
    }

    private static List<CacheGate.CacheSpec> mla(PagedShape s, String dtype, int tpRank, int tpSize, List<String> names,
            List<KvMemory> caches) {
        if (s.heads() != 1) {
            throw new IllegalArgumentException("an MLA cache has one latent head, got " + s.heads());
        }
        return specs("MLAAttentionSpec", dtype, s, 1, 0, tpRank, tpSize, names, caches.size(),
                (l, h, i) -> KvLayouts.vllmMlaLayer(l, h, caches.get(i), s));
    }

    private static List<CacheGate.CacheSpec> attention(PagedShape s, int tpRank, int tpSize, List<String> names, int n,
            Layer layer) {
        int cell = Math.multiplyExact(s.headDim(), s.elemBytes());
        return specs("FullAttentionSpec", s.elemBytes() + "-byte", s, s.heads() * tpSize, cell, tpRank, tpSize, names, n,
                layer);
    }

    private static List<CacheGate.CacheSpec> specs(String type, String dtype, PagedShape s, int kvHeads, int vBytes,
            int tpRank, int tpSize, List<String> names, int n, Layer layer) {
        sameSize(names.size(), n);
        return IntStream.range(0, n).mapToObj(i -> CacheGate.CacheSpec.builder(names.get(i)).fingerprint(type, dtype)
                .cells(Math.multiplyExact(s.headDim(), s.elemBytes()), vBytes).heads(kvHeads).tp(tpRank, tpSize)
                .blockSize(s.pageSize()).layer((l, h) -> layer.of(l, h, i)).build())
                .collect(Collectors.toCollection(ArrayList::new));
    }

    private static void sameSize(int a, int b) {
        if (a != b) {
            throw new IllegalArgumentException("one entry per layer in every list, got " + a + " and " + b);
        }
    }
}
