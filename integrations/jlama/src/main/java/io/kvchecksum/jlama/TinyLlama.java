package io.kvchecksum.jlama;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a tiny Llama-architecture model that Jlama loads from disk: {@code config.json}, a byte-fallback BPE
 * {@code tokenizer.json} and seeded random F32 weights in {@code model.safetensors}. Nothing is downloaded.
 *
 * <p>Random weights generate nonsense, but deterministic nonsense: the same tokens from the same KV, which is all the
 * checks need. The shape is a real GQA attention: {@value #HEADS} query heads over {@value #KV_HEADS} KV heads of
 * {@value #HEAD_DIM} dims; the layer count and context length are a {@link Shape}, and they decide how Jlama pages a
 * session's KV (see {@link JlamaKv}), which is what the shapes are for.
 */
public final class TinyLlama {
    public static final int HEADS = 8;
    public static final int KV_HEADS = 4;
    public static final int HEAD_DIM = 16;
    public static final int HIDDEN = HEADS * HEAD_DIM;
    public static final int INTERMEDIATE = 256;
    public static final int VOCAB = 512;
    public static final int BOS = 1;
    public static final int EOS = 2;

    /**
     * Layers and context length. Jlama's ephemeral sessions use pages of at most 1 MiB: it picks the layers per page
     * {@code x} (from all of them down) and positions per page {@code y = 1 MiB / (x * 2 * kvHeads * headDim * 4)}
     * with the largest {@code x * y}, taking only {@code y <= context}; when no {@code x} qualifies (the whole context
     * fits a page with room to spare) it falls back to pages of one layer and one position. A position of one layer
     * here is {@code 2 * 64 * 4 = 512} bytes, so 2048 layer-positions fill a page.
     *
     * @param layers transformer layers
     * @param context the context length ({@code max_position_embeddings})
     */
    public record Shape(int layers, int context) {
        /** 4 layers, context 512: one page {@code [4, 2, 512, 64]} holds the whole session. */
        public static final Shape ONE_PAGE = new Shape(4, 512);
        /** 4 layers, context 384: Jlama's fallback, every position of every layer its own page {@code [1, 2, 1, 64]}. */
        public static final Shape POSITION_PAGES = new Shape(4, 384);
        /**
         * 12 layers, context 1024: pages {@code [11, 2, 186, 64]}, so layer 11 lives in other pages than layers 0-10,
         * and a page's 186 positions end inside 16-token blocks.
         */
        public static final Shape LAYER_PAGES = new Shape(12, 1024);
    }

    private TinyLlama() {
    }

    /** Writes the {@link Shape#ONE_PAGE} model into {@code dir} (created if absent) from {@code seed}; returns {@code dir}. */
    public static Path write(Path dir, long seed) {
        return write(dir, seed, Shape.ONE_PAGE);
    }

    /** Writes a model of {@code shape} into {@code dir} (created if absent) from {@code seed}; returns {@code dir}. */
    public static Path write(Path dir, long seed, Shape shape) {
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("config.json"), config(shape));
            Files.writeString(dir.resolve("tokenizer.json"), tokenizer());
            writeWeights(dir.resolve("model.safetensors"), seed, shape.layers());
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the tiny model into " + dir, e);
        }
    }

    private static String config(Shape shape) {
        return """
                {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                 "max_position_embeddings": %d, "hidden_size": %d, "intermediate_size": %d,
                 "num_attention_heads": %d, "num_key_value_heads": %d, "num_hidden_layers": %d,
                 "rms_norm_eps": 1e-5, "vocab_size": %d, "bos_token_id": %d, "eos_token_id": %d,
                 "hidden_act": "silu", "rope_theta": 10000.0, "torch_dtype": "float32"}
                """.formatted(shape.context(), HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, shape.layers(), VOCAB, BOS, EOS);
    }

    private static String tokenizer() {
        StringBuilder vocab = new StringBuilder("\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2");
        for (int b = 0; b < 256; b++) {
            vocab.append(String.format(", \"<0x%02X>\": %d", b, 3 + b));
        }
        for (int id = 259; id < VOCAB; id++) {
            vocab.append(", \"\u2581w").append(id).append("\": ").append(id);
        }
        return """
                {"version": "1.0",
                 "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                                  {"id": 1, "content": "<s>", "special": true},
                                  {"id": 2, "content": "</s>", "special": true}],
                 "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
                           "vocab": {%s}, "merges": []}}
                """.formatted(vocab);
    }

    private static void writeWeights(Path file, long seed, int layers) throws IOException {
        Map<String, int[]> shapes = new LinkedHashMap<>();
        shapes.put("model.embed_tokens.weight", new int[] {VOCAB, HIDDEN});
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            shapes.put(p + "input_layernorm.weight", new int[] {HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new int[] {HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new int[] {KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new int[] {KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new int[] {HIDDEN, HEADS * HEAD_DIM});
            shapes.put(p + "post_attention_layernorm.weight", new int[] {HIDDEN});
            shapes.put(p + "mlp.gate_proj.weight", new int[] {INTERMEDIATE, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new int[] {INTERMEDIATE, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new int[] {HIDDEN, INTERMEDIATE});
        }
        shapes.put("model.norm.weight", new int[] {HIDDEN});
        shapes.put("lm_head.weight", new int[] {VOCAB, HIDDEN});

        Map<String, Tensor> tensors = new LinkedHashMap<>();
        long offset = 0;
        for (Map.Entry<String, int[]> e : shapes.entrySet()) {
            long bytes = 4L * count(e.getValue());
            tensors.put(e.getKey(), new Tensor("F32", e.getValue(), new long[] {offset, offset + bytes}));
            offset += bytes;
        }
        StringBuilder header = new StringBuilder(new ObjectMapper().writeValueAsString(tensors));
        while ((8 + header.length()) % 8 != 0) {
            header.append(' ');
        }
        byte[] h = header.toString().getBytes(StandardCharsets.US_ASCII);
        ByteBuffer buf = ByteBuffer.allocate(Math.toIntExact(8 + h.length + offset)).order(ByteOrder.LITTLE_ENDIAN);
        buf.putLong(h.length).put(h);
        SplittableRandom rnd = new SplittableRandom(seed);
        for (Map.Entry<String, int[]> e : shapes.entrySet()) {
            int[] s = e.getValue();
            long n = count(s);
            boolean norm = s.length == 1;
            // Norm gains near 1; matrices scaled by 1/sqrt(fan-in) times a gain that keeps activations lively, so the
            // greedy token depends on the whole context (a corrupted cache then changes the output).
            float scale = norm ? 0.1f : (float) (2.0 / Math.sqrt(s[s.length - 1]));
            for (long i = 0; i < n; i++) {
                float u = (float) (rnd.nextDouble() * 2 - 1);
                buf.putFloat(norm ? 1.0f + scale * u : scale * u);
            }
        }
        buf.flip();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
        }
    }

    private static long count(int[] shape) {
        return Arrays.stream(shape).asLongStream().reduce(1, (a, b) -> a * b);
    }

    /** A tensor's entry in the safetensors header. */
    private record Tensor(String dtype, int[] shape, @JsonProperty("data_offsets") long[] dataOffsets) {
    }
}
