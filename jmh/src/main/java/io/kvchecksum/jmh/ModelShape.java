package io.kvchecksum.jmh;

import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The KV cache shapes of real models on one worker, with 16-token blocks, as the benchmarks' {@code shape} parameter.
 *
 * <p>Sizes are given per worker: Llama-3-70B at TP8 holds one of its 8 KV heads per rank, so one rank's cache is
 * 80 layers x 1 head. MLA caches have one latent "head" per layer and no V.
 *
 * @param id the name used as the JMH parameter value
 * @param layers layers of the cache
 * @param heads KV heads per layer on this worker
 * @param headDim elements per head
 * @param elemBytes bytes per element
 * @param mla true for MLA latent caches (K only, one head)
 */
public record ModelShape(String id, int layers, int heads, int headDim, int elemBytes, boolean mla) {
    /** Llama-3-8B, TP1: 32 layers, 8 KV heads, head dim 128, bf16; vLLM FlashAttention layout. 128 KiB per token. */
    public static final ModelShape LLAMA3_8B_TP1 = new ModelShape("llama3-8b-tp1", 32, 8, 128, 2, false);
    /** Llama-3-70B, TP8 (rank 0): 80 layers, 1 KV head, head dim 128, bf16; vLLM FlashAttention layout. 40 KiB per token. */
    public static final ModelShape LLAMA3_70B_TP8 = new ModelShape("llama3-70b-tp8", 80, 1, 128, 2, false);
    /** DeepSeek-V3 MLA: 61 layers, 576-dim latent (512 + 64 rope), bf16; vLLM MLA layout. 68.6 KiB per token. */
    public static final ModelShape DEEPSEEK_MLA_BF16 = new ModelShape("deepseek-mla-bf16", 61, 1, 576, 2, true);
    /** DeepSeek-V3 MLA with an fp8 cache (stored as uint8). 34.3 KiB per token. */
    public static final ModelShape DEEPSEEK_MLA_FP8 = new ModelShape("deepseek-mla-fp8", 61, 1, 576, 1, true);
    /** Every shape, in the order tables list them. */
    public static final List<ModelShape> ALL = List.of(LLAMA3_8B_TP1, LLAMA3_70B_TP8, DEEPSEEK_MLA_BF16, DEEPSEEK_MLA_FP8);

    /** Tokens per checksum block and per cache page. */
    public static final int BLOCK_SIZE = 16;

    /** KV bytes of one token over all layers and heads: the bytes a checksum reads per token. */
    public long bytesPerToken() {
        long cell = (long) headDim * elemBytes * (mla ? 1 : 2);
        return layers * heads * cell;
    }

    /** The shape with that {@link #id()}. */
    public static ModelShape of(String id) {
        return ALL.stream().filter(s -> s.id.equals(id)).findFirst().orElseThrow(() -> new IllegalArgumentException(
                "unknown shape '" + id + "'; expected one of "
                        + ALL.stream().map(ModelShape::id).collect(Collectors.joining(", "))));
    }

    /**
     * The request length for a size parameter: a token count ({@code "16"}, {@code "131072"}) or a KV size
     * ({@code "1MiB"}, {@code "256MiB"}, {@code "1GiB"}) or a size relative to this machine's caches ({@code "L2"},
     * {@code "LLC"}, {@code "4xLLC"}: {@link io.kvchecksum.bench.Caches#bytesOf}), rounded to the nearest whole block
     * and at least one block,
     * so every page is full and the read bound reads exactly the checksummed bytes.
     */
    public long tokens(String size) {
        long cacheBytes = io.kvchecksum.bench.Caches.machine().bytesOf(size);
        long bytes = cacheBytes > 0 ? cacheBytes : bytes(size);
        long tokens = bytes == -1 ? Long.parseLong(size.trim())
                : Math.round((double) bytes / bytesPerToken() / BLOCK_SIZE) * BLOCK_SIZE;
        if (tokens % BLOCK_SIZE != 0 || tokens < 0) {
            throw new IllegalArgumentException("size " + size + ": a token count must be a positive multiple of " + BLOCK_SIZE);
        }
        return Math.max(BLOCK_SIZE, tokens);
    }

    /** KV bytes of a request of that size parameter. */
    public long kvBytes(String size) {
        return tokens(size) * bytesPerToken();
    }

    /** The bytes of a size with a {@code KiB}, {@code MiB} or {@code GiB} suffix (any case), or -1 without one. */
    static long bytes(String size) {
        String s = size.trim().toLowerCase(Locale.ROOT);
        int shift = s.endsWith("kib") ? 10 : s.endsWith("mib") ? 20 : s.endsWith("gib") ? 30 : -1;
        return shift < 0 ? -1 : Long.parseLong(s.substring(0, s.length() - 3)) << shift;
    }
}
