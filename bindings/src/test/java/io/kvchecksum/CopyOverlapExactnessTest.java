package io.kvchecksum;

import org.junit.jupiter.api.Test;

import io.kvchecksum.spi.BackendLimits;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The compiled answers of an in-place copy ({@link CopyPlan#overlaps()}, {@link CopyPlan#staged()}), which come from
 * runs of slices and lattices of page hulls ({@link PageSpans}) and, where page spans meet, the cells themselves
 * ({@link SharedBytes}), against brute force over small random layouts in one buffer, byte by byte: {@code overlaps()}
 * exactly when a byte some source cell reads (positions copied only) is a byte some destination cell writes, with a
 * witness naming two cells that do share a byte (none left conservative by the budget), and never where no page span
 * meets; {@code staged()} exactly when no unit reads a byte another unit writes. Layouts: head-major, token-major,
 * layers interleaved within a token's row, K and V within a page, heads apart, at random shifts; page sizes equal or
 * not; tables shared (in place on the same block ids), permuted, remote blocks in place in their local pages (in order
 * or reversed within a page) or random; and one TP rank's head range copied onto another head range of the same pool
 * (token-major: the ranges interleave inside each token row), at shifts of any byte; and layers side by side in each
 * token's row, each side's row arranged its own way (in-place rearrangements between row layouts, and conflicts
 * where a layer lands on another's bytes). Seeds fixed and printed.
 */
class CopyOverlapExactnessTest {
    private static final long SEED = 20261207_29L;

    private record Side(KvCacheGroup group, int[] table, int pageSize) {
    }

    /** A random group of {@code layers} x {@code heads} cells of K {@code kb} (and V {@code kb}) bytes. */
    private static KvCacheGroup group(Random r, KvMemory m, int layers, int heads, int kb, boolean v, int ps, int pages,
                                      long[] end, int[] shape) {
        return group(r, m, layers, heads, heads, 0, kb, v, ps, pages, end, shape);
    }

    /**
     * {@code heads} copied heads (global 0 ..) at pool heads {@code at ..} of a pool of {@code pool} heads: one TP
     * rank's head range in a layout of all heads (token-major layouts interleave head ranges inside each token row).
     */
    private static KvCacheGroup group(Random r, KvMemory m, int layers, int pool, int heads, int at, int kb, boolean v,
                                      int ps, int pages, long[] end, int[] shape) {
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
            case 3 -> 8L * r.nextInt(16);
            default -> 1 + 2L * r.nextInt(4);   // odd: cells at no alignment, for byte-exact edges
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
                        page = pool * ps * c;
                        off = (l * parts + kv) * pages * page;
                        ts = c;
                        hs = ps * c;
                    }
                    case 1 -> {   // token-major pages
                        page = pool * ps * c;
                        off = (l * parts + kv) * pages * page;
                        ts = pool * c;
                        hs = c;
                    }
                    case 3 -> {   // head-major pages with 8 bytes between heads (no run of heads)
                        page = pool * (ps * c + 8);
                        off = (l * parts + kv) * pages * page;
                        ts = c;
                        hs = ps * c + 8;
                    }
                    case 2 -> {   // layers (and K, V) interleaved within a token's row
                        long row = layers * parts * pool * c;
                        page = ps * row;
                        off = (l * parts + kv) * pool * c;
                        ts = row;
                        hs = c;
                    }
                    default -> {   // one layer's K and V within a page, head-major
                        page = parts * pool * ps * c;
                        off = l * pages * page + kv * pool * ps * c;
                        ts = c;
                        hs = ps * c;
                    }
                }
                kvr[kv] = new KvRegion(m, shift + off + at * hs, page, ts, hs, kb);
                top = Math.max(top, shift + off + (pages - 1) * page + (ps - 1) * ts + (pool - 1) * hs + kb);
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
                int[] c = check(plan, src, st, dst, dt, ps, pd, n, (int) m.byteSize(), "trial " + trial);
                compiled++;
                overlapping += c[0];
                staged += c[1];
                spansOnly += c[2];
            }
        }
        System.out.println("CopyOverlapExactnessTest: " + compiled + " compiled, " + overlapping + " overlapping, "
                + staged + " staged; " + spansOnly + " with page spans meeting but no byte shared (not overlapping)");
        assertTrue(compiled > 1000 && overlapping > 200 && staged > 50 && overlapping - staged > 50 && spansOnly > 50,
                compiled + " " + overlapping + " " + staged + " " + spansOnly);
    }

    /**
     * One TP rank's head range copied into another head range of the same pool: random pools of 2 to 8 heads, random
     * source and destination head ranges of one length, every layout kind (token-major ones interleave the ranges
     * inside each token row), tables shared (the same pages), permuted or random. Exact against brute force.
     */
    @Test
    void headRangesInOnePoolMatchBruteForce() {
        System.out.println("CopyOverlapExactnessTest head ranges seed " + (SEED + 1));
        Random r = new Random(SEED + 1);
        int compiled = 0;
        int overlapping = 0;
        int staged = 0;
        int spansOnly = 0;
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(1 << 16, 64));
            for (int trial = 0; trial < 4000; trial++) {
                int layers = 1 + r.nextInt(2);
                int pool = 2 + r.nextInt(7);
                int heads = 1 + r.nextInt(pool - 1);
                int a = r.nextInt(pool - heads + 1);
                int b = r.nextInt(pool - heads + 1);
                int kb = new int[] {8, 16, 12, 6, 10}[r.nextInt(5)];
                boolean v = r.nextInt(4) != 0;
                int ps = new int[] {1, 2, 4}[r.nextInt(3)];
                int n = 1 + r.nextInt(12);
                int pages = Math.max(Math.ceilDiv(n, ps), 2) + r.nextInt(3);
                long[] end = {0};
                // mostly token-major; shifts as the other test's, or odd
                int[] shape = {r.nextInt(4) == 0 ? -1 : 1 + r.nextInt(2), r.nextInt(5)};
                KvCacheGroup src = group(r, m, layers, pool, heads, a, kb, v, ps, pages, end, shape);
                // the same layout kind, shifted apart by any number of bytes
                KvCacheGroup dst = group(r, m, layers, pool, heads, b, kb, v, ps, pages, end, new int[] {shape[0],
                        r.nextInt(5)});
                if (end[0] > m.byteSize()) {
                    continue;
                }
                int[] dt = table(r, Math.ceilDiv(n, ps), pages);
                int pick = r.nextInt(3);
                int[] st = pick == 0 ? dt.clone() : table(r, dt.length, pages);
                if (pick == 1) {
                    st = dt.clone();
                    for (int i = st.length - 1; i > 0; i--) {
                        int j = r.nextInt(i + 1);
                        int x = st[i];
                        st[i] = st[j];
                        st[j] = x;
                    }
                }
                CopyPlan plan;
                try {
                    plan = CopyPlan.compile(src, RequestBlocks.of(st, n, 4), dst, RequestBlocks.of(dt, n, 4),
                            ChecksumSpec.STANDARD);
                } catch (InvalidLayoutException e) {
                    continue;
                }
                int[] c = check(plan, src, st, dst, dt, ps, ps, n, (int) m.byteSize(), "head ranges trial " + trial);
                compiled++;
                overlapping += c[0];
                staged += c[1];
                spansOnly += c[2];
            }
        }
        System.out.println("CopyOverlapExactnessTest head ranges: " + compiled + " compiled, " + overlapping
                + " overlapping, " + staged + " staged; " + spansOnly + " with page spans meeting but no byte shared");
        assertTrue(compiled > 1000 && overlapping > 200 && staged > 50 && spansOnly > 200,
                compiled + " " + overlapping + " " + staged + " " + spansOnly);
    }

    /**
     * Layers side by side in a token's row ({@code [pages][tokens][row]}), each side's row arranged its own way: per
     * layer K heads then V heads, each head's K and V side by side, the layers in reverse order, all layers' K then all
     * layers' V, or with padding after each layer's part; 1 to 4 layers, 1 to 3 heads, cells of odd and even bytes,
     * each side shifted by any number of bytes (often none, so that most copies are in place on the same bytes).
     * Tables shared, permuted, remote blocks in place in their local pages (in order or reversed) or random. Each
     * layer's page hull covers the other layers' cells, so staging is decided by residues modulo the row
     * ({@code CopyStaging}'s layers) and where they do not decide, by page hulls and cells. Exact against brute force.
     */
    @Test
    void interleavedLayerRowsMatchBruteForce() {
        System.out.println("CopyOverlapExactnessTest interleaved rows seed " + (SEED + 2));
        Random r = new Random(SEED + 2);
        int compiled = 0;
        int overlapping = 0;
        int staged = 0;
        int stagedLayers = 0;
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(1 << 16, 64));
            for (int trial = 0; trial < 4000; trial++) {
                int layers = 1 + r.nextInt(4);
                int heads = 1 + r.nextInt(3);
                int kb = new int[] {8, 16, 12, 6, 10, 5}[r.nextInt(6)];
                boolean v = r.nextInt(4) != 0;
                int ps = new int[] {1, 2, 4}[r.nextInt(3)];
                int pd = r.nextInt(2) == 0 ? ps : new int[] {1, 2, 4}[r.nextInt(3)];
                int n = 1 + r.nextInt(12);
                int pages = Math.max(Math.ceilDiv(n, Math.min(ps, pd)), 2) + r.nextInt(3);
                int k = pd % ps == 0 ? pd / ps : 1;
                boolean blocks = k > 1 && r.nextInt(2) == 0;
                long[] shifts = new long[2];
                for (int s = 0; s < 2; s++) {
                    int pick = r.nextInt(6);
                    shifts[s] = pick < 3 ? 0 : pick == 3 ? kb : pick == 4 ? 1 + r.nextInt(15) : 8L * r.nextInt(4);
                }
                if (r.nextBoolean()) {
                    shifts[1] = shifts[0];   // the same bytes
                }
                int kind = r.nextInt(5);
                long[] end = {0};
                KvCacheGroup src = rows(m, layers, heads, kb, v, ps, pages * k, kind, shifts[0], end);
                KvCacheGroup dst = rows(m, layers, heads, kb, v, pd, pages, r.nextInt(3) == 0 ? kind : r.nextInt(5),
                        shifts[1], end);
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
                    st = dt.clone();
                } else if (ps == pd && pick == 1) {
                    st = dt.clone();
                    for (int i = st.length - 1; i > 0; i--) {
                        int j = r.nextInt(i + 1);
                        int x = st[i];
                        st[i] = st[j];
                        st[j] = x;
                    }
                } else {
                    st = table(r, Math.ceilDiv(n, ps), pages * k);
                }
                CopyPlan plan;
                try {
                    plan = CopyPlan.compile(src, RequestBlocks.of(st, n, 4), dst, RequestBlocks.of(dt, n, 4),
                            ChecksumSpec.STANDARD);
                } catch (InvalidLayoutException e) {
                    continue;
                }
                int[] c = check(plan, src, st, dst, dt, ps, pd, n, (int) m.byteSize(), "interleaved rows trial " + trial);
                compiled++;
                overlapping += c[0];
                staged += c[1];
                stagedLayers += c[1] == 1 && layers > 1 ? 1 : 0;
            }
        }
        System.out.println("CopyOverlapExactnessTest interleaved rows: " + compiled + " compiled, " + overlapping
                + " overlapping, " + staged + " staged (" + stagedLayers + " of several layers)");
        assertTrue(compiled > 1000 && overlapping > 500 && stagedLayers > 200 && overlapping - staged > 200,
                compiled + " " + overlapping + " " + staged + " " + stagedLayers);
    }

    /**
     * A group of layers side by side in each token's row, arranged by {@code kind}: 0 per layer K heads then V heads,
     * 1 per layer each head's K and V side by side, 2 as 0 with the layers in reverse order, 3 all layers' K then all
     * layers' V, 4 as 0 with {@code kb + 3} bytes of padding after each layer's part.
     */
    private static KvCacheGroup rows(KvMemory m, int layers, int heads, int kb, boolean v, int ps, int pages, int kind,
                                     long shift, long[] end) {
        int parts = v ? 2 : 1;
        long seg = (long) parts * heads * kb + (kind == 4 ? kb + 3 : 0);
        long row = layers * seg;
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            KvRegion[] kvr = new KvRegion[2];
            for (int kv = 0; kv < parts; kv++) {
                long at = (kind == 2 ? layers - 1 - l : l) * seg;
                long off;
                long hs = kb;
                switch (kind) {
                    case 1 -> {
                        off = at + (long) kv * kb;
                        hs = (long) parts * kb;
                    }
                    case 3 -> off = ((long) kv * layers + l) * heads * kb;
                    default -> off = at + (long) kv * heads * kb;
                }
                kvr[kv] = new KvRegion(m, shift + off, ps * row, row, hs, kb);
            }
            ls.add(CacheLayer.of(l, 0, heads, kvr[0], v ? kvr[1] : null));
        }
        end[0] = Math.max(end[0], shift + (long) pages * ps * row);
        return KvCacheGroup.of(ps, pages, ls);
    }

    /**
     * The compiled answers of one plan against brute force: {@code overlaps()} exactly when a byte read is written
     * (never where no page span meets), the witness naming two cells that really share a byte (and the plan's message
     * naming them), no answer left conservative by the budget, {@code staged()} exactly when no unit reads what
     * another writes. {@return {overlapping, staged, page spans meeting without a shared byte} as 0 or 1}
     */
    private static int[] check(CopyPlan plan, KvCacheGroup src, int[] st, KvCacheGroup dst, int[] dt, int ps, int pd,
                               int n, int size, String trial) {
        String where = trial + " (seed " + SEED + "): " + plan;
        boolean spans = spanOverlap(plan, st, dt, ps, pd);
        boolean[] b = bytes(plan, st, dt, ps, pd, n, size);
        assertEquals(b[0], plan.overlaps(), where + ": whether a byte read is written");
        assertTrue(spans || !plan.overlaps(), where + ": overlapping where no page span meets");
        SharedBytes.Witness w = SharedBytes.find(plan.pairs(), src, st, dst, dt, n, SharedBytes.BUDGET);
        assertEquals(b[0], w != null, where + ": witness");
        if (w != null) {
            assertTrue(w.shown(), where + ": left conservative by the budget: " + w.message());
            assertTrue(share(w, st, dt, ps, pd, n, size), where + ": the named cells share no byte: " + w.message());
            assertEquals(w.message(), plan.overlapMessage(), where);
        }
        if (plan.overlaps()) {
            assertEquals(!b[1], plan.staged(), where + ": staging");
        }
        return new int[] {plan.overlaps() ? 1 : 0, plan.staged() ? 1 : 0, spans && !b[0] ? 1 : 0};
    }

    /** Whether the witness's read cells (its source part on its page, used slots) share a byte with its written ones. */
    private static boolean share(SharedBytes.Witness w, int[] st, int[] dt, int ps, int pd, int n, int size) {
        boolean[] written = new boolean[size];
        SlicePlan.Part wp = w.writeV() ? w.write().destination().v() : w.write().destination().k();
        for (int t = 0; t < n; t++) {
            if (dt[t / pd] == w.writePage()) {
                for (int x = 0; x < wp.bytes(); x++) {
                    written[(int) wp.cellOffset(dt[t / pd], t % pd) + x] = true;
                }
            }
        }
        SlicePlan.Part rp = w.readV() ? w.read().source().v() : w.read().source().k();
        for (int t = 0; t < n; t++) {
            if (st[t / ps] == w.readPage()) {
                for (int x = 0; x < rp.bytes(); x++) {
                    if (written[(int) rp.cellOffset(st[t / ps], t % ps) + x]) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** An NHD pool ({@code [2][layers][pages][16][8][cell]}): global heads 0.. at pool heads {@code at ..}. */
    private static KvCacheGroup nhd(KvMemory m, int layers, int pages, int heads, int at) {
        int pool = 8;
        int cell = 64;
        long page = 16L * pool * cell;
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            long k = (2L * l) * pages * page + (long) at * cell;
            ls.add(CacheLayer.of(l, 0, heads, new KvRegion(m, k, page, (long) pool * cell, cell, cell),
                    new KvRegion(m, k + pages * page, page, (long) pool * cell, cell, cell)));
        }
        return KvCacheGroup.of(16, pages, ls);
    }

    /**
     * TP re-sharding in place: one rank's heads 0-3 copied onto heads 4-7 of the same pages of one NHD pool. The head
     * ranges interleave inside every token row, so the page spans meet, but no byte read is written: not overlapping,
     * compiled as a plain copy (also where a backend stages nothing), and its values and bytes equal the reference's
     * out of place. Heads 0-3 onto heads 2-5 share heads 2-3: overlapping.
     */
    @Test
    void tpHeadRangeOntoOtherHeadsOfTheSamePagesIsAPlainCopy() {
        int layers = 2;
        int pages = 6;
        int[] table = {4, 1, 3};
        RequestBlocks q = RequestBlocks.of(table, 40, 16);
        long bytes = 2L * layers * pages * 16 * 8 * 64;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(bytes, 64);
            Random rnd = new Random(SEED);
            for (long i = 0; i < bytes / 8; i++) {
                buf.setAtIndex(ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            MemorySegment srcCopy = arena.allocate(bytes, 64).copyFrom(buf);
            MemorySegment dstCopy = arena.allocate(bytes, 64).copyFrom(buf);
            KvChecksum reference = KvChecksums.reference();
            long[] expected = reference.copyAndChecksum(reference.compileCopy(nhd(KvMemory.host(srcCopy), layers, pages,
                    4, 0), q, nhd(KvMemory.host(dstCopy), layers, pages, 4, 4), q, ChecksumSpec.STANDARD));

            KvMemory m = KvMemory.host(buf);
            CopyPlan plan = CopyPlan.compile(nhd(m, layers, pages, 4, 0), q, nhd(m, layers, pages, 4, 4), q,
                    ChecksumSpec.STANDARD);
            assertFalse(plan.overlaps(), "heads 0-3 onto heads 4-7 share no byte");
            assertFalse(plan.staged());
            assertEquals(0, plan.stagingUnitBytes());
            plan.check("no staging", BackendLimits.CPU.withStagedUnits(0), false);   // a plain copy: not refused
            KvChecksum cpu = KvChecksums.cpu(1);
            long[] values = cpu.copyAndChecksum(cpu.compileCopy(nhd(m, layers, pages, 4, 0), q,
                    nhd(m, layers, pages, 4, 4), q, ChecksumSpec.STANDARD));
            assertArrayEquals(expected, values, "cpu in place against the reference out of place");
            assertTrue(buf.mismatch(dstCopy) < 0, "bytes differ at " + buf.mismatch(dstCopy));

            CopyPlan half = CopyPlan.compile(nhd(m, layers, pages, 4, 0), q, nhd(m, layers, pages, 4, 2), q,
                    ChecksumSpec.STANDARD);
            assertTrue(half.overlaps(), "heads 0-3 onto heads 2-5 share heads 2-3");
            assertTrue(half.overlapMessage().contains("share bytes"), half.overlapMessage());
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                    () -> half.check("no staging", BackendLimits.CPU.withStagedUnits(0), false));
            assertTrue(e.getMessage().contains("does not stage pages"), e.getMessage());
        }
    }

    /**
     * Cells that only the cell-by-cell step shows apart: one head read at token stride 4c ({@code 0, 4c, 8c, 12c}),
     * written at token stride 6c from {@code c} ({@code c, 7c, 13c, 19c}): the spans meet and no stride of either
     * separates the residues (only 2c would). Exact within the budget: not overlapping. With no budget the answer
     * stays "overlaps", without a witness (never a false "apart").
     */
    @Test
    void cellsShownApartOneByOneAndBeyondTheBudgetStayOverlapping() {
        int c = 16;
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(1024, 64));
            KvCacheGroup s = KvCacheGroup.of(4, 1, List.of(CacheLayer.of(0, 0, 1, new KvRegion(m, 0, 512, 4L * c, 0, c),
                    null)));
            KvCacheGroup d = KvCacheGroup.of(4, 1, List.of(CacheLayer.of(0, 0, 1, new KvRegion(m, c, 512, 6L * c, 0, c),
                    null)));
            int[] table = {0};
            RequestBlocks q = RequestBlocks.of(table, 4, 4);
            CopyPlan plan = CopyPlan.compile(s, q, d, q, ChecksumSpec.STANDARD);
            assertFalse(plan.overlaps(), "cells 0, 4c, 8c, 12c and c, 7c, 13c, 19c share no byte");
            assertTrue(spanOverlap(plan, table, table, 4, 4), "the page spans meet");
            assertEquals(null, SharedBytes.find(plan.pairs(), s, table, d, table, 4, SharedBytes.BUDGET));
            SharedBytes.Witness w = SharedBytes.find(plan.pairs(), s, table, d, table, 4, 0);
            assertTrue(w != null && !w.shown(), String.valueOf(w));
            assertTrue(w.message().contains("may share bytes"), w.message());
        }
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
