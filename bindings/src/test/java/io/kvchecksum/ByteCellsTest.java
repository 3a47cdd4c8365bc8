package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Cells whose K or V is not whole pieces (a piece straddling K and V) and padded cells, on both CPU backends. The
 * expected values here come from the definition through a second layout of the same bytes (a K-only cell holding
 * K then V, or the cell with its zero padding written out), never from the code under test; NumPy's goldens
 * ({@code vectors-cells}) are the other oracle.
 */
class ByteCellsTest {
    private static final long SEED = 20261129L;

    private static List<KvChecksum> backends() {
        return List.of(KvChecksums.reference(), KvChecksums.cpu(), KvChecksums.cpu(1));
    }

    /**
     * Tokens of {@code kBytes + vBytes}-byte cells as separate K and V regions (token-major, 3 heads, page of 4, some
     * slack between cells so V's pieces lie at odd offsets), and the same bytes as K-only cells of the joined bytes
     * followed by {@code padTo - kBytes - vBytes} zero bytes.
     */
    private record Pair(KvCacheGroup split, KvCacheGroup joined, RequestBlocks request) {
    }

    private static Pair pair(Arena arena, Random rnd, int layer, int kBytes, int vBytes, int padTo, int tokens) {
        int heads = 3;
        int pageSize = 4;
        int pages = Math.ceilDiv(tokens, pageSize) + 1;
        int cell = kBytes + vBytes;
        long kHead = kBytes + 3;  // slack: odd strides, nothing aligned
        long vHead = vBytes + 5;
        MemorySegment k = arena.allocate(kHead * heads * pageSize * pages + 7, 8).asSlice(1);
        MemorySegment v = vBytes == 0 ? null : arena.allocate(vHead * heads * pageSize * pages + 7, 8).asSlice(3);
        MemorySegment joined = arena.allocate((long) padTo * heads * pageSize * pages, 8);
        for (long o = 0; o < k.byteSize(); o++) {
            k.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
        }
        if (v != null) {
            for (long o = 0; o < v.byteSize(); o++) {
                v.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
            }
        }
        int[] table = new int[Math.ceilDiv(tokens, pageSize)];
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < pages; i++) {
            ids.add(i);
        }
        java.util.Collections.shuffle(ids, rnd);
        for (int i = 0; i < table.length; i++) {
            table[i] = ids.get(i);
        }
        for (int page = 0; page < pages; page++) {
            for (int slot = 0; slot < pageSize; slot++) {
                for (int h = 0; h < heads; h++) {
                    long to = (((long) page * pageSize + slot) * heads + h) * padTo;
                    MemorySegment.copy(k, ((long) page * pageSize + slot) * heads * kHead + h * kHead, joined, to, kBytes);
                    if (v != null) {
                        MemorySegment.copy(v, ((long) page * pageSize + slot) * heads * vHead + h * vHead, joined, to + kBytes, vBytes);
                    }
                }
            }
        }
        KvRegion kr = new KvRegion(KvMemory.host(k), 0, pageSize * heads * kHead, heads * kHead, kHead, kBytes);
        KvRegion vr = v == null ? null : new KvRegion(KvMemory.host(v), 0, pageSize * heads * vHead, heads * vHead, vHead, vBytes);
        KvRegion jr = new KvRegion(KvMemory.host(joined), 0, (long) pageSize * heads * padTo, (long) heads * padTo, padTo, padTo);
        KvCacheGroup split = KvCacheGroup.of(pageSize, pages, List.of(CacheLayer.of(layer, 2, heads, kr, vr)));
        KvCacheGroup join = KvCacheGroup.of(pageSize, pages, List.of(CacheLayer.kOnly(layer, 2, heads, jr)));
        return new Pair(split, join, RequestBlocks.of(table, tokens, 0, 5));
    }

    @Test
    void straddlingPiecesEqualTheJoinedCell() {
        Random rnd = new Random(SEED);
        int[][] splits = {{4, 4}, {12, 20}, {1, 7}, {7, 9}, {3, 13}, {60, 4}, {13, 51}};
        try (Arena arena = Arena.ofConfined()) {
            for (int[] kv : splits) {
                for (ChecksumMode mode : ChecksumMode.values()) {
                    Pair p = pair(arena, rnd, 7, kv[0], kv[1], kv[0] + kv[1], 23);
                    SlicePlan split = SlicePlan.of(p.split(), p.request(), mode);
                    SlicePlan joined = SlicePlan.of(p.joined(), p.request(), mode);
                    assertEquals(List.of(CompiledPlan.CellKind.BYTE_CELLS), kinds(split));
                    assertEquals(List.of(CompiledPlan.CellKind.WHOLE_PIECES), kinds(joined));
                    long[] expected = KvChecksums.reference().blockChecksums(joined);
                    for (KvChecksum k : backends()) {
                        String who = k.name() + " K " + kv[0] + " + V " + kv[1] + " " + mode.wireName() + " (seed " + SEED + ")";
                        assertArrayEquals(expected, k.blockChecksums(split), who);
                        assertEquals(KvChecksums.reference().sliceSums(joined), k.sliceSums(split), who + " slice sums");
                        assertArrayEquals(expected, k.submit(split).get(), who + " submit");
                    }
                }
            }
        }
    }

    @Test
    void paddedCellsEqualTheCellWithItsZerosWrittenOut() {
        Random rnd = new Random(SEED + 1);
        // {K, V, padded size}: fp8 index-K (128 + 4-byte scale), a K-only 12-byte cell, K 6 + V 6, K 1 + V 2
        int[][] cases = {{132, 0, 136}, {12, 0, 16}, {6, 6, 16}, {1, 2, 8}};
        try (Arena arena = Arena.ofConfined()) {
            for (int[] c : cases) {
                Pair p = pair(arena, rnd, 4, c[0], c[1], c[2], 17);
                String what = "K " + c[0] + " + V " + c[1];
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> SlicePlan.of(p.split(), p.request()));
                assertTrue(e.getMessage().contains("not whole 8-byte pieces"), e.getMessage());
                for (KvChecksum k : backends()) {
                    assertThrows(InvalidLayoutException.class, () -> k.blockChecksums(p.split(), p.request()), k.name() + " " + what);
                }
                for (ChecksumMode mode : ChecksumMode.values()) {
                    SlicePlan padded = SlicePlan.of(p.split(), p.request(), mode, CellPadding.ZEROS);
                    long[] expected = KvChecksums.reference().blockChecksums(SlicePlan.of(p.joined(), p.request(), mode));
                    for (KvChecksum k : backends()) {
                        assertArrayEquals(expected, k.blockChecksums(padded), k.name() + " padded " + what + " " + mode.wireName());
                    }
                }
            }
        }
    }

    @Test
    void mixedGroupRowsStayInOrderAndSumsAdd() {
        Random rnd = new Random(SEED + 2);
        try (Arena arena = Arena.ofConfined()) {
            Pair odd = pair(arena, rnd, 3, 12, 20, 32, 19);
            Pair index = pair(arena, rnd, 3, 132, 0, 136, 19);
            MemorySegment whole = arena.allocate(64L * 3 * 4 * 6, 8);
            for (long o = 0; o < whole.byteSize(); o += 8) {
                whole.set(ValueLayout.JAVA_LONG_UNALIGNED, o, rnd.nextLong());
            }
            KvRegion wk = new KvRegion(KvMemory.host(whole), 0, 4 * 3 * 64, 3 * 64, 64, 32);
            KvRegion wv = new KvRegion(KvMemory.host(whole), 32, 4 * 3 * 64, 3 * 64, 64, 32);
            CacheLayer attention = CacheLayer.of(3, 0, 2, wk, wv);
            CacheLayer straddling = odd.split().layers().get(0);                 // layer 3 heads 2..4
            CacheLayer indexK = new CacheLayer(3, 5, 3, index.split().layers().get(0).k(), null);  // heads 5..7
            KvCacheGroup g = KvCacheGroup.of(4, 6, List.of(indexK, attention, straddling));
            RequestBlocks r = odd.request();
            SlicePlan plan = SlicePlan.of(g, r, ChecksumMode.STANDARD, CellPadding.ZEROS);
            List<CompiledPlan.Launch> launches = CompiledPlan.of(plan).launches();
            assertEquals(List.of(CompiledPlan.CellKind.WHOLE_PIECES, CompiledPlan.CellKind.BYTE_CELLS), kinds(plan));
            assertEquals(1, launches.get(0).slices().group().layers().size());
            assertEquals(2, launches.get(1).slices().group().layers().size());
            // rows of the whole-piece layer (attention, heads 0..1 of the group's second layer) and of the byte-cell ones
            assertArrayEquals(new int[] {3, 4}, launches.get(0).rows());
            assertArrayEquals(new int[] {0, 1, 2, 5, 6, 7}, launches.get(1).rows());
            SliceSums reference = KvChecksums.reference().sliceSums(plan);
            for (KvChecksum k : backends()) {
                SliceSums s = k.sliceSums(plan);
                assertEquals(reference, s, k.name());
                assertArrayEquals(new int[] {5, 6, 7, 0, 1, 2, 3, 4}, s.heads(), k.name() + " row order");
                assertArrayEquals(reference.combine(), k.blockChecksums(plan), k.name());
            }
            // the parts add up: each layer alone
            long[] sum = new long[plan.numBlocks()];
            for (CacheLayer l : g.layers()) {
                long[] one = KvChecksums.cpu().blockChecksums(SlicePlan.of(KvCacheGroup.of(4, 6, List.of(l)), r,
                        ChecksumMode.STANDARD, CellPadding.ZEROS));
                for (int i = 0; i < sum.length; i++) {
                    sum[i] += one[i];
                }
            }
            assertArrayEquals(reference.combine(), sum);
            // one flipped bit in the index-K cells changes the block holding that token
            long[] before = KvChecksums.cpu().blockChecksums(plan);
            MemorySegment ik = ((KvMemory.Host) indexK.k().memory()).segment();
            long at = indexK.k().cellOffset(r.page(2), 1, 1) + 131;  // token 9 (page 2, slot 1), head 1: the scale's last byte
            ik.set(ValueLayout.JAVA_BYTE, at, (byte) (ik.get(ValueLayout.JAVA_BYTE, at) ^ 0x10));
            long[] after = KvChecksums.cpu().blockChecksums(plan);
            for (int b = 0; b < before.length; b++) {
                if (b == 1) {
                    assertNotEquals(before[b], after[b], "block 1 holds token 9");
                } else {
                    assertEquals(before[b], after[b], "block " + b);
                }
            }
        }
    }

    /** The cell kinds of the launches the plan compiles into, in order. */
    private static List<CompiledPlan.CellKind> kinds(SlicePlan plan) {
        return CompiledPlan.of(plan).launches().stream().map(CompiledPlan.Launch::cellKind).toList();
    }
}
