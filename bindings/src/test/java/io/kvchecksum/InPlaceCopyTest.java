package io.kvchecksum;

import io.kvchecksum.InPlaceCopies.Layout;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The staged (in-place) verifying copy ({@link CopyPlan#staged()}) against the same copy out of place: the source read
 * from a clone of the buffer, written into another clone, on the reference backend. The in-place run on the cpu
 * backend (one thread, and the pool where the copy is large) and on the reference must give the same values and the
 * same bytes. Seeds fixed.
 */
class InPlaceCopyTest {
    private static final long SEED = 20261207L;

    /**
     * Runs the copy in place on {@code backend} over a buffer of {@code bytes} random bytes, and out of place on the
     * reference over clones; asserts both values and final bytes equal, and returns the plan.
     */
    private static CopyPlan sameAsOutOfPlace(KvChecksum backend, long bytes, Layout layout, RequestBlocks sq,
                                             RequestBlocks dq) {
        return InPlaceCopies.sameAsOutOfPlace(backend, bytes, layout, sq, dq, SEED, () -> { });
    }

    /**
     * Layers interleaved within a token's row ({@code [pages][tokens][layers][cell]}): a layer's page hull covers the
     * other layer's cells, so staging is decided cell by cell (the hulls meet, the cells do not). Remote blocks of 4
     * received into local pages of 16 in reverse order, put in order in place.
     */
    @Test
    void interleavedLayersAreStagedCellByCell() {
        int cell = 64;
        int layers = 2;
        int pages = 4;
        long row = (long) layers * cell;
        Layout layout = (m, source) -> {
            int ps = source ? 4 : 16;
            List<CacheLayer> ls = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                ls.add(CacheLayer.of(l, 0, 1, new KvRegion(m, 8 + l * cell, ps * row, row, 0, cell), null));
            }
            return KvCacheGroup.of(ps, source ? 4L * pages : pages, ls);
        };
        int[] local = {2, 0, 3};
        int n = 40;
        int[] remote = new int[10];
        for (int i = 0; i < remote.length; i++) {
            remote[i] = 4 * local[i / 4] + 3 - i % 4;
        }
        RequestBlocks sq = RequestBlocks.of(remote, n, 16);
        RequestBlocks dq = RequestBlocks.of(local, n, 16);
        long bytes = 8 + pages * 16 * row + 8;
        for (KvChecksum backend : List.of(KvChecksums.reference(), KvChecksums.cpu(1), KvChecksums.cpu())) {
            CopyPlan plan = sameAsOutOfPlace(backend, bytes, layout, sq, dq);
            assertTrue(plan.stagingUnitBytes() == 16L * cell, "unit bytes " + plan.stagingUnitBytes());
        }
    }

    /**
     * Layers interleaved within a token's row at a size whose cell-by-cell comparison would exceed its bound
     * ({@code CopyStaging.EXACT_CELLS} destination cells): 2 layers x 2^21 positions in place on the same pages.
     * Refused in one line saying what to do, with compilation's memory bounded (no cell list is made); the same
     * layout at a small size is staged ({@link #interleavedLayersAreStagedCellByCell}).
     */
    @Test
    void interleavedLayersBeyondTheCellBoundAreRefused() {
        int cell = 8;
        int layers = 2;
        int page = 16;
        int pages = 1 << 17;
        long row = (long) layers * cell;
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(pages * page * row, 64));
            List<CacheLayer> ls = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                ls.add(CacheLayer.of(l, 0, 1, new KvRegion(m, l * cell, page * row, row, 0, cell), null));
            }
            KvCacheGroup g = KvCacheGroup.of(page, pages, ls);
            int[] table = new int[pages];
            for (int i = 0; i < pages; i++) {
                table[i] = (int) ((i * 2654435761L + 7) % pages);
            }
            RequestBlocks q = RequestBlocks.of(table, (long) pages * page, page);
            CopyPlan plan = CopyPlan.compile(g, q, g, q, ChecksumSpec.STANDARD);
            assertTrue(plan.overlaps() && !plan.staged());
            assertTrue(CopyStaging.EXACT_CELLS < (long) layers * pages * page);
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                    () -> KvChecksums.cpu().compileCopy(g, q, g, q, ChecksumSpec.STANDARD));
            String s = e.getMessage();
            assertTrue(s.contains("source and destination memory overlap") && s.contains("not shown to order it")
                    && s.contains(layers * pages * page + " destination cells") && s.contains("copy through separate memory")
                    && !s.contains("\n"), s);
        }
    }

    /**
     * Llama-like vLLM flash ({@code [2][pages][16][heads][D]}) read as HND ({@code [2][pages][heads][16][D]}) on the
     * same block ids: 4 layers x 8 heads x 256-byte cells, 64 pages, 16 MiB moved, so the cpu backend splits the pages
     * over its pool.
     */
    @Test
    void nhdToHndInPlaceOverThePool() {
        int layers = 4;
        int heads = 8;
        int cell = 256;
        int pages = 64;
        long page = 16L * heads * cell;
        long layerBytes = 2 * pages * page;
        Layout layout = InPlaceCopies.nhdReadAsHnd(layers, heads, cell, pages);
        int[] table = InPlaceCopies.shuffledBlocks(pages);
        int n = pages * 16 - 5;
        RequestBlocks q = RequestBlocks.of(table, n, 16);
        for (KvChecksum backend : List.of(KvChecksums.cpu(), KvChecksums.cpu(1), KvChecksums.reference())) {
            sameAsOutOfPlace(backend, layers * layerBytes, layout, q, q);
        }
    }

    /** An in-place page permutation: unit (page a) reads page b, which another unit writes: refused, both named. */
    @Test
    void permutationInPlaceIsRefusedNamingBothUnits() {
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(4 * 16 * 128L, 64));
            KvCacheGroup g = KvCacheGroup.of(16, 4, List.of(CacheLayer.of(3, 0, 1,
                    new KvRegion(m, 0, 16 * 128, 128, 0, 64), new KvRegion(m, 64, 16 * 128, 128, 0, 64))));
            CopyPlan plan = CopyPlan.compile(g, RequestBlocks.of(new int[] {1, 2}, 32, 16), g,
                    RequestBlocks.of(new int[] {2, 1}, 32, 16), ChecksumSpec.STANDARD);
            assertTrue(plan.overlaps() && !plan.staged());
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> KvChecksums.cpu()
                    .compileCopy(g, RequestBlocks.of(new int[] {1, 2}, 32, 16), g, RequestBlocks.of(new int[] {2, 1}, 32, 16),
                            ChecksumSpec.STANDARD));
            String s = e.getMessage();
            assertTrue(s.contains("per-page staging cannot order it") && s.contains("layer 3, destination page 2")
                    && s.contains("layer 3, destination page 1") && s.contains("backend 'cpu'")
                    && s.contains("copy through separate memory") && !s.contains("\n"), s);
        }
    }
}
