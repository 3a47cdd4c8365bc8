package io.kvchecksum;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Segmented KV against the same bytes in one allocation: the same tokens copied into segments of random lengths (one
 * position upwards), random layouts and page sizes must give exactly the block checksums, slice sums and submitted
 * values of the single allocation, from the reference and the fast CPU backend.
 */
class KvSegmentsTest {
    static final long SEED = Long.getLong("kvsegments.seed", 0x5E6_2026_1129L);

    /** The single allocation: per layer one token-major memory {@code [cap][heads][K|V]}, one position per page. */
    record Single(KvCacheGroup group, int heads, int kBytes, int vBytes, int cap) {
        long cell(int layer, int t, int h) {
            return ((long) t * heads + h) * (kBytes + vBytes);
        }

        MemorySegment memory(int layer) {
            return ((KvMemory.Host) group.layers().get(layer).k().memory()).segment();
        }

        RequestBlocks request(long numTokens, long firstBlock, int blockSize) {
            long start = firstBlock * blockSize;
            int[] table = new int[(int) (numTokens - start)];
            for (int i = 0; i < table.length; i++) {
                table[i] = (int) (start + i);
            }
            return RequestBlocks.of(table, numTokens, firstBlock, blockSize);
        }
    }

    static Single single(Arena arena, Random rnd, int cap) {
        int layers = 1 + rnd.nextInt(3);
        int heads = 1 + rnd.nextInt(4);
        int kBytes = 8 * (1 + rnd.nextInt(rnd.nextInt(4) == 0 ? 32 : 6));
        int vBytes = rnd.nextInt(4) == 0 ? 0 : 8 * (1 + rnd.nextInt(6));
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            MemorySegment m = arena.allocate((long) cap * heads * (kBytes + vBytes), 8);
            for (long o = 0; o < m.byteSize(); o += 8) {
                m.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            long token = (long) heads * (kBytes + vBytes);
            KvRegion k = new KvRegion(KvMemory.host(m), 0, token, token, kBytes + vBytes, kBytes);
            KvRegion v = vBytes == 0 ? null : new KvRegion(KvMemory.host(m), kBytes, token, token, kBytes + vBytes, vBytes);
            ls.add(new CacheLayer(3 * l + rnd.nextInt(3), rnd.nextInt(2) * heads, heads, k, v));
        }
        return new Single(KvCacheGroup.of(1, cap, ls), heads, kBytes, vBytes, cap);
    }

