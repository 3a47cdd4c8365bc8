package io.kvchecksum;

import io.kvchecksum.KvLayouts.PagedShape;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Destination cells that overlap one another are refused when a copy is compiled, on every backend alike (the check is
 * the plan's), with both cells named; every real layout is accepted. On seeded random layouts in one buffer (nested,
 * interleaved and arbitrary strides, layers at random offsets, random page tables and partial last pages) the verdict
 * equals a byte-by-byte oracle over the cells the copy writes.
 */
class CopyDestinationOverlapTest {
    private static final long SEED = 20261209L;
    private final List<KvChecksum> backends = List.of(KvChecksums.reference(), KvChecksums.cpu(2));

    /** A source holding {@code heads} heads (from {@code firstHead}) of each layer, NHD, one buffer per layer. */
    private static KvCacheGroup source(Arena arena, int[] layers, int firstHead, int heads, int kBytes, int vBytes,
                                       int pageSize, int numPages) {
        List<CacheLayer> out = new ArrayList<>();
        int cell = kBytes + vBytes;
        for (int layer : layers) {
            MemorySegment m = arena.allocate((long) numPages * pageSize * heads * cell, 8);
            KvMemory mem = KvMemory.host(m);
            long token = (long) heads * cell;
            KvRegion k = new KvRegion(mem, 0, pageSize * token, token, cell, kBytes);
            out.add(vBytes == 0 ? CacheLayer.kOnly(layer, firstHead, heads, k)
                    : CacheLayer.of(layer, firstHead, heads, k, new KvRegion(mem, kBytes, pageSize * token, token, cell, vBytes)));
        }
        return KvCacheGroup.of(pageSize, numPages, out);
    }

    private static int[] identity(int n) {
        int[] t = new int[n];
        Arrays.setAll(t, i -> i);
        return t;
    }

    private static int[] layers(int n) {
        return identity(n);
    }

