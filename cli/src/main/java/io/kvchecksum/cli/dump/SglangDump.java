package io.kvchecksum.cli.dump;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.auxiliary.SglangDigests;
import io.kvchecksum.engine.wire.SglangDigestSection;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * {@code --layout sglang}: SGLang's token-to-KV pool and one request's row of its req_to_token pool.
 *
 * <ul>
 * <li>{@code layers.<L>.k_buffer} and {@code layers.<L>.v_buffer}, each {@code [slots, heads, head_dim]} (SGLang's
 *     {@code k_buffer[l]}, {@code v_buffer[l]}); or, for MLA, {@code layers.<L>.kv_buffer} {@code [slots, 1, 576]}
 *     alone (K only). Every layer holds the same slots.</li>
 * <li>{@code req_to_token}: 1-D integers, the token slot of each request position from {@code F*B} on (SGLang's
 *     {@code req_to_token_pool.req_to_token[req_pool_idx, :seq_len]}, sliced from {@code F*B}).</li>
 * <li>optional {@code page_size} (one integer; default 1, SGLang's default): slot {@code s} is in page {@code s /
 *     page_size}. The slots of one page must be consecutive from a multiple of the page size, as SGLang's paged
 *     allocator hands them out; otherwise the dump is refused, naming the position.</li>
 * <li>optional {@code num_tokens} (one integer; default {@code F*B} + the length of {@code req_to_token}).</li>
 * <li>optional {@code state.<name>} tensors: the request's row of each state buffer (any shape; its bytes), digested
 *     after the KV pages in name order.</li>
 * </ul>
 * The weighted sum reads the slots one token at a time (pages of one slot: it does not depend on the paging, so any
 * block size works); the page digest reads whole pages of {@code page_size} slots ({@link Pages}).
 */
public final class SglangDump {
    private static final Pattern LAYER = Pattern.compile("layers\\.(\\d{1,9})\\.(k_buffer|v_buffer|kv_buffer)");

    private SglangDump() {
    }

    /**
     * The paged view of an SGLang dump that SGLang's page digest reads: the pool as pages of {@code pageSize} slots and
     * the request's pages from its first token on.
     *
     * @param pageSize tokens per page
     * @param group the pool as pages of {@code pageSize} slots
     * @param pages the request's pages, from the page holding position {@code start}
     * @param start the request position of the dump's first token, a multiple of {@code pageSize}
     * @param stateRows the state rows digested after the pages, in name order
     */
    public record Pages(int pageSize, KvCacheGroup group, int[] pages, long start, List<StateRow> stateRows) {
        /** Copies the list of state rows. */
        public Pages {
            stateRows = List.copyOf(stateRows);
        }

        /**
         * SGLang's page digest of the request's first {@code numTokens} positions (whole pages from the dump's first
         * token), as the {@code sglang-digest} entry of group {@code groupId}, worker 0.
         */
        public SglangDigestSection.Entry digest(KvChecksum backend, int groupId, long numTokens) {
            long n = Math.ceilDiv(numTokens - start, (long) pageSize);
            try {
                RequestBlocks r = RequestBlocks.of(Arrays.copyOf(pages, (int) n), numTokens, start / pageSize,
                        pageSize);
                return SglangDigests.entry(backend, groupId, 0, SlicePlan.of(group, r), stateRows);
            } catch (InvalidLayoutException e) {
                throw new InvalidInputException("page digest: " + e.getMessage());
            }
        }
    }

