package io.kvchecksum;

import io.kvchecksum.InPlaceCopies.Layout;
import org.junit.jupiter.api.Test;

import io.kvchecksum.spi.BackendLimits;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
     * other layer's cells (the hulls meet, the cells do not), and each layer's cells lie at their own residues modulo
     * the row, which shows the layers' units apart. Remote blocks of 4 received into local pages of 16 in reverse
     * order, put in order in place.
     */
    @Test
    void interleavedLayersAreStaged() {
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
     * The plan's staging units ({@link CopyPlan.Launch#staging()}), which every staging backend runs: a layer's pairs of
     * a launch, K and V together, in the order of the layers' first pairs, also where the destination lists a layer's
     * heads in two runs around another layer's (layer 0's heads 0-1, layer 1, layer 0's heads 2-3; each layer's bytes
     * move within its half of the row, K-heads-then-V-heads into each head's K and V side by side), each unit's bytes
     * a full destination page of its cells, the largest the plan's {@link CopyPlan#stagingUnitBytes()}.
     */
    @Test
    void stagingUnitsAreEachLayersPairsOfALaunch() {
        int cell = 64;
        int heads = 4;
        long row = 2L * 2 * heads * cell;   // two layers, K and V, four heads each
        int pages = 4;
        Layout layout = (m, source) -> {
            int ps = source ? 8 : 16;
            long stride = ps * row;
            List<CacheLayer> ls = new ArrayList<>();
            if (source) {
                for (int l = 0; l < 2; l++) {
                    long at = l * row / 2;
                    ls.add(CacheLayer.of(l, 0, heads, new KvRegion(m, at, stride, row, cell, cell),
                            new KvRegion(m, at + (long) heads * cell, stride, row, cell, cell)));
                }
            } else {
                // each layer in its own half of the row, K and V of a head side by side; listed as layer 0's first
                // two heads, layer 1, layer 0's other two
                ls.add(CacheLayer.of(0, 0, 2, new KvRegion(m, 0, stride, row, 2L * cell, cell),
                        new KvRegion(m, cell, stride, row, 2L * cell, cell)));
                ls.add(CacheLayer.of(1, 0, heads, new KvRegion(m, 8L * cell, stride, row, 2L * cell, cell),
                        new KvRegion(m, 9L * cell, stride, row, 2L * cell, cell)));
                ls.add(CacheLayer.of(0, 2, 2, new KvRegion(m, 4L * cell, stride, row, 2L * cell, cell),
                        new KvRegion(m, 5L * cell, stride, row, 2L * cell, cell)));
            }
            return KvCacheGroup.of(ps, source ? 2L * pages : pages, ls);
        };
        int[] local = {3, 1, 0, 2};
        long n = 16L * pages - 3;
        RequestBlocks sq = RequestBlocks.of(swappedHalves(local), n, 16);
        RequestBlocks dq = RequestBlocks.of(local, n, 16);
        long bytes = pages * 16 * row;
        for (KvChecksum backend : List.of(KvChecksums.reference(), KvChecksums.cpu(1), KvChecksums.cpu())) {
            CopyPlan plan = sameAsOutOfPlace(backend, bytes, layout, sq, dq);
            assertTrue(plan.staged(), plan.toString());
            long largest = 0;
            for (CopyPlan.Launch l : plan.launches()) {
                CopyPlan.Staging staging = l.staging();
                assertEquals(2, staging.units(), staging.toString());
                assertEquals(List.of(0, 1), List.of(staging.unit(0).get(0).layer(), staging.unit(1).get(0).layer()));
                assertEquals(l.pairs().size(), staging.pairs().size());
                assertTrue(staging.pairs().containsAll(l.pairs()));
                int[] starts = staging.starts();
                assertEquals(List.of(0, heads, l.pairs().size()),
                        List.of(starts[0], starts[1], starts[2]));
                for (int u = 0; u < staging.units(); u++) {
                    long pieces = 0;
                    for (CopyPlan.Pair p : staging.unit(u)) {
                        assertEquals(staging.unit(u).get(0).layer(), p.layer());
                        pieces += p.pieces();
                    }
                    assertEquals(8 * pieces * 16, staging.bytes(u));
                }
                // layer 0's four heads, in the launch's order: the two runs of its heads joined
                assertEquals(List.of(0, 1, 2, 3), staging.unit(0).stream().map(CopyPlan.Pair::head).toList());
                largest = Math.max(largest, staging.largest());
            }
            assertEquals(plan.stagingUnitBytes(), largest);
        }
    }

    /**
     * A row of Llama-3-8B-like layers side by side ({@code [pages][tokens][layers][K|V][heads][cell]}, as several Java
     * engines and SGLang-like pools lay them out) received as remote blocks of 8 and rearranged in place into local
     * pages of 16 on the same block ids: each local page's two remote blocks swapped, and each layer's part of the row
     * from K-heads-then-V-heads to each head's K and V side by side ({@code [layers][heads][K|V][cell]}). Every byte
     * moves within its page and its layer's part of the row, so the units are stageable, though every layer's page hull
     * covers every other layer's cells. With {@code swapLayers} the destination's layers lie in reverse order in the
     * row: layer {@code l}'s units read what layer {@code layers-1-l}'s write.
     */
    private static Layout llamaRows(int layers, int heads, int cell, int pages, boolean swapLayers) {
        long seg = 2L * heads * cell;
        long row = layers * seg;
        return (m, source) -> {
            int ps = source ? 8 : 16;
            List<CacheLayer> ls = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                long at = (swapLayers && !source ? layers - 1 - l : l) * seg;
                ls.add(source
                        ? CacheLayer.of(l, 0, heads, new KvRegion(m, at, ps * row, row, cell, cell),
                                new KvRegion(m, at + (long) heads * cell, ps * row, row, cell, cell))
                        : CacheLayer.of(l, 0, heads, new KvRegion(m, at, ps * row, row, 2L * cell, cell),
                                new KvRegion(m, at + cell, ps * row, row, 2L * cell, cell)));
            }
            return KvCacheGroup.of(ps, source ? 2L * pages : pages, ls);
        };
    }

    /** Remote blocks of 8 for local pages {@code local} of 16: each page's two blocks swapped. */
    private static int[] swappedHalves(int[] local) {
        int[] remote = new int[2 * local.length];
        for (int i = 0; i < remote.length; i++) {
            remote[i] = 2 * local[i / 2] + 1 - i % 2;
        }
        return remote;
    }

    /**
     * The interleaved-layer rearrangement ({@link #llamaRows}) at Llama-3-8B's size: 32 layers x 8 KV heads x 256-byte
     * cells, 4000 of 4096 pages of 16 (8 GiB described as device memory, never touched: compiling reads no byte), 32
     * million destination cells, far beyond the {@code CopyStaging.EXACT_CELLS} a cell-by-cell comparison takes (it was
     * refused as "not shown to order it"): staged, each layer's units shown apart from the others' by residues modulo
     * the row. Then the same rearrangement with 32-byte cells over 272 pages (more than {@code EXACT_CELLS}
     * destination cells still, 68 MiB), on the cpu backend (pool and one thread): values and bytes equal the
     * reference's out of place.
     */
    @Test
    void llamaInterleavedLayersInPlaceBeyondTheCellBoundAreStaged() {
        int layers = 32;
        int heads = 8;
        int pages = 4000;
        int[] local = Arrays.copyOf(InPlaceCopies.shuffledBlocks(4096), pages);
        long tokens = 16L * pages - 5;
        Layout big = llamaRows(layers, heads, 256, 4096, false);
        KvMemory device = KvMemory.device(1L << 40, 4096L * 16 * layers * 2 * heads * 256);
        CopyPlan plan = CopyPlan.compile(big.group(device, true), RequestBlocks.of(swappedHalves(local), tokens, 16),
                big.group(device, false), RequestBlocks.of(local, tokens, 16), ChecksumSpec.STANDARD);
        assertTrue(CopyStaging.EXACT_CELLS < 2L * layers * heads * tokens);
        assertTrue(plan.overlaps() && plan.staged(), plan.toString());
        assertEquals(16L * 2 * heads * 256, plan.stagingUnitBytes());

        int small = 272;
        int cell = 32;
        int[] table = InPlaceCopies.shuffledBlocks(small);
        int n = 16 * small - 5;
        assertTrue(CopyStaging.EXACT_CELLS < 2L * layers * heads * n);
        Layout layout = llamaRows(layers, heads, cell, small, false);
        long bytes = (long) small * 16 * layers * 2 * heads * cell;
        for (KvChecksum backend : List.of(KvChecksums.cpu(), KvChecksums.cpu(1))) {
            sameAsOutOfPlace(backend, bytes, layout, RequestBlocks.of(swappedHalves(table), n, 16),
                    RequestBlocks.of(table, n, 16));
        }
    }

    /**
     * The interleaved-layer rearrangement ({@link #llamaRows}) with the destination's layers in reverse order within
     * the row: layer 0's unit of a page reads bytes layer 1's unit of the same page writes (2 layers), a real conflict,
     * refused naming both units; at Llama's size (32 layers, beyond the cell bound) the same conflict stays refused,
     * naming layers 0 and 31 (found among the first destination page's units).
     */
    @Test
    void interleavedLayersReallyConflictingAreRefusedNamingBothUnits() {
        int[] local = {2, 0, 3};
        Layout layout = llamaRows(2, 2, 16, 4, true);
        RequestBlocks sq = RequestBlocks.of(swappedHalves(local), 40, 16);
        RequestBlocks dq = RequestBlocks.of(local, 40, 16);
        try (Arena arena = Arena.ofConfined()) {
            KvMemory m = KvMemory.host(arena.allocate(4 * 16 * 2 * 2 * 2 * 16L, 64));
            CopyPlan plan = CopyPlan.compile(layout.group(m, true), sq, layout.group(m, false), dq, ChecksumSpec.STANDARD);
            assertTrue(plan.overlaps() && !plan.staged());
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> KvChecksums.cpu()
                    .compileCopy(layout.group(m, true), sq, layout.group(m, false), dq, ChecksumSpec.STANDARD));
            String s = e.getMessage();
            assertTrue(s.contains("per-page staging cannot order it") && s.contains("layer 0, destination page 2")
                    && s.contains("layer 1, destination page 2") && s.contains("copy through separate memory")
                    && !s.contains("\n"), s);
        }
        int[] big = Arrays.copyOf(InPlaceCopies.shuffledBlocks(4096), 4000);
        long tokens = 16L * 4000;
        Layout llama = llamaRows(32, 8, 256, 4096, true);
        KvMemory device = KvMemory.device(1L << 40, 4096L * 16 * 32 * 2 * 8 * 256);
        CopyPlan plan = CopyPlan.compile(llama.group(device, true), RequestBlocks.of(swappedHalves(big), tokens, 16),
                llama.group(device, false), RequestBlocks.of(big, tokens, 16), ChecksumSpec.STANDARD);
        assertTrue(plan.overlaps() && !plan.staged());
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                () -> plan.check("cpu", DEVICES, false));
        String s = e.getMessage();
        assertTrue(s.contains("per-page staging cannot order it") && s.contains("layer 0, destination page " + big[0] + ",")
                && s.contains("layer 31, destination page " + big[0] + ",") && s.contains("copy through separate memory")
                && !s.contains("\n"), s);
    }

    /** The cpu backend's limits with device memory copied too: a plan over device memory checked as a backend would. */
    private static final BackendLimits DEVICES = BackendLimits.CPU.withCopies(
            Set.of(BackendLimits.CopyRoute.DEVICE_TO_DEVICE), Set.of(BackendLimits.CopyRoute.DEVICE_TO_DEVICE));

    /**
     * Two layers whose cells no stride separates (layer 0 at token stride 4c from 0, layer 1 at token stride 6c from c,
     * pages of 96c: {@code 4t = 1 + 6u} has no solution, so they share no byte, but no residue shows it) in place on
     * the same shuffled pages, 2 x 2^21 positions: only a cell-by-cell comparison would show the units apart, and it
     * would exceed its bound ({@code CopyStaging.EXACT_CELLS} destination cells). Refused in one line saying what to
     * do, with compilation's memory bounded (no cell list is made); the same layout at a small size is staged.
     */
    @Test
    void layersNoStrideSeparatesBeyondTheCellBoundAreRefused() {
        int c = 8;
        int page = 16;
        for (int pages : new int[] {4, 1 << 17}) {
            KvMemory m = KvMemory.device(1L << 40, (long) pages * 96 * c);
            KvCacheGroup g = KvCacheGroup.of(page, pages, List.of(
                    CacheLayer.of(0, 0, 1, new KvRegion(m, 0, 96L * c, 4L * c, 0, c), null),
                    CacheLayer.of(1, 0, 1, new KvRegion(m, c, 96L * c, 6L * c, 0, c), null)));
            int[] table = InPlaceCopies.shuffledBlocks(pages == 4 ? 3 : pages);
            RequestBlocks q = RequestBlocks.of(table, (long) table.length * page, page);
            CopyPlan plan = CopyPlan.compile(g, q, g, q, ChecksumSpec.STANDARD);
            assertTrue(plan.overlaps());
            if (pages == 4) {
                assertTrue(plan.staged(), plan.toString());
                continue;
            }
            assertFalse(plan.staged());
            assertTrue(CopyStaging.EXACT_CELLS < 2L * pages * page);
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                    () -> plan.check("cpu", DEVICES, false));
            String s = e.getMessage();
            assertTrue(s.contains("source and destination memory overlap") && s.contains("not shown to order it")
                    && s.contains(2L * pages * page + " destination cells") && s.contains("copy through separate memory")
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
