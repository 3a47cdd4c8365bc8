package io.kvchecksum;

import io.kvchecksum.CopyPlan.Pair;
import io.kvchecksum.SlicePlan.Part;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether a copy whose source and destination memory overlap can be staged ({@link CopyPlan#staged()}): cut into
 * units, each one layer's copied cells (K and V) of one destination page within one launch, such that a unit's source
 * cells share bytes with no other unit's destination cells. Then reading all of a unit's source cells before writing
 * any of its destination cells is correct in any order of the units and in parallel: what vLLM's in-place
 * rearrangement (index_select, permute, index_copy_ into the same block ids) needs.
 *
 * <p>K and V of a layer form one unit rather than two: a byte cell's pieces straddle K and V, every backend moves a
 * cell's K and V together, and layouts with K and V side by side in a page stay stageable when a permute moves a K
 * cell onto V bytes of the same page. It doubles the staging memory of a unit, which is still one layer's page.
 *
 * <p>Exact and, for real layouts, about {@code O(n)} in the table entries: with equal page sizes each layer's parts form
 * lattices of page hulls over the two tables ({@link PageSpans}), compared lattice by lattice; otherwise (or where
 * that does not show the units apart) the units' hulls (per unit, source page, part and memory: the span from the
 * first cell to the last) are compared by a sort, {@code O(n log n)} in the units. Units of different layers whose
 * hulls meet (layers interleaved within a page: {@code [pages][tokens][layers][cell]}, layers side by side in a token's
 * row as several Java engines and SGLang-like pools lay them out) are first shown apart layer by layer, independently
 * of the pages ({@link Layers}: hulls, residues modulo a stride, head by head, as {@link SharedBytes} does), which
 * separates each layer's cells at their own residues modulo the row without a cell compared. Only where no argument
 * separates two units (one layer's pages interleaved with one another, layers at strides no residue tells apart, a
 * real conflict) are the cells compared one by one, at most {@link #EXACT_CELLS} destination cells; beyond it only
 * the first destination entry's units are (a layer written onto another's bytes conflicts there already, named by both
 * units), and with no conflict among them the copy is refused as not shown stageable.
 */
final class CopyStaging {
    /**
     * The classification.
     *
     * @param conflict why per-page staging cannot order the copy (two units named), or null when it can (the units'
     *     sizes are the launches' own, {@code CopyPlan.Launch.staging()})
     */
    record Result(String conflict) {
    }

    private CopyStaging() {
    }

    /** A byte range of one unit: {@code [from, to)} absolute, the unit, the part (0 K, 1 V), the page, the memory's base. */
    private record Span(long from, long to, int unit, int kv, long page, long base, long position) {
    }

    /**
     * Classifies an overlapping copy.
     *
     * @param pairs the copied slices
     * @param srcTable the source's table from the first copied position
     * @param dstTable the destination's table from the first copied position
     * @param ps the source's page size
     * @param pd the destination's page size
     * @param start the first copied position
     * @param numTokens the end of the copied positions
     */
    static Result classify(List<Pair> pairs, int[] srcTable, int[] dstTable, int ps, int pd, long start, long numTokens) {
        long tokens = numTokens - start;
        if (tokens <= 0) {
            return new Result(null);
        }
        Map<Long, Integer> groupOf = new HashMap<>();
        List<List<Pair>> groups = new ArrayList<>();
        for (Pair p : pairs) {
            long key = ((p.destination().byteCells() ? 1L : 0L) << 32) | (p.layer() & 0xffffffffL);
            Integer g = groupOf.get(key);
            if (g == null) {
                g = groups.size();
                groupOf.put(key, g);
                groups.add(new ArrayList<>());
            }
            groups.get(g).add(p);
        }
        int nd = Math.toIntExact(Math.ceilDiv(tokens, (long) pd));
        int ns = Math.toIntExact(Math.ceilDiv(tokens, (long) ps));
        Layers layers = new Layers(groups, Arrays.copyOf(srcTable, ns), ps, Arrays.copyOf(dstTable, nd), pd, tokens);
        if (pd % ps == 0 && apart(groups, layers, srcTable, dstTable, ps, pd, nd, ns)) {
            return new Result(null);
        }
        Map<Object, List<Span>> reads = new IdentityHashMap<>();
        Map<Object, List<Span>> writes = new IdentityHashMap<>();
        for (int g = 0; g < groups.size(); g++) {
            Parts[] src = Parts.of(groups.get(g), true);
            Parts[] dst = Parts.of(groups.get(g), false);
            for (int i = 0; i < nd; i++) {
                int unit = g * nd + i;
                long from = (long) i * pd;
                long to = Math.min(from + pd, tokens);
                hulls(dst, dstTable[i], 0, to - from - 1, unit, from, writes);
                for (long j = from / ps; j * ps < to; j++) {
                    long a = Math.max(from, j * ps) - j * ps;
                    long b = Math.min(to, (j + 1) * ps) - 1 - j * ps;
                    hulls(src, srcTable[(int) j], a, b, unit, j * ps + a, reads);
                }
            }
        }
        if (!meet(reads, writes, layers, nd)) {
            return new Result(null);
        }
        return new Result(exact(groups, srcTable, dstTable, ps, pd, start, tokens, nd));
    }

    /**
     * Whether no unit's source cells can share bytes with another unit's destination cells, shown per layer run rather
     * than per unit when a destination page holds whole source pages ({@code Pd = k*Ps}, {@code k = 1} the common
     * case): unit {@code (g, i)} then reads source entries {@code i*k .. i*k+k-1} and writes destination entry
     * {@code i}, so each group's parts of one kind and memory are a lattice of page hulls ({@link PageSpans.Run}, a full
     * page's hull for every entry, the last one's included) over each table. False where that does not show it (then
     * the units' hulls, and perhaps their cells, decide).
     */
    private static boolean apart(List<List<Pair>> groups, Layers layers, int[] srcTable, int[] dstTable, int ps, int pd,
                                 int nd, int ns) {
        int k = pd / ps;
        List<PageSpans.Run> reads = new ArrayList<>();
        List<PageSpans.Run> writes = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            if (!lattices(Parts.of(groups.get(g), true), ps, g, reads)
                    || !lattices(Parts.of(groups.get(g), false), pd, g, writes)) {
                return false;
            }
        }
        int[] src = Arrays.copyOf(srcTable, ns);
        PageSpans.Pages sp = new PageSpans.Pages(src);
        PageSpans.Pages dp = new PageSpans.Pages(Arrays.copyOf(dstTable, nd));
        boolean shared = false;   // some source page is written
        boolean moved = false;    // some source page is written by another table entry
        int[] e = dp.entries();
        if (e != null) {
            for (int j = 0; j < ns; j++) {
                int at = src[j] < dp.min || src[j] > dp.max ? 0 : e[src[j] - dp.min];
                shared |= at != 0;
                moved |= at != 0 && at - 1 != j / k;
            }
        } else {
            long[][] sorted = byPage(dp.table);
            long[] s = byPage(src)[0];
            long[] d = sorted[0];
            for (int a = 0, b = 0; a < ns && b < nd; ) {
                if (s[a] >> 32 < d[b] >> 32) {
                    a++;
                } else if (s[a] >> 32 > d[b] >> 32) {
                    b++;
                } else {
                    shared = true;
                    moved |= (int) s[a] / k != (int) d[b];
                    a++;
                }
            }
        }
        long[] byPage = null;
        // crossApart depends on a pair of lattices only through their offset, strides and extents: layers alike ask once
        Map<List<Long>, Boolean> asked = new HashMap<>();
        for (PageSpans.Run r : reads) {
            for (PageSpans.Run x : writes) {
                if (r.space() != x.space() || r.lo(sp.min) >= x.hi(dp.max) || x.lo(dp.min) >= r.hi(sp.max)) {
                    continue;
                }
                boolean same = r.group() == x.group();
                if (!same && layers.apart(r.group(), x.group())) {
                    continue;   // layers interleaved within a page, each at its own residues
                }
                if (PageSpans.sameLattice(r, x)) {
                    if (same ? moved : shared) {
                        return false;
                    }
                    continue;
                }
                if (byPage == null) {
                    byPage = byPage(dp.table)[0];
                }
                List<Long> key = List.of(r.start() - x.start(), r.stride(), r.extent(), x.stride(), x.extent(), same ? 1L : 0L);
                Boolean fine = asked.get(key);
                if (fine == null) {
                    fine = crossApart(r, src, k, x, dp, byPage, same);
                    asked.put(key, fine);
                }
                if (!fine) {
                    return false;
                }
            }
        }
        return true;
    }

    /** {@code {(page << 32 | entry) sorted}}: a table's entries by page. */
    private static long[][] byPage(int[] table) {
        long[] d = new long[table.length];
        for (int i = 0; i < table.length; i++) {
            d[i] = ((long) table[i] << 32) | i;
        }
        Arrays.sort(d);
        return new long[][] {d};
    }

    /** Per source entry {@code i}: the destination pages whose hull meets its hull are at most its own entry's. */
    private static boolean crossApart(PageSpans.Run r, int[] src, int k, PageSpans.Run w, PageSpans.Pages dst,
                                      long[] dstByPage, boolean sameGroup) {
        int[] e = dst.entries();
        for (int i = 0; i < src.length; i++) {
            long x = r.start() + src[i] * r.stride() - w.start();
            long from;
            long to;
            if (w.stride() == 0) {
                if (x >= w.extent() || x + r.extent() <= 0) {
                    continue;
                }
                from = Long.MIN_VALUE;
                to = Long.MAX_VALUE - 1;
            } else {
                from = Math.floorDiv(x - w.extent(), w.stride()) + 1;
                to = Math.ceilDiv(x + r.extent(), w.stride()) - 1;
            }
            if (e != null && to - from < 4) {   // a page or two: looked up directly
                int found = 0;
                for (long q = Math.max(from, dst.min); q <= Math.min(to, dst.max); q++) {
                    int at = e[(int) (q - dst.min)];
                    if (at != 0 && (++found > 1 || !sameGroup || at - 1 != i / k)) {
                        return false;
                    }
                }
                continue;
            }
            int a = lowerBound(dstByPage, from);
            int b = lowerBound(dstByPage, to == Long.MAX_VALUE - 1 ? Long.MAX_VALUE : to + 1);
            if (b - a > 1 || (b - a == 1 && (!sameGroup || (int) dstByPage[a] != i / k))) {
                return false;
            }
        }
        return true;
    }

    /** The index of the first entry of {@code byPage} whose page is at least {@code page}. */
    private static int lowerBound(long[] byPage, long page) {
        int lo = 0;
        int hi = byPage.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (byPage[mid] >> 32 < page) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /**
     * A group's lattices of full-page hulls, one per part kind and memory; false when its parts' page strides differ
     * (no lattice).
     */
    private static boolean lattices(Parts[] side, int pageSize, int group, List<PageSpans.Run> into) {
        for (Parts ps : side) {
            long stride = ps.parts[0].pageStride();
            long lo = Long.MAX_VALUE;
            long hi = Long.MIN_VALUE;
            for (Part part : ps.parts) {
                if (part.pageStride() != stride) {
                    return false;
                }
                lo = Math.min(lo, part.base());
                hi = Math.max(hi, part.base() + (pageSize - 1L) * part.tokenStride() + part.bytes());
            }
            into.add(new PageSpans.Run(ps.space, ps.address + lo, stride, hi - lo, group));
        }
        return true;
    }

    /**
     * One side's parts of a group (one layer's pairs) in one memory and of one kind (K or V): made once per group, so
     * a unit's hull is arithmetic only.
     */
    private record Parts(int kv, long address, Object space, Part[] parts) {
        static Parts[] of(List<Pair> group, boolean source) {
            List<Parts> out = new ArrayList<>(2);
            for (int kv = 0; kv < 2; kv++) {
                List<KvMemory> memories = new ArrayList<>(2);
                List<List<Part>> parts = new ArrayList<>(2);
                for (Pair p : group) {
                    SlicePlan.Slice s = source ? p.source() : p.destination();
                    Part part = kv == 0 ? s.k() : s.v();
                    if (part == null) {
                        continue;
                    }
                    int k = -1;
                    for (int m = 0; m < memories.size() && k < 0; m++) {
                        k = memories.get(m) == part.memory() ? m : -1;   // a layer's heads share one memory
                    }
                    if (k < 0) {
                        memories.add(part.memory());
                        parts.add(new ArrayList<>());
                        k = memories.size() - 1;
                    }
                    parts.get(k).add(part);
                }
                for (int m = 0; m < memories.size(); m++) {
                    out.add(new Parts(kv, CopyPlan.address(memories.get(m)), CopyPlan.space(memories.get(m)),
                            parts.get(m).toArray(new Part[0])));
                }
            }
            return out.toArray(new Parts[0]);
        }
    }

    /** Per part kind and memory, the hull of the group's cells of slots {@code a..b} of {@code page}. */
    private static void hulls(Parts[] side, long page, long a, long b, int unit, long position,
                              Map<Object, List<Span>> into) {
        for (Parts ps : side) {
            long lo = Long.MAX_VALUE;
            long hi = Long.MIN_VALUE;
            for (Part part : ps.parts) {
                long x = part.cellOffset(page, a);
                long y = part.cellOffset(page, b);
                lo = Math.min(lo, Math.min(x, y));
                hi = Math.max(hi, Math.max(x, y) + part.bytes());
            }
            into.computeIfAbsent(ps.space, k -> new ArrayList<>()).add(new Span(ps.address + lo, ps.address + hi, unit,
                    ps.kv, page, ps.address, position));
        }
    }

    /**
     * Whether a read span of one unit meets a write span of another, per address space (units of two groups whose
     * cells {@link Layers} shows apart never meet).
     */
    private static boolean meet(Map<Object, List<Span>> reads, Map<Object, List<Span>> writes, Layers layers, int nd) {
        for (Map.Entry<Object, List<Span>> e : writes.entrySet()) {
            List<Span> r = reads.get(e.getKey());
            if (r == null) {
                continue;
            }
            Span[] w = e.getValue().toArray(new Span[0]);
            Arrays.sort(w, Comparator.comparingLong(Span::from));
            long[] reach = new long[w.length];   // the furthest end among spans 0..i
            for (int i = 0; i < w.length; i++) {
                reach[i] = Math.max(w[i].to, i == 0 ? Long.MIN_VALUE : reach[i - 1]);
            }
            for (Span x : r) {
                for (int i = lastBefore(w, x.to); i >= 0 && reach[i] > x.from; i--) {
                    if (w[i].unit != x.unit && w[i].to > x.from
                            && (w[i].unit / nd == x.unit / nd || !layers.apart(x.unit / nd, w[i].unit / nd))) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** The last span of {@code w} (sorted by start) starting before {@code end}, or -1. */
    private static int lastBefore(Span[] w, long end) {
        int lo = 0;
        int hi = w.length - 1;
        int last = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (w[mid].from < end) {
                last = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return last;
    }

    /**
     * Whether one group's (layer's) source cells share no byte with another group's destination cells, over all the
     * copied pages, by the regions {@link SharedBytes} uses: per group and side, the K (or V) parts of a run of heads
     * at one head stride ({@link WrittenCells.W}, the lattice {@code a + page*P + slot*T + head*H + [0, bytes)} over the
     * side's pages from the lowest to the highest, every slot a page uses), compared by hulls, then by residues modulo
     * one of their strides ({@link SharedBytes#apart}), then head by head the same. Layers interleaved within a token's
     * row ({@code [pages][tokens][layers][cell]}) each lie in their own residues modulo the row, so in place every
     * layer's units are shown apart from every other layer's without a cell compared. The regions cover every cell a
     * side touches, so "apart" is exact; "not shown" leaves the pair of groups to the page hulls and the cells.
     * Asked lazily, once per ordered pair of groups.
     */
    private static final class Layers {
        private final List<List<Pair>> groups;
        private final WrittenCells.Pages src;
        private final WrittenCells.Pages dst;
        private final List<List<WrittenCells.W>> reads;
        private final List<List<WrittenCells.W>> writes;
        /** Per ordered pair (reading group, writing group): 0 not asked, 1 apart, 2 not shown apart. */
        private final byte[] known;

        Layers(List<List<Pair>> groups, int[] srcTable, int ps, int[] dstTable, int pd, long tokens) {
            this.groups = groups;
            this.src = pages(srcTable, ps, tokens);
            this.dst = pages(dstTable, pd, tokens);
            int n = groups.size();
            this.reads = new ArrayList<>(Collections.nCopies(n, null));
            this.writes = new ArrayList<>(Collections.nCopies(n, null));
            this.known = new byte[n * n];
        }

        private static WrittenCells.Pages pages(int[] table, int pageSize, long tokens) {
            int lo = Integer.MAX_VALUE;
            int hi = Integer.MIN_VALUE;
            for (int p : table) {
                lo = Math.min(lo, p);
                hi = Math.max(hi, p);
            }
            return new WrittenCells.Pages("", null, table, pageSize, tokens, lo, hi);
        }

        /** Whether group {@code g}'s source cells share no byte with group {@code h}'s destination cells. */
        boolean apart(int g, int h) {
            int at = g * groups.size() + h;
            if (known[at] == 0) {
                known[at] = (byte) (apart(regions(g, true), regions(h, false)) ? 1 : 2);
            }
            return known[at] == 1;
        }

        private static boolean apart(List<WrittenCells.W> reads, List<WrittenCells.W> writes) {
            for (WrittenCells.W r : reads) {
                for (WrittenCells.W w : writes) {
                    if (!away(r, w)) {
                        for (WrittenCells.W rh : r.heads > 1 ? r.parts() : List.of(r)) {
                            for (WrittenCells.W wh : w.heads > 1 ? w.parts() : List.of(w)) {
                                if (!away(rh, wh)) {
                                    return false;
                                }
                            }
                        }
                    }
                }
            }
            return true;
        }

        /** Another address space, hulls that do not meet, or residues that do not. */
        private static boolean away(WrittenCells.W r, WrittenCells.W w) {
            return CopyPlan.space(r.part.memory()) != CopyPlan.space(w.part.memory()) || r.hi <= w.lo || w.hi <= r.lo
                    || SharedBytes.apart(r, w);
        }

        /** A group's regions on one side: per part (K, V), runs of heads at one head stride. */
        private List<WrittenCells.W> regions(int g, boolean source) {
            List<List<WrittenCells.W>> all = source ? reads : writes;
            List<WrittenCells.W> out = all.get(g);
            if (out == null) {
                out = new ArrayList<>(2);
                List<Pair> pairs = groups.get(g);
                for (boolean v : new boolean[] {false, true}) {
                    int i = 0;
                    while (i < pairs.size()) {
                        Part first = WrittenCells.part(pairs.get(i), source, v);
                        if (first == null) {
                            i++;
                            continue;
                        }
                        int j = WrittenCells.runEnd(pairs, i, source, v);
                        long stride = j > i + 1 ? WrittenCells.part(pairs.get(i + 1), source, v).base() - first.base() : 0;
                        out.add(new WrittenCells.W(source ? src : dst, pairs.subList(i, j), source, v, stride));
                        i = j;
                    }
                }
                all.set(g, out);
            }
            return out;
        }
    }

    /**
     * The most destination cells {@link #exact} compares one by one (K and V counted apart): its memory, about 64 bytes
     * a cell, stays bounded whatever the layout; beyond it the copy is refused as not shown stageable. Reached only where
     * neither the lattices, nor {@link Layers}, nor the units' hulls show the units apart.
     */
    static final long EXACT_CELLS = 1L << 21;

    /**
     * Cell by cell: the first source cell of one unit sharing bytes with another unit's destination cell, or null. The
     * destination cells are kept and sorted, the source cells only streamed past them, in the order they were always
     * compared in (so the units named stay the same). Beyond {@link #EXACT_CELLS} only the first destination entry's
     * units are compared, for a conflict to name; none found, the copy is refused as not shown stageable.
     */
    private static String exact(List<List<Pair>> groups, int[] srcTable, int[] dstTable, int ps, int pd, long start,
                                long tokens, int nd) {
        long cells = cells(groups, tokens);
        if (cells > EXACT_CELLS) {
            // the first destination entry's units alone, where they fit: an in-place rearrangement that puts one layer
            // on another's bytes conflicts there already, and a conflict found among them is one of the whole copy's
            String first = tokens > pd && cells(groups, pd) <= EXACT_CELLS
                    ? compare(groups, srcTable, dstTable, ps, pd, start, pd, nd) : null;
            return first != null ? first : "per-page staging is not shown to order it: staging units' page hulls meet"
                    + " (pages, or layers at strides no residue tells apart, interleaved within a page?) and telling"
                    + " them apart would compare " + cells + " destination cells one by one, more than the "
                    + EXACT_CELLS + " the library compares: copy through separate memory";
        }
        return compare(groups, srcTable, dstTable, ps, pd, start, tokens, nd);
    }

    /** The destination cells of positions {@code 0 .. tokens-1} (K and V counted apart). */
    private static long cells(List<List<Pair>> groups, long tokens) {
        long cells = 0;
        for (List<Pair> g : groups) {
            for (Pair p : g) {
                cells += (p.destination().v() == null ? 1 : 2) * tokens;
            }
        }
        return cells;
    }

    /** {@link #exact} over positions {@code 0 .. tokens-1}, whatever their cells. */
    private static String compare(List<List<Pair>> groups, int[] srcTable, int[] dstTable, int ps, int pd, long start,
                                  long tokens, int nd) {
        Map<Object, List<Span>> writes = new IdentityHashMap<>();
        for (int g = 0; g < groups.size(); g++) {
            for (Pair p : groups.get(g)) {
                for (int kv = 0; kv < 2; kv++) {
                    Part dp = kv == 0 ? p.destination().k() : p.destination().v();
                    if (dp == null) {
                        continue;
                    }
                    long db = CopyPlan.address(dp.memory());
                    List<Span> w = writes.computeIfAbsent(CopyPlan.space(dp.memory()), k -> new ArrayList<>());
                    for (long t = 0; t < tokens; t++) {
                        int unit = g * nd + (int) (t / pd);
                        long dpage = dstTable[(int) (t / pd)];
                        long dof = db + dp.cellOffset(dpage, t % pd);
                        w.add(new Span(dof, dof + dp.bytes(), unit, kv, dpage, db, start + t));
                    }
                }
            }
        }
        for (Map.Entry<Object, List<Span>> e : writes.entrySet()) {
            // destination cells are disjoint (WrittenCells): sorted by start, their ends are sorted too
            Span[] w = e.getValue().toArray(new Span[0]);
            Arrays.sort(w, Comparator.comparingLong(Span::from));
            for (int g = 0; g < groups.size(); g++) {
                for (Pair p : groups.get(g)) {
                    for (int kv = 0; kv < 2; kv++) {
                        Part sp = kv == 0 ? p.source().k() : p.source().v();
                        if (sp == null || CopyPlan.space(sp.memory()) != e.getKey()) {
                            continue;
                        }
                        long sb = CopyPlan.address(sp.memory());
                        for (long t = 0; t < tokens; t++) {
                            int unit = g * nd + (int) (t / pd);
                            long spage = srcTable[(int) (t / ps)];
                            long from = sb + sp.cellOffset(spage, t % ps);
                            long to = from + sp.bytes();
                            for (int i = lastBefore(w, to); i >= 0 && w[i].to > from; i--) {
                                if (w[i].unit != unit) {
                                    return describe(groups, dstTable, nd, start, pd,
                                            new Span(from, to, unit, kv, spage, sb, start + t), w[i]);
                                }
                            }
                        }
                    }
                }
            }
        }
        return null;
    }

    private static String describe(List<List<Pair>> groups, int[] dstTable, int nd, long start, int pd, Span read,
                                   Span written) {
        return "per-page staging cannot order it: unit (" + unit(groups, dstTable, nd, start, pd, read.unit) + ") reads its "
                + (read.kv == 0 ? "K" : "V") + " cell of position " + read.position + " from source page " + read.page
                + ", bytes " + (read.from - read.base) + ".." + (read.to - read.base - 1) + " of its memory, which unit ("
                + unit(groups, dstTable, nd, start, pd, written.unit) + ") writes as its " + (written.kv == 0 ? "K" : "V")
                + " cell of position " + written.position + " (bytes " + (written.from - written.base) + ".."
                + (written.to - written.base - 1) + "): copy through separate memory";
    }

    private static String unit(List<List<Pair>> groups, int[] dstTable, int nd, long start, int pd, int unit) {
        Pair p = groups.get(unit / nd).get(0);
        int i = unit % nd;
        return "layer " + p.layer() + ", destination page " + dstTable[i] + ", positions " + (start + (long) i * pd)
                + "..";
    }
}
