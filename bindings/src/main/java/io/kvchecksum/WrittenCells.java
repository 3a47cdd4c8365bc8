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
 * <p>The cells written are regions: a layer's copied heads of K (or of V) in one plan, the lattice
 * {@code a + page*ps + slot*ts + head*hs + [0, bytes)} over the plan's pages and slots and the copied heads. Disjointness
 * is shown structurally first, cheaply for real layouts, and only what that cannot show is checked cell by cell:
 * <ol>
 * <li>each region alone: its dimensions nest (each stride at least the extent of the smaller ones', a cell's bytes the
 * smallest);</li>
 * <li>between regions, per address space: regions whose hulls (first written byte to last) do not meet are disjoint
 * (distinct buffers; K and V halves; layers one after another; Jlama's pages); most regions stop here, kept in flat
 * arrays, never made objects;</li>
 * <li>regions whose hulls meet are compared modulo one of their strides {@code M}, the largest first: a region's bytes
 * all lie, modulo {@code M}, in one circular interval ({@code bytes} long, plus the extent of every dimension whose
 * stride is not a multiple of {@code M}); regions whose intervals do not meet are disjoint. Modulo the page stride
 * this separates head-major heads and K from V inside a page; modulo the token stride it separates token-major layers
 * and heads, whose cells interleave within a page span;</li>
 * <li>regions still not separated are taken head by head through the same steps, and heads still not separated (an
 * overlap, or an unusual layout) are checked exactly: every written cell, sorted by address. This costs a sort of
 * those heads' cells, never more than the cells the copy writes.</li>
 * </ol>
 * Two regions whose lowest cells overlap are refused at once (every layer onto one buffer, K on V).
 */
final class WrittenCells {
    private WrittenCells() {
    }

    /** One plan's written pages: {@code pageTable[i]} holds slots {@code 0 .. min(pd, tokens - i*pd) - 1}. */
    record Pages(String where, KvCacheGroup group, int[] pageTable, int pageSize, long tokens, int minPage, int maxPage) {
        static Pages of(String where, int[] table, KvCacheGroup group, long tokens) {
            int lo = Integer.MAX_VALUE;
            int hi = Integer.MIN_VALUE;
            for (int p : table) {
                lo = Math.min(lo, p);
                hi = Math.max(hi, p);
            }
            return new Pages(where, group, table, group.pageSize(), tokens, lo, hi);
        }

        int slots() {
            return (int) Math.min(pageSize, tokens);
        }

        int slots(int i) {
            return (int) Math.min(pageSize, tokens - (long) i * pageSize);
        }
    }

    /**
     * Written cells of one plan: the K (or V) parts of a run of copied heads of one layer at a constant head stride
     * (a region), or of one head (a part, {@code heads == 1}). With {@code source} set, the cells the copy reads
     * instead ({@link SharedBytes}: the same lattices, on the source's side of the pairs and its pages).
     */
    static final class W {
        final Pages pages;
        final List<Pair> pairs;
        final boolean source;
        final boolean v;
        /** The first head's part. */
        final Part part;
        final int heads;
        final long headStride;
        /** Address of the first head's cell (page 0, slot 0) in the part's address space. */
        final long at;
        final long lo;
        final long hi;
        private long[] dims;

        W(Pages pages, List<Pair> pairs, boolean source, boolean v, long headStride) {
            this.pages = pages;
            this.pairs = pairs;
            this.source = source;
            this.v = v;
            this.part = part(pairs.get(0), source, v);
            this.heads = pairs.size();
            this.headStride = headStride;
            this.at = CopyPlan.address(part.memory()) + part.base();
            this.lo = at + pages.minPage * part.pageStride();
            this.hi = at + pages.maxPage * part.pageStride() + (pages.slots() - 1L) * part.tokenStride()
                    + (heads - 1L) * headStride + part.bytes();
        }

        /** The dimensions with more than one index: {stride, largest index difference} pairs, smallest stride first. */
        long[] dims() {
            long[] d = dims;
            if (d == null) {
                long[] x = new long[6];
                int n = 0;
                if (pages.pageTable.length > 1) {
                    n = insert(x, n, part.pageStride(), pages.maxPage - pages.minPage);
                }
                if (pages.slots() > 1) {
                    n = insert(x, n, part.tokenStride(), pages.slots() - 1L);
                }
                if (heads > 1) {
                    n = insert(x, n, headStride, heads - 1L);
                }
                d = n == 6 ? x : Arrays.copyOf(x, n);
                dims = d;
            }
            return d;
        }

        private static int insert(long[] x, int n, long stride, long count) {
            int at = n;
            while (at > 0 && x[at - 2] > stride) {
                x[at] = x[at - 2];
                x[at + 1] = x[at - 1];
                at -= 2;
            }
            x[at] = stride;
            x[at + 1] = count;
            return n + 2;
        }

        /** This region's heads one by one. */
        List<W> parts() {
            List<W> out = new ArrayList<>(heads);
            for (Pair p : pairs) {
                out.add(new W(pages, List.of(p), source, v, 0));
            }
            return out;
        }

        long cell(int page, long slot) {
            return at + page * part.pageStride() + slot * part.tokenStride();
        }

        String name() {
            Pair p = pairs.get(0);
            return "layer " + p.layer() + " head " + p.head() + " " + (v ? "V" : "K");
        }
    }

    private static Part part(Pair p, boolean v) {
        return part(p, false, v);
    }

    /** The pair's K (or V) part on the source's side or the destination's; null for a V a slice lacks. */
    static Part part(Pair p, boolean source, boolean v) {
        SlicePlan.Slice s = source ? p.source() : p.destination();
        return v ? s.v() : s.k();
    }

    /**
     * Where a run of heads starting at pair {@code i} ends: the first pair after it that is not the next head of the
     * run (same layer, memory, strides and bytes, at the run's head stride, the first step positive).
     */
    static int runEnd(List<Pair> pairs, int i, boolean source, boolean v) {
        Part first = part(pairs.get(i), source, v);
        int n = pairs.size();
        int j = i + 1;
        long stride = 0;
        int layer = pairs.get(i).layer();
        while (j < n) {
            Pair pj = pairs.get(j);
            Part next = part(pj, source, v);
            if (next == null || pj.layer() != layer || next.memory() != first.memory()
                    || next.pageStride() != first.pageStride() || next.tokenStride() != first.tokenStride()
                    || next.bytes() != first.bytes()) {
                break;
            }
            long d = next.base() - first.base();
            if (j == i + 1) {
                if (d <= 0) {
                    break;
                }
                stride = d;
            } else if (d != (j - i) * stride) {
                break;
            }
            j++;
        }
        return j;
    }

    /**
     * {@return the length of the circular interval modulo {@code m}, from {@code floorMod(w.lo, m)}, that holds every
     * byte of {@code w}: a cell's bytes plus the extent of every dimension whose stride is not a multiple of
     * {@code m} (at least {@code m} when it holds every residue)}
     */
    static long residueLength(W w, long m) {
        long len = w.part.bytes();
        long[] d = w.dims();
        for (int k = 0; k < d.length; k += 2) {
            if (d[k] % m != 0) {
                len += d[k] * d[k + 1];
            }
        }
        return len;
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
        Map<Object, Regions> bySpace = new IdentityHashMap<>();
        int capacity = 0;
        for (List<Pair> p : pairs) {
            capacity += 2 * p.size();
        }
        int size = Math.max(16, capacity);
        Copied shared = null;   // a segmented destination's segments share one geometry and one pairing
        for (int i = 0; i < pages.size(); i++) {
            Pages p = pages.get(i);
            if (p.pageTable.length == 0 || p.tokens <= 0) {
                continue;
            }
            List<Pair> mine = pairs.get(i);
            Copied c = shared != null && shared.fits(p.group, mine) ? shared : Copied.of(p.group, mine);
            if (shared == null) {
                shared = c;
            }
            if (c != null) {
                layers(i, p, c, bySpace, size);
            } else {
                runs(i, p, mine, false, bySpace, size);
                runs(i, p, mine, true, bySpace, size);
            }
        }
        long[] exact = new long[1];
        for (Regions r : bySpace.values()) {
            // most regions meet no other's hull and nest: they are never made objects
            int[] order = r.byLo();
            int from = 0;
            long reach = r.hi[order[0]];
            for (int i = 1; i <= r.n; i++) {
                if (i < r.n && r.lo[order[i]] < reach) {
                    reach = Math.max(reach, r.hi[order[i]]);
                    continue;
                }
                if (i - from > 1 || !r.nests[order[from]]) {
                    List<W> cluster = new ArrayList<>(i - from);
                    for (int k = from; k < i; k++) {
                        cluster.add(r.w(order[k], pages, pairs));
                    }
                    check(cluster, exact);
                }
                from = i;
                if (i < r.n) {
                    reach = r.hi[order[i]];
                }
            }
        }
        return exact[0];
    }

    /** Regions whose hulls meet (or one that does not nest): each shown disjoint from the others, or refused. */
    private static void check(List<W> regions, long[] exact) {
        List<W> all = new ArrayList<>(regions.size());
        for (W w : regions) {
            if (nests(w)) {
                all.add(w);
                continue;
            }
            for (W part : w.heads > 1 ? w.parts() : List.of(w)) {
                if (!nests(part)) {
                    exact(List.of(part), exact);
                }
                all.add(part);
            }
        }
        split(all, Long.MAX_VALUE, exact);
    }

    /** The regions of one address space in flat arrays: most are never made objects. */
    private static final class Regions {
        int n;
        long[] lo;
        long[] hi;
        long[] stride;
        int[] plan;
        int[] from;
        int[] to;
        boolean[] v;
        boolean[] nests;

        /** Room for {@code capacity} regions before the arrays grow. */
        Regions(int capacity) {
            lo = new long[capacity];
            hi = new long[capacity];
            stride = new long[capacity];
            plan = new int[capacity];
            from = new int[capacity];
            to = new int[capacity];
            v = new boolean[capacity];
            nests = new boolean[capacity];
        }

        void add(long lo, long hi, long stride, int plan, int from, int to, boolean v, boolean nests) {
            if (n == this.lo.length) {
                int m = 2 * n;
                this.lo = Arrays.copyOf(this.lo, m);
                this.hi = Arrays.copyOf(this.hi, m);
                this.stride = Arrays.copyOf(this.stride, m);
                this.plan = Arrays.copyOf(this.plan, m);
                this.from = Arrays.copyOf(this.from, m);
                this.to = Arrays.copyOf(this.to, m);
                this.v = Arrays.copyOf(this.v, m);
                this.nests = Arrays.copyOf(this.nests, m);
            }
            this.lo[n] = lo;
            this.hi[n] = hi;
            this.stride[n] = stride;
            this.plan[n] = plan;
            this.from[n] = from;
            this.to[n] = to;
            this.v[n] = v;
            this.nests[n] = nests;
            n++;
        }

        W w(int k, List<Pages> pages, List<List<Pair>> pairs) {
            return new W(pages.get(plan[k]), pairs.get(plan[k]).subList(from[k], to[k]), false, v[k], stride[k]);
        }

        /** The regions' indices by lowest byte: a sort of packed (lowest byte, index) keys where they fit a long. */
        int[] byLo() {
            int[] order = new int[n];
            long min = Long.MAX_VALUE;
            long max = Long.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                min = Math.min(min, lo[i]);
                max = Math.max(max, lo[i]);
            }
            int idBits = 32 - Integer.numberOfLeadingZeros(n);
            if (max - min < 0 || 64 - Long.numberOfLeadingZeros(max - min) + idBits > 63) {
                Integer[] boxed = new Integer[n];
                for (int i = 0; i < n; i++) {
                    boxed[i] = i;
                }
                Arrays.sort(boxed, Comparator.comparingLong(i -> lo[i]));
                for (int i = 0; i < n; i++) {
                    order[i] = boxed[i];
                }
                return order;
            }
            long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = ((lo[i] - min) << idBits) | i;
            }
            Arrays.sort(keys);
            long mask = (1L << idBits) - 1;
            for (int i = 0; i < n; i++) {
                order[i] = (int) (keys[i] & mask);
            }
            return order;
        }
    }

    /**
     * Which heads of each destination layer a plan copies, when they are one run of consecutive heads per layer (a TP
     * head range, or all of them): layer entry {@code L}'s local heads {@code firstHead[L] .. +count[L]-1} are pairs
     * {@code firstPair[L] ..}. Its regions then come from the layers (a region per layer, K and V), not from the pairs.
     */
    private record Copied(int[] firstHead, int[] count, int[] firstPair, int pairs) {
        /** The plan's copied heads, or null where a layer's copied heads are not one run. */
        static Copied of(KvCacheGroup group, List<Pair> pairs) {
            List<CacheLayer> layers = group.layers();
            int[] firstHead = new int[layers.size()];
            int[] count = new int[layers.size()];
            int[] firstPair = new int[layers.size()];
            int p = 0;
            int n = pairs.size();
            for (int l = 0; l < layers.size(); l++) {
                CacheLayer layer = layers.get(l);
                firstPair[l] = p;
                if (p < n && in(layer, pairs.get(p))) {
                    firstHead[l] = pairs.get(p).head() - layer.firstHead();
                    int k = 1;
                    while (p + k < n && in(layer, pairs.get(p + k))
                            && pairs.get(p + k).head() == pairs.get(p).head() + k) {
                        k++;
                    }
                    count[l] = k;
                    p += k;
                }
                if (p < n && in(layer, pairs.get(p))) {
                    return null;
                }
            }
            return p == n ? new Copied(firstHead, count, firstPair, n) : null;
        }

        private static boolean in(CacheLayer layer, Pair p) {
            return p.layer() == layer.layer() && p.head() >= layer.firstHead()
                    && p.head() < layer.firstHead() + layer.numHeads();
        }

        /** Whether another plan's pairs have this plan's layout (a segment of the same geometry and pairing). */
        boolean fits(KvCacheGroup group, List<Pair> pairs) {
            if (pairs.size() != this.pairs || group.layers().size() != count.length) {
                return false;
            }
            for (int l = 0; l < count.length; l++) {
                if (count[l] == 0) {
                    continue;
                }
                CacheLayer layer = group.layers().get(l);
                Pair first = pairs.get(firstPair[l]);
                Pair last = pairs.get(firstPair[l] + count[l] - 1);
                if (!in(layer, first) || first.head() - layer.firstHead() != firstHead[l]
                        || last.head() != first.head() + count[l] - 1 || !in(layer, last)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** The plan's regions from its layers: per layer, the copied heads of K, and of V. */
    private static void layers(int plan, Pages pages, Copied copied, Map<Object, Regions> bySpace, int capacity) {
        long pageCount = pages.pageTable.length > 1 ? pages.maxPage - pages.minPage : 0;
        long slotCount = pages.slots() - 1L;
        List<CacheLayer> layers = pages.group.layers();
        Object lastSpace = null;
        Regions regions = null;
        for (int l = 0; l < layers.size(); l++) {
            int count = copied.count[l];
            if (count == 0) {
                continue;
            }
            CacheLayer layer = layers.get(l);
            for (int kv = 0; kv < (layer.v() == null ? 1 : 2); kv++) {
                KvRegion r = kv == 0 ? layer.k() : layer.v();
                Object space = CopyPlan.space(r.memory());
                if (space != lastSpace) {
                    int room = bySpace.isEmpty() ? capacity : 16;
                    regions = bySpace.computeIfAbsent(space, k -> new Regions(room));
                    lastSpace = space;
                }
                long ps = r.pageStride();
                long ts = r.tokenStride();
                long hs = r.headStride();
                long at = CopyPlan.address(r.memory()) + r.offset() + copied.firstHead[l] * hs;
                long lo = at + pages.minPage * ps;
                long hi = at + pages.maxPage * ps + slotCount * ts + (count - 1L) * hs + r.cellBytes();
                regions.add(lo, hi, count > 1 ? hs : 0, plan, copied.firstPair[l], copied.firstPair[l] + count,
                        kv == 1, nests(r.cellBytes(), ps, pageCount, ts, slotCount, hs, count - 1L));
            }
        }
    }

    /** The plan's K (or V) parts as regions: runs of heads of one layer at one head stride, in one memory. */
    private static void runs(int plan, Pages pages, List<Pair> pairs, boolean v, Map<Object, Regions> bySpace,
                             int capacity) {
        int n = pairs.size();
        int i = 0;
        Object lastSpace = null;
        Regions regions = null;
        long pageCount = pages.pageTable.length > 1 ? pages.maxPage - pages.minPage : 0;
        long slotCount = pages.slots() - 1L;
        while (i < n) {
            Part first = part(pairs.get(i), v);
            if (first == null) {
                i++;
                continue;
            }
            int j = runEnd(pairs, i, false, v);
            long stride = j > i + 1 ? part(pairs.get(i + 1), v).base() - first.base() : 0;
            Object space = CopyPlan.space(first.memory());
            if (space != lastSpace) {
                // room for every part in the first space (all of native memory, or the device); heap arrays grow
                int room = bySpace.isEmpty() ? capacity : 16;
                regions = bySpace.computeIfAbsent(space, k -> new Regions(room));
                lastSpace = space;
            }
            long ps = first.pageStride();
            long ts = first.tokenStride();
            long at = CopyPlan.address(first.memory()) + first.base();
            long lo = at + pages.minPage * ps;
            long hi = at + pages.maxPage * ps + slotCount * ts + (j - i - 1L) * stride + first.bytes();
            regions.add(lo, hi, stride, plan, i, j, v,
                    nests(first.bytes(), ps, pageCount, ts, slotCount, stride, j - i - 1L));
            i = j;
        }
    }

    /** {@link #nests(long, long, long, long, long, long, long)} for a region made an object. */
    private static boolean nests(W w) {
        return nests(w.part.bytes(), w.part.pageStride(), w.pages.pageTable.length > 1 ? w.pages.maxPage - w.pages.minPage
                : 0, w.part.tokenStride(), w.pages.slots() - 1L, w.headStride, w.heads - 1L);
    }

    /**
     * Whether the cells of one region are disjoint by its strides alone: its dimensions (stride, largest index
     * difference; 0 for a dimension of one index) nest, each stride at least the extent of the smaller ones', a cell's
     * bytes the smallest.
     */
    private static boolean nests(long bytes, long s0, long c0, long s1, long c1, long s2, long c2) {
        // a dimension of one index constrains nothing: it sorts last and adds nothing
        if (c0 == 0) {
            s0 = Long.MAX_VALUE;
        }
        if (c1 == 0) {
            s1 = Long.MAX_VALUE;
        }
        if (c2 == 0) {
            s2 = Long.MAX_VALUE;
        }
        long t;
        if (s0 > s1) {
            t = s0;
            s0 = s1;
            s1 = t;
            t = c0;
            c0 = c1;
            c1 = t;
        }
        if (s1 > s2) {
            t = s1;
            s1 = s2;
            s2 = t;
            t = c1;
            c1 = c2;
            c2 = t;
        }
        if (s0 > s1) {
            t = s0;
            s0 = s1;
            s1 = t;
            t = c0;
            c0 = c1;
            c1 = t;
        }
        long extent = bytes;
        if (s0 < extent) {
            return false;
        }
        extent += s0 * c0;
        if (s1 < extent) {
            return false;
        }
        extent += s1 * c1;
        return s2 >= extent;
    }

    /** Splits parts by their hulls, then each group of intersecting hulls by a modulus below {@code below}. */
    private static void split(List<W> parts, long below, long[] exact) {
        if (parts.size() < 2) {
            return;
        }
        W[] sorted = byLo(parts);
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

    /** The parts by their lowest byte: a sort of packed (lowest byte, index) keys where they fit in a long. */
    private static W[] byLo(List<W> parts) {
        int n = parts.size();
        W[] out = parts.toArray(new W[0]);
        long lo = Long.MAX_VALUE;
        long hi = Long.MIN_VALUE;
        for (W w : out) {
            lo = Math.min(lo, w.lo);
            hi = Math.max(hi, w.lo);
        }
        int idBits = 32 - Integer.numberOfLeadingZeros(n);
        if (hi - lo < 0 || 64 - Long.numberOfLeadingZeros(hi - lo) + idBits > 63) {
            Arrays.sort(out, Comparator.comparingLong(w -> w.lo));
            return out;
        }
        long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = ((out[i].lo - lo) << idBits) | i;
        }
        Arrays.sort(keys);
        W[] sorted = new W[n];
        long mask = (1L << idBits) - 1;
        for (int i = 0; i < n; i++) {
            sorted[i] = out[(int) (keys[i] & mask)];
        }
        return sorted;
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
            long[] d = w.dims();
            for (int i = 0; i < d.length; i += 2) {
                if (d[i] > 0 && d[i] < below) {
                    moduli.add(d[i]);
                }
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
        List<W> parts = new ArrayList<>();
        for (W w : cluster) {
            parts.addAll(w.heads > 1 ? w.parts() : List.of(w));
        }
        if (parts.size() > cluster.size()) {   // regions that could not be told apart: their heads might be
            split(parts, Long.MAX_VALUE, exact);
        } else {
            exact(cluster, exact);
        }
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
            long len = residueLength(w, m);
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
