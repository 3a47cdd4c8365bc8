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
     * One benchmark case: the shape actually read and the request's tokens. In-cache sizes (at most the L2 of one core)
     * never round up past the size asked for: where even one 16-token block of every layer is larger, the case reads
     * fewer layers of the same per-layer layout ({@link #layers()} below the model's), so that "1MiB" of Llama-3-8B is
     * 16 of its 32 layers (1 MiB), not one whole block (2 MiB, twice a 1 MiB L2, partly read from L3).
     *
     * @param shape the shape read: the model's, or the same layout with fewer layers
     * @param tokens the request's tokens, a positive multiple of {@link #BLOCK_SIZE}
     * @param model the model's whole shape
     */
    public record Case(ModelShape shape, long tokens, ModelShape model) {
        /** {@return the KV bytes the case reads} */
        public long kvBytes() {
            return tokens * shape.bytesPerToken();
        }

        /** {@return whether the case reads fewer layers than the model has} */
        public boolean partial() {
            return shape.layers() < model.layers();
        }

        /**
         * {@return the size parameter with the bytes read and, for a partial case, its layers: {@code 1MiB = 1 MiB, 16
         * of 32 layers}}
         *
         * @param size the size parameter the case was made from
         */
        public String label(String size) {
            long b = kvBytes();
            String bytes = b % (1L << 20) == 0 ? (b >> 20) + " MiB" : b % 1024 == 0 ? (b >> 10) + " KiB" : b + " B";
            return size + " = " + bytes + (partial() ? ", " + shape.layers() + " of " + model.layers() + " layers" : "");
        }
    }

    /**
     * The case for a size parameter: a token count ({@code "16"}, {@code "131072"}, every layer) or a KV size
     * ({@code "1MiB"}, {@code "256MiB"}, {@code "1GiB"}) or a size relative to this machine's caches ({@code "L2"},
     * {@code "LLC"}, {@code "4xLLC"}: {@link io.kvchecksum.bench.Caches#bytesOf}). A size above the L2 of one core
     * ({@link io.kvchecksum.bench.Caches#l2()}: {@code /sys/devices/system/cpu/cpu0/cache}, 1 MiB assumed where Linux
     * does not list it) is rounded to the nearest whole block, at least one; a size within it is rounded down to whole
     * blocks, and where not even one block fits, to one block of as many whole layers as fit (at least one), so the
     * in-cache case fits L2 on every shape. Every page is full and the read bound reads exactly the checksummed bytes.
     */
    public Case at(String size) {
        long cacheBytes = io.kvchecksum.bench.Caches.machine().bytesOf(size);
        long bytes = cacheBytes > 0 ? cacheBytes : bytes(size);
        if (bytes == -1) {
            long tokens = Long.parseLong(size.trim());
            if (tokens % BLOCK_SIZE != 0 || tokens <= 0) {
                throw new IllegalArgumentException("size " + size + ": a token count must be a positive multiple of "
                        + BLOCK_SIZE);
            }
            return new Case(this, tokens, this);
        }
        long block = bytesPerToken() * BLOCK_SIZE;
        if (bytes > io.kvchecksum.bench.Caches.machine().l2()) {
            return new Case(this, Math.max(1, Math.round((double) bytes / block)) * BLOCK_SIZE, this);
        }
        if (bytes >= block) {
            return new Case(this, bytes / block * BLOCK_SIZE, this);
        }
        int fit = (int) Math.max(1, bytes / (block / layers));
        return new Case(new ModelShape(id, fit, heads, headDim, elemBytes, mla), BLOCK_SIZE, this);
    }

    /** The request length of a size parameter: {@link #at}'s tokens. */
    public long tokens(String size) {
        return at(size).tokens();
    }

    /** KV bytes of a request of that size parameter: {@link #at}'s bytes, fewer layers where it reads fewer. */
    public long kvBytes(String size) {
        return at(size).kvBytes();
    }

    /** The bytes of a size with a {@code KiB}, {@code MiB} or {@code GiB} suffix (any case), or -1 without one. */
    static long bytes(String size) {
        String s = size.trim().toLowerCase(Locale.ROOT);
        int shift = s.endsWith("kib") ? 10 : s.endsWith("mib") ? 20 : s.endsWith("gib") ? 30 : -1;
        return shift < 0 ? -1 : Long.parseLong(s.substring(0, s.length() - 3)) << shift;
    }
}
