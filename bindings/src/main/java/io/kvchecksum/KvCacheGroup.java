package io.kvchecksum;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The physical layout of one KV cache group on one worker: its layers and the paging they share.
 *
 * <p>Describes memory, never copies it. Construction validates everything that does not depend on a request:
 * every region holds {@code numPages} pages of {@code pageSize} slots for all of its layer's heads inside its
 * memory, no (layer, head) appears twice, and no size overflows. Whether cells are whole 8-byte pieces depends on the
 * plan's {@link CellPadding} and is checked by {@link SlicePlan#of}. A group is
 * immutable and may be shared between threads; the memory it points to must outlive any computation on it.
 *
 * @param layers the layers, in any order
 * @param pageSize tokens per physical page (a vLLM kernel block, an SGLang page); may be smaller or larger than the
 *     checksum block size
 * @param numPages physical pages in the cache: valid page ids are {@code 0 .. numPages-1}
 */
public record KvCacheGroup(List<CacheLayer> layers, int pageSize, long numPages) implements KvSource {

    /**
     * Validates the group against its memory; {@code layers} is copied.
     *
     * @throws InvalidLayoutException when there are no layers, {@code pageSize} or {@code numPages} is not positive, a
     *     region's {@code numPages} pages reach past its memory or overflow a 64-bit offset, or a (layer, head) appears
     *     twice
     * @throws NullPointerException when {@code layers} or one of its elements is null
     */
    public KvCacheGroup {
        layers = List.copyOf(Objects.requireNonNull(layers, "layers"));
        if (layers.isEmpty()) {
            throw new InvalidLayoutException("a cache group needs at least one layer");
        }
        if (pageSize <= 0) {
            throw new InvalidLayoutException("pageSize must be positive, got " + pageSize);
        }
        if (numPages <= 0) {
            throw new InvalidLayoutException("numPages must be positive, got " + numPages);
        }
        Set<Long> slices = new HashSet<>();
        for (CacheLayer l : layers) {
            checkRegion(l, l.k(), "K", pageSize, numPages);
            if (l.v() != null) {
                checkRegion(l, l.v(), "V", pageSize, numPages);
            }
            for (int h = 0; h < l.numHeads(); h++) {
                long key = ((long) l.layer() << 32) | (l.firstHead() + h);
                if (!slices.add(key)) {
                    throw new InvalidLayoutException("layer " + l.layer() + " head " + (l.firstHead() + h)
                            + " appears twice in the group (a second cache of a layer takes the next head numbers)");
                }
            }
        }
    }

    /**
     * {@return a group of the given layers}
     *
     * @param pageSize tokens per physical page, positive
     * @param numPages physical pages of every region, positive
     * @param layers the layers, in any order; copied
     * @throws InvalidLayoutException as the constructor does
     */
    public static KvCacheGroup of(int pageSize, long numPages, List<CacheLayer> layers) {
        return new KvCacheGroup(layers, pageSize, numPages);
    }

    /** {@return the number of (layer, head) slices in the group} */
    public int numSlices() {
        int n = 0;
        for (CacheLayer l : layers) {
            n += l.numHeads();
        }
        return n;
    }

    /** {@return bytes of KV read per token: all cells of all layers and heads} */
    public long bytesPerToken() {
        long b = 0;
        for (CacheLayer l : layers) {
            b += (long) l.numHeads() * l.cellBytes();
        }
        return b;
    }

    /** {@return true when every region lives in host memory, so a CPU backend can read it} */
    public boolean isHostResident() {
        for (CacheLayer l : layers) {
            if (!(l.k().memory() instanceof KvMemory.Host) || (l.v() != null && !(l.v().memory() instanceof KvMemory.Host))) {
                return false;
            }
        }
        return true;
    }

    private static void checkRegion(CacheLayer l, KvRegion r, String kind, int pageSize, long numPages) {
        String what = "layer " + l.layer() + " " + kind;
        long end = r.extent(numPages, pageSize, l.numHeads(), what);
        if (end > r.memory().byteSize()) {
            throw new InvalidLayoutException(what + " region is too small: " + numPages + " pages x " + pageSize
                    + " slots x " + l.numHeads() + " heads of " + r.cellBytes() + "-byte cells at offset " + r.offset()
                    + " with strides (page " + r.pageStride() + ", token " + r.tokenStride() + ", head " + r.headStride()
                    + ") reach byte " + end + " but the memory holds " + r.memory().byteSize());
        }
    }

    /** {@return this group: a group is its own geometry} */
    @Override
    public KvCacheGroup geometry() {
        return this;
    }
}
