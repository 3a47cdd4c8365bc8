package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * One page-digest vector written by {@code golden/generator/generate_digest.py}: an SGLang cache ({@code k_buffer} /
 * {@code v_buffer} per layer of {@code [slots, heads, head_dim]}, or MLA's K-only {@code kv_buffer}), state buffers,
 * a request, and the Adler-32 of the request's stream that Python's {@code zlib.adler32} computed.
 */
public final class DigestVector {
    private static final Supplier<List<DigestVector>> ALL =
            VectorJson.once(() -> List.copyOf(VectorJson.vectors("vectors-digest", DigestVector::new).values()));

    private final String name;
    private final JsonNode json;
    private final byte[] data;

    private DigestVector(String name, JsonNode json, byte[] data) {
        this.name = name;
        this.json = json;
        this.data = data;
    }

    /** {@return every vector of {@code vectors-digest/}, in the generator's order} Read once from the class path. */
    public static List<DigestVector> all() {
        return ALL.get();
    }

    /** {@return whether this jar carries the page-digest vectors} */
    public static boolean present() {
        return DigestVector.class.getResource("/vectors-digest/index.json") != null;
    }

    /** {@return the vector's name, as the generator's index lists it} */
    public String name() {
        return name;
    }

    /** {@return what the vector covers, in the generator's words} */
    public String description() {
        return json.get("description").asText();
    }

    /** {@return zlib's Adler-32 of the stream, in {@code [0, 2^32)}} */
    public long expectedDigest() {
        return json.get("expected_digest").asLong();
    }

    /** {@return the stream's length in bytes} */
    public long streamBytes() {
        return json.get("stream_bytes").asLong();
    }

    /**
     * The vector's digest plan, each buffer copied into its own segment of {@code arena} (sized exactly, so a read
     * past a buffer fails) and then passed through {@code placement} (e.g. to device memory).
     *
     * @param arena where the buffers are allocated; they live as long as it does
     * @param placement maps each host buffer to the memory the backend should read (identity for host memory)
     * @return the validated plan of the vector's stream
     */
    public PageDigestPlan plan(Arena arena, UnaryOperator<KvMemory> placement) {
        int[] layers = VectorJson.ints(json.get("layers"));
        List<KvMemory> ks = memories(arena, json.get("k_buffers"), placement);
        List<KvMemory> vs = json.get("mla").asBoolean() ? null : memories(arena, json.get("v_buffers"), placement);
        int pageSize = json.get("page_size").asInt();
        KvLayouts.PagedShape shape = new KvLayouts.PagedShape(json.get("num_slots").asLong() / pageSize, pageSize,
                json.get("heads").asInt(), json.get("head_dim").asInt(), json.get("elem_bytes").asInt());
        KvCacheGroup g = KvLayouts.sglang(shape, 0, layers, ks, vs);
        RequestBlocks r = RequestBlocks.of(VectorJson.ints(json.get("page_table")), json.get("num_tokens").asLong(),
                json.get("first_block").asLong(), json.get("block_size").asInt());
        List<KvMemory> states = memories(arena, json.get("state_buffers"), placement);
        List<StateRow> rows = json.get("state_rows").valueStream().map(s -> new StateRow(s.get("name").asText(),
                states.get(s.get("buffer").asInt()), s.get("offset").asLong(), s.get("length").asLong())).toList();
        return PageDigestPlan.of(SlicePlan.of(g, r), rows);
    }

    private List<KvMemory> memories(Arena arena, JsonNode buffers, UnaryOperator<KvMemory> placement) {
        return VectorJson.buffers(buffers, data, arena).stream().map(s -> placement.apply(KvMemory.host(s))).toList();
    }

    @Override
    public String toString() {
        return name;
    }
}
