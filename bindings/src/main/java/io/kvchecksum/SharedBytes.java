package io.kvchecksum;

import io.kvchecksum.CopyPlan.Pair;
import io.kvchecksum.WrittenCells.W;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether an in-place copy's source cells (the bytes it reads) and destination cells (the bytes it writes) share a
 * byte: the question {@link CopyPlan#overlaps()} answers, asked only where the page spans already meet
 * ({@link PageSpans}). Page spans over-approximate: in token-major layouts other heads' cells lie between one head's
 * cells, so one TP rank's heads copied into other heads of the same pages (NHD: head ranges interleaving inside each
 * token row) meet by spans but share no byte.
 *
 * <p>First, the first copied pair's cells of the first position's pages (source entry 0 against destination entry 0,
 * by the cell test of step 3 below): an in-place rearrangement (NHD as HND, a block-size change on the same block ids)
 * reads and writes the same bytes there, so its witness costs well under a microsecond. Otherwise the cells are
 * {@link WrittenCells}' regions, on both sides: per layer, the K (or V) parts of a run of heads at one
 * head stride, the lattice {@code a + page*ps + slot*ts + head*hs + [0, bytes)} over a side's pages and slots. Two
 * regions share no byte when
 * <ol>
 * <li>their hulls (first byte to last, or another address space) do not meet; or</li>
 * <li>modulo one of their strides {@code M}, their bytes lie in circular intervals that do not meet (the residue
 * argument of {@link WrittenCells}: modulo the token stride this separates NHD head ranges, modulo the page stride
 * head-major ones); or, head by head, the same; or</li>
 * <li>exactly, cell by cell: one head's cells of one part on one page are a 2-level arithmetic progression
 * {@code x + j*t + [0, b)}, {@code j < slots}; a read cell {@code [x, x+b)} meets a written progression
 * {@code y + k*t' + [0, b')} iff some {@code k} in {@code [0, slots')} has {@code y + k*t'} in
 * {@code (x - b', x + b)}: an interval of {@code k} computed by two divisions. Each read page is compared with the
 * written pages whose spans it meets only, each page with the slots its table entry really uses (a partial last page
 * counts its used slots only).</li>
 * </ol>
 * Exact for every layout: a pair is "shared" only with a witness (two cells that share a byte, named in the message),
 * "apart" only by one of the three arguments. One case stays conservative: beyond {@link #BUDGET} cell comparisons the
 * answer is "shares" (a staged copy, or a refusal), never a false "apart".
 */
final class SharedBytes {
    /** Read cells compared one by one before the answer stays "shares" without a witness. */
    static final long BUDGET = 1L << 22;

    private SharedBytes() {
    }

    /**
     * Two cells that share a byte, or (where {@code shown} is false) the two heads not shown apart within the budget.
     *
     * @param read the source slice
     * @param readV whether the source's V part (else K)
     * @param readPage the source page
     * @param write the destination slice
     * @param writeV whether the destination's V part
     * @param writePage the destination page
     * @param shown whether a shared byte was found (false: the budget ran out first)
     */
    record Witness(Pair read, boolean readV, int readPage, Pair write, boolean writeV, int writePage, boolean shown) {
        String message() {
            String what = "the source's cells of layer " + read.layer() + " head " + read.head() + " " + (readV ? "V" : "K")
                    + " (page " + readPage + ") " + (shown ? "share bytes" : "may share bytes (not shown apart within "
                    + BUDGET + " cell comparisons)") + " with the destination's of layer " + write.layer() + " head "
                    + write.head() + " " + (writeV ? "V" : "K") + " (page " + writePage + ")";
            return "source and destination memory overlap: " + what;
        }
    }

    /** One side's pages: the table, the slots its entries use, and the written pages by id (for lookups). */
    private static final class Side {
        final WrittenCells.Pages pages;
        final PageSpans.Pages lookup;
        /** The last entry's page when only that entry holds it and it uses fewer slots than a full page; else -1. */
        final int partialPage;
        final int partialSlots;
        final int fullSlots;

        Side(KvCacheGroup group, PageSpans.Pages lookup, long tokens, boolean distinct) {
            int[] table = lookup.table;
            this.pages = new WrittenCells.Pages("", group, table, group.pageSize(), tokens, lookup.min, lookup.max);
            this.lookup = lookup;
            fullSlots = pages.slots();
            int last = table.length - 1;
            int used = last < 0 ? 0 : pages.slots(last);
            int partial = -1;
            if (last >= 0 && used < fullSlots) {
                partial = table[last];
                for (int i = 0; i < last && !distinct; i++) {
                    if (table[i] == partial) {   // an earlier entry uses all of the page's slots
                        partial = -1;
                        break;
                    }
                }
            }
            partialPage = partial;
            partialSlots = used;
        }

        int slotsOf(int page) {
            return page == partialPage ? partialSlots : fullSlots;
        }
    }

    /**
     * {@return two cells that share a byte, or (budget spent) two heads not shown apart, or null when no byte read is
     * written}
     *
     * @param pairs the copied slices
     * @param source the source group, its table from {@code S}
     * @param destination the destination group, its table from {@code S}
     * @param tokens the copied positions, {@code N - S}
     * @param budget read cells compared one by one at most ({@link #BUDGET})
     */
    static Witness find(List<Pair> pairs, KvCacheGroup source, int[] sourceTable, KvCacheGroup destination,
                        int[] destinationTable, long tokens, long budget) {
        return find(pairs, source, new PageSpans.Pages(sourceTable), destination, new PageSpans.Pages(destinationTable),
                false, tokens, budget);
    }

    /**
     * {@link #find(List, KvCacheGroup, int[], KvCacheGroup, int[], long, long)} over the tables as the span question
     * already holds them ({@code distinct}: the destination table lists no page twice, as a compiled copy's).
     */
    static Witness find(List<Pair> pairs, KvCacheGroup source, PageSpans.Pages sourcePages, KvCacheGroup destination,
                        PageSpans.Pages destinationPages, boolean distinct, long tokens, long budget) {
        if (tokens <= 0 || sourcePages.isEmpty() || destinationPages.isEmpty()) {
            return null;
        }
        // an in-place rearrangement (NHD as HND, a block-size change on the same block ids) reads and writes the same
        // bytes at the same positions: the first pair's cells of the first position's pages, tried before any region
        Pair first = pairs.get(0);
        for (boolean v : new boolean[] {false, true}) {
            SlicePlan.Part rp = WrittenCells.part(first, true, v);
            SlicePlan.Part wp = WrittenCells.part(first, false, v);
            if (rp == null || wp == null || CopyPlan.space(rp.memory()) != CopyPlan.space(wp.memory())) {
                continue;
            }
            int p = sourcePages.table[0];
            int q = destinationPages.table[0];
            if (meet(CopyPlan.address(rp.memory()) + rp.cellOffset(p, 0), rp.tokenStride(),
                    (int) Math.min(source.pageSize(), tokens), rp.bytes(), CopyPlan.address(wp.memory())
                            + wp.cellOffset(q, 0), wp.tokenStride(), (int) Math.min(destination.pageSize(), tokens),
                    wp.bytes())) {
                return new Witness(first, v, p, first, v, q, true);
            }
        }
        Side src = new Side(source, sourcePages, tokens, false);
        Side dst = new Side(destination, destinationPages, tokens, distinct);
        Map<Object, List<W>> reads = regions(pairs, src, true);
        Map<Object, List<W>> writes = regions(pairs, dst, false);
        long[] left = {budget};
        Witness unshown = null;
        for (Map.Entry<Object, List<W>> e : reads.entrySet()) {
            List<W> ws = writes.get(e.getKey());
            if (ws == null) {
                continue;
            }
            W[] w = ws.toArray(new W[0]);
            Arrays.sort(w, Comparator.comparingLong(x -> x.lo));
            long[] reach = new long[w.length];   // the furthest hull end among regions 0..i
            for (int i = 0; i < w.length; i++) {
                reach[i] = Math.max(w[i].hi, i == 0 ? Long.MIN_VALUE : reach[i - 1]);
            }
            for (W r : e.getValue()) {
                for (int i = lastBefore(w, r.hi); i >= 0 && reach[i] > r.lo; i--) {
                    if (w[i].hi <= r.lo || apart(r, w[i])) {
                        continue;
                    }
                    for (W rh : r.heads > 1 ? r.parts() : List.of(r)) {
                        for (W wh : w[i].heads > 1 ? w[i].parts() : List.of(w[i])) {
                            if (rh.hi <= wh.lo || wh.hi <= rh.lo || apart(rh, wh)) {
                                continue;
                            }
                            Witness x = cells(rh, src, wh, dst, left);
                            if (x != null && x.shown()) {
                                return x;
                            }
                            if (x != null && unshown == null) {
                                unshown = x;
                            }
                        }
                    }
                }
            }
        }
        return unshown;
    }

    /** One side's regions by address space: per layer and part, runs of heads at one head stride. */
    private static Map<Object, List<W>> regions(List<Pair> pairs, Side side, boolean source) {
        Map<Object, List<W>> out = new IdentityHashMap<>();
        for (boolean v : new boolean[] {false, true}) {
            int i = 0;
            while (i < pairs.size()) {
                SlicePlan.Part first = WrittenCells.part(pairs.get(i), source, v);
                if (first == null) {
                    i++;
                    continue;
                }
                int j = WrittenCells.runEnd(pairs, i, source, v);
                long stride = j > i + 1 ? WrittenCells.part(pairs.get(i + 1), source, v).base() - first.base() : 0;
                out.computeIfAbsent(CopyPlan.space(first.memory()), k -> new ArrayList<>())
                        .add(new W(side.pages, pairs.subList(i, j), source, v, stride));
                i = j;
            }
        }
        return out;
    }

    /**
     * Whether, modulo one of the two regions' strides, their bytes lie in circular intervals that do not meet (every
     * byte of a region lies in its interval, so they share none).
     */
    static boolean apart(W a, W b) {
        for (W x : new W[] {a, b}) {
            long[] d = x.dims();
            for (int k = 0; k < d.length; k += 2) {
                long m = d[k];
                if (m <= 0) {
                    continue;
                }
                long la = WrittenCells.residueLength(a, m);
                long lb = WrittenCells.residueLength(b, m);
                if (la >= m || lb >= m) {
                    continue;
                }
                long sa = Math.floorMod(a.lo, m);
                long sb = Math.floorMod(b.lo, m);
                if (Math.floorMod(sb - sa, m) >= la && Math.floorMod(sa - sb, m) >= lb) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * One read head's cells against one written head's, page by page: per read table entry, the written pages whose
     * spans its span meets, and there slot by slot. A witness when a byte is shared, an unshown one when the budget
     * runs out, else null.
     */
    private static Witness cells(W r, Side rs, W w, Side ws, long[] left) {
        SlicePlan.Part rp = r.part;
        SlicePlan.Part wp = w.part;
        long rb = rp.bytes();
        long wb = wp.bytes();
        long ps = wp.pageStride();
        long wt = wp.tokenStride();
        long wSpan = (ws.fullSlots - 1L) * wt + wb;
        int[] table = rs.pages.pageTable();
        int[] entries = ws.lookup.entries();
        int[] sorted = entries == null ? ws.lookup.sorted() : null;
        for (int e = 0; e < table.length; e++) {
            int p = table[e];
            int slots = rs.pages.slots(e);
            long x0 = r.cell(p, 0);
            long x1 = x0 + (slots - 1L) * rp.tokenStride() + rb;
            long qmin;
            long qmax;
            if (ps > 0) {
                qmin = Math.max(ws.lookup.min, Math.floorDiv(x0 - wSpan - w.at, ps) + 1);
                qmax = Math.min(ws.lookup.max, Math.ceilDiv(x1 - w.at, ps) - 1);
            } else {
                qmin = ws.lookup.min;
                qmax = ws.lookup.max;
            }
            if (qmin > qmax) {
                continue;
            }
            // the written pages in [qmin, qmax]: by id where the pages are dense, else from the sorted list
            int k = entries != null ? (int) qmin : PageSpans.lowerBound(sorted, qmin);
            while (entries != null ? k <= qmax : k < sorted.length && sorted[k] <= qmax) {
                int q = entries != null ? k : sorted[k];
                k++;
                left[0]--;   // a page passed over counts too: the loop stays bounded where pages lie close
                if (entries != null && entries[q - ws.lookup.min] == 0) {
                    continue;
                }
                left[0] -= slots;
                if (left[0] < 0) {
                    return new Witness(r.pairs.get(0), r.v, p, w.pairs.get(0), w.v, q, false);
                }
                if (meet(x0, rp.tokenStride(), slots, rb, w.cell(q, 0), wt, ws.slotsOf(q), wb)) {
                    return new Witness(r.pairs.get(0), r.v, p, w.pairs.get(0), w.v, q, true);
                }
            }
        }
        return null;
    }

    /**
     * Whether some read cell {@code x + j*tr + [0, rb)}, {@code j < rn}, shares a byte with some written cell
     * {@code y + k*tw + [0, wb)}, {@code k < wn}: per read cell, the written cells starting in {@code (x - wb, x + rb)}
     * are an interval of {@code k}.
     */
    static boolean meet(long x, long tr, int rn, long rb, long y, long tw, int wn, long wb) {
        for (int j = 0; j < rn; j++, x += tr) {
            if (tw == 0 || wn == 1) {
                if (y > x - wb && y < x + rb) {
                    return true;
                }
                continue;
            }
            long kmin = Math.max(0, Math.floorDiv(x - wb - y, tw) + 1);
            long kmax = Math.min(wn - 1L, Math.ceilDiv(x + rb - y, tw) - 1);
            if (kmin <= kmax) {
                return true;
            }
        }
        return false;
    }

    /** The last region (sorted by lowest byte) starting before {@code end}, or -1. */
    private static int lastBefore(W[] w, long end) {
        int lo = 0;
        int hi = w.length - 1;
        int last = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (w[mid].lo < end) {
                last = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return last;
    }
}
