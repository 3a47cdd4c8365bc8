package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One vector written by {@code golden/generator/generate.py}: a KV cache in some physical layout, the request's
 * block table, and the block checksums and slice sums NumPy computed from the definition.
 */
public final class GoldenVector {
    private final JsonNode json;
    private final byte[] data;

    GoldenVector(JsonNode json, byte[] data) {
        this.json = json;
        this.data = data;
    }

    /** The same bytes and layout with other expectations (the mixed mode's). */
    GoldenVector withExpectations(JsonNode expected, JsonNode expectedSlices) {
        com.fasterxml.jackson.databind.node.ObjectNode copy = json.deepCopy();
        copy.set("expected", expected);
        copy.set("expected_slices", expectedSlices);
        return new GoldenVector(copy, data);
    }

    /** A cell vector's mixed-mode expectations in place of its standard ones. */
    GoldenVector withMixedExpectations() {
        return withExpectations(json.get("expected_mixed"), json.get("expected_slices_mixed"));
    }

    /**
     * {@return true for a vector of the padded-cells extension: its expectations need
     * {@link io.kvchecksum.CellPadding#ZEROS}, and a plan without padding must be refused}
     */
    public boolean padCells() {
        return json.path("pad_cells").asBoolean(false);
    }

    /** {@return the vector's unique name, as {@link GoldenVectors#get} takes it and test names show it} */
    public String name() {
        return json.get("name").asText();
    }

    /** {@return what the vector exercises, in words; empty when the generator gave none} */
    public String description() {
        return json.path("description").asText("");
    }

    /** {@return the layout family ({@code vllm-flash}, {@code sglang}, ...) or {@code generic}} */
    public String family() {
        return json.path("family").path("name").asText("generic");
    }

    /** {@return tokens per checksum block of the vector's request} */
    public int blockSize() {
        return json.get("block_size").asInt();
    }

    /** {@return the request's token count} */
    public long numTokens() {
        return json.get("num_tokens").asLong();
    }

    /** {@return the first block position checksummed; the expectations start there} */
    public long firstBlock() {
        return json.get("first_block").asLong();
    }

    /** {@return the request as the vector describes it (table starting at the first block)} */
    public RequestBlocks request() {
        return VectorJson.request(json);
    }

    /** {@return the expected block checksums for blocks {@code firstBlock..}} */
    public long[] expected() {
        return VectorJson.unsigned(json.get("expected"));
    }

    /** {@return the expected slice sums, in the order of the vector's layers then local heads} */
    public SliceSums expectedSlices() {
        return VectorJson.sliceSums(json.get("expected_slices"), firstBlock(), json.get("expected").size());
    }

    /**
     * {@return the vector's buffers copied into host memory of {@code arena}, 64-byte aligned}
     *
     * @param arena where the copies are allocated; they live as long as it does
     */
    public List<MemorySegment> buffers(Arena arena) {
        return VectorJson.buffers(json.get("buffers"), data, arena);
    }

    /**
     * {@return the layout from the vector's generic description (offsets and strides), over the given buffers}
     *
     * @param buffers the vector's buffers, as {@link #buffers} returns them (or copies in the same order)
     */
    public KvCacheGroup group(List<MemorySegment> buffers) {
        List<CacheLayer> layers = VectorJson.layers(json.get("layers"), buffers);
        // The vector does not say how many pages each region holds; the pages its table uses are the ones read.
        long numPages = Arrays.stream(request().pageTable()).max().orElse(-1) + 1L;
        return KvCacheGroup.of(json.get("page_size").asInt(), Math.max(1, numPages), layers);
    }

    /**
     * {@return the same cache built through the ready-made constructor of its family, with the request that goes with
     * it ({@code flat} layouts use position-indexed tables), or {@code null} for generic vectors}
     *
     * @param buffers the vector's buffers, as {@link #buffers} returns them
     * @throws IllegalStateException when the vector names a family this code does not know
     */
    public FamilyLayout familyLayout(List<MemorySegment> buffers) {
        JsonNode f = json.path("family");
        if (!f.isObject()) {
            return null;
        }
        JsonNode layers = json.get("layers");
        int n = layers.size();
        int[] numbers = layers.valueStream().mapToInt(l -> l.get("layer").asInt()).toArray();
        int firstHead = layers.get(0).get("first_head").asInt();
        String name = f.get("name").asText();
        List<KvMemory> mem = buffers.stream().<KvMemory>map(KvMemory::host).toList();
        RequestBlocks r = request();
        switch (name) {
            case "vllm-flash", "flashinfer-nhd", "flashinfer-hnd", "vllm-mla" -> {
                KvLayouts.PagedShape s = new KvLayouts.PagedShape(f.get("num_pages").asLong(), f.get("page_size").asInt(),
                        f.path("heads").asInt(1), f.get("head_dim").asInt(), f.get("elem_bytes").asInt());
                KvCacheGroup g = switch (name) {
                    case "vllm-flash" -> KvLayouts.vllmFlash(s, firstHead, numbers, mem.subList(0, n));
                    case "flashinfer-nhd" -> KvLayouts.flashInferNhd(s, firstHead, numbers, mem.subList(0, n));
                    case "flashinfer-hnd" -> KvLayouts.flashInferHnd(s, firstHead, numbers, mem.subList(0, n));
                    default -> KvLayouts.vllmMla(s, numbers, mem.subList(0, n));
                };
                return new FamilyLayout(g, r);
            }
            case "sglang" -> {
                boolean mla = f.path("mla").asBoolean(false);
                int heads = mla ? 1 : f.get("heads").asInt();
                KvLayouts.PagedShape s = new KvLayouts.PagedShape(f.get("num_slots").asLong() / f.get("page_size").asInt(),
                        f.get("page_size").asInt(), heads, f.get("head_dim").asInt(), f.get("elem_bytes").asInt());
                List<KvMemory> ks = new ArrayList<>();
                List<KvMemory> vs = mla ? null : new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    if (mla) {
                        ks.add(mem.get(i));
                    } else {
                        ks.add(mem.get(2 * i));
                        vs.add(mem.get(2 * i + 1));
                    }
                }
                return new FamilyLayout(KvLayouts.sglang(s, firstHead, numbers, ks, vs), r);
            }
            case "flat" -> {
                KvCacheGroup g = KvLayouts.flat(numbers, firstHead, mem.get(0), mem.get(1), f.get("max_pos").asInt(),
                        f.get("heads").asInt(), f.get("head_dim").asInt(), f.get("elem_bytes").asInt());
                return new FamilyLayout(g, KvLayouts.flatRequest(numTokens(), firstBlock(), blockSize()));
            }
            default -> throw new IllegalStateException("vector " + name() + ": unknown family " + name);
        }
    }

    /**
     * A cache built by a ready-made constructor, and its request.
     *
     * @param group the cache as the family's {@link io.kvchecksum.KvLayouts} constructor describes it
     * @param request the request for that cache (position-indexed for {@code flat})
     */
    public record FamilyLayout(KvCacheGroup group, RequestBlocks request) {
    }

    @Override
    public String toString() {
        return name();
    }
}
