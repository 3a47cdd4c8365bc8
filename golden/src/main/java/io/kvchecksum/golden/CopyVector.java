package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Supplier;

/**
 * One verifying-copy vector of {@code vectors-copy/} ({@code golden/generator/generate_copy.py}): a source and a
 * destination cache over buffers filled by the generator's rule, and what the copy must give: the destination's block
 * checksums and the SHA-256 of every buffer after the copy.
 */
public final class CopyVector {
    private static final Supplier<List<CopyVector>> ALL = VectorJson.once(CopyVector::read);
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final String name;
    private final JsonNode json;

    private CopyVector(String name, JsonNode json) {
        this.name = name;
        this.json = json;
    }

    /** {@return every vector of {@code vectors-copy/}, in the index's order} */
    public static List<CopyVector> all() {
        return ALL.get();
    }

    /**
     * {@return the vectors whose source and destination are separate buffers (not {@link #inPlace()}): for tests that
     * place each side's buffers by itself (a route per side)}
     */
    public static List<CopyVector> apart() {
        return all().stream().filter(v -> !v.inPlace()).toList();
    }

    private static List<CopyVector> read() {
        List<CopyVector> out = new ArrayList<>();
        for (JsonNode n : VectorJson.tree("vectors-copy", "index.json").get("vectors")) {
            out.add(new CopyVector(n.asText(), VectorJson.tree("vectors-copy", n.asText() + ".json")));
        }
        return List.copyOf(out);
    }

    /** {@return the vector's name} */
    public String name() {
        return name;
    }

    /** {@return what the vector copies} */
    public String description() {
        return json.get("description").asText();
    }

    /** {@return the mode and padding of its checksums} */
    public ChecksumSpec spec() {
        return new ChecksumSpec(ChecksumMode.of(json.get("mode").asText()),
                json.get("pad_cells").asBoolean() ? CellPadding.ZEROS : CellPadding.NONE);
    }

    /** {@return the destination's block checksums the copy must return} */
    public long[] expected() {
        return VectorJson.unsigned(json.get("expected"));
    }

    /** {@return how many buffers the vector has (source buffers first)} */
    public int numBuffers() {
        return json.get("buffers").size();
    }

    /**
     * {@return whether buffer {@code k} is written: a destination buffer, or one of an in-place vector (role "both")}
     *
     * @param k a buffer index
     */
    public boolean isDestination(int k) {
        String role = json.get("buffers").get(k).get("role").asText();
        return "destination".equals(role) || "both".equals(role);
    }

    /**
     * {@return whether the destination's regions lie in the source's buffers (vLLM's in-place rearrangement): a copy a
     * backend runs only staged, page by page ({@code io.kvchecksum.CopyPlan#staged()})}
     */
    public boolean inPlace() {
        return json.path("in_place").asBoolean(false);
    }

    /**
     * {@return the SHA-256 (hex) of buffer {@code k} before the copy}
     *
     * @param k a buffer index
     */
    public String initialSha256(int k) {
        return json.get("initial_sha256").get(k).asText();
    }

    /**
     * {@return the SHA-256 (hex) of buffer {@code k} after the copy}
     *
     * @param k a buffer index
     */
    public String finalSha256(int k) {
        return json.get("final_sha256").get(k).asText();
    }

    /**
     * The vector's buffers in host memory of {@code arena}, filled by the generator's rule: word {@code i} of buffer
     * {@code k} is splitmix64 of {@code seed*2^32 + k*2^26 + i}, little-endian.
     *
     * @param arena where to allocate them
     * @return one segment per buffer
     */
    public List<MemorySegment> buffers(Arena arena) {
        List<MemorySegment> out = new ArrayList<>();
        for (int k = 0; k < numBuffers(); k++) {
            out.add(arena.allocate(json.get("buffers").get(k).get("bytes").asLong(), 64));
        }
        refill(out);
        return out;
    }

    /**
     * Fills the buffers again with their initial bytes (the generator's rule), in place: an in-place vector's copy
     * changes its source, so it runs again only on refilled buffers.
     *
     * @param buffers what {@link #buffers} returned
     */
    public void refill(List<MemorySegment> buffers) {
        long seed = json.get("seed").asLong();
        for (int k = 0; k < numBuffers(); k++) {
            MemorySegment seg = buffers.get(k);
            long base = seed * (1L << 32) + k * (1L << 26);
            for (long i = 0; i < seg.byteSize() / 8; i++) {
                seg.set(WORD, 8 * i, splitmix64(base + i));
            }
        }
    }

    /**
     * {@return the source cache over {@code memory} (one per buffer, by index)}
     *
     * @param memory each buffer as the backend reads it
     */
    public KvCacheGroup source(List<KvMemory> memory) {
        return group(json.get("source"), memory);
    }

    /**
     * {@return the source cache over {@code memory} with every layer's head numbers moved by {@code shift}: a source
     * described with the wrong head range, for the fault tests}
     *
     * @param memory each buffer as the backend reads it
     * @param shift added to every layer's first head
     */
    KvCacheGroup sourceWithHeadsMoved(List<KvMemory> memory, int shift) {
        KvCacheGroup g = source(memory);
        return KvCacheGroup.of(g.pageSize(), g.numPages(), g.layers().stream().map(l -> new CacheLayer(l.layer(),
                l.firstHead() + shift, l.numHeads(), l.k(), l.v())).toList());
    }

    /** {@return the heads of the source's first layer} */
    int sourceHeadsPerLayer() {
        return json.get("source").get("layers").get(0).get("num_heads").asInt();
    }

    /**
     * {@return the destination cache over {@code memory} (one per buffer, by index)}
     *
     * @param memory each buffer as the backend writes it
     */
    public KvCacheGroup destination(List<KvMemory> memory) {
        return group(json.get("destination"), memory);
    }

    /** {@return where the positions lie in the source} */
    public RequestBlocks sourceRequest() {
        return request(json.get("source"));
    }

    /** {@return where the positions go in the destination, and the blocks of the checksums} */
    public RequestBlocks destinationRequest() {
        return request(json.get("destination"));
    }

    /**
     * {@return the SHA-256 of {@code bytes}, hex}
     *
     * @param bytes the bytes
     */
    public static String sha256(MemorySegment bytes) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            d.update(bytes.asByteBuffer());
            return HexFormat.of().formatHex(d.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private RequestBlocks request(JsonNode side) {
        return RequestBlocks.of(VectorJson.ints(side.get("block_table")), json.get("num_tokens").asLong(),
                side.get("first_block").asLong(), side.get("block_size").asInt());
    }

    private static KvCacheGroup group(JsonNode side, List<KvMemory> memory) {
        List<CacheLayer> layers = side.get("layers").valueStream().map(l -> new CacheLayer(l.get("layer").asInt(),
                l.get("first_head").asInt(), l.get("num_heads").asInt(), region(l.get("k"), memory),
                region(l.path("v"), memory))).toList();
        return KvCacheGroup.of(side.get("page_size").asInt(), side.get("num_pages").asLong(), layers);
    }

    private static KvRegion region(JsonNode r, List<KvMemory> memory) {
        return !r.isObject() ? null : new KvRegion(memory.get(r.get("buffer").asInt()), r.get("offset").asLong(),
                r.get("page_stride").asLong(), r.get("token_stride").asLong(), r.get("head_stride").asLong(),
                r.get("cell_bytes").asInt());
    }

    private static long splitmix64(long x) {
        long z = x + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    @Override
    public String toString() {
        return name;
    }
}