    /** Reads {@code file} as an SGLang dump; KvDump.of turns a layout the bindings refuse into an input error. */
    static KvDump read(DumpFile file, KvDump.Options o, long start) {
        String where = file.path().toString();
        Map<Integer, Tensor[]> byLayer = KvDump.byLayer(file, LAYER, List.of("k_buffer", "v_buffer", "kv_buffer"));
        int pageSize = pageSize(file, where);
        long slots = -1;
        String slotsFrom = null;
        List<KvDump.Layer> tokenView = new ArrayList<>();
        List<CacheLayer> paged = new ArrayList<>();
        for (Map.Entry<Integer, Tensor[]> e : byLayer.entrySet()) {
            Tensor k = e.getValue()[0];
            Tensor v = e.getValue()[1];
            Tensor mla = e.getValue()[2];
            if (mla != null && (k != null || v != null)) {
                throw new InvalidInputException(where + ": " + mla.name() + " (MLA, K only) and " + (k != null ? k : v).name()
                        + " in one layer: give k_buffer and v_buffer, or kv_buffer alone");
            }
            if (mla != null) {
                k = mla;
            }
            if (k == null) {
                throw new InvalidInputException(where + ": " + v.name() + " has no layers." + e.getKey() + ".k_buffer");
            }
            KvDump.checkRows(where, k, v, "slots");
            if (slots >= 0 && k.shape()[0] != slots) {
                throw new InvalidInputException(where + ": " + k.name() + " holds " + k.shape()[0] + " slots but " + slotsFrom
                        + " holds " + slots + ": every layer of one pool holds the same slots");
            }
            slots = k.shape()[0];
            slotsFrom = k.name();
            int heads = Math.toIntExact(k.shape()[1]);
            int layer = e.getKey();
            // The token view: pages of one slot, page id = slot.
            KvRegion kr = KvDump.rows(k, heads, cell(where, k));
            KvRegion vr = v == null ? null : KvDump.rows(v, heads, cell(where, v));
            tokenView.add(new KvDump.Layer(layer, k, v, new CacheLayer(layer, o.headOffset(), heads, kr, vr)));
            paged.add(pagedLayer(layer, o.headOffset(), k, v, heads, pageSize));
        }
        if (tokenView.isEmpty()) {
            throw new InvalidInputException(where + ": no tensor named layers.<L>.k_buffer or layers.<L>.kv_buffer (layout"
                    + " sglang: layers.<L>.k_buffer and layers.<L>.v_buffer of [slots, heads, head_dim] and req_to_token;"
                    + " found " + KvDump.names(file) + ")");
        }
        if (slots == 0) {
            throw new InvalidInputException(where + ": " + slotsFrom + " holds no slots");
        }
        if (slots > Integer.MAX_VALUE) {
            throw new InvalidInputException(where + ": " + slotsFrom + " holds more than 2^31 slots");
        }
        long numPages = slots / pageSize;
        if (numPages == 0) {
            throw new InvalidInputException(where + ": " + slotsFrom + " holds " + slots + " slots, not one page of "
                    + pageSize);
        }
        if (start % pageSize != 0) {
            throw new InvalidInputException(where + ": the dump starts at request position " + start + " (--first-block "
                    + o.firstBlock() + " x --block-size " + o.blockSize() + "), inside a page of " + pageSize
                    + " tokens: SGLang's pages start at multiples of the page size");
        }
        Tensor rt = KvDump.list(file, "req_to_token", "the request's token slot indices",
                " (one row of SGLang's req_to_token pool)", "sglang", where);
        long held = rt.shape()[0];
        long n = KvDump.requestedTokens(file, o, start, held, where, "req_to_token lists " + held + " slots");
        int count = (int) (n - start);
        int[] slotOf = new int[count];
        int[] pages = new int[(int) Math.ceilDiv(count, (long) pageSize)];
        for (int i = 0; i < count; i++) {
            long s = rt.integerAt(i);
            if (s < 0 || s >= numPages * pageSize) {
                throw new InvalidInputException(where + ": req_to_token[" + i + "] (position " + (start + i) + ") = "
                        + rt.integerText(i) + " is past the pool: " + slotsFrom + " holds " + numPages * pageSize
                        + " slots in whole pages of " + pageSize + " (valid slots 0.." + (numPages * pageSize - 1) + ")");
            }
            int inPage = i % pageSize;
            if (inPage == 0) {
                if (s % pageSize != 0) {
                    throw new InvalidInputException(where + ": req_to_token[" + i + "] (position " + (start + i) + ") = " + s
                            + " starts a page but is not a multiple of the page size " + pageSize
                            + " (is page_size right?)");
                }
                pages[i / pageSize] = (int) (s / pageSize);
            } else if (s != slotOf[i - 1] + 1L) {
                throw new InvalidInputException(where + ": req_to_token[" + i + "] (position " + (start + i) + ") = " + s
                        + " but the page holding position " + (start + i - inPage) + " continues at slot "
                        + (slotOf[i - 1] + 1L) + ": the slots of a page must be consecutive (is page_size right?)");
            }
            slotOf[i] = (int) s;
        }
        KvCacheGroup tokens = KvCacheGroup.of(1, slots, tokenView.stream().map(KvDump.Layer::cache).toList());
        KvCacheGroup pagedGroup = KvCacheGroup.of(pageSize, numPages, paged);
        RequestBlocks request = RequestBlocks.of(slotOf, n, o.firstBlock(), o.blockSize());
        List<StateRow> rows = stateRows(file);
        Pages p = new Pages(pageSize, pagedGroup, pages, start, rows);
        return new KvDump(file, "sglang", "sglang, page " + pageSize + ", " + slots + " slots" + (rows.isEmpty() ? ""
                : ", state rows " + String.join(" ", rows.stream().map(StateRow::name).toList())), tokenView, tokens,
                request, slotOf, 1, o.padding(), p);
    }