    /**
     * Positions {@code [start, start + len)} of {@code s} copied into a new allocation of pages of {@code page}
     * positions ({@code page} divides {@code len}), token-major or head-major with padding.
     */
    static KvCacheGroup copy(Arena arena, Random rnd, Single s, int start, int len, int page) {
        boolean headMajor = rnd.nextBoolean();
        int pad = 8 * rnd.nextInt(3);
        int cell = s.kBytes() + s.vBytes();
        long tokenStride;
        long headStride;
        long pageStride;
        if (headMajor) {
            tokenStride = cell + pad;
            headStride = tokenStride * page + pad;
            pageStride = headStride * s.heads() + pad;
        } else {
            headStride = cell + pad;
            tokenStride = headStride * s.heads() + pad;
            pageStride = tokenStride * page + pad;
        }
        int pages = len / page;
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < s.group().layers().size(); l++) {
            CacheLayer src = s.group().layers().get(l);
            int offset = 8 * rnd.nextInt(3);
            MemorySegment m = arena.allocate(offset + pageStride * pages, 8);
            for (long o = 0; o < m.byteSize(); o += 8) {
                m.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());   // garbage around the cells must not count
            }
            KvRegion k = new KvRegion(KvMemory.host(m), offset, pageStride, tokenStride, headStride, s.kBytes());
            KvRegion v = s.vBytes() == 0 ? null
                    : new KvRegion(KvMemory.host(m), offset + s.kBytes(), pageStride, tokenStride, headStride, s.vBytes());
            for (int t = 0; t < len; t++) {
                for (int h = 0; h < s.heads(); h++) {
                    MemorySegment.copy(s.memory(l), s.cell(l, start + t, h), m, k.cellOffset(t / page, t % page, h), cell);
                }
            }
            ls.add(new CacheLayer(src.layer(), src.firstHead(), src.numHeads(), k, v));
        }
        return KvCacheGroup.of(page, pages, ls);
    }

    @Test
    void segmentsGiveExactlyTheSingleAllocationsResults() {
        System.out.println("KvSegmentsTest seed " + SEED + " (-Dkvsegments.seed=...)");
        Random rnd = new Random(SEED);
        try (KvChecksum ref = KvChecksums.reference(); KvChecksum cpu = KvChecksums.cpu()) {
            for (int c = 0; c < 300; c++) {
                try (Arena arena = Arena.ofConfined()) {
                    int cap = 1 + rnd.nextInt(90);
                    Single s = single(arena, rnd, cap);
                    int blockSize = 1 + rnd.nextInt(20);
                    long numTokens = 1 + rnd.nextInt(cap);
                    long blocks = Math.ceilDiv(numTokens, blockSize);
                    long firstBlock = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt((int) blocks);
                    long first = firstBlock * blockSize;
                    // Segments of 1 .. 24 positions, some a single position; each page size a divisor of the length that
                    // also divides the offset of the first requested token where that token lies inside.
                    List<KvCacheGroup> groups = new ArrayList<>();
                    StringBuilder label = new StringBuilder();
                    for (int at = 0; at < cap; ) {
                        int len = Math.min(cap - at, rnd.nextInt(4) == 0 ? 1 : 1 + rnd.nextInt(24));
                        List<Integer> pages = new ArrayList<>();
                        for (int p = 1; p <= len; p++) {
                            if (len % p == 0 && (first <= at || first >= at + len || (first - at) % p == 0)) {
                                pages.add(p);
                            }
                        }
                        int page = pages.get(rnd.nextInt(pages.size()));
                        groups.add(copy(arena, rnd, s, at, len, page));
                        label.append(at).append('+').append(len).append("/p").append(page).append(' ');
                        at += len;
                    }
                    KvSegments seg = KvSegments.of(groups);
                    assertEquals(cap, seg.endToken());
                    String what = "case " + c + ": B" + blockSize + " N" + numTokens + " F" + firstBlock + " segments " + label;

                    SlicePlan whole = SlicePlan.of(s.group(), s.request(numTokens, firstBlock, blockSize));
                    long[] expected = ref.blockChecksums(whole);
                    SliceSums expectedSums = ref.sliceSums(whole);
                    KvSegments.Plan plan = seg.plan(numTokens, firstBlock, blockSize);
                    for (KvChecksum k : List.of(ref, cpu)) {
                        assertArrayEquals(expected, plan.blockChecksums(k), k.name() + " " + what);
                        assertEquals(expectedSums, plan.sliceSums(k), k.name() + " slice sums " + what);
                        try (PendingChecksums p = plan.submit(k)) {
                            assertArrayEquals(expected, p.get(), k.name() + " submit " + what);
                        }
                        assertArrayEquals(expected, plan.sliceSums(k).combine(), k.name() + " combined " + what);
                    }
                    SlicePlan mixed = SlicePlan.of(s.group(), s.request(numTokens, firstBlock, blockSize), ChecksumMode.MIXED);
                    long[] m = ref.blockChecksums(mixed);
                    KvSegments.Plan pm = seg.plan(numTokens, firstBlock, blockSize, ChecksumMode.MIXED);
                    for (KvChecksum k : List.of(ref, cpu)) {
                        assertArrayEquals(m, pm.blockChecksums(k), k.name() + " mixed " + what);
                    }
                }
            }
        }
    }

    @Test
    void aSegmentStraddlingBlocksAddsToTheBlocksBothSidesOfItsBoundaries() {
        // 3 segments of 5 positions, 4-token blocks; block 1 (tokens 4..7) lies in segments 0 and 1.
        try (Arena arena = Arena.ofConfined(); KvChecksum ref = KvChecksums.reference()) {
            Random rnd = new Random(SEED + 1);
            Single s = single(arena, rnd, 15);
            KvSegments seg = KvSegments.of(List.of(copy(arena, rnd, s, 0, 5, 5), copy(arena, rnd, s, 5, 5, 1),
                    copy(arena, rnd, s, 10, 5, 5)));
            KvSegments.Plan plan = seg.plan(14, 0, 4);
            assertArrayEquals(ref.blockChecksums(SlicePlan.of(s.group(), s.request(14, 0, 4))), plan.blockChecksums(ref));
            // Segment 0: 0..4 in 4-token blocks. Segment 1 (pages of 1) starts at 5, inside block 1: its head 5..7 in
            // blocks of gcd(5, 4) = 1 token, then 8..9 in 4-token blocks. Segment 2 (pages of 5) starts at 10: block 3
            // starts at 12, 2 slots into its page, so 10..13 is one plan of gcd(10, 4) = 2-token blocks.
            assertEquals(List.of(4, 1, 4, 2), plan.parts().stream().map(p -> p.request().blockSize()).toList());
            assertEquals(List.of(0L, 5L, 8L, 10L), plan.parts().stream().map(p -> p.request().startToken()).toList());
        }
    }

    @Test
    void badInputIsRefusedNamingTheProblem() {
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(SEED + 2);
            Single s = single(arena, rnd, 12);
            KvCacheGroup a = copy(arena, rnd, s, 0, 6, 3);
            KvCacheGroup b = copy(arena, rnd, s, 6, 6, 3);
            KvSegments seg = KvSegments.of(List.of(a, b));
            var e = assertThrows(InvalidLayoutException.class, () -> seg.plan(13, 0, 4));
            assertTrue(e.getMessage().contains("segments hold positions 0..11"), e.getMessage());
            // First requested token 8 (block 2 of 4) is 2 slots into segment 1, whose pages are 3 positions.
            e = assertThrows(InvalidLayoutException.class, () -> seg.plan(12, 2, 4));
            assertTrue(e.getMessage().contains("not a page boundary"), e.getMessage());
            assertThrows(InvalidLayoutException.class, () -> KvSegments.of(List.of()));
            List<CacheLayer> renamed = new ArrayList<>();
            for (CacheLayer l : b.layers()) {
                renamed.add(new CacheLayer(l.layer() + 1000, l.firstHead(), l.numHeads(), l.k(), l.v()));
            }
            KvCacheGroup c = KvCacheGroup.of(b.pageSize(), b.numPages(), renamed);
            e = assertThrows(InvalidLayoutException.class, () -> KvSegments.of(List.of(a, c)));
            assertTrue(e.getMessage().contains("segment 1") && e.getMessage().contains("same geometry"), e.getMessage());
        }
    }

    @Test
    void blockBoundariesAreCheckedOnceForEveryRequest() {
        long seed = SEED + 3;
        System.out.println("KvSegmentsTest block boundaries seed " + seed);
        Random rnd = new Random(seed);
        int refused = 0;
        int cases = 300;
        try (Arena arena = Arena.ofConfined()) {
            Single s = single(arena, rnd, 96);
            for (int c = 0; c < cases; c++) {
                int blockSize = 1 + rnd.nextInt(20);
                int cap = 1 + rnd.nextInt(96);
                List<KvCacheGroup> groups = new ArrayList<>();
                StringBuilder label = new StringBuilder();
                for (int at = 0; at < cap; ) {
                    int len = Math.min(cap - at, 1 + rnd.nextInt(24));
                    List<Integer> pages = new ArrayList<>();
                    for (int p = 1; p <= len; p++) {
                        if (len % p == 0) {
                            pages.add(p);
                        }
                    }
                    int page = pages.get(rnd.nextInt(pages.size()));
                    groups.add(copy(arena, rnd, s, at, len, page));
                    label.append(at).append('+').append(len).append("/p").append(page).append(' ');
                    at += len;
                }
                KvSegments seg = KvSegments.of(groups);
                String what = "case " + c + ": B" + blockSize + " segments " + label;
                // What plan says from every first block, over every position the segments hold.
                long firstBad = -1;
                long blocks = Math.ceilDiv(cap, (long) blockSize);
                for (long f = 0; f < blocks; f++) {
                    try {
                        seg.plan(cap, f, blockSize);
                    } catch (InvalidLayoutException e) {
                        assertTrue(e.getMessage().contains("not a page boundary"), what + ": " + e.getMessage());
                        firstBad = firstBad < 0 ? f : firstBad;
                    }
                }
                String problem = seg.blockBoundaryProblem(blockSize);
                assertEquals(firstBad < 0, problem == null, what + ": " + problem);
                if (problem != null) {
                    refused++;
                    assertTrue(problem.contains("block boundary " + firstBad * blockSize + " "), what + ": " + problem);
                    var e = assertThrows(InvalidLayoutException.class, () -> seg.requireBlockBoundaries(blockSize));
                    assertEquals(problem, e.getMessage());
                } else {
                    assertTrue(seg == seg.requireBlockBoundaries(blockSize));
                    // Accepted: any first block, any token count the segments hold.
                    for (long f = 0; f < blocks; f++) {
                        long n = f * blockSize + 1 + rnd.nextInt((int) (cap - f * blockSize));
                        assertEquals(Math.ceilDiv(n, (long) blockSize) - f, seg.plan(n, f, blockSize).numBlocks(), what);
                    }
                }
            }
            KvSegments one = KvSegments.of(List.of(copy(arena, rnd, s, 0, 4, 2)));
            assertThrows(InvalidLayoutException.class, () -> one.blockBoundaryProblem(0));
        }
        System.out.println("KvSegmentsTest: " + refused + " of " + cases + " layouts refused by blockBoundaryProblem");
        assertTrue(refused > 0 && refused < cases, refused + " refused");
    }
}
