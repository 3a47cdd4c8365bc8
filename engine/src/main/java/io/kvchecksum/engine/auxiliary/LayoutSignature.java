package io.kvchecksum.engine.auxiliary;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.StateRow;

import java.util.ArrayList;
import java.util.List;

/**
 * The layout signature that gates SGLang's page digest: a 64-bit hash of the page size, the number of buffers and each
 * buffer's per-page item length. Two peers compare their page digests only when their signatures are equal, because
 * Adler-32 over pages depends on how the bytes are paged; the weighted sum does not, and is compared regardless.
 *
 * <p><b>Definition</b> (ours: SGLang's own signature hash is not in the project's sources, so this one is not meant to
 * equal SGLang's). The words, in order: the page size in tokens; the number of buffers; then one item length in bytes
 * per buffer: every layer's K page ({@link PageDigestPlan#pageBytes}, layers in the group's order), then every layer's
 * V page (layers that have V), then every state buffer's row length ({@link StateRow#length()}), in the order given:
 * the order of the digest's stream. Each word is written as 8 bytes little-endian, and the signature is FNV-1a 64
 * (offset basis {@code 0xcbf29ce484222325}, prime {@code 0x100000001b3}) of those bytes. Documented with a worked
 * example in {@code docs/sglang.md}; {@code golden/generator/sglang_dumps.py} computes it independently.
 */
public final class LayoutSignature {
    private static final long FNV_OFFSET = 0xcbf29ce484222325L;
    private static final long FNV_PRIME = 0x100000001b3L;

    private LayoutSignature() {
    }

    /**
     * The signature of a layout given as its parts.
     *
     * @param pageSize tokens per page, positive
     * @param itemLengths one per buffer, in stream order (each layer's K, each layer's V, each state row), non-negative
     * @return the FNV-1a 64 hash of the words, as the class comment defines it (any 64-bit value)
     * @throws IllegalArgumentException when {@code pageSize} is not positive or an item length is negative
     */
    public static long of(int pageSize, long[] itemLengths) {
        if (pageSize <= 0) {
            throw new IllegalArgumentException("page size " + pageSize + " must be positive");
        }
        long h = FNV_OFFSET;
        h = word(h, pageSize);
        h = word(h, itemLengths.length);
        for (long len : itemLengths) {
            if (len < 0) {
                throw new IllegalArgumentException("item length " + len + " must be non-negative");
            }
            h = word(h, len);
        }
        return h;
    }

    /**
     * The signature of {@code group}'s pages followed by {@code stateRows} (the stream {@link PageDigestPlan} reads).
     *
     * @param group the cache group whose K and V pages the digest reads, not null
     * @param stateRows the state rows digested after the pages, in stream order; may be empty, not null
     * @return {@link #of(int, long[])} of the group's page size and {@link #itemLengths}
     */
    public static long of(KvCacheGroup group, List<StateRow> stateRows) {
        return of(group.pageSize(), itemLengths(group, stateRows));
    }

    /**
     * The per-buffer item lengths of {@code group} and {@code stateRows}, in stream order.
     *
     * @param group the cache group, not null
     * @param stateRows the state rows, in stream order; may be empty, not null
     * @return a new array: every layer's K page bytes (layers in the group's order), every V page's, then every state
     *     row's length in bytes
     */
    public static long[] itemLengths(KvCacheGroup group, List<StateRow> stateRows) {
        List<Long> out = new ArrayList<>();
        for (int kind = 0; kind < 2; kind++) {
            for (CacheLayer l : group.layers()) {
                KvRegion r = kind == 0 ? l.k() : l.v();
                if (r != null) {
                    out.add(PageDigestPlan.pageBytes(r, group.pageSize(), l.numHeads()));
                }
            }
        }
        for (StateRow s : stateRows) {
            out.add(s.length());
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    private static long word(long h, long w) {
        for (int i = 0; i < 8; i++) {
            h ^= (w >>> (8 * i)) & 0xff;
            h *= FNV_PRIME;
        }
        return h;
    }
}
