package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvSegments;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * One vector written by {@code golden/generator/generate_combinations.py} ({@code vectors-combinations/}): a cache
 * that is either one {@link KvCacheGroup} or a segmented cache ({@link KvSegments}: consecutive position ranges, each
 * its own group of the same geometry), several requests over it, and for every request the block checksums and slice
 * sums NumPy computed in both modes. The combinations it covers: padded and straddling cells in segments, the mixed
 * mode over layers of both cell kinds, and several requests compiled into one plan. The file format is in the
 * generator's docstring.
 */
public final class CombinationVector {
    private final JsonNode json;
    private final byte[] data;

    CombinationVector(JsonNode json, byte[] data) {
        this.json = json;
        this.data = data;
    }

    /** {@return the vector's unique name, as test names show it} */
    public String name() {
        return json.get("name").asText();
    }

    /** {@return what the vector exercises, in words} */
    public String description() {
        return json.path("description").asText("");
    }

    /**
     * {@return true when the groups are the segments of a {@link KvSegments} cache (requests have empty page tables);
     * false when there is one group, which the requests address through their page tables}
     */
    public boolean segmented() {
        return "segments".equals(json.get("source").asText());
    }

    /**
     * {@return true when some cell is not whole 8-byte pieces: the expectations need
     * {@link io.kvchecksum.CellPadding#ZEROS}, and a plan without padding must be refused}
     */
    public boolean padCells() {
        return json.get("pad_cells").asBoolean();
    }

    /** {@return the requests, in the vector's order (a segmented cache's with empty page tables)} */
    public List<RequestBlocks> requests() {
        return json.get("requests").valueStream().map(VectorJson::request).toList();
    }

    /**
     * {@return NumPy's block checksums of request {@code r} in {@code mode}, for its blocks {@code firstBlock..}}
     *
     * @param r the request's index
     * @param mode the checksum mode
     */
    public long[] expected(int r, ChecksumMode mode) {
        return VectorJson.unsigned(request(r).get(mode == ChecksumMode.MIXED ? "expected_mixed" : "expected"));
    }

    /**
     * {@return NumPy's slice sums of request {@code r} in {@code mode}: rows in the order of the layers, then local
     * heads}
     *
     * @param r the request's index
     * @param mode the checksum mode
     */
    public SliceSums expectedSlices(int r, ChecksumMode mode) {
        JsonNode q = request(r);
        JsonNode s = q.get(mode == ChecksumMode.MIXED ? "expected_slices_mixed" : "expected_slices");
        return VectorJson.sliceSums(s, q.get("first_block").asLong(), q.get("expected").size());
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
     * {@return the vector's groups over the given buffers, in order: the one group, or the segments in position
     * order (each with exactly its own number of pages, which sets where the next segment starts)}
     *
     * @param buffers the vector's buffers, as {@link #buffers} returns them
     */
    public List<KvCacheGroup> groups(List<MemorySegment> buffers) {
        return json.get("groups").valueStream().map(g -> KvCacheGroup.of(g.get("page_size").asInt(),
                g.get("num_pages").asLong(), VectorJson.layers(g.get("layers"), buffers))).toList();
    }

    private JsonNode request(int r) {
        return json.get("requests").get(r);
    }

    @Override
    public String toString() {
        return name();
    }
}
