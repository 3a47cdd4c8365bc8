package io.kvchecksum;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The one validated, backend-neutral description of a checksum: for a {@link KvCacheGroup} and a
 * {@link RequestBlocks}, every (layer, head) slice with its factor and where its K and V cells lie, plus the
 * resolved page ids of the checksummed range. Every backend only serializes it: loops on the CPU, the kernel ABI on
 * CUDA, descriptor words on OpenCL.
 *
 * <p>{@link #of} validates everything once (the table against the group's pages, null arguments, array sizes);
 * backends do not validate again. A plan is immutable and may be reused across calls and threads for as long as
 * the group's memory and the page table stay the same.
 *
 * <p>Slices are ordered as the group's layers, then local heads; the slices of one layer are consecutive
 * ({@link #layerRuns()}). Slice order is the row order of {@link SliceSums}.
 */
public final class SlicePlan {

    /** Where a plan's regions live, decided once at build: backends check this flag, never the regions again. */
    public enum Residency {
        /** Every region is host memory ({@link KvMemory.Host}). */
        HOST,
        /** Every region is device memory ({@link KvMemory.Device}). */
        DEVICE,
        /** Some of each. */
        MIXED,
        /**
         * Every region is host memory pinned and mapped for a GPU ({@link KvMemory#pinnedHost}). Only a verifying
         * copy's sides ({@link CopyPlan.Launch#sourceMemory()}, {@link CopyPlan.Launch#destinationMemory()}) tell it
         * apart, for the routes between host and device memory; a plan of checksums counts it as {@link #HOST}, and a
         * side with both pinned and pageable host memory is {@link #HOST}.
         */
        PINNED_HOST
    }

    /**
     * One part (K or V) of one slice: cell {@code (page, slot)} of this head starts at byte
     * {@code base + page*pageStride + slot*tokenStride} of {@code memory}.
     *
     * @param memory where the bytes live
     * @param base the region's offset plus this head's offset ({@code offset + head*headStride}), relative to the
     *     memory's first byte
     * @param pageStride bytes between pages
     * @param tokenStride bytes between slots of a page
     * @param pieces whole 8-byte pieces of this part of the cell ({@code bytes / 8}, rounded down): what the whole-piece
     *     loops read; meaningless for a slice with {@link Slice#byteCells() byte cells}, which backends read byte by byte
     * @param alignment the alignment class relative to the memory's first byte: 16 when {@code base} and both
     *     strides are multiples of 16 and the part is whole 16-byte units, else 8 when they are multiples of 8, else
     *     1; the widest load a backend may use once its own base address is added (see {@link #alignmentAt})
     * @param bytes bytes of this part of the cell (the region's {@code cellBytes})
     */
    public record Part(KvMemory memory, long base, long pageStride, long tokenStride, int pieces, int alignment, int bytes) {

        /**
         * A part of whole pieces: {@code bytes = 8 * pieces}.
         *
         * @param memory where the bytes live
         * @param base byte offset of this head's cell {@code (0, 0)}, relative to the memory's first byte
         * @param pageStride bytes between pages
         * @param tokenStride bytes between slots of a page
         * @param pieces whole 8-byte pieces of this part of the cell
         * @param alignment the alignment class relative to the memory's first byte: 16, 8 or 1 (see the record's
         *     components)
         */
        public Part(KvMemory memory, long base, long pageStride, long tokenStride, int pieces, int alignment) {
            this(memory, base, pageStride, tokenStride, pieces, alignment, 8 * pieces);
        }

        /**
         * {@return the byte offset of cell {@code (page, slot)} within {@link #memory()}}
         *
         * @param page the physical page id
         * @param slot the slot within the page
         */
        public long cellOffset(long page, long slot) {
            return base + page * pageStride + slot * tokenStride;
        }

        /**
         * {@return the alignment class of the cells' absolute addresses when the memory's first byte is at
         * {@code address} (a device pointer, or the packed buffer of a copy): 16 when {@code address + base} and both
         * strides are multiples of 16 and the part is whole 16-byte units, else 8 when they are multiples of 8, else 1}
         *
         * @param address the absolute address of the memory's first byte
         */
        public int alignmentAt(long address) {
            return alignment(address + base, pageStride, tokenStride, pieces);
        }

        static Part of(KvRegion r, int head) {
            long base = r.offset() + head * r.headStride();
            return new Part(r.memory(), base, r.pageStride(), r.tokenStride(), r.pieces(),
                    alignment(base, r.pageStride(), r.tokenStride(), r.pieces()), r.cellBytes());
        }

        private static int alignment(long base, long pageStride, long tokenStride, int pieces) {
            long all = base | pageStride | tokenStride;
            return (all & 15) == 0 && pieces % 2 == 0 ? 16 : (all & 7) == 0 ? 8 : 1;
        }
    }

    /**
     * One (layer, global head) slice.
     *
     * @param layer the layer number
     * @param head the global head number
     * @param factor {@code m = 2*(layer*2^16 + head) + 1}
     * @param k the K part (MLA: the latent row)
     * @param v the V part, or {@code null} when the cell is K only
     */
    public record Slice(int layer, int head, long factor, Part k, Part v) {
        /**
         * {@return pieces per cell, K bytes then V bytes: {@code P = ceil(cellBytes / 8)}} With
         * {@link CellPadding#ZEROS} the padded last piece counts; piece {@code p} of request position {@code t} has index
         * {@code t*P + p}.
         */
        public int pieces() {
            return (int) Math.ceilDiv((long) cellBytes(), 8);
        }

        /** {@return bytes per cell, K then V (before any padding)} */
        public int cellBytes() {
            return k.bytes() + (v == null ? 0 : v.bytes());
        }

        /**
         * {@return true when K or V is not whole 8-byte pieces: a piece straddles K's end and V's start, or the cell's
         * last piece is zero-padded} Such a slice is computed by each backend's byte-assembling path (its pieces are
         * not at multiples of 8 from the parts' bases), never by the whole-piece loops: {@link CompiledPlan} gives
         * such layers a {@link CompiledPlan.CellKind#BYTE_CELLS} launch of their own.
         */
        public boolean byteCells() {
            return k.bytes() % 8 != 0 || (v != null && v.bytes() % 8 != 0);
        }

        /** {@return pieces of the V part, 0 when there is none} */
        public int vPieces() {
            return v == null ? 0 : v.pieces();
        }

        /** {@return the smaller of the two parts' alignment classes} */
        public int alignment() {
            return v == null ? k.alignment() : Math.min(k.alignment(), v.alignment());
        }
    }

    /**
     * The slices of one {@link CacheLayer}: {@code firstSlice .. firstSlice+numHeads-1}, with the layer's head
     * strides (CPU loops read several heads of a token side by side when {@code headStride == cellBytes}).
     *
     * @param firstSlice the index in {@link #slices()} of the layer's local head 0
     * @param numHeads the layer's heads: its slices are {@code firstSlice .. firstSlice+numHeads-1}
     * @param kHeadStride the K region's bytes between consecutive heads
     * @param vHeadStride the V region's bytes between consecutive heads (0 when the cell is K only)
     */
    public record LayerRun(int firstSlice, int numHeads, long kHeadStride, long vHeadStride) {
    }

    private final KvCacheGroup group;
    private final RequestBlocks request;
    private final List<Slice> slices;
    private final List<LayerRun> runs;
    private final int[] pageTable;
    private final Residency residency;
    private final int numBlocks;
    private final ChecksumMode mode;
    private final CellPadding padding;
    /** This plan compiled as one request (built on first use: a plan passed to many calls compiles once). */
    private volatile CompiledPlan compiled;

    private SlicePlan(KvCacheGroup group, RequestBlocks request, List<Slice> slices, List<LayerRun> runs, int[] pageTable,
                      Residency residency, ChecksumMode mode, CellPadding padding) {
        this.mode = mode;
        this.padding = padding;
        this.group = group;
        this.request = request;
        this.slices = slices;
        this.runs = runs;
        this.pageTable = pageTable;
        this.residency = residency;
        this.numBlocks = request.numBlocks();
    }

    /**
     * One homogeneous part of a plan: the plan of some of its layers, all of one cell kind, and for each of the part's
     * slices the row of this plan it comes from.
     */
    record Split(SlicePlan plan, boolean byteCells, int[] rows) {
    }

    /**
     * {@return this plan split by cell kind: itself when all its slices are of one kind, else the plan of its
     * whole-piece layers and the plan of its byte-cell layers} A layer's slices share their regions, so a layer is all
     * of one kind. What {@link CompiledPlan} turns into launches.
     */
    List<Split> byCellKind() {
        int byteSlices = 0;
        for (Slice sl : slices) {
            byteSlices += sl.byteCells() ? 1 : 0;
        }
        if (byteSlices == 0 || byteSlices == slices.size()) {
            int[] rows = new int[slices.size()];
            for (int i = 0; i < rows.length; i++) {
                rows[i] = i;
            }
            return List.of(new Split(this, byteSlices != 0, rows));
        }
        List<CacheLayer> whole = new ArrayList<>();
        List<CacheLayer> bytes = new ArrayList<>();
        int[] wholeRows = new int[slices.size() - byteSlices];
        int[] byteRows = new int[byteSlices];
        int wi = 0;
        int bi = 0;
        for (int li = 0; li < group.layers().size(); li++) {
            LayerRun run = runs.get(li);
            boolean b = slices.get(run.firstSlice()).byteCells();
            (b ? bytes : whole).add(group.layers().get(li));
            for (int h = 0; h < run.numHeads(); h++) {
                if (b) {
                    byteRows[bi++] = run.firstSlice() + h;
                } else {
                    wholeRows[wi++] = run.firstSlice() + h;
                }
            }
        }
        return List.of(new Split(subPlan(whole), false, wholeRows), new Split(subPlan(bytes), true, byteRows));
    }

    /** {@return this plan compiled as a single request, compiled once} */
    CompiledPlan compiled() {
        CompiledPlan c = compiled;
        if (c == null) {
            c = CompiledPlan.of(this);
            compiled = c;
        }
        return c;
    }

    private SlicePlan subPlan(List<CacheLayer> layers) {
        KvCacheGroup g = new KvCacheGroup(layers, group.pageSize(), group.numPages());
        List<Slice> sl = new ArrayList<>();
        List<LayerRun> rs = new ArrayList<>();
        for (int li = 0; li < group.layers().size(); li++) {
            if (layers.contains(group.layers().get(li))) {
                LayerRun r = runs.get(li);
                rs.add(new LayerRun(sl.size(), r.numHeads(), r.kHeadStride(), r.vHeadStride()));
                sl.addAll(slices.subList(r.firstSlice(), r.firstSlice() + r.numHeads()));
            }
        }
        boolean host = false;
        boolean device = false;
        for (Slice x : sl) {
            host |= x.k().memory() instanceof KvMemory.Host || (x.v() != null && x.v().memory() instanceof KvMemory.Host);
            device |= x.k().memory() instanceof KvMemory.Device || (x.v() != null && x.v().memory() instanceof KvMemory.Device);
        }
        Residency r = host && device ? Residency.MIXED : device ? Residency.DEVICE : Residency.HOST;
        return new SlicePlan(g, request, List.copyOf(sl), List.copyOf(rs), pageTable, r, mode, padding);
    }

    /**
     * Validates the request against the group and builds the plan. This is the only place a request is checked
     * against a group; nothing is read.
     *
     * @param group the cache the plan reads
     * @param request the block table and token range to checksum, in {@code group}'s pages
     * @return the validated plan, in the standard mode
     *
     * @throws InvalidLayoutException naming the problem: a null argument, a table too short, a page id out of range,
     *     more blocks or slice sums than an array holds
     */
    public static SlicePlan of(KvCacheGroup group, RequestBlocks request) {
        return of(group, request, ChecksumSpec.STANDARD);
    }

    /**
     * As {@link #of(KvCacheGroup, RequestBlocks)}, in checksum mode {@code mode} ({@link #of(KvCacheGroup,
     * RequestBlocks, ChecksumSpec)} without padding).
     *
     * @param group the cache the plan reads
     * @param request the block table and token range to checksum, in {@code group}'s pages
     * @param mode the checksum mode
     * @return the validated plan
     * @throws InvalidLayoutException as {@link #of(KvCacheGroup, RequestBlocks)} does, and when an argument is null
     */
    public static SlicePlan of(KvCacheGroup group, RequestBlocks request, ChecksumMode mode) {
        return of(group, request, ChecksumSpec.of(mode));
    }

    /**
     * As {@link #of(KvCacheGroup, RequestBlocks, ChecksumMode)}, with what to do about cells that are not whole 8-byte
     * pieces (K bytes plus V bytes not a multiple of 8).
     *
     * @param group the cache: its layers, pages and memory, not null
     * @param request the request's tokens, blocks and page table, not null; every page id the checksummed tokens need
     *     must be a page of {@code group}
     * @param mode the checksum mode, not null
     * @param padding {@link CellPadding#NONE} (the definition) refuses such a layer with {@link InvalidLayoutException}
     *     naming it; {@link CellPadding#ZEROS} (an opt-in extension with its own checksums, see {@link CellPadding})
     *     zero-pads each cell at its end to whole pieces; not null
     * @return the validated plan, immutable; it holds its own copy of the page entries it reads
     * @throws InvalidLayoutException as {@link #of(KvCacheGroup, RequestBlocks)}, and for cells that are not whole pieces
     *     without padding
     */
    @Deprecated
    public static SlicePlan of(KvCacheGroup group, RequestBlocks request, ChecksumMode mode, CellPadding padding) {
        return of(group, request, new ChecksumSpec(mode, padding));
    }

    /**
     * Validates the request against the group and builds the plan in the mode and padding of {@code spec}. This is the
     * only place a request is checked against a group; nothing is read.
     *
     * @param group the cache: its layers, pages and memory, not null
     * @param request the request's tokens, blocks and page table, not null; every page id the checksummed tokens need
     *     must be a page of {@code group}
     * @param spec the mode, and what to do about cells that are not whole 8-byte pieces: {@link CellPadding#NONE} (the
     *     definition) refuses such a layer naming it, {@link CellPadding#ZEROS} zero-pads each cell at its end; not null
     * @return the validated plan, immutable; it holds its own copy of the page entries it reads
     * @throws InvalidLayoutException naming the problem: a null argument, a table too short, a page id out of range,
     *     more blocks or slice sums than an array holds, cells that are not whole pieces without padding
     */
    public static SlicePlan of(KvCacheGroup group, RequestBlocks request, ChecksumSpec spec) {
        if (group == null || request == null || spec == null) {
            throw new InvalidLayoutException("group, request and spec must not be null");
        }
        ChecksumMode mode = spec.mode();
        CellPadding padding = spec.padding();
        if (padding == CellPadding.NONE) {
            for (CacheLayer l : group.layers()) {
                if (l.cellBytes() % 8 != 0) {
                    throw new InvalidLayoutException(cellsNotWholePieces(l));
                }
            }
        }
        int[] table = resolve(group, request);
        int ns = group.numSlices();
        List<Slice> slices = new ArrayList<>(ns);
        List<LayerRun> runs = new ArrayList<>(group.layers().size());
        boolean host = false;
        boolean device = false;
        for (CacheLayer l : group.layers()) {
            KvRegion k = l.k();
            KvRegion v = l.v();
            host |= k.memory() instanceof KvMemory.Host || (v != null && v.memory() instanceof KvMemory.Host);
            device |= k.memory() instanceof KvMemory.Device || (v != null && v.memory() instanceof KvMemory.Device);
            runs.add(new LayerRun(slices.size(), l.numHeads(), k.headStride(), v == null ? 0 : v.headStride()));
            for (int h = 0; h < l.numHeads(); h++) {
                int head = l.firstHead() + h;
                slices.add(new Slice(l.layer(), head, Definition.factor(l.layer(), head), Part.of(k, h),
                        v == null ? null : Part.of(v, h)));
            }
        }
        Residency r = host && device ? Residency.MIXED : device ? Residency.DEVICE : Residency.HOST;
        return new SlicePlan(group, request, List.copyOf(slices), List.copyOf(runs), table, r, mode, padding);
    }

    /**
     * {@return this plan's group, slices and spec for another request: only the request is validated (its page table
     * against the group's pages), the slices are shared} What the compiler uses for the requests of one step after the
     * first: the slices depend on the group alone.
     *
     * @param other another request over the same group
     * @throws InvalidLayoutException as {@link #of(KvCacheGroup, RequestBlocks, ChecksumSpec)} for a request
     */
    SlicePlan withRequest(RequestBlocks other) {
        if (other == null) {
            throw new InvalidLayoutException("request must not be null");
        }
        return new SlicePlan(group, other, slices, runs, resolve(group, other), residency, mode, padding);
    }

    /** The request's page ids, each checked against the group; and its slice sums' size. */
    private static int[] resolve(KvCacheGroup group, RequestBlocks request) {
        long needed = request.pagesNeeded(group.pageSize());
        if (request.tableLength() < needed) {
            throw new InvalidLayoutException("pageTable has " + request.tableLength() + " entries but tokens "
                    + request.startToken() + ".." + (request.numTokens() - 1) + " need " + needed + " pages of "
                    + group.pageSize() + " slots");
        }
        int[] table = new int[(int) needed];
        for (int i = 0; i < needed; i++) {
            int page = request.page(i);
            if (page < 0 || page >= group.numPages()) {
                throw new InvalidLayoutException("pageTable[" + i + "] = " + page + " is out of range: the cache has "
                        + group.numPages() + " pages (valid ids 0.." + (group.numPages() - 1) + ")");
            }
            table[i] = page;
        }
        int nb = request.numBlocks();
        int ns = group.numSlices();
        if ((long) ns * nb > Integer.MAX_VALUE - 16) {
            throw new InvalidLayoutException(ns + " slices x " + nb + " blocks of slice sums do not fit one array");
        }
        return table;
    }

    /**
     * {@return why a layer's cells cannot be checksummed without padding, or {@code null} when they can} The one
     * wording of this reason, for engines and tools that report a group skipped instead of building its plan.
     *
     * @param l the layer, not null
     */
    public static String unpaddedCellProblem(CacheLayer l) {
        return l.cellBytes() % 8 == 0 ? null : cellsNotWholePieces(l);
    }

    private static String cellsNotWholePieces(CacheLayer l) {
        String parts = l.v() == null ? l.k().cellBytes() + " bytes" : "K " + l.k().cellBytes() + " + V " + l.v().cellBytes()
                + " = " + l.cellBytes() + " bytes";
        return "layer " + l.layer() + " heads " + l.firstHead() + ".." + (l.firstHead() + l.numHeads() - 1) + ": cells of "
                + parts + " are not whole 8-byte pieces (the checksum is not defined for them; zero-padding each cell"
                + " is an opt-in extension: CellPadding.ZEROS, --pad-cells)";
    }

    /**
     * {@return the same slices, blocks and pages in another checksum mode (nothing is validated again)}
     *
     * @param m the other mode; not null
     * @throws InvalidLayoutException when {@code m} is null
     */
    public SlicePlan withMode(ChecksumMode m) {
        if (m == null) {
            throw new InvalidLayoutException("mode must not be null");
        }
        return m == mode ? this : new SlicePlan(group, request, slices, runs, pageTable, residency, m, padding);
    }

    /** {@return what the plan does with cells that are not whole pieces; {@link CellPadding#NONE} unless asked for} */
    public CellPadding padding() {
        return padding;
    }

    /** {@return the checksum mode: what each piece contributes before weighting} */
    public ChecksumMode mode() {
        return mode;
    }

    /** {@return the group the plan was built for} */
    public KvCacheGroup group() {
        return group;
    }

    /** {@return the request the plan was built for} */
    public RequestBlocks request() {
        return request;
    }

    /** {@return the slices, in {@link SliceSums} row order} */
    public List<Slice> slices() {
        return slices;
    }

    /**
     * {@return slice {@code i}}
     *
     * @param i a slice index, {@code 0 <= i < numSlices()}
     */
    public Slice slice(int i) {
        return slices.get(i);
    }

    /** {@return the number of (layer, head) slices} */
    public int numSlices() {
        return slices.size();
    }

    /** {@return one run of consecutive slices per layer of the group, in the group's order} */
    public List<LayerRun> layerRuns() {
        return runs;
    }

    /** {@return the number of block checksums: {@code ceil(numTokens/blockSize) - firstBlock}} */
    public int numBlocks() {
        return numBlocks;
    }

    /**
     * {@return the page ids of the checksummed range, validated: entry {@code i} holds tokens
     * {@code startToken + i*pageSize ..}}
     */
    public int[] pageTable() {
        return pageTable.clone();
    }

    /**
     * {@return entry {@code i} of {@link #pageTable()} without a copy}
     *
     * @param i an index into the table, {@code 0 <= i < numPages()}
     */
    public int page(int i) {
        return pageTable[i];
    }

    /** {@return the number of entries of {@link #pageTable()}} */
    public int numPages() {
        return pageTable.length;
    }

    /**
     * {@return the physical page holding request position {@code t} (a checksummed token:
     * {@code startToken <= t < numTokens})}
     *
     * @param t a request position in the checksummed range
     */
    public int pageOf(long t) {
        return pageTable[(int) ((t - request.startToken()) / group.pageSize())];
    }

    /**
     * {@return the slot of request position {@code t} within its page}
     *
     * @param t a request position in the checksummed range
     */
    public long slotOf(long t) {
        return (t - request.startToken()) % group.pageSize();
    }

    /** {@return tokens per physical page} */
    public int pageSize() {
        return group.pageSize();
    }

    /** {@return where the regions live} */
    public Residency residency() {
        return residency;
    }

    /** {@return the layer number of every slice, in slice order} */
    public int[] layerNumbers() {
        int[] out = new int[slices.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = slices.get(i).layer();
        }
        return out;
    }

    /** {@return the global head number of every slice, in slice order} */
    public int[] headNumbers() {
        int[] out = new int[slices.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = slices.get(i).head();
        }
        return out;
    }

    /**
     * {@return slice sums with this plan's rows and blocks}
     *
     * @param values slice-major sums, {@code numSlices() * numBlocks()} of them (not copied)
     * @throws InvalidLayoutException when {@code values} has the wrong length
     */
    public SliceSums sliceSums(long[] values) {
        return new SliceSums(layerNumbers(), headNumbers(), request.firstBlock(), numBlocks, values);
    }

    /**
     * The refusal of this plan's memory under {@code rule}, naming its first region of the kind the rule does not
     * allow: device memory where only host memory is read, host memory where only device memory is, else (both kinds
     * in one plan) the first region of the other kind than the first region's.
     */
    InvalidLayoutException wrongMemory(String rule, java.util.Set<Residency> allowed, String hint) {
        Class<? extends KvMemory> wanted = !allowed.contains(Residency.DEVICE) ? KvMemory.Host.class
                : !allowed.contains(Residency.HOST) ? KvMemory.Device.class : group.layers().get(0).k().memory().getClass();
        for (CacheLayer l : group.layers()) {
            for (KvRegion r : l.v() == null ? List.of(l.k()) : List.of(l.k(), l.v())) {
                if (!wanted.isInstance(r.memory())) {
                    return new InvalidLayoutException(rule + ", but layer " + l.layer() + " " + (r == l.k() ? "K" : "V")
                            + " region is " + (r.memory() instanceof KvMemory.Device ? "device" : "host") + " memory "
                            + r.memory() + hint);
                }
            }
        }
        throw new IllegalStateException("residency " + residency + " without a region of another kind");
    }

    @Override
    public String toString() {
        return "SlicePlan[slices=" + slices.size() + ", blocks=" + numBlocks + ", pages=" + pageTable.length + ", "
                + residency + ", " + mode.wireName() + ", table=" + Arrays.toString(Arrays.copyOf(pageTable, Math.min(8, pageTable.length))) + "]";
    }
}
