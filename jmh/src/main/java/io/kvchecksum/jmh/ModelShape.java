package io.kvchecksum.jmh;

import java.util.Locale;

/**
 * The KV cache shapes of real models on one worker, with 16-token blocks, as the benchmarks' {@code shape} parameter.
 *
 * <p>Sizes are given per worker: Llama-3-70B at TP8 holds one of its 8 KV heads per rank, so one rank's cache is
 * 80 layers x 1 head. MLA caches have one latent "head" per layer and no V.
 */
public enum ModelShape {
    /** Llama-3-8B, TP1: 32 layers, 8 KV heads, head dim 128, bf16; vLLM FlashAttention layout. 128 KiB per token. */
    LLAMA3_8B_TP1("llama3-8b-tp1", 32, 8, 128, 2, false),
    /** Llama-3-70B, TP8 (rank 0): 80 layers, 1 KV head, head dim 128, bf16; vLLM FlashAttention layout. 40 KiB per token. */
    LLAMA3_70B_TP8("llama3-70b-tp8", 80, 1, 128, 2, false),
    /** DeepSeek-V3 MLA: 61 layers, 576-dim latent (512 + 64 rope), bf16; vLLM MLA layout. 68.6 KiB per token. */
    DEEPSEEK_MLA_BF16("deepseek-mla-bf16", 61, 1, 576, 2, true),
    /** DeepSeek-V3 MLA with an fp8 cache (stored as uint8). 34.3 KiB per token. */
    DEEPSEEK_MLA_FP8("deepseek-mla-fp8", 61, 1, 576, 1, true);

    /** Tokens per checksum block and per cache page. */
    public static final int BLOCK_SIZE = 16;

    private final String id;
    private final int layers;
    private final int heads;
    private final int headDim;
    private final int elemBytes;
    private final boolean mla;

    ModelShape(String id, int layers, int heads, int headDim, int elemBytes, boolean mla) {
        this.id = id;
        this.layers = layers;
        this.heads = heads;
        this.headDim = headDim;
        this.elemBytes = elemBytes;
        this.mla = mla;
    }

    /** The name used as the JMH parameter value. */
    public String id() {
        return id;
    }

    public int layers() {
        return layers;
    }

    public int heads() {
        return heads;
    }

    public int headDim() {
        return headDim;
    }

    public int elemBytes() {
        return elemBytes;
    }

    /** True for MLA latent caches (K only, one head). */
    public boolean mla() {
        return mla;
    }

    /** KV bytes of one token over all layers and heads: the bytes a checksum reads per token. */
    public long bytesPerToken() {
        long cell = (long) headDim * elemBytes * (mla ? 1 : 2);
        return layers * heads * cell;
    }

    /** The shape with that {@link #id()}. */
    public static ModelShape of(String id) {
        for (ModelShape s : values()) {
            if (s.id.equals(id)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown shape '" + id + "'; expected one of llama3-8b-tp1, llama3-70b-tp8, "
                + "deepseek-mla-bf16, deepseek-mla-fp8");
    }

    /**
     * The request length for a size parameter: a token count ({@code "16"}, {@code "131072"}) or a KV size
     * ({@code "1MiB"}, {@code "256MiB"}, {@code "1GiB"}) or a size relative to this machine's caches ({@code "L2"},
     * {@code "LLC"}, {@code "4xLLC"}: {@link io.kvchecksum.bench.Caches#bytesOf}), rounded to the nearest whole block
     * and at least one block,
     * so every page is full and the read bound reads exactly the checksummed bytes.
     */
    public long tokens(String size) {
        String s = size.trim().toLowerCase(Locale.ROOT);
        long multiplier = 0;
        if (s.endsWith("kib")) {
            multiplier = 1L << 10;
        } else if (s.endsWith("mib")) {
            multiplier = 1L << 20;
        } else if (s.endsWith("gib")) {
            multiplier = 1L << 30;
        }
        long tokens;
        long cacheBytes = io.kvchecksum.bench.Caches.machine().bytesOf(s);
        if (cacheBytes > 0) {
            tokens = Math.round((double) cacheBytes / bytesPerToken() / BLOCK_SIZE) * BLOCK_SIZE;
        } else if (multiplier == 0) {
            tokens = Long.parseLong(s);
        } else {
            long bytes = Long.parseLong(s.substring(0, s.length() - 3)) * multiplier;
            tokens = Math.round((double) bytes / bytesPerToken() / BLOCK_SIZE) * BLOCK_SIZE;
        }
        if (tokens % BLOCK_SIZE != 0 || tokens < 0) {
            throw new IllegalArgumentException("size " + size + ": a token count must be a positive multiple of " + BLOCK_SIZE);
        }
        return Math.max(BLOCK_SIZE, tokens);
    }

    /** KV bytes of a request of that size parameter. */
    public long kvBytes(String size) {
        return tokens(size) * bytesPerToken();
    }
}
