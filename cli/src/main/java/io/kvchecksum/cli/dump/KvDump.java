package io.kvchecksum.cli.dump;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

/**
 * A dump read as the KV of one request: the tensors of a {@link DumpFile} described, without copying, as a
 * {@link KvCacheGroup} and the {@link RequestBlocks} to checksum.
 *
 * <p>Layouts ({@code --layout}):
 * <ul>
 * <li>{@code gathered}: {@code layers.<L>.k} and optional {@code layers.<L>.v}, each {@code [tokens, heads, head_dim]};
 *     token 0 is request position {@code firstBlock * blockSize}.</li>
 * <li>{@code vllm-flash} {@code (2, pages, page_size, heads, head_dim)}, {@code vllm-flashinfer-nhd}
 *     {@code (pages, 2, page_size, heads, head_dim)}, {@code vllm-flashinfer-hnd}
 *     {@code (pages, 2, heads, page_size, head_dim)}, {@code vllm-mla} {@code (pages, page_size, head_dim)}: one
 *     {@code layers.<L>.kv_cache} per layer and a 1-D integer {@code block_table} listing the pages of positions
 *     {@code firstBlock*blockSize}, {@code + page_size}, ...; an optional integer {@code num_tokens} tensor holds the
 *     request's token count.</li>
 * <li>{@code sglang}: SGLang's pool, {@code layers.<L>.k_buffer}/{@code v_buffer} {@code [slots, heads, head_dim]} and
 *     the request's {@code req_to_token} slots ({@link SglangDump}); also carries the paged view SGLang's page digest
 *     reads ({@link #sglang()}).</li>
 * </ul>
 * An optional {@code layers.<L>.index_k} holds layer {@code L}'s indexer K cache (DeepSeek's index-K: bf16, or fp8 of
 * 128 bytes plus a 4-byte scale = 132 bytes per token): {@code [tokens, heads, dim]} in the gathered layout,
 * {@code (pages, page_size, dim)} in a paged one (the layer's pages and block table). It is a second cache of the
 * layer: it takes the head numbers after the layer's KV heads ({@link Options#indexKHead()}) and is part of the group.
 * Cells that are not whole 8-byte pieces (K plus V bytes, or the index-K row, not a multiple of 8) leave the group
 * {@link #skipReason() skipped with the reason} unless the options pad cells ({@link CellPadding#ZEROS}).
 * Tensors with other names are ignored. Everything is checked here, before any checksum runs.
 *
 * @param file the file
 * @param layout the layout name
 * @param paging the dump's pages, in words, for {@link #describe()}
 * @param layers the layers, by layer number
 * @param group the cache group over the dump's memory
 * @param request the request: block size, first block, token count and the table (starting at the first block)
 * @param table the page of each of the request's pages, from its first token on
 * @param pageSize tokens per page (1 for gathered and SGLang dumps, whose pages are single tokens)
 * @param padding what the checksum does with cells that are not whole pieces: the options' padding
 * @param sglang the paged view SGLang's page digest reads, for an {@code sglang} dump; {@code null} for every other
 *     layout
 */
