package io.kvchecksum;

import io.kvchecksum.CopyPlan.Pair;
import io.kvchecksum.SlicePlan.Part;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Page spans of one side of a copy as lattices: a run of parts (one layer's K or V heads, say) covers, on each page
 * {@code p} of a table, one interval {@code start + p*stride + [0, extent)}. Whether some read interval meets some
 * written one is then a question about a few runs and two sorted page lists, answered without one interval per (slice,
 * part, page): what makes an in-place copy's compilation cost about what an out-of-place one costs.
 *
 * <p>Exact for the question asked: a run's interval on a page is the union of its parts' intervals on that page
 * (parts join a run only where their intervals chain without a gap), and two unions meet exactly when two of their
 * members do.
 */
final class PageSpans {
    private PageSpans() {
    }

    /**
     * One lattice: on page {@code p}, the interval {@code [start + p*stride, start + p*stride + extent)}.
     *
     * @param space the address space ({@link CopyPlan#space})
     * @param start the absolute address of page 0's interval
     * @param stride bytes between pages, non-negative
     * @param extent the interval's bytes on every page, positive
     * @param group the staging group (layer) it belongs to, or -1 for the overlap question
     */
    record Run(Object space, long start, long stride, long extent, int group) {
        long lo(int minPage) {
            return start + minPage * stride;
        }

        long hi(int maxPage) {
            return start + maxPage * stride + extent;
        }
    }

    /**
     * The runs of one side for the overlap question: per part kind (K, V), consecutive pairs whose parts share memory,
     * strides and bytes, and whose page spans (first cell to last cell of a page of {@code pageSize} slots) chain:
     * each starts at most one span after the previous one's start.
     */
    static List<Run> runs(List<Pair> pairs, boolean source, int pageSize) {
        List<Run> out = new ArrayList<>();
        for (int kv = 0; kv < 2; kv++) {
            Part first = null;
            Part last = null;
            long span = 0;
            for (Pair p : pairs) {
                SlicePlan.Slice s = source ? p.source() : p.destination();
                Part part = kv == 0 ? s.k() : s.v();
                if (part == null) {
                    continue;
                }
                long l = (pageSize - 1L) * part.tokenStride() + part.bytes();
                long d = last == null ? -1 : part.base() - last.base();
                if (last != null && part.memory() == last.memory() && part.pageStride() == last.pageStride()
                        && part.tokenStride() == last.tokenStride() && part.bytes() == last.bytes() && d >= 0 && d <= span) {
                    last = part;
                    continue;
                }
                if (first != null) {
                    out.add(run(first, last, span, -1));
                }
                first = part;
                last = part;
                span = l;
            }
            if (first != null) {
                out.add(run(first, last, span, -1));
            }
        }
        return out;
    }

    static Run run(Part first, Part last, long span, int group) {
        return new Run(CopyPlan.space(first.memory()), CopyPlan.address(first.memory()) + first.base(),
                first.pageStride(), last.base() - first.base() + span, group);
    }

    /**
     * The pages of one side's table: their bounds at once, sorted only when asked (a sort of a few thousand entries
     * would be most of an in-place compilation); a table's entry of a page through a direct index where the pages are
     * dense enough.
     */
    static final class Pages {
        final int[] table;
        final int min;
        final int max;
        private int[] sorted;
        private int[] entry;

        Pages(int[] table) {
            this.table = table;
            int lo = Integer.MAX_VALUE;
            int hi = Integer.MIN_VALUE;
            for (int p : table) {
                lo = Math.min(lo, p);
                hi = Math.max(hi, p);
            }
            this.min = lo;
            this.max = hi;
        }

        boolean isEmpty() {
            return table.length == 0;
        }

        /** {@return the distinct pages, sorted} */
        int[] sorted() {
            int[] s = sorted;
            if (s == null) {
                s = sortedPages(table);
                sorted = s;
            }
            return s;
        }

        /** {@return per page {@code p} in {@code [min, max]}, 1 + the last table entry holding it, or 0; null when sparse} */
        int[] entries() {
            int[] e = entry;
            if (e == null && (long) max - min + 1 <= 16L * table.length + 1024) {
                e = new int[max - min + 1];
                for (int i = 0; i < table.length; i++) {
                    e[table[i] - min] = i + 1;
                }
                entry = e;
            }
            return e;
        }

        /** {@return whether the two tables share a page} */
        boolean shares(Pages o) {
            if (isEmpty() || o.isEmpty() || max < o.min || o.max < min) {
                return false;
            }
            int[] e = entries();
            if (e == null) {
                return share(sorted(), o.sorted());
            }
            for (int p : o.table) {
                if (p >= min && p <= max && e[p - min] != 0) {
                    return true;
                }
            }
            return false;
        }
    }

    /** Sorted distinct pages. */
    static int[] sortedPages(int[] table) {
        int[] s = table.clone();
        Arrays.sort(s);
        int n = 0;
        for (int i = 0; i < s.length; i++) {
            if (n == 0 || s[n - 1] != s[i]) {
                s[n++] = s[i];
            }
        }
        return n == s.length ? s : Arrays.copyOf(s, n);
    }

    /** Whether two sorted page lists share a page. */
    static boolean share(int[] a, int[] b) {
        int i = 0;
        int j = 0;
        while (i < a.length && j < b.length) {
            if (a[i] == b[j]) {
                return true;
            }
            if (a[i] < b[j]) {
                i++;
            } else {
                j++;
            }
        }
        return false;
    }

    /**
     * Whether some interval of {@code r} over pages {@code rp} meets one of {@code w} over pages {@code wp} (both
     * sorted, distinct, not empty). {@code shared} says whether the lists share a page (for lattices that meet only
     * on equal pages).
     */
    static boolean meets(Run r, int[] rp, Run w, int[] wp, boolean shared) {
        if (r.space != w.space || r.lo(rp[0]) >= w.hi(wp[wp.length - 1]) || w.lo(wp[0]) >= r.hi(rp[rp.length - 1])) {
            return false;
        }
        if (sameLattice(r, w)) {
            return shared;
        }
        if (w.stride == 0) {
            if (r.stride == 0) {
                return true;   // the hulls are the intervals
            }
            return meets(w, wp, r, rp, shared);
        }
        for (int p : rp) {
            long x = r.start + p * r.stride - w.start;
            long qmin = Math.floorDiv(x - w.extent, w.stride) + 1;
            long qmax = Math.ceilDiv(x + r.extent, w.stride) - 1;
            if (count(wp, qmin, qmax) > 0) {
                return true;
            }
        }
        return false;
    }

    /** Equal lattices whose intervals do not reach the next page's: they meet exactly on equal pages. */
    static boolean sameLattice(Run r, Run w) {
        return r.stride == w.stride && r.start == w.start && r.stride > 0 && r.extent <= r.stride
                && w.extent <= w.stride;
    }

    /** The index of the first entry of sorted {@code s} at least {@code v}. */
    static int lowerBound(int[] s, long v) {
        int lo = 0;
        int hi = s.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (s[mid] < v) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** How many entries of sorted {@code s} lie in {@code [from, to]}. */
    static int count(int[] s, long from, long to) {
        if (from > to) {
            return 0;
        }
        return lowerBound(s, to + 1) - lowerBound(s, from);
    }

    /** Whether any of the runs of {@code reads} meets any of {@code writes} over the given pages. */
    static boolean anyMeet(List<Run> reads, Pages rp, List<Run> writes, Pages wp) {
        if (rp.isEmpty() || wp.isEmpty()) {
            return false;
        }
        int shared = -1;   // whether the tables share a page: asked only for equal lattices
        // a pair of lattices matters only through its offset, strides and extents: layers alike are asked once
        Set<List<Long>> apart = new HashSet<>();
        Run[] w = writes.toArray(new Run[0]);
        Arrays.sort(w, (a, b) -> Long.compare(a.lo(wp.min), b.lo(wp.min)));
        long[] reach = new long[w.length];   // the furthest hull end among runs 0..i
        for (int i = 0; i < w.length; i++) {
            reach[i] = Math.max(w[i].hi(wp.max), i == 0 ? Long.MIN_VALUE : reach[i - 1]);
        }
        for (Run r : reads) {
            long from = r.lo(rp.min);
            long to = r.hi(rp.max);
            for (int i = lastBefore(w, wp.min, to); i >= 0 && reach[i] > from; i--) {
                Run x = w[i];
                if (r.space != x.space || from >= x.hi(wp.max) || x.lo(wp.min) >= to) {
                    continue;
                }
                if (sameLattice(r, x)) {
                    if (shared < 0) {
                        shared = rp.shares(wp) ? 1 : 0;
                    }
                    if (shared == 1) {
                        return true;
                    }
                } else {
                    List<Long> key = List.of(r.start - x.start, r.stride, r.extent, x.stride, x.extent);
                    if (!apart.contains(key)) {
                        if (meets(r, rp.sorted(), x, wp.sorted(), rp.shares(wp))) {
                            return true;
                        }
                        apart.add(key);
                    }
                }
            }
        }
        return false;
    }

    private static int lastBefore(Run[] w, int page, long end) {
        int lo = 0;
        int hi = w.length - 1;
        int last = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (w[mid].lo(page) < end) {
                last = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return last;
    }
}
