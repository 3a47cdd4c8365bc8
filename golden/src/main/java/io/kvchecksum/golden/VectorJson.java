package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The readers of the parts that every vector file writes the same way ({@link GoldenVector}, {@link CombinationVector}):
 * buffers, regions, requests, unsigned checksums and slice sums.
 */
final class VectorJson {
    private VectorJson() {
    }

    /** The request of a JSON object with {@code block_table}, {@code num_tokens}, {@code first_block}, {@code block_size}. */
    static RequestBlocks request(JsonNode r) {
        JsonNode t = r.get("block_table");
        int[] table = new int[t.size()];
        for (int i = 0; i < table.length; i++) {
            table[i] = t.get(i).asInt();
        }
        return RequestBlocks.of(table, r.get("num_tokens").asLong(), r.get("first_block").asLong(),
                r.get("block_size").asInt());
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

    static KvRegion region(JsonNode r, List<MemorySegment> buffers) {
        return new KvRegion(KvMemory.host(buffers.get(r.get("buffer").asInt())), r.get("offset").asLong(),
                r.get("page_stride").asLong(), r.get("token_stride").asLong(), r.get("head_stride").asLong(),
                r.get("cell_bytes").asInt());
    }

    /** A layer's V region, or {@code null} where the vector has none (K-only layers). */
    static KvRegion optionalRegion(JsonNode r, List<MemorySegment> buffers) {
        return r == null || r.isNull() ? null : region(r, buffers);
    }

    /** Checksums written as decimal strings (they are unsigned 64-bit). */
    static long[] unsigned(JsonNode arr) {
        long[] out = new long[arr.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Long.parseUnsignedLong(arr.get(i).asText());
        }
        return out;
    }
}