public record KvDump(DumpFile file, String layout, String paging, List<Layer> layers, KvCacheGroup group,
        RequestBlocks request, int[] table, int pageSize, CellPadding padding, SglangDump.Pages sglang) {
    /** The layout names {@code --layout} accepts. */
    public static final List<String> LAYOUTS = List.of("gathered", "vllm-flash", "vllm-flashinfer-nhd",
            "vllm-flashinfer-hnd", "vllm-mla", "sglang");

    private static final Pattern LAYER = Pattern.compile("layers\\.(\\d{1,9})\\.(k|v|kv_cache|index_k)");

    /**
     * How to read a dump.
     *
     * @param layout one of {@link #LAYOUTS}
     * @param blockSize checksum block size B
     * @param numTokens the request's token count N, or {@code null} for the default
     * @param firstBlock the first block position F
     * @param headOffset the global head number of the dump's head 0
     * @param padding what to do with cells that are not whole 8-byte pieces: {@link CellPadding#NONE} skips the group
     *     with the reason, {@link CellPadding#ZEROS} pads them ({@code --pad-cells})
     * @param indexKHead the global head number of every layer's index-K cache, or {@code null} for the default: right
     *     after the layer's KV heads in the dump ({@code headOffset + kvHeads})
     */
    public record Options(String layout, int blockSize, Long numTokens, long firstBlock, int headOffset, CellPadding padding,
            Integer indexKHead) {
        public Options {
            padding = padding == null ? CellPadding.NONE : padding;
        }

        /** Options without padding, index-K at its default head. */
        public Options(String layout, int blockSize, Long numTokens, long firstBlock, int headOffset) {
            this(layout, blockSize, numTokens, firstBlock, headOffset, CellPadding.NONE, null);
        }

        /** The same options for another token count. */
        public Options withNumTokens(Long n) {
            return new Options(layout, blockSize, n, firstBlock, headOffset, padding, indexKHead);
        }
    }

    /**
     * One layer of the dump.
     *
     * @param layer the layer number from the tensor name
     * @param kTensor the tensor holding the layer's K bytes: {@code layers.<L>.k}, or the whole
     *     {@code layers.<L>.kv_cache} in a paged layout
     * @param vTensor the tensor holding its V bytes ({@code layers.<L>.v}, the same kv_cache in a paged layout), or
     *     {@code null} for K-only (MLA) layers
     * @param cache the layer's description over those tensors
     * @param indexK true for the layer's index-K cache ({@code layers.<L>.index_k}), a second cache of layer {@code layer}
     */
    public record Layer(int layer, Tensor kTensor, Tensor vTensor, CacheLayer cache, boolean indexK) {
        /** A layer's KV (or MLA) cache. */
        public Layer(int layer, Tensor kTensor, Tensor vTensor, CacheLayer cache) {
            this(layer, kTensor, vTensor, cache, false);
        }
    }

    /** Copies the list of layers. */
    public KvDump {
        layers = List.copyOf(layers);
    }

    /** Reads {@code file} with the given options, or throws {@link InvalidInputException} naming the problem. */
    public static KvDump of(DumpFile file, Options o) {
        if (!LAYOUTS.contains(o.layout())) {
            throw new InvalidOptionException("unknown layout '" + o.layout() + "': expected one of " + String.join(", ", LAYOUTS));
        }
        if (o.blockSize() <= 0) {
            throw new InvalidOptionException("--block-size " + o.blockSize() + ": must be positive");
        }
        if (o.firstBlock() < 0) {
            throw new InvalidOptionException("--first-block " + o.firstBlock() + ": must be 0 or more");
        }
        if (o.headOffset() < 0) {
            throw new InvalidOptionException("--head-offset " + o.headOffset() + ": must be 0 or more");
        }
        if (o.indexKHead() != null && o.indexKHead() < 0) {
            throw new InvalidOptionException("--index-k-head " + o.indexKHead() + ": must be 0 or more");
        }
        if (o.numTokens() != null && o.numTokens() <= 0) {
            throw new InvalidOptionException("--num-tokens " + o.numTokens() + ": must be positive (the request holds no"
                    + " tokens)");
        }
        long start;
        try {
            start = Math.multiplyExact(o.firstBlock(), (long) o.blockSize());
        } catch (ArithmeticException e) {
            throw new InvalidOptionException("--first-block " + o.firstBlock() + " x --block-size " + o.blockSize()
                    + " overflows a 64-bit position");
        }
        try {
            if (o.layout().equals("sglang")) {
                return SglangDump.read(file, o, start);
            }
            Map<Integer, Tensor[]> byLayer = byLayer(file, LAYER, List.of("k", "v", "kv_cache", "index_k"));
            return o.layout().equals("gathered") ? gathered(file, o, start, byLayer) : paged(file, o, start, byLayer);
        } catch (InvalidLayoutException e) {
            throw new InvalidInputException(file.path() + ": " + e.getMessage());
        }
    }

    /**
     * The tensors whose names {@code layer} matches, by layer number: slot {@code i} of each array holds the tensor
     * whose name ends in {@code kinds[i]} (the pattern's second group).
     */
    static Map<Integer, Tensor[]> byLayer(DumpFile file, Pattern layer, List<String> kinds) {
        Map<Integer, Tensor[]> byLayer = new TreeMap<>();
        for (Tensor t : file.tensors().values()) {
            Matcher m = layer.matcher(t.name());
            if (m.matches()) {
                Tensor[] kv = byLayer.computeIfAbsent(Integer.parseInt(m.group(1)), x -> new Tensor[kinds.size()]);
                int slot = kinds.indexOf(m.group(2));
                if (kv[slot] != null) {
                    // layers.0.k and layers.00.k: one layer twice, and which one counts would be a guess
                    throw new InvalidInputException(file.path() + ": " + kv[slot].name() + " and " + t.name()
                            + " are the same layer " + m.group(1).replaceFirst("^0+(?=.)", "") + " twice");
                }
                kv[slot] = t;
            }
        }
        return byLayer;
    }

    /**
     * Checks a layer's K (and V, when not {@code null}) of {@code [rows, heads, head_dim]}: one dtype, the same rows
     * and heads; {@code rows} names the first dimension in messages.
     */
    static void checkRows(String where, Tensor k, Tensor v, String rows) {
        checkRowsShape(where, k, rows);
        if (v != null) {
            checkRowsShape(where, v, rows);
            if (!v.dtype().equals(k.dtype())) {
                throw new InvalidInputException(where + ": " + v.name() + " is " + v.dtype() + " but " + k.name() + " is "
                        + k.dtype() + ": K and V of a layer must have one dtype");
            }
            if (v.shape()[0] != k.shape()[0] || v.shape()[1] != k.shape()[1]) {
                throw new InvalidInputException(where + ": " + v.name() + " shape " + v.shapeText() + " does not match "
                        + k.name() + " shape " + k.shapeText() + " in " + rows + " and heads");
            }
        }
    }

    private static void checkRowsShape(String where, Tensor t, String rows) {
        long[] s = t.shape();
        if (s.length != 3 || s[1] <= 0 || s[2] <= 0 || s[1] > Integer.MAX_VALUE) {
            throw new InvalidInputException(where + ": " + t.name() + " shape " + t.shapeText()
                    + " is not [" + rows + ", heads, head_dim]");
        }
    }

    /** The region of a {@code [rows, heads, head_dim]} tensor read as pages of one row (page id = row). */
    static KvRegion rows(Tensor t, int heads, int cell) {
        return new KvRegion(KvMemory.host(t.data()), 0, (long) heads * cell, 0, cell, cell);
    }

    private static KvDump gathered(DumpFile file, Options o, long start, Map<Integer, Tensor[]> byLayer) {
        String where = file.path().toString();
        List<Layer> layers = new ArrayList<>();
        long tokens = -1;
        String tokensFrom = null;
        for (Map.Entry<Integer, Tensor[]> e : byLayer.entrySet()) {
            Tensor k = e.getValue()[0];
            Tensor v = e.getValue()[1];
            if (k == null) {
                if (v != null) {
                    throw new InvalidInputException(where + ": " + v.name() + " has no layers." + e.getKey() + ".k");
                }
                if (e.getValue()[3] != null) {
                    throw new InvalidInputException(where + ": " + e.getValue()[3].name() + " has no layers." + e.getKey()
                            + ".k (an index-K cache belongs to a layer's KV)");
                }
                continue;
            }
            checkRows(where, k, v, "tokens");
            if (tokens >= 0 && k.shape()[0] != tokens) {
                throw new InvalidInputException(where + ": " + k.name() + " holds " + k.shape()[0] + " tokens but "
                        + tokensFrom + " holds " + tokens + ": every layer must hold the same tokens");
            }
            tokens = k.shape()[0];
            tokensFrom = k.name();
            int heads = Math.toIntExact(k.shape()[1]);
            KvRegion kr = rows(k, heads, cell(where, k));
            KvRegion vr = v == null ? null : rows(v, heads, cell(where, v));
            layers.add(new Layer(e.getKey(), k, v, new CacheLayer(e.getKey(), o.headOffset(), heads, kr, vr)));
            Tensor ik = e.getValue()[3];
            if (ik != null) {
                checkRowsShape(where, ik, "tokens");
                if (ik.shape()[0] != k.shape()[0]) {
                    throw new InvalidInputException(where + ": " + ik.name() + " holds " + ik.shape()[0] + " tokens but "
                            + k.name() + " holds " + k.shape()[0]);
                }
                int ih = Math.toIntExact(ik.shape()[1]);
                KvRegion ir = rows(ik, ih, cell(where, ik));
                layers.add(new Layer(e.getKey(), ik, null, CacheLayer.kOnly(e.getKey(), indexHead(o, heads), ih, ir), true));
            }
        }
        if (layers.isEmpty()) {
            throw new InvalidInputException(where + ": no tensor named layers.<L>.k (layout gathered: layers.<L>.k and"
                    + " layers.<L>.v of [tokens, heads, head_dim]; found " + names(file) + ")");
        }
        if (tokens == 0) {
            throw new InvalidInputException(where + ": the request holds no tokens (the layers have 0 rows)");
        }
        long n = o.numTokens() != null ? o.numTokens() : start + tokens;
        if (n < start || n - start > tokens) {
            throw new InvalidInputException(where + ": --num-tokens " + n + " needs request positions " + start + ".."
                    + (n - 1) + " but the dump holds " + tokens + " tokens from position " + start + " (--first-block "
                    + o.firstBlock() + " x --block-size " + o.blockSize() + ")");
        }
        if (n - start > Integer.MAX_VALUE) {
            throw new InvalidInputException(where + ": more than 2^31 tokens");
        }
        // pages of one slot, page id = token index in the dump: any block size, no rounding
        int[] table = IntStream.range(0, (int) (n - start)).toArray();
        KvCacheGroup group = KvCacheGroup.of(1, tokens, layers.stream().map(Layer::cache).toList());
        RequestBlocks request = RequestBlocks.of(table, n, o.firstBlock(), o.blockSize());
        return new KvDump(file, "gathered", "gathered", layers, group, request, table, 1, o.padding(), null);
    }

    /** The global head of a layer's index-K cache: the option, else right after the layer's KV heads in the dump. */
    private static int indexHead(Options o, int kvHeads) {
        return o.indexKHead() != null ? o.indexKHead() : o.headOffset() + kvHeads;
    }

    /**
     * The request's token count: {@code --num-tokens}, else the dump's {@code num_tokens} tensor (one integer past
     * {@code start}), else every slot the dump holds from {@code start}; refused when the {@code held} slots from
     * {@code start} (described by {@code heldText} in the message) do not hold it.
     */
    static long requestedTokens(DumpFile file, Options o, long start, long held, String where, String heldText) {
        Tensor nt = o.numTokens() != null ? null : scalar(file, "num_tokens", where);
        long n = o.numTokens() != null ? o.numTokens() : nt == null ? start + held : nt.integerAt(0);
        if (nt != null && n <= start) {
            throw new InvalidInputException(where + ": the request holds no tokens from position " + start
                    + " (num_tokens = " + nt.integerText(0) + ")");
        }
        if (n < start || n - start > held) {
            throw new InvalidInputException(where + ": --num-tokens " + n + " needs request positions " + start + ".."
                    + (n - 1) + " but " + heldText + " from position " + start);
        }
        return n;
    }

    /**
     * The dump's 1-D integer tensor {@code name} of 1 to 2^31 entries, listing {@code what} for the request; {@code
     * shapeNote} follows "must be a 1-D integer tensor" in the message when it is not one.
     */
    static Tensor list(DumpFile file, String name, String what, String shapeNote, String layout, String where) {
        Tensor t = file.get(name);
        if (t == null) {
            throw new InvalidInputException(where + ": no " + name + " tensor (" + what + ", a 1-D integer tensor; layout "
                    + layout + ")");
        }
        if (!t.dtype().integer() || t.shape().length != 1) {
            throw new InvalidInputException(where + ": " + name + " must be a 1-D integer tensor" + shapeNote + ", got "
                    + t.dtype() + " " + t.shapeText());
        }
        if (t.shape()[0] > Integer.MAX_VALUE) {
            throw new InvalidInputException(where + ": " + name + " has more than 2^31 entries");
        }
        if (t.shape()[0] == 0) {
            throw new InvalidInputException(where + ": the request holds no tokens (" + name + " is empty)");
        }
        return t;
    }

    /** The dump's tensor {@code name}, which must hold one integer, or {@code null} when the dump has none. */
    static Tensor scalar(DumpFile file, String name, String where) {
        Tensor t = file.get(name);
        if (t != null && (!t.dtype().integer() || t.numel() != 1)) {
            throw new InvalidInputException(where + ": " + name + " must be one integer, got " + t.dtype() + " "
                    + t.shapeText());
        }
        return t;
    }

    /** A paged layout: its kv_cache shape, as messages print it, and the layer it describes. */
    private record Paged(String shape, LayerOf layer) {
    }

    private interface LayerOf {
        CacheLayer of(int layer, int firstHead, KvMemory cache, KvLayouts.PagedShape s);
    }

    private static final Map<String, Paged> PAGED = Map.of(
            "vllm-flash", new Paged("(2, num_pages, page_size, heads, head_dim)", KvLayouts::vllmFlashLayer),
            "vllm-flashinfer-nhd", new Paged("(num_pages, 2, page_size, heads, head_dim)", KvLayouts::flashInferNhdLayer),
            "vllm-flashinfer-hnd", new Paged("(num_pages, 2, heads, page_size, head_dim)", KvLayouts::flashInferHndLayer),
            "vllm-mla", new Paged("(num_pages, page_size, head_dim)", KvLayouts::vllmMlaLayer));

    private static KvDump paged(DumpFile file, Options o, long start, Map<Integer, Tensor[]> byLayer) {
        String where = file.path().toString();
        String layout = o.layout();
        Paged kind = PAGED.get(layout);
        String expected = kind.shape();
        // where the shape holds the page count, the page size, the heads and the K/V pair (MLA: one head, no pair)
        List<String> dims = List.of(expected.substring(1, expected.length() - 1).split(", "));
        int kvAt = dims.indexOf("2");
        int headsAt = dims.indexOf("heads");
        List<Layer> layers = new ArrayList<>();
        long numPages = -1;
        int pageSize = -1;
        String shapeFrom = null;
        for (Map.Entry<Integer, Tensor[]> e : byLayer.entrySet()) {
            Tensor t = e.getValue()[2];
            if (t == null) {
                if (e.getValue()[3] != null) {
                    throw new InvalidInputException(where + ": " + e.getValue()[3].name() + " has no layers." + e.getKey()
                            + ".kv_cache (an index-K cache belongs to a layer's KV)");
                }
                continue;
            }
            long[] s = t.shape();
            boolean ok = s.length == dims.size() && (kvAt < 0 || s[kvAt] == 2);
            for (long d : s) {
                ok &= d > 0 && d <= Integer.MAX_VALUE;
            }
            if (!ok) {
                throw new InvalidInputException(where + ": " + t.name() + " shape " + t.shapeText() + " does not match layout "
                        + layout + " " + expected);
            }
            long pages = s[dims.indexOf("num_pages")];
            int page = (int) s[dims.indexOf("page_size")];
            int heads = headsAt < 0 ? 1 : (int) s[headsAt];
            int headDim = (int) s[s.length - 1];
            if (numPages >= 0 && (pages != numPages || page != pageSize)) {
                throw new InvalidInputException(where + ": " + t.name() + " shape " + t.shapeText() + " has " + pages
                        + " pages of " + page + " slots but " + shapeFrom + " has " + numPages + " of " + pageSize
                        + ": all layers must share one paging");
            }
            numPages = pages;
            pageSize = page;
            shapeFrom = t.name();
            cell(where, t);
            KvLayouts.PagedShape shape = new KvLayouts.PagedShape(pages, page, heads, headDim, t.dtype().size());
            int layer = e.getKey();
            CacheLayer cl = kind.layer().of(layer, o.headOffset(), KvMemory.host(t.data()), shape);
            layers.add(new Layer(layer, t, cl.v() == null ? null : t, cl));
            Tensor ik = e.getValue()[3];
            if (ik != null) {
                long[] is = ik.shape();
                if (is.length != 3 || is[0] != pages || is[1] != page || is[2] <= 0 || is[2] > Integer.MAX_VALUE) {
                    throw new InvalidInputException(where + ": " + ik.name() + " shape " + ik.shapeText() + " is not (num_pages "
                            + pages + ", page_size " + page + ", dim) like " + t.name());
                }
                cell(where, ik);
                KvLayouts.PagedShape ishape = new KvLayouts.PagedShape(pages, page, 1, (int) is[2], ik.dtype().size());
                CacheLayer icl = KvLayouts.vllmMlaLayer(layer, indexHead(o, cl.numHeads()), KvMemory.host(ik.data()), ishape);
                layers.add(new Layer(layer, ik, null, icl, true));
            }
        }
        if (layers.isEmpty()) {
            throw new InvalidInputException(where + ": no tensor named layers.<L>.kv_cache (layout " + layout + " "
                    + expected + "; found " + names(file) + ")");
        }
        if (o.blockSize() % pageSize != 0) {
            throw new InvalidInputException(where + ": --block-size " + o.blockSize() + " is not a multiple of the page size "
                    + pageSize + " of " + shapeFrom);
        }
        Tensor bt = list(file, "block_table", "the request's physical page ids", "", layout, where);
        int[] table = new int[(int) bt.shape()[0]];
        for (int i = 0; i < table.length; i++) {
            long p = bt.integerAt(i);
            if (p < 0 || p >= numPages) {
                throw new InvalidInputException(where + ": block_table[" + i + "] = " + bt.integerText(i) + " is past the cache: "
                        + shapeFrom + " has " + numPages + " pages (valid ids 0.." + (numPages - 1) + ")");
            }
            table[i] = (int) p;
        }
        long held = (long) table.length * pageSize;
        long n = requestedTokens(file, o, start, held, where, "block_table lists " + table.length + " pages of " + pageSize
                + " slots (" + held + " tokens)");
        KvCacheGroup group = KvCacheGroup.of(pageSize, numPages, layers.stream().map(Layer::cache).toList());
        // the table was checked entry by entry above, with the tensors' names: the backend's own check is the only other
        RequestBlocks request = RequestBlocks.of(table, n, o.firstBlock(), o.blockSize());
        return new KvDump(file, layout, layout + ", page " + pageSize + ", " + numPages + " pages", layers, group, request,
                table, pageSize, o.padding(), null);
    }

    private static int cell(String where, Tensor t) {
        long[] s = t.shape();
        long bytes = s[s.length - 1] * t.dtype().size();
        // Cells that are not whole 8-byte pieces are no input error: the group is skipped with the reason (skipReason)
        // unless cells are padded; K and V need not be whole pieces each, only their total.
        if (bytes > Integer.MAX_VALUE) {
            throw new InvalidInputException(where + ": " + t.name() + " head_dim " + s[s.length - 1] + " x " + t.dtype().size()
                    + "-byte " + t.dtype() + " = " + bytes + "-byte cells: too large a cell");
        }
        return (int) bytes;
    }

    /** The dump's tensor names for messages: the first six, then the count. */
    static String names(DumpFile f) {
        List<String> n = new ArrayList<>(f.tensors().keySet());
        return n.size() <= 6 ? String.join(", ", n) : String.join(", ", n.subList(0, 6)) + ", ... (" + n.size() + " tensors)";
    }

    /**
     * Why the dump's group cannot be checksummed, or {@code null}: a layer whose cells are not whole 8-byte pieces
     * while cells are not padded. Commands report the group skipped with this reason instead of computing anything.
     */
    public String skipReason() {
        return padding != CellPadding.NONE ? null : layers.stream().map(l -> {
            String p = SlicePlan.unpaddedCellProblem(l.cache());
            return p == null ? null : l.kTensor().name() + ": " + p;
        }).filter(Objects::nonNull).findFirst().orElse(null);
    }

    /** The KV bytes the checksum reads: every cell of every checksummed token. */
    public long kvBytes() {
        return group.bytesPerToken() * (request.numTokens() - request.startToken());
    }

    /**
     * The byte offset, in the tensor that holds it, of the K (or V) cell of request position {@code t}, local head
     * {@code h}, of layer {@code l}.
     */
    public long cellOffset(Layer l, boolean v, long t, int h) {
        long i = t - request.startToken();
        int page = table[(int) (i / pageSize)];
        KvRegion r = v ? l.cache().v() : l.cache().k();
        return r.cellOffset(page, i % pageSize, h);
    }

    /**
     * The table entries for the pages holding request positions {@code [from, to)}, {@code from} a multiple of the page
     * size past the start: a chunk's own pages, not the rest of the table.
     */
    public int[] tablePart(long from, long to) {
        long i = (from - request.startToken()) / pageSize;
        long j = Math.ceilDiv(to - request.startToken(), (long) pageSize);
        return Arrays.copyOfRange(table, (int) i, (int) Math.min(j, table.length));
    }

    /** One line: the file, layout, shape summary. */
    public String describe() {
        Layer first = layers.getFirst();
        CacheLayer c = first.cache();
        String kv = c.v() == null ? "K only" : "K+V";
        long kvLayers = layers.stream().filter(l -> !l.indexK()).count();
        String index = layers.stream().filter(Layer::indexK).findFirst().map(l -> ", index-K " + l.cache().cellBytes()
                + "-byte cells of " + l.kTensor().dtype() + (padding == CellPadding.ZEROS ? " (padded)" : "")).orElse("");
        return file.path() + " (" + file.format() + ", " + paging + ", " + kvLayers + " layer"
                + (kvLayers == 1 ? "" : "s") + " x " + c.numHeads() + " head" + (c.numHeads() == 1 ? "" : "s") + ", "
                + c.cellBytes() + "-byte " + kv + " cells of " + first.kTensor().dtype() + index + ")";
    }
}
