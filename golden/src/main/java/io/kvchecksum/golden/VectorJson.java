package io.kvchecksum.golden;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The reading of this jar's vector resources, and of the parts that every vector file writes the same way
 * ({@link GoldenVector}, {@link CombinationVector}, {@link DigestVector}): buffers, layers, requests, unsigned checksums
 * and slice sums.
 */
final class VectorJson {
    static final ObjectMapper JSON = new ObjectMapper();

    private VectorJson() {
    }

    /** Makes one vector of its name, its JSON file and its {@code .bin} bytes. */
    interface Reader<T> {
        T read(String name, JsonNode json, byte[] data);
    }

    /**
     * Every vector {@code dir/index.json} lists under {@code vectors}, by name in the index's order: each made of its
     * {@code <name>.json} and {@code <name>.bin}.
     */
    static <T> Map<String, T> vectors(String dir, Reader<T> reader) {
        Map<String, T> out = new LinkedHashMap<>();
        for (JsonNode n : tree(dir, "index.json").get("vectors")) {
            String name = n.asText();
            out.put(name, reader.read(name, tree(dir, name + ".json"), bytes(dir, name + ".bin")));
        }
        return Collections.unmodifiableMap(out);
    }

    /** The JSON resource {@code dir/name}. */
    static JsonNode tree(String dir, String name) {
        try (InputStream in = resource(dir, name)) {
            return JSON.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + dir + "/" + name, e);
        }
    }

    /** The bytes of resource {@code dir/name}. */
    static byte[] bytes(String dir, String name) {
        try (InputStream in = resource(dir, name)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + dir + "/" + name, e);
        }
    }

    private static InputStream resource(String dir, String name) {
        InputStream in = VectorJson.class.getResourceAsStream("/" + dir + "/" + name);
        if (in == null) {
            throw new IllegalStateException("golden resource " + dir + "/" + name + " is missing from the class path");
        }
        return in;
    }

    /** {@code load}'s value, computed on the first {@code get} and kept (a failed load is tried again next time). */
    static <T> Supplier<T> once(Supplier<T> load) {
        return new Supplier<>() {
            private T value;

            @Override
            public synchronized T get() {
                if (value == null) {
                    value = load.get();
                }
                return value;
            }
        };
    }

    /** The request of a JSON object with {@code block_table}, {@code num_tokens}, {@code first_block}, {@code block_size}. */
    static RequestBlocks request(JsonNode r) {
        return RequestBlocks.of(ints(r.get("block_table")), r.get("num_tokens").asLong(), r.get("first_block").asLong(),
                r.get("block_size").asInt());
    }

    static int[] ints(JsonNode array) {
        return JSON.convertValue(array, int[].class);
    }

    /** The slice sums of {@code slices} (rows of layer, head, values), {@code numBlocks} values a row. */
    static SliceSums sliceSums(JsonNode slices, long firstBlock, int numBlocks) {
        int n = slices.size();
        int[] layers = new int[n];
        int[] heads = new int[n];
        long[] values = new long[n * numBlocks];
        for (int i = 0; i < n; i++) {
            layers[i] = slices.get(i).get("layer").asInt();
            heads[i] = slices.get(i).get("head").asInt();
            System.arraycopy(unsigned(slices.get(i).get("values")), 0, values, i * numBlocks, numBlocks);
        }
        return new SliceSums(layers, heads, firstBlock, numBlocks, values);
    }

    /** The buffers {@code buffers} names in {@code data}, copied into host memory of {@code arena}, 64-byte aligned. */
    static List<MemorySegment> buffers(JsonNode buffers, byte[] data, Arena arena) {
        List<MemorySegment> out = new ArrayList<>();
        for (JsonNode b : buffers) {
            long off = b.get("offset").asLong();
            long len = b.get("bytes").asLong();
            MemorySegment seg = arena.allocate(Math.max(1, len), 64);
            MemorySegment.copy(MemorySegment.ofArray(data), off, seg, 0, len);
            out.add(len == 0 ? seg.asSlice(0, 0) : seg);
        }
        return out;
    }

    /** The layers of {@code layers} ({@code layer}, {@code first_head}, {@code num_heads}, K and V; V null: K only). */
    static List<CacheLayer> layers(JsonNode layers, List<MemorySegment> buffers) {
        return layers.valueStream().map(l -> new CacheLayer(l.get("layer").asInt(), l.get("first_head").asInt(),
                l.get("num_heads").asInt(), region(l.get("k"), buffers), region(l.path("v"), buffers))).toList();
    }

    /** The region {@code r} describes, or {@code null} where there is none. */
    private static KvRegion region(JsonNode r, List<MemorySegment> buffers) {
        return !r.isObject() ? null : new KvRegion(KvMemory.host(buffers.get(r.get("buffer").asInt())), r.get("offset").asLong(),
                r.get("page_stride").asLong(), r.get("token_stride").asLong(), r.get("head_stride").asLong(),
                r.get("cell_bytes").asInt());
    }

    /** Checksums written as decimal strings (they are unsigned 64-bit). */
    static long[] unsigned(JsonNode arr) {
        long[] out = new long[arr.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Long.parseUnsignedLong(arr.get(i).asText());
        }
        return out;
    }

    /** Binds a checksum written as a decimal string (unsigned 64-bit) to a {@code long}. */
    static final class Unsigned extends JsonDeserializer<Long> {
        @Override
        public Long deserialize(JsonParser p, DeserializationContext c) throws IOException {
            return Long.parseUnsignedLong(p.getValueAsString());
        }
    }
}
