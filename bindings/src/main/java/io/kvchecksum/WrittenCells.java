package io.kvchecksum;

import io.kvchecksum.CopyPlan.Pair;
import io.kvchecksum.SlicePlan.Part;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The refusal of a copy whose destination cells overlap one another (two layers described onto one buffer, heads
 * closer than a cell, K and V on the same bytes, pages closer than a page's span, segments sharing bytes): the copy would
 * write cells over each other while its values, read from the source, still match.
 *
 * <p>Every written part (one copied slice's K or V in one plan) is a lattice {@code a + page*ps + slot*ts + [0, bytes)}
 * over its plan's pages and slots. Disjointness is shown structurally first, cheaply for real layouts, and only what
 * that cannot show is checked cell by cell:
 * <ol>
 * <li>each part alone: its two dimensions nest (the inner stride at least a cell, the outer at least the inner's
 * extent);</li>
 * <li>between parts, per address space: parts whose hulls (first written byte to last) do not intersect are disjoint
 * (distinct buffers; K and V halves; layers one after another; a segment's shares);</li>
 * <li>parts whose hulls intersect are compared modulo one of their strides {@code M}, from the largest down: a part's
 * bytes all lie, modulo {@code M}, in one circular interval ({@code bytes} long, plus the extent of any dimension whose
 * stride is not a multiple of {@code M}); parts whose intervals do not meet are disjoint. Modulo the page stride this
 * separates head-major heads and K from V inside a page; modulo the token stride it separates token-major heads,
 * whose cells interleave within a page span;</li>
 * <li>parts still not separated (an overlap, or an unusual layout) are checked exactly: every written cell, sorted by
 * address. This costs a sort of those parts' cells, never more than the cells the copy writes.</li>
 * </ol>
 * Two parts whose lowest cells overlap are refused at once (every layer onto one buffer, K on V).
 */
final class WrittenCells {
    private WrittenCells() {
    }

    /** One plan's written pages: {@code pageTable[i]} holds slots {@code 0 .. min(pd, tokens - i*pd) - 1}. */
    record Pages(String where, int[] pageTable, int pageSize, long tokens, int minPage, int maxPage) {
        static Pages of(String where, int[] table, int pageSize, long tokens) {
            int lo = Integer.MAX_VALUE;
            int hi = Integer.MIN_VALUE;
            for (int p : table) {
                lo = Math.min(lo, p);
                hi = Math.max(hi, p);
            }
            return new Pages(where, table, pageSize, tokens, lo, hi);
        }

        int slots() {
            return (int) Math.min(pageSize, tokens);
        }

        int slots(int i) {
            return (int) Math.min(pageSize, tokens - (long) i * pageSize);
        }
    }

    /** One written part: a slice's K or V in one plan. */
    private static final class W {
        final Pages pages;
        final Pair pair;
        final boolean v;
        final Part part;
        /** Address of cell (page 0, slot 0) in the part's address space. */
        final long at;
        final long lo;
        final long hi;

        W(Pages pages, Pair pair, boolean v) {
            this.pages = pages;
            this.pair = pair;
            this.v = v;
            this.part = v ? pair.destination().v() : pair.destination().k();
            this.at = CopyPlan.address(part.memory()) + part.base();
            this.lo = at + pages.minPage * part.pageStride();
            this.hi = at + pages.maxPage * part.pageStride() + (pages.slots() - 1L) * part.tokenStride() + part.bytes();
        }

        boolean manySlots() {
            return pages.slots() > 1;
        }

        boolean manyPages() {
            return pages.pageTable.length > 1;
        }

        long cell(int page, long slot) {
            return at + page * part.pageStride() + slot * part.tokenStride();
        }

        String name() {
            return "layer " + pair.layer() + " head " + pair.head() + " " + (v ? "V" : "K");
        }
    }

    /**
     * Refuses overlapping destination cells among the plans' copied slices.
     *
     * @param pages per plan: its written pages, and how its cells are named ({@code where})
     * @param pairs per plan: its pairs (only the destinations are read)
     * @return how many cells were compared one by one (0 where the strides showed every part disjoint): for tests
     * @throws InvalidLayoutException naming two overlapping cells
     */
    static long requireDisjoint(List<Pages> pages, List<List<Pair>> pairs) {
        Map<Object, List<W>> bySpace = new IdentityHashMap<>();
        for (int i = 0; i < pages.size(); i++) {
            Pages p = pages.get(i);
            if (p.pageTable.length == 0 || p.tokens <= 0) {
                continue;
            }
            for (Pair pair : pairs.get(i)) {
                add(bySpace, new W(p, pair, false));
                if (pair.destination().v() != null) {
                    add(bySpace, new W(p, pair, true));
                }
            }
        }
        long[] exact = new long[1];
        for (List<W> parts : bySpace.values()) {
            for (W w : parts) {
                if (!nests(w)) {
                    exact(List.of(w), exact);
                }
            }
            split(parts, Long.MAX_VALUE, exact);
        }
        return exact[0];
    }

    private static void add(Map<Object, List<W>> bySpace, W w) {
        bySpace.computeIfAbsent(CopyPlan.space(w.part.memory()), k -> new ArrayList<>()).add(w);
    }

    /** Whether one part's cells are disjoint by its strides alone: the dimensions nest. */
    private static boolean nests(W w) {
        long ts = w.part.tokenStride();
        long ps = w.part.pageStride();
        int bytes = w.part.bytes();
        boolean slots = w.manySlots();
        boolean pages = w.manyPages();
        if (!slots && !pages) {
            return true;
        }
        if (slots && !pages) {
            return ts >= bytes;
        }
        long pageExtent = (long) (w.pages.maxPage - w.pages.minPage) * ps + bytes;
        if (!slots) {
            return ps >= bytes;
        }
        long slotExtent = (w.pages.slots() - 1L) * ts + bytes;
        return ts <= ps ? ts >= bytes && ps >= slotExtent : ps >= bytes && ts >= pageExtent;
    }

    /** Splits parts by their hulls, then each group of intersecting hulls by a modulus below {@code below}. */
    private static void split(List<W> parts, long below, long[] exact) {
        if (parts.size() < 2) {
            return;
        }
        W[] sorted = parts.toArray(new W[0]);
        Arrays.sort(sorted, Comparator.comparingLong(w -> w.lo));
        int from = 0;
        long reach = sorted[0].hi;
        for (int i = 1; i <= sorted.length; i++) {
            if (i == sorted.length || sorted[i].lo >= reach) {
                if (i - from > 1) {
                    byModulus(Arrays.asList(sorted).subList(from, i), below, exact);
                }
                from = i;
                if (i < sorted.length) {
                    reach = sorted[i].hi;
                }
            } else {
                reach = Math.max(reach, sorted[i].hi);
            }
        }
    }

    /** Parts whose hulls intersect, sorted by their lowest byte. */
    private static void byModulus(List<W> cluster, long below, long[] exact) {
        // lowest cells first: each part's lowest byte starts a written cell (page minPage, slot 0)
        for (int i = 1; i < cluster.size(); i++) {
            W a = cluster.get(i - 1);
            W b = cluster.get(i);
            if (b.lo < a.lo + a.part.bytes()) {
                throw refusal(a, a.pages.minPage, 0, b, b.pages.minPage, 0);
            }
        }
        TreeSet<Long> moduli = new TreeSet<>();
        for (W w : cluster) {
            if (w.manySlots() && w.part.tokenStride() > 0 && w.part.tokenStride() < below) {
                moduli.add(w.part.tokenStride());
            }
            if (w.manyPages() && w.part.pageStride() > 0 && w.part.pageStride() < below) {
                moduli.add(w.part.pageStride());
            }
        }
        for (long m : moduli.descendingSet()) {
            List<List<W>> groups = circular(cluster, m);
            if (groups != null && groups.size() > 1) {
                for (List<W> g : groups) {
                    split(g, m, exact);
                }
                return;
            }
        }
        exact(cluster, exact);
    }

    /**
     * The groups of parts whose residue intervals modulo {@code m} meet (transitively), or null when one part's
     * interval covers every residue.
     */
    private static List<List<W>> circular(List<W> cluster, long m) {
        int n = cluster.size();
        long[] start = new long[n];
        long[] end = new long[n];
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            W w = cluster.get(i);
            long len = w.part.bytes();
            if (w.manySlots() && w.part.tokenStride() % m != 0) {
                len += (w.pages.slots() - 1L) * w.part.tokenStride();
            }
            if (w.manyPages() && w.part.pageStride() % m != 0) {
                len += (long) (w.pages.maxPage - w.pages.minPage) * w.part.pageStride();
            }
            if (len >= m) {
                return null;
            }
            start[i] = Math.floorMod(w.lo, m);
            end[i] = start[i] + len;
            order[i] = i;
        }
        Arrays.sort(order, Comparator.comparingLong(i -> start[i]));
        List<List<W>> groups = new ArrayList<>();
        List<W> current = new ArrayList<>();
        long reach = Long.MIN_VALUE;
        long far = Long.MIN_VALUE;
        for (int i : order) {
            if (!current.isEmpty() && start[i] >= reach) {
                groups.add(current);
                current = new ArrayList<>();
            }
            current.add(cluster.get(i));
            reach = Math.max(reach, end[i]);
            far = Math.max(far, end[i]);
        }
        groups.add(current);
        // intervals past m wrap onto the first groups: those starting before the wrapped end join the last group
        long wrapped = far - m;
        while (groups.size() > 1 && wrapped > 0) {
            List<W> first = groups.get(0);
            if (Math.floorMod(first.get(0).lo, m) >= wrapped) {
                break;
            }
            groups.remove(0);
            groups.get(groups.size() - 1).addAll(first);
        }
        return groups;
    }

    /** Every written cell of the parts, sorted by address: the first two that share a byte are refused. */
    private static void exact(List<W> parts, long[] count) {
        long lo = Long.MAX_VALUE;
        long hi = Long.MIN_VALUE;
        long cells = 0;
        for (W w : parts) {
            lo = Math.min(lo, w.lo);
            hi = Math.max(hi, w.hi);
            cells += w.pages.tokens;
        }
        count[0] += cells;
        if (cells > Integer.MAX_VALUE - 16) {
            throw new InvalidLayoutException("copy: the destination's cells could not be shown disjoint by their strides"
                    + " and are too many (" + cells + ") to compare one by one");
        }
        int idBits = 64 - Long.numberOfLeadingZeros(parts.size());
        int addrBits = 64 - Long.numberOfLeadingZeros(hi - lo);
        int n = 0;
        if (idBits + addrBits <= 63) {
            long[] keys = new long[(int) cells];
            for (int j = 0; j < parts.size(); j++) {
                W w = parts.get(j);
                int[] table = w.pages.pageTable;
                for (int i = 0; i < table.length; i++) {
                    for (int t = 0, slots = w.pages.slots(i); t < slots; t++) {
                        keys[n++] = ((w.cell(table[i], t) - lo) << idBits) | j;
                    }
                }
            }
            Arrays.sort(keys, 0, n);
            long mask = (1L << idBits) - 1;
            long reachEnd = Long.MIN_VALUE;
            int reachPart = -1;
            long reachAt = 0;
            for (int i = 0; i < n; i++) {
                long at = (keys[i] >>> idBits) + lo;
                int j = (int) (keys[i] & mask);
                if (at < reachEnd) {
                    throw refusal(parts.get(reachPart), reachAt, parts.get(j), at);
                }
                long end = at + parts.get(j).part.bytes();
                if (end > reachEnd) {
                    reachEnd = end;
                    reachPart = j;
                    reachAt = at;
                }
            }
            return;
        }
        // addresses too far apart to pack with a part index: sort cells as (address, part) rows
        long[][] rows = new long[(int) cells][];
        for (int j = 0; j < parts.size(); j++) {
            W w = parts.get(j);
            int[] table = w.pages.pageTable;
            for (int i = 0; i < table.length; i++) {
                for (int t = 0, slots = w.pages.slots(i); t < slots; t++) {
                    rows[n++] = new long[] {w.cell(table[i], t), j};
                }
            }
        }
        Arrays.sort(rows, 0, n, Comparator.comparingLong(r -> r[0]));
        long reachEnd = Long.MIN_VALUE;
        int reachPart = -1;
        long reachAt = 0;
        for (int i = 0; i < n; i++) {
            int j = (int) rows[i][1];
            if (rows[i][0] < reachEnd) {
                throw refusal(parts.get(reachPart), reachAt, parts.get(j), rows[i][0]);
            }
            long end = rows[i][0] + parts.get(j).part.bytes();
            if (end > reachEnd) {
                reachEnd = end;
                reachPart = j;
                reachAt = rows[i][0];
            }
        }
    }

    /** The refusal naming two cells, each given by its part and address (a cell of the part starts there). */
    private static InvalidLayoutException refusal(W a, long atA, W b, long atB) {
        int[] ca = locate(a, atA, -1, -1);
        int[] cb = a == b && atA == atB ? locate(b, atB, ca[0], ca[1]) : locate(b, atB, -1, -1);
        return refusal(a, ca[0], ca[1], b, cb[0], cb[1]);
    }

    /** The (page, slot) of a written cell of {@code w} starting at {@code at}, other than {@code (notPage, notSlot)}. */
    private static int[] locate(W w, long at, int notPage, int notSlot) {
        int[] table = w.pages.pageTable;
        for (int i = 0; i < table.length; i++) {
            for (int t = 0, slots = w.pages.slots(i); t < slots; t++) {
                if (w.cell(table[i], t) == at && (table[i] != notPage || t != notSlot)) {
                    return new int[] {table[i], t};
                }
            }
        }
        throw new IllegalStateException("no written cell of " + w.name() + " at " + at);
    }

    private static InvalidLayoutException refusal(W a, int pageA, int slotA, W b, int pageB, int slotB) {
        return new InvalidLayoutException("copy: destination cells overlap: " + describe(a, pageA, slotA) + " and "
                + describe(b, pageB, slotB) + " share bytes, so the copy would write one over the other (its values,"
                + " read from the source, would still match): describe each (layer, head, K or V, page, slot) of the"
                + " destination on bytes of its own");
    }

    private static String describe(W w, int page, int slot) {
        long from = w.part.cellOffset(page, slot);
        return w.pages.where + w.name() + " page " + page + " slot " + slot + " (bytes " + from + ".."
                + (from + w.part.bytes() - 1) + " of its memory)";
    }
}
