package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The compiled answers of an in-place copy ({@link CopyPlan#overlaps()}, {@link CopyPlan#staged()}), which come from
 * runs of slices and lattices of page hulls ({@link PageSpans}), against brute force over small random layouts in one
 * buffer: the pages' spans one by one for the overlap question (the question {@code overlaps()} answers: per copied
 * slice, part and used page, first cell to last), every byte for staging (a unit's read bytes against the other
 * units' written bytes). Layouts: head-major, token-major, layers interleaved within a token's row, K and V within a
 * page, heads apart, at random shifts; page sizes equal or not; tables shared (in place on the same block ids), permuted,
 * remote blocks in place in their local pages (in order or reversed within a page) or random. Seed fixed and printed.
 */
class CopyOverlapExactnessTest {
    private static final long SEED = 20261207_29L;

    private record Side(KvCacheGroup group, int[] table, int pageSize) {
    }

    /** A random group of {@code layers} x {@code heads} cells of K {@code kb} (and V {@code kb}) bytes. */
    private static KvCacheGroup group(Random r, KvMemory m, int layers, int heads, int kb, boolean v, int ps, int pages,
                                      long[] end, int[] shape) {
        int kinds = v ? 5 : 4;
        int kind = shape[0] >= 0 ? shape[0] : r.nextInt(kinds);
        long c = kb;
        int parts = v ? 2 : 1;
        int pick = shape[1] >= 0 ? shape[1] : r.nextInt(4);
        shape[0] = kind;
        shape[1] = pick;
        long shift = switch (pick) {
            case 0 -> 0;
            case 1 -> 8;
            case 2 -> c;
            default -> 8L * r.nextInt(16);
        };
        List<CacheLayer> ls = new ArrayList<>();
        long top = 0;
        for (int l = 0; l < layers; l++) {
            KvRegion[] kvr = new KvRegion[2];
            for (int kv = 0; kv < parts; kv++) {
                long page;
                long off;
                long ts;
                long hs;
                switch (kind) {
                    case 0 -> {   // head-major pages, each layer's K then V in its own block of pages
                        page = heads * ps * c;
                        off = (l * parts + kv) * pages * page;
                        ts = c;
                        hs = ps * c;
                    }
                    case 1 -> {   // token-major pages
                        page = heads * ps * c;
                        off = (l * parts + kv) * pages * page;
                        ts = heads * c;
                        hs = c;
                    }
                    case 3 -> {   // head-major pages with 8 bytes between heads (no run of heads)
                        page = heads * (ps * c + 8);
                        off = (l * parts + kv) * pages * page;
                        ts = c;
                        hs = ps * c + 8;
                    }
                    case 2 -> {   // layers (and K, V) interleaved within a token's row
                        long row = layers * parts * heads * c;
                        page = ps * row;
                        off = (l * parts + kv) * heads * c;
                        ts = row;
                        hs = c;
                    }
                    default -> {   // one layer's K and V within a page, head-major
                        page = parts * heads * ps * c;
                        off = l * pages * page + kv * heads * ps * c;
                        ts = c;
                        hs = ps * c;
                    }
                }
                kvr[kv] = new KvRegion(m, shift + off, page, ts, hs, kb);
                top = Math.max(top, shift + off + (pages - 1) * page + (ps - 1) * ts + (heads - 1) * hs + kb);
            }
            ls.add(CacheLayer.of(l, 0, heads, kvr[0], v ? kvr[1] : null));
        }
        end[0] = Math.max(end[0], top);
        return KvCacheGroup.of(ps, pages, ls);
    }

    private static int[] table(Random r, int entries, int pages) {
        List<Integer> all = new ArrayList<>();
        for (int i = 0; i < pages; i++) {
            all.add(i);
        }
        java.util.Collections.shuffle(all, r);
        int[] t = new int[entries];
        for (int i = 0; i < entries; i++) {
            t[i] = all.get(i);
        }
        return t;
    }

    @Test
    void fastAnswersMatchBruteForce() {
        System.out.println("CopyOverlapExactnessTest seed " + SEED);
        Random r = new Random(SEED);
        int compiled = 0;
        int overlapping = 0;
        int staged = 0;
        int spansOnly = 0;
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(1 << 16, 64));
            for (int trial = 0; trial < 4000; trial++) {
                int layers = 1 + r.nextInt(2);
                int heads = 1 + r.nextInt(2);
                int kb = new int[] {8, 16, 12}[r.nextInt(3)];
                boolean v = r.nextInt(4) != 0;
                int ps = new int[] {1, 2, 4}[r.nextInt(3)];
                int pd = r.nextInt(2) == 0 ? ps : new int[] {1, 2, 4}[r.nextInt(3)];
                int n = 1 + r.nextInt(12);
                int pages = Math.max(Math.ceilDiv(n, Math.min(ps, pd)), 2) + r.nextInt(3);
                long[] end = {0};
                int k = pd % ps == 0 ? pd / ps : 1;
                boolean blocks = k > 1 && r.nextInt(2) == 0;   // remote blocks of ps into local pages of pd, in place
                int[] shape = {-1, -1};
                KvCacheGroup src = group(r, m, layers, heads, kb, v, ps, pages * k, end, shape);
                if (!blocks) {
                    shape = new int[] {-1, -1};
                }
                KvCacheGroup dst = group(r, m, layers, heads, kb, v, pd, pages, end, shape);
                if (end[0] > m.byteSize()) {
                    continue;
                }
                int[] dt = table(r, Math.ceilDiv(n, pd), pages);
                int[] st;
                int pick = r.nextInt(3);
                if (blocks) {
                    st = new int[Math.ceilDiv(n, ps)];
                    for (int j = 0; j < st.length; j++) {
                        st[j] = dt[j / k] * k + (pick == 0 ? j % k : k - 1 - j % k);
                    }
                } else if (ps == pd && pick == 0) {
                    st = dt.clone();   // in place on the same block ids
                } else if (ps == pd && pick == 1) {
                    st = dt.clone();   // a permutation of them
                    for (int i = st.length - 1; i > 0; i--) {
                        int j = r.nextInt(i + 1);
                        int x = st[i];
                        st[i] = st[j];
                        st[j] = x;
                    }
                } else {
                    st = table(r, Math.ceilDiv(n, ps), pages);
                }
                RequestBlocks sq = RequestBlocks.of(st, n, 4);
                RequestBlocks dq = RequestBlocks.of(dt, n, 4);
                CopyPlan plan;
                try {
                    plan = CopyPlan.compile(src, sq, dst, dq, ChecksumSpec.STANDARD);
                } catch (InvalidLayoutException e) {
                    continue;   // destination cells overlapping one another: refused before the question
                }
                compiled++;
                String where = "trial " + trial + " (seed " + SEED + "): " + plan;
                boolean spans = spanOverlap(plan, st, dt, ps, pd);
                assertEquals(spans, plan.overlaps(), where);
                boolean[] b = bytes(plan, st, dt, ps, pd, n, (int) m.byteSize());
                boolean bytesMeet = b[0];
                assertTrue(!bytesMeet || plan.overlaps(), where + ": bytes shared but no overlap found");
                if (plan.overlaps()) {
                    overlapping++;
                    spansOnly += bytesMeet ? 0 : 1;
                    assertEquals(!b[1], plan.staged(), where + ": staging");
                    staged += plan.staged() ? 1 : 0;
                }
            }
        }
        System.out.println("CopyOverlapExactnessTest: " + compiled + " compiled, " + overlapping + " overlapping ("
                + spansOnly + " by page spans only, no byte shared), " + staged + " staged");
        assertTrue(compiled > 1000 && overlapping > 200 && staged > 50 && overlapping - staged > 50,
                compiled + " " + overlapping + " " + staged);
    }

    /** The overlap question, span by span: per pair, part and used page of each side, first cell to last. */
    private static boolean spanOverlap(CopyPlan plan, int[] st, int[] dt, int ps, int pd) {
        List<long[]> reads = new ArrayList<>();
        List<long[]> writes = new ArrayList<>();
        for (CopyPlan.Pair p : plan.pairs()) {
            spans(p.source(), st, ps, reads);
            spans(p.destination(), dt, pd, writes);
        }
        for (long[] a : reads) {
            for (long[] w : writes) {
                if (a[0] < w[1] && w[0] < a[1]) {
                    return true;
                }
            }
        }
        return false;
    }

    private static void spans(SlicePlan.Slice s, int[] table, int pageSize, List<long[]> into) {
        for (SlicePlan.Part part : s.v() == null ? List.of(s.k()) : List.of(s.k(), s.v())) {
            for (int page : table) {
                into.add(new long[] {part.cellOffset(page, 0), part.cellOffset(page, pageSize - 1) + part.bytes()});
            }
        }
    }

    /**
     * Byte by byte: {@code {whether a read byte is written, whether a byte read by one unit is written by another}};
     * a unit is (cell kind, layer, destination table entry).
     */
    private static boolean[] bytes(CopyPlan plan, int[] st, int[] dt, int ps, int pd, int n, int size) {
        int[] writer = new int[size];   // 1 + unit, 0 unwritten
        for (CopyPlan.Pair p : plan.pairs()) {
            for (SlicePlan.Part part : parts(p.destination())) {
                for (int t = 0; t < n; t++) {
                    long at = part.cellOffset(dt[t / pd], t % pd);
                    for (int x = 0; x < part.bytes(); x++) {
                        writer[(int) at + x] = 1 + unit(p, t, pd, dt.length);
                    }
                }
            }
        }
        boolean meet = false;
        boolean conflict = false;
        for (CopyPlan.Pair p : plan.pairs()) {
            for (SlicePlan.Part part : parts(p.source())) {
                for (int t = 0; t < n; t++) {
                    long at = part.cellOffset(st[t / ps], t % ps);
                    for (int x = 0; x < part.bytes(); x++) {
                        int w = writer[(int) at + x];
                        meet |= w != 0;
                        conflict |= w != 0 && w != 1 + unit(p, t, pd, dt.length);
                    }
                }
            }
        }
        return new boolean[] {meet, conflict};
    }

    private static int unit(CopyPlan.Pair p, int t, int pd, int entries) {
        return ((p.layer() * 2 + (p.destination().byteCells() ? 1 : 0)) * entries) + t / pd;
    }

    private static List<SlicePlan.Part> parts(SlicePlan.Slice s) {
        return s.v() == null ? List.of(s.k()) : List.of(s.k(), s.v());
    }
}