    private static CacheLayer pagedLayer(int layer, int headOffset, Tensor k, Tensor v, int heads, int pageSize) {
        long numPages = k.shape()[0] / pageSize;
        KvLayouts.PagedShape ks = new KvLayouts.PagedShape(numPages, pageSize, heads, (int) k.shape()[2], k.dtype().size());
        if (v == null) {
            return KvLayouts.sglangLayer(layer, headOffset, KvMemory.host(k.data()), null, ks);
        }
        if (v.shape()[2] == k.shape()[2]) {
            return KvLayouts.sglangLayer(layer, headOffset, KvMemory.host(k.data()), KvMemory.host(v.data()), ks);
        }
        // V with another head_dim: its own page geometry.
        int vc = Math.toIntExact(v.shape()[2] * v.dtype().size());
        KvRegion kr = KvLayouts.sglangLayer(layer, headOffset, KvMemory.host(k.data()), null, ks).k();
        KvRegion vr = new KvRegion(KvMemory.host(v.data()), 0, (long) pageSize * heads * vc, (long) heads * vc, vc, vc);
        return CacheLayer.of(layer, headOffset, heads, kr, vr);
    }

    private static int pageSize(DumpFile file, String where) {
        Tensor t = KvDump.scalar(file, "page_size", where);
        if (t == null) {
            return 1;
        }
        long p = t.integerAt(0);
        if (p <= 0 || p > (1 << 20)) {
            throw new InvalidInputException(where + ": page_size = " + t.integerText(0) + " must be 1..2^20");
        }
        return (int) p;
    }

    private static List<StateRow> stateRows(DumpFile file) {
        return file.tensors().values().stream().filter(t -> t.name().startsWith("state.") && t.name().length() > 6)
                .map(t -> new StateRow(t.name().substring(6), KvMemory.host(t.data()), 0, t.data().byteSize())).toList();
    }

    private static int cell(String where, Tensor t) {
        long[] s = t.shape();
        long bytes = s[2] * t.dtype().size();
        if (bytes % 8 != 0 || bytes > Integer.MAX_VALUE) {
            throw new InvalidInputException(where + ": " + t.name() + " head_dim " + s[2] + " x " + t.dtype().size()
                    + "-byte " + t.dtype() + " = " + bytes + "-byte cells, not whole 8-byte pieces (the checksum reads"
                    + " 8-byte little-endian pieces)");
        }
        return (int) bytes;
    }
}