    /** Refused on every backend, the message naming two cells. */
    private void refused(KvCacheGroup src, KvCacheGroup dst, int[] dstTable, long tokens, String... expect) {
        for (KvChecksum k : backends) {
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> k.compileCopy(src,
                    RequestBlocks.of(identity(dstTable.length), tokens, 4), dst, RequestBlocks.of(dstTable, tokens, 4),
                    ChecksumSpec.STANDARD), k.name());
            assertTrue(e.getMessage().contains("destination cells overlap"), e.getMessage());
            for (String s : expect) {
                assertTrue(e.getMessage().contains(s), s + " in: " + e.getMessage());
            }
        }
    }

    /** Accepted, and the copy's values equal the destination's checksums after it. */
    private void accepted(KvCacheGroup src, int[] srcTable, KvCacheGroup dst, int[] dstTable, long tokens) {
        accepted(src, srcTable, dst, dstTable, tokens, true);
    }

    /** Accepted; {@code byStrides}: without comparing cells one by one (an engine's layout, not a contrived one). */
    private void accepted(KvCacheGroup src, int[] srcTable, KvCacheGroup dst, int[] dstTable, long tokens,
                          boolean byStrides) {
        for (KvChecksum k : backends) {
            CopyPlan plan = k.compileCopy(src, RequestBlocks.of(srcTable, tokens, 4), dst,
                    RequestBlocks.of(dstTable, tokens, 4), ChecksumSpec.STANDARD);
            if (byStrides) {
                assertEquals(0, exactCells(plan), "a healthy layout is shown disjoint by its strides");
            }
            long[] v = k.copyAndChecksum(plan);
            assertArrayEquals(k.blockChecksums(SlicePlan.of(plan.copiedDestination(), RequestBlocks.of(dstTable, tokens, 4))),
                    v, k.name());
        }
    }

    /** The cells the destination check compared one by one for the plan (0: its strides showed them disjoint). */
    static long exactCells(CopyPlan plan) {
        List<WrittenCells.Pages> pages = new ArrayList<>();
        List<List<CopyPlan.Pair>> pairs = new ArrayList<>();
        for (CopyPlan p : plan.segments()) {
            if (p.launches().isEmpty()) {
                continue;
            }
            RequestBlocks r = p.destinationRequest();
            pages.add(WrittenCells.Pages.of("", p.launches().getFirst().destinationTable(), p.destination(),
                    r.numTokens() - r.startToken()));
            pairs.add(p.pairs());
        }
        return WrittenCells.requireDisjoint(pages, pairs);
    }

    /** Llama-3-8B's shape on device memory (compiled, not run): every layout shown disjoint by its strides alone. */
    @Test
    void llamaSizedLayoutsNeedNoCellByCellCheck() {
        PagedShape s = new PagedShape(4096, 16, 8, 128, 2);
        long layerBytes = 2L * 4096 * 16 * 8 * 256;
        int[] numbers = layers(32);
        List<KvMemory> src = new ArrayList<>();
        List<KvMemory> dst = new ArrayList<>();
        List<KvMemory> ks = new ArrayList<>();
        List<KvMemory> vs = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            src.add(KvMemory.device(0x1000_0000_0000L + i * layerBytes, layerBytes));
            dst.add(KvMemory.device(0x2000_0000_0000L + i * layerBytes, layerBytes));
            ks.add(KvMemory.device(0x3000_0000_0000L + i * layerBytes, layerBytes / 2));
            vs.add(KvMemory.device(0x3800_0000_0000L + i * layerBytes, layerBytes / 2));
        }
        int[] table = new int[4000];
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < 4096; i++) {
            ids.add(i);
        }
        Collections.shuffle(ids, new Random(SEED));
        for (int i = 0; i < table.length; i++) {
            table[i] = ids.get(i);
        }
        long n = 4000L * 16 - 5;
        KvCacheGroup from = KvLayouts.vllmFlash(s, 0, numbers, src);
        for (KvCacheGroup to : List.of(KvLayouts.vllmFlash(s, 0, numbers, dst), KvLayouts.flashInferNhd(s, 0, numbers, dst),
                KvLayouts.flashInferHnd(s, 0, numbers, dst), KvLayouts.sglang(s, 0, numbers, ks, vs))) {
            CopyPlan plan = CopyPlan.compile(from, RequestBlocks.of(identity(4000), n, 16), to,
                    RequestBlocks.of(table, n, 16), ChecksumSpec.STANDARD);
            assertEquals(0, exactCells(plan));
        }
    }

    @Test
    void sameBufferForTwoLayers() {
        try (Arena arena = Arena.ofConfined()) {
            PagedShape s = new PagedShape(6, 4, 4, 16, 2);
            KvMemory one = KvMemory.host(arena.allocate(2L * 6 * 4 * 4 * 32, 8));
            KvCacheGroup dst = KvLayouts.vllmFlash(s, 0, layers(2), List.of(one, one));
            refused(source(arena, layers(2), 0, 4, 32, 32, 4, 6), dst, new int[] {5, 2, 0}, 12, "layer 0 head 0 K",
                    "layer 1 head 0 K", "page 0 slot 0 (bytes 0..31");
            // heap memory: one array for both layers is refused, two arrays (both at offset 0) are not
            KvMemory heap = KvMemory.host(MemorySegment.ofArray(new long[6 * 4 * 4 * 32 / 4]));
            refused(source(arena, layers(2), 0, 4, 32, 32, 4, 6), KvLayouts.vllmFlash(s, 0, layers(2), List.of(heap, heap)),
                    new int[] {5, 2, 0}, 12, "layer 0 head 0 K", "layer 1 head 0 K");
            accepted(source(arena, layers(2), 0, 4, 32, 32, 4, 6), new int[] {0, 1, 2}, KvLayouts.vllmFlash(s, 0, layers(2),
                    List.of(heap, KvMemory.host(MemorySegment.ofArray(new long[6 * 4 * 4 * 32 / 4])))), new int[] {5, 2, 0}, 12);
        }
    }

    @Test
    void headsOverlappingThroughAHeadStrideSmallerThanTheCell() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(1 << 14, 8);
            KvMemory mem = KvMemory.host(m);
            // token-major, heads 16 bytes apart but 32 bytes long
            KvCacheGroup dst = KvCacheGroup.of(4, 4, List.of(CacheLayer.kOnly(0, 0, 4,
                    new KvRegion(mem, 0, 4 * 256, 256, 16, 32))));
            refused(source(arena, layers(1), 0, 4, 32, 0, 4, 4), dst, new int[] {1, 3}, 8, "layer 0 head 0 K",
                    "layer 0 head 1 K");
        }
    }

    @Test
    void kAndVOnTheSameBytes() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory mem = KvMemory.host(arena.allocate(1 << 14, 8));
            KvRegion k = new KvRegion(mem, 0, 4 * 128, 128, 32, 32);
            KvCacheGroup dst = KvCacheGroup.of(4, 8, List.of(CacheLayer.of(3, 0, 4, k, k)));
            refused(source(arena, new int[] {3}, 0, 4, 32, 32, 4, 8), dst, new int[] {7, 6, 5}, 10, "layer 3 head 0 K",
                    "layer 3 head 0 V");
        }
    }

    @Test
    void pagesOverlappingThroughAPageStrideSmallerThanThePageSpan() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory mem = KvMemory.host(arena.allocate(1 << 14, 8));
            // pages of 4 slots x 64 bytes (256 bytes) only 192 bytes apart: page p's slot 3 is page p+1's slot 0
            KvCacheGroup dst = KvCacheGroup.of(4, 8, List.of(CacheLayer.kOnly(0, 0, 1,
                    new KvRegion(mem, 0, 192, 64, 0, 64))));
            KvCacheGroup src = source(arena, layers(1), 0, 1, 64, 0, 4, 8);
            refused(src, dst, new int[] {2, 3}, 8, "page 2 slot 3", "page 3 slot 0");
            // pages 2 and 4 do not meet: accepted (the check is per written cell, not per page stride)
            accepted(src, identity(2), dst, new int[] {2, 4}, 8, false);
            // 7 tokens: the last page's slot 3 is not written; pages 2 then 3 still meet (page 2 is whole), 3 then 2 do not
            refused(src, dst, new int[] {2, 3}, 7, "page 2 slot 3", "page 3 slot 0");
            accepted(src, identity(2), dst, new int[] {3, 2}, 7, false);
        }
    }

    @Test
    void tokenMajorLayersInterleavedInOneBuffer() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory mem = KvMemory.host(arena.allocate(1 << 14, 8));
            // 8 cell slots per token: layer 0's 4 heads at 0..3, layer 1's at 4..7 (healthy), or at 3..6 (overlapping)
            int cell = 16;
            long token = 8L * cell;
            long page = 2 * token;
            KvCacheGroup src = source(arena, layers(2), 0, 4, 16, 0, 2, 8);
            KvCacheGroup good = KvCacheGroup.of(2, 8, List.of(
                    CacheLayer.kOnly(0, 0, 4, new KvRegion(mem, 0, page, token, cell, cell)),
                    CacheLayer.kOnly(1, 0, 4, new KvRegion(mem, 4L * cell, page, token, cell, cell))));
            accepted(src, identity(4), good, new int[] {6, 1, 3, 0}, 8);
            KvCacheGroup bad = KvCacheGroup.of(2, 8, List.of(
                    CacheLayer.kOnly(0, 0, 4, new KvRegion(mem, 0, page, token, cell, cell)),
                    CacheLayer.kOnly(1, 0, 4, new KvRegion(mem, 3L * cell, page, token, cell, cell))));
            refused(src, bad, new int[] {6, 1, 3, 0}, 8, "layer 0 head 3 K", "layer 1 head 0 K");
            // a token-major head that meets another only in a later token: offset by one token stride
            KvCacheGroup later = KvCacheGroup.of(2, 8, List.of(
                    CacheLayer.kOnly(0, 0, 4, new KvRegion(mem, 0, page, token, cell, cell)),
                    CacheLayer.kOnly(1, 0, 4, new KvRegion(mem, token, page, token, cell, cell))));
            refused(src, later, new int[] {6, 1, 3, 0}, 8, "layer 0 head ", "slot 1", "layer 1 head ", "slot 0");
        }
    }

    @Test
    void segmentsThatOverlap() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory mem = KvMemory.host(arena.allocate(1 << 14, 8));
            int pageSize = 2;
            List<KvCacheGroup> segs = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                // segment 2 starts where segment 1 does: Jlama pages described onto one allocation twice
                long at = (i == 2 ? 1 : i) * 2L * pageSize * 128;
                segs.add(KvCacheGroup.of(pageSize, 1, List.of(CacheLayer.of(0, 0, 2,
                        new KvRegion(mem, at, 0, 128, 64, 64), new KvRegion(mem, at + pageSize * 128L, 0, 128, 64, 64)))));
            }
            KvSegments segments = KvSegments.of(segs);
            KvCacheGroup src = source(arena, layers(1), 0, 2, 64, 64, 2, 4);
            for (KvChecksum k : backends) {
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> k.compileCopy(src,
                        RequestBlocks.of(identity(4), 8, 4), segments, KvSegments.request(8, 0, 4), ChecksumSpec.STANDARD));
                assertTrue(e.getMessage().contains("destination cells overlap") && e.getMessage().contains("segment 1's")
                        && e.getMessage().contains("segment 2's"), e.getMessage());
            }
            // the same segments apart: accepted, and equal to the checksums after the copy
            List<KvCacheGroup> apart = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                long at = i * 2L * pageSize * 128;
                apart.add(KvCacheGroup.of(pageSize, 1, List.of(CacheLayer.of(0, 0, 2,
                        new KvRegion(mem, at, 0, 128, 64, 64), new KvRegion(mem, at + pageSize * 128L, 0, 128, 64, 64)))));
            }
            KvSegments ok = KvSegments.of(apart);
            for (KvChecksum k : backends) {
                CopyPlan plan = k.compileCopy(src, RequestBlocks.of(identity(4), 7, 4), ok, KvSegments.request(7, 0, 4),
                        ChecksumSpec.STANDARD);
                assertEquals(0, exactCells(plan));
                assertArrayEquals(ok.plan(7, 0, 4).blockChecksums(k), k.copyAndChecksum(plan), k.name());
            }
        }
    }

    /** vLLM flash, FlashInfer NHD and HND, MLA, SGLang, flat, all layers in one buffer, TP head ranges: accepted. */
    @Test
    void realLayoutsAreAccepted() {
        try (Arena arena = Arena.ofConfined()) {
            PagedShape s = new PagedShape(6, 4, 4, 16, 2);
            long layerBytes = 2L * 6 * 4 * 4 * 32;
            int[] table = {5, 1, 3, 0};
            int n = 15;
            KvCacheGroup src = source(arena, layers(3), 0, 4, 32, 32, 4, 6);
            List<KvMemory> caches = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                caches.add(KvMemory.host(arena.allocate(layerBytes, 8)));
            }
            accepted(src, table, KvLayouts.vllmFlash(s, 0, layers(3), caches), table, n);
            accepted(src, table, KvLayouts.flashInferNhd(s, 0, layers(3), caches), table, n);
            accepted(src, table, KvLayouts.flashInferHnd(s, 0, layers(3), caches), table, n);
            List<KvMemory> ks = new ArrayList<>();
            List<KvMemory> vs = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ks.add(KvMemory.host(arena.allocate(layerBytes / 2, 8)));
                vs.add(KvMemory.host(arena.allocate(layerBytes / 2, 8)));
            }
            accepted(src, table, KvLayouts.sglang(s, 0, layers(3), ks, vs), table, n);
            // every layer in one buffer, each layer's flash cache after the other's
            MemorySegment all = arena.allocate(3 * layerBytes, 8);
            List<KvMemory> slices = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                slices.add(KvMemory.host(all.asSlice(i * layerBytes, layerBytes)));
            }
            accepted(src, table, KvLayouts.flashInferNhd(s, 0, layers(3), slices), table, n);
            List<CacheLayer> oneBuffer = new ArrayList<>();
            KvMemory whole = KvMemory.host(all);
            for (CacheLayer l : KvLayouts.flashInferHnd(s, 0, layers(3), caches).layers()) {
                long off = l.layer() * layerBytes;
                oneBuffer.add(CacheLayer.of(l.layer(), 0, 4, moved(l.k(), whole, off), moved(l.v(), whole, off)));
            }
            accepted(src, table, KvCacheGroup.of(4, 6, oneBuffer), table, n);
            // cross-layer pages: [page][layer][K/V][slot][head] in one buffer
            long cell = 32;
            long page = 3 * 2 * 4 * 4 * cell;
            List<CacheLayer> crossLayer = new ArrayList<>();
            for (int l = 0; l < 3; l++) {
                long at = l * 2 * 4 * 4 * cell;
                crossLayer.add(CacheLayer.of(l, 0, 4, new KvRegion(whole, at, page, 4 * cell, cell, 32),
                        new KvRegion(whole, at + 4 * 4 * cell, page, 4 * cell, cell, 32)));
            }
            accepted(src, table, KvCacheGroup.of(4, 6, crossLayer), table, n);
            // MLA: one latent head per layer
            PagedShape mla = new PagedShape(6, 4, 1, 36, 2);
            KvCacheGroup mlaSrc = KvLayouts.vllmMla(mla, layers(3), List.of(KvMemory.host(arena.allocate(6 * 4 * 72, 8)),
                    KvMemory.host(arena.allocate(6 * 4 * 72, 8)), KvMemory.host(arena.allocate(6 * 4 * 72, 8))));
            accepted(mlaSrc, table, KvLayouts.vllmMla(mla, layers(3), List.of(KvMemory.host(arena.allocate(6 * 4 * 72, 8)),
                    KvMemory.host(arena.allocate(6 * 4 * 72, 8)), KvMemory.host(arena.allocate(6 * 4 * 72, 8)))), table, n);
            // flat (Jlama's contiguous cache): positions as pages of one slot, every layer in one K and one V buffer
            KvMemory fk = KvMemory.host(arena.allocate(3L * 24 * 4 * 32, 8));
            KvMemory fv = KvMemory.host(arena.allocate(3L * 24 * 4 * 32, 8));
            KvCacheGroup flat = KvLayouts.flat(layers(3), 0, fk, fv, 24, 4, 16, 2);
            accepted(KvLayouts.flat(layers(3), 0, KvMemory.host(arena.allocate(3L * 24 * 4 * 32, 8)),
                    KvMemory.host(arena.allocate(3L * 24 * 4 * 32, 8)), 24, 4, 16, 2), identity(20), flat, identity(20), 20);
            // TP: a rank's heads 2..3 of 4 into the consumer's cache of heads 0..3 (flash), and heads 0..3 into a rank's
            // cache of heads 2..3
            KvCacheGroup rank = source(arena, layers(3), 2, 2, 32, 32, 4, 6);
            accepted(rank, table, KvLayouts.vllmFlash(s, 0, layers(3), caches), table, n);
            PagedShape half = new PagedShape(6, 4, 2, 16, 2);
            accepted(src, table, KvLayouts.flashInferHnd(half, 2, layers(3), caches), table, n);
        }
    }

    private static KvRegion moved(KvRegion r, KvMemory to, long by) {
        return new KvRegion(to, r.offset() + by, r.pageStride(), r.tokenStride(), r.headStride(), r.cellBytes());
    }

    /**
     * Random layouts in one buffer against a byte-by-byte oracle: refused exactly when two written cells share a byte.
     */
    @Test
    void randomLayoutsAgreeWithAByteOracle() {
        Random rnd = new Random(SEED);
        KvChecksum ref = KvChecksums.reference();
        int refusedCount = 0;
        int acceptedCount = 0;
        for (int c = 0; c < 4000; c++) {
            try (Arena arena = Arena.ofConfined()) {
                int pageSize = 1 + rnd.nextInt(4);
                int numPages = 1 + rnd.nextInt(6);
                int heads = 1 + rnd.nextInt(3);
                int numLayers = 1 + rnd.nextInt(3);
                int kBytes = 8 * (1 + rnd.nextInt(3));
                int vBytes = rnd.nextInt(3) == 0 ? 0 : 8 * (1 + rnd.nextInt(3));
                int cell = kBytes + vBytes;
                int size = 1 << 13;
                MemorySegment buffer = arena.allocate(size, 8);
                KvMemory mem = KvMemory.host(buffer);
                List<CacheLayer> ls = new ArrayList<>();
                long next = 0;
                for (int l = 0; l < numLayers; l++) {
                    long ts;
                    long hs;
                    long ps;
                    long vOff;
                    int style = rnd.nextInt(4);
                    int pad = 8 * rnd.nextInt(2);
                    if (style == 0) {   // NHD, K and V side by side in a cell
                        hs = cell + pad;
                        ts = heads * hs;
                        ps = pageSize * ts + pad;
                        vOff = kBytes;
                    } else if (style == 1) {   // HND, K and V halves of a page
                        ts = kBytes + pad;
                        hs = pageSize * ts;
                        ps = 2 * heads * hs;
                        vOff = heads * hs;
                    } else if (style == 2) {   // NHD, K and V halves of the layer
                        hs = kBytes;
                        ts = heads * hs + pad;
                        ps = pageSize * ts;
                        vOff = numPages * ps;
                    } else {   // anything
                        ts = 8 * rnd.nextInt(8);
                        hs = 8 * rnd.nextInt(8);
                        ps = 8 * rnd.nextInt(16);
                        vOff = 8 * rnd.nextInt(24);
                    }
                    long base = rnd.nextInt(4) == 0 ? 8 * rnd.nextInt(32) : next;
                    KvRegion k = new KvRegion(mem, base, ps, ts, hs, kBytes);
                    KvRegion v = vBytes == 0 ? null : new KvRegion(mem, base + vOff, ps, ts, hs, vBytes);
                    long end = Math.max(k.extent(numPages, pageSize, heads, "k"),
                            v == null ? 0 : v.extent(numPages, pageSize, heads, "v"));
                    next = end + 8 * rnd.nextInt(2);
                    ls.add(v == null ? CacheLayer.kOnly(l, 0, heads, k) : CacheLayer.of(l, 0, heads, k, v));
                }
                long far = 0;
                for (CacheLayer l : ls) {
                    far = Math.max(far, l.k().extent(numPages, pageSize, heads, "k"));
                    if (l.v() != null) {
                        far = Math.max(far, l.v().extent(numPages, pageSize, heads, "v"));
                    }
                }
                if (far > size) {
                    continue;
                }
                KvCacheGroup dst = KvCacheGroup.of(pageSize, numPages, ls);
                List<Integer> ids = new ArrayList<>();
                for (int i = 0; i < numPages; i++) {
                    ids.add(i);
                }
                Collections.shuffle(ids, rnd);
                int used = 1 + rnd.nextInt(numPages);
                long tokens = (long) (used - 1) * pageSize + 1 + rnd.nextInt(pageSize);
                int[] table = new int[used];
                for (int i = 0; i < used; i++) {
                    table[i] = ids.get(i);
                }
                // the source holds every head, or (a third of the cases) a random subset of each layer's heads, each
                // head a layer entry of its own: the copied heads of a layer need not be one run
                boolean[][] copied = new boolean[numLayers][heads];
                KvCacheGroup src;
                if (rnd.nextInt(3) == 0) {
                    List<CacheLayer> parts = new ArrayList<>();
                    for (int l = 0; l < numLayers; l++) {
                        int must = rnd.nextInt(heads);
                        for (int h = 0; h < heads; h++) {
                            if (h == must || rnd.nextBoolean()) {
                                copied[l][h] = true;
                                parts.addAll(source(arena, new int[] {l}, h, 1, kBytes, vBytes, pageSize, used).layers());
                            }
                        }
                    }
                    src = KvCacheGroup.of(pageSize, used, parts);
                } else {
                    for (boolean[] row : copied) {
                        Arrays.fill(row, true);
                    }
                    src = source(arena, layers(numLayers), 0, heads, kBytes, vBytes, pageSize, used);
                }
                String overlap = oracle(ls, copied, table, pageSize, tokens);
                String what = "case " + c + ": " + dst.layers() + " table " + Arrays.toString(table) + " tokens " + tokens;
                try {
                    CopyPlan plan = ref.compileCopy(src, RequestBlocks.of(identity(used), tokens, 1), dst,
                            RequestBlocks.of(table, tokens, 1), ChecksumSpec.STANDARD);
                    if (overlap != null) {
                        fail(what + ": accepted, but " + overlap);
                    }
                    acceptedCount++;
                    if (c % 10 == 0) {
                        assertArrayEquals(ref.blockChecksums(SlicePlan.of(plan.copiedDestination(),
                                RequestBlocks.of(table, tokens, 1))), ref.copyAndChecksum(plan), what);
                    }
                } catch (InvalidLayoutException e) {
                    if (overlap == null) {
                        fail(what + ": refused but no cells overlap: " + e.getMessage());
                    }
                    assertTrue(e.getMessage().contains("destination cells overlap"), e.getMessage());
                    refusedCount++;
                }
            }
        }
        assertTrue(refusedCount > 300 && acceptedCount > 300, refusedCount + " refused, " + acceptedCount + " accepted");
    }

    /** The first byte two written cells share, or null. */
    private static String oracle(List<CacheLayer> ls, boolean[][] copied, int[] table, int pageSize, long tokens) {
        int[] owner = new int[1 << 13];
        int id = 0;
        for (CacheLayer l : ls) {
            for (KvRegion r : l.v() == null ? List.of(l.k()) : List.of(l.k(), l.v())) {
                for (int h = 0; h < l.numHeads(); h++) {
                    id++;
                    if (!copied[l.layer()][h]) {
                        continue;
                    }
                    for (int i = 0; i < table.length; i++) {
                        long slots = Math.min(pageSize, tokens - (long) i * pageSize);
                        for (int t = 0; t < slots; t++) {
                            long at = r.cellOffset(table[i], t, h);
                            for (int b = 0; b < r.cellBytes(); b++) {
                                int before = owner[(int) (at + b)];
                                if (before != 0) {
                                    return "byte " + (at + b) + " is written twice (parts " + before + " and " + id + ")";
                                }
                                owner[(int) (at + b)] = id;
                            }
                        }
                    }
                }
            }
        }
        return null;
    }

    @Test
    void unwrittenSlotsDoNotCount() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory mem = KvMemory.host(arena.allocate(1 << 12, 8));
            KvCacheGroup dst = KvCacheGroup.of(4, 4, List.of(CacheLayer.kOnly(0, 0, 1, new KvRegion(mem, 0, 64, 32, 0, 32))));
            KvCacheGroup src = source(arena, layers(1), 0, 1, 32, 0, 4, 4);
            // pages 64 bytes apart, slots 32: page p's slots 2..3 are page p+1's slots 0..1
            accepted(src, identity(2), dst, new int[] {1, 0}, 6, false);
            refused(src, dst, new int[] {0, 1}, 6, "page 0 slot 2", "page 1 slot 0");
            accepted(src, identity(2), dst, new int[] {0, 2}, 8, false);
            assertEquals(1, KvChecksums.reference().compileCopy(src, RequestBlocks.of(identity(1), 2, 4), dst,
                    RequestBlocks.of(new int[] {3}, 2, 4), ChecksumSpec.STANDARD).numBlocks());
        }
    }
}
