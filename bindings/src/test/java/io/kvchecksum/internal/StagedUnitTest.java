package io.kvchecksum.internal;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InPlaceCopies;
import io.kvchecksum.InPlaceCopies.Layout;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cpu backend's staged (in-place) copy stages one unit at a time: one layer's cells of one destination page, K and
 * V together ({@link CopyPlan#stagingUnitBytes()}, what {@code maxStagedUnitBytes} bounds), not a page of every layer.
 * Each copy has several layers, so staging a page of all of them would use several units' bytes; the largest stage a
 * unit used ({@link CpuCopy#largestStage()}) must be at most the plan's unit and the values and bytes those of the same
 * copy out of place on the reference backend. Layouts: NHD read as HND on the same blocks (a layer's K and V groups),
 * layers side by side in a token's row (one group of heads across all layers, cut per layer), and the same with byte
 * cells. Seeds fixed.
 */
class StagedUnitTest {
    private static final long SEED = 20261207L;

    /**
     * The copy in place on {@code cpu} over {@code bytes} random bytes and out of place on the reference over clones:
     * the same values and bytes, and no unit staged more than the plan's unit bytes.
     */
    private static void unitByUnit(KvChecksum cpu, long bytes, Layout layout, RequestBlocks sq, RequestBlocks dq,
                                   CompiledPlan.CellKind kind) {
        CopyPlan plan = InPlaceCopies.sameAsOutOfPlace(cpu, bytes, layout, sq, dq, SEED, CpuCopy::resetLargestStage);
        for (CopyPlan.Launch l : plan.launches()) {
            assertEquals(kind, l.cellKind());
        }
        long largest = CpuCopy.largestStage();
        assertTrue(largest > 0 && largest <= plan.stagingUnitBytes(), cpu.name() + ": a unit staged " + largest
                + " bytes, the plan's unit is " + plan.stagingUnitBytes());
    }

    /**
     * vLLM flash ({@code [2][pages][16][heads][D]} per layer) read as HND on the same block ids, 4 layers x 8 heads x
     * 256-byte cells, 64 pages (16 MiB: the pool's page ranges too), the last page partly copied: a unit is 64 KiB (one
     * layer's K and V of a page), a page of all layers 256 KiB.
     */
    @Test
    void nhdToHndStagesOneLayerAtATime() {
        int layers = 4;
        int heads = 8;
        int cell = 256;
        int pages = 64;
        long page = 16L * heads * cell;
        long layerBytes = 2 * pages * page;
        Layout layout = InPlaceCopies.nhdReadAsHnd(layers, heads, cell, pages);
        int[] table = InPlaceCopies.shuffledBlocks(pages);
        RequestBlocks q = RequestBlocks.of(table, pages * 16 - 5, 16);
        for (KvChecksum cpu : List.of(KvChecksums.cpu(1), KvChecksums.cpu())) {
            unitByUnit(cpu, layers * layerBytes, layout, q, q, CompiledPlan.CellKind.WHOLE_PIECES);
        }
    }

    /**
     * Layers side by side in a token's row, all layers' K heads then all layers' V heads
     * ({@code [pages][tokens][K: layers x heads][V: layers x heads]}), so one group of heads runs across every layer
     * and is cut per layer; remote blocks of 4 received into local pages of 16 in reverse order, put in order in place.
     * With {@code cell} 12 the cells are byte cells (a piece straddling K and V). With {@code descending}, one head per
     * layer and the layers' cells in reverse order: one group across the layers at a negative head stride.
     */
    private static void sideBySide(int cell, CompiledPlan.CellKind kind, boolean descending) {
        int layers = 3;
        int heads = descending ? 1 : 2;
        int pages = 4;
        long row = 2L * layers * heads * cell;
        Layout layout = (m, source) -> {
            int ps = source ? 4 : 16;
            List<CacheLayer> ls = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                long k = 8 + (long) (descending ? layers - 1 - l : l) * heads * cell;
                long v = k + (long) layers * heads * cell;
                ls.add(CacheLayer.of(l, 0, heads, new KvRegion(m, k, ps * row, row, cell, cell),
                        new KvRegion(m, v, ps * row, row, cell, cell)));
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
        for (KvChecksum cpu : List.of(KvChecksums.cpu(1), KvChecksums.cpu())) {
            unitByUnit(cpu, 8 + pages * 16 * row + 8, layout, sq, dq, kind);
        }
    }

    @Test
    void layersSideBySideStageOneLayerAtATime() {
        sideBySide(64, CompiledPlan.CellKind.WHOLE_PIECES, false);
    }

    @Test
    void layersInReverseOrderStageOneLayerAtATime() {
        sideBySide(64, CompiledPlan.CellKind.WHOLE_PIECES, true);
    }

    @Test
    void byteCellsStageOneLayerAtATime() {
        sideBySide(12, CompiledPlan.CellKind.BYTE_CELLS, false);
    }
}
