package io.kvchecksum.opencl;

import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The GPU build's rows in flight ({@code KVC_ROWS_IN_FLIGHT}, {@link Tuning#rowsInFlight}) run on the test device (PoCL
 * in CI) through the GPU tuning with 1 (the build before it), 2 (the shipped choice), 3 and 4 rows, compared exactly
 * with the reference backend: rows read as aligned 16-byte loads and as {@code vload8} (8-byte aligned only), page
 * runs shorter than, equal to and not dividing the rows in flight (page sizes 1, 3, 16), partial last blocks, a first
 * block past 0, partial units, both modes. The golden suite goes through the shipped choice in {@code TuningGoldenTest}
 * and batched launches in {@code BatchedLaunchTest}.
 */
class RowsInFlightTest {
    private static final long SEED = 20_261_201L;
    private static final int[] ROWS = {1, 2, 3, 4};
    private static final KvChecksum REFERENCE = KvChecksums.reference();
    private static final List<OpenClBackend> OPENED = new ArrayList<>();

    private static synchronized KvChecksum gpu(int rows) {
        OpenClBackend b = OpenClBackend.open(OpenClTests.backend().device().index(), Tuning.GPU.withRowsInFlight(rows),
                ClApi.jocl());
        OPENED.add(b);
        return KvChecksum.of(b);
    }

    @Test
    void theShippedGpuTuningBuildsTwoRowsInFlight() {
        assertEquals(2, Tuning.GPU.rowsInFlight());
        assertEquals(" -D KVC_ROWS_IN_FLIGHT=2", Tuning.GPU.defines());
        assertEquals("", Tuning.GPU.withRowsInFlight(1).defines());
        assertEquals(" -D KVC_CONTIGUOUS_UNITS -D KVC_UNIT32", Tuning.CPU.withRowsInFlight(4).defines());
        assertThrows(IllegalArgumentException.class, () -> Tuning.GPU.withRowsInFlight(0));
    }

    /** FlashAttention-layout caches at 16-byte and at 8-byte (not 16) alignment, every page size and row count. */
    @Test
    void everyRowCountMatchesTheReference() {
        OpenClTests.requireOpenCl();
        System.out.println("RowsInFlightTest seed " + SEED);
        Random rnd = new Random(SEED);
        List<KvChecksum> backends = new ArrayList<>();
        for (int r : ROWS) {
            backends.add(gpu(r));
        }
        // 2 heads of 64 bf16 (128-byte cells, whole units) and 1 head of 36 bf16 (72 bytes: a unit and 1 piece)
        List<KvLayouts.PagedShape> shapes = new ArrayList<>();
        for (int pageSize : new int[] {1, 3, 16}) {
            long pages = Math.ceilDiv(70, pageSize) + 3;
            shapes.add(new KvLayouts.PagedShape(pages, pageSize, 2, 64, 2));
            shapes.add(new KvLayouts.PagedShape(pages, pageSize, 1, 36, 2));
        }
        try (Arena arena = Arena.ofShared()) {
            for (KvLayouts.PagedShape s : shapes) {
                for (long misalign : new long[] {0, 8}) {
                    List<KvMemory> caches = new ArrayList<>();
                    for (int l = 0; l < 2; l++) {
                        long bytes = 2L * s.numPages() * s.pageSize() * s.heads() * s.headDim() * s.elemBytes();
                        MemorySegment seg = arena.allocate(bytes + misalign, 64).asSlice(misalign, bytes);
                        for (long i = 0; i < bytes; i++) {
                            seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
                        }
                        caches.add(KvMemory.host(seg));
                    }
                    KvCacheGroup g = KvLayouts.vllmFlash(s, 0, new int[] {0, 1}, caches);
                    int[] table = new int[(int) s.numPages()];
                    for (int i = 0; i < table.length; i++) {
                        table[i] = i;
                    }
                    for (int i = table.length - 1; i > 0; i--) {
                        int j = rnd.nextInt(i + 1);
                        int t = table[i];
                        table[i] = table[j];
                        table[j] = t;
                    }
                    for (RequestBlocks req : List.of(RequestBlocks.of(table, 67, 16), RequestBlocks.of(table, 70, 2, 8),
                            RequestBlocks.of(table, 5, 16))) {
                        String label = s + ", cache offset " + misalign + " mod 16, " + req;
                        for (int k = 0; k < ROWS.length; k++) {
                            check(backends.get(k), g, req, label + ", " + ROWS[k] + " rows in flight");
                        }
                    }
                }
            }
        }
    }

    private static void check(KvChecksum cl, KvCacheGroup g, RequestBlocks req, String label) {
        for (ChecksumMode mode : ChecksumMode.values()) {
            ChecksumSpec spec = new ChecksumSpec(mode, CellPadding.NONE);
            CompiledPlan plan = cl.compile(g, List.of(req), spec);
            CompiledPlan expected = REFERENCE.compile(g, List.of(req), spec);
            assertArrayEquals(REFERENCE.blockChecksums(expected).getFirst(), cl.blockChecksums(plan).getFirst(),
                    label + ", " + mode.wireName());
        }
        SliceSums slices = REFERENCE.sliceSums(g, req);
        assertEquals(slices, cl.sliceSums(g, req), label + ", slice sums");
    }

    @AfterAll
    static synchronized void close() {
        OPENED.forEach(OpenClBackend::close);
        OPENED.clear();
    }
}
