package io.kvchecksum.cuda;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;

import static io.kvchecksum.cuda.Cuda.check;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The device check's own measurement pieces that can be checked without a GPU. */
class DeviceCheckTest {
    private static final long SEED = 20251202L;

    @Test
    void specBandwidthFollowsTheDeviceName() {
        assertEquals(4800.0, DeviceCheck.specGBs("NVIDIA H200"));
        assertEquals(4800.0, DeviceCheck.specGBs("NVIDIA H200 NVL"));
        assertEquals(3350.0, DeviceCheck.specGBs("NVIDIA H100 80GB HBM3"));
        assertEquals(2000.0, DeviceCheck.specGBs("NVIDIA H100 PCIe"));
        assertEquals(3900.0, DeviceCheck.specGBs("NVIDIA H100 NVL"));
        assertNull(DeviceCheck.specGBs("NVIDIA A100-SXM4-80GB"));
    }

    @Test
    void bandwidthRowsHoldAtLeastEightTimesTheL2() {
        long l2 = 50L << 20;  // H100/H200
        // Llama-3-8B TP1: 131072 bytes/token; 2048 tokens = 256 MiB < 400 MiB <= 4096 tokens = 512 MiB
        assertEquals(List.of(16L, 256L, 2048L, 4096L, 8192L), DeviceCheck.sizes(131072, 1 << 20, l2, false));
        assertEquals(List.of(16L, 4096L), DeviceCheck.sizes(131072, 1 << 20, l2, true));
        // fp8_ds_mla: 61 x 656 = 40016 bytes/token; 8192 tokens = 312.6 MiB < 400 MiB <= 16384 tokens = 625 MiB
        assertEquals(List.of(16L, 256L, 2048L, 16384L, 32768L), DeviceCheck.sizes(61 * 656, 1 << 20, l2, false));
        // a cap (the dry run's) keeps whole pages and drops what repeats
        assertEquals(List.of(16L, 32L), DeviceCheck.sizes(131072, 40, l2, false));
    }

    @Test
    void variantNamesCompareAsTheBackendMaySpellThem() {
        assertEquals("occupancy3", DeviceCheck.normalized("OCCUPANCY_3"));
        assertEquals("occupancy3", DeviceCheck.normalized("Occupancy3"));
        assertEquals("default", DeviceCheck.normalized("DEFAULT"));
        assertNull(DeviceCheck.normalized(null));
    }

    @Test
    void medianOfEvenAndOddCounts() {
        assertEquals(2.0, DeviceCheck.median(new double[] {1, 2, 9}));
        assertEquals(2.5, DeviceCheck.median(new double[] {1, 2, 3, 9}));
        assertEquals(3.0, DeviceCheck.medianOf(new long[] {9, 1, 3, 4, 2}));
    }

    /**
     * The read bound over a page table ({@code kvcb_gather_sum}, emulated by the host library) sums exactly the
     * pages the table names, in every region: against the words summed here directly.
     */
    @Test
    void gatherSumReadsTheTablesPagesOfEveryRegion() {
        FakeCudaDriver f = new FakeCudaDriver(HostLibrary.load());
        CudaDriver d = f;
        check(d, d.cuInit(0), "cuInit");
        check(d, d.cuCtxSetCurrent(FakeCudaDriver.CONTEXT), "cuCtxSetCurrent");
        int regions = 3;
        int pages = 7;
        long pageBytes = 3 * 16;  // 3 units per page: a lane's tail loop
        long regionStride = pages * pageBytes + 32;  // regions need not be adjacent
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(regions * regionStride, 16);
            for (long i = 0; i < host.byteSize(); i += 8) {
                host.set(ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            int[] table = {5, 0, 3, 6};
            int n = 3;  // the first three entries: pages 5, 0 and 3
            long want = 0;
            for (int r = 0; r < regions; r++) {
                for (int i = 0; i < n; i++) {
                    for (long w = 0; w < pageBytes; w += 8) {
                        want += host.get(ValueLayout.JAVA_LONG, r * regionStride + table[i] * pageBytes + w);
                    }
                }
            }
            long base = f.upload(host);
            MemorySegment t = arena.allocate(4L * table.length, 16);
            MemorySegment.copy(table, 0, t, ValueLayout.JAVA_INT, 0, table.length);
            long dTable = f.upload(t);
            int grid = 4;
            long[] p = new long[1];
            check(d, d.cuMemAlloc(p, 8L * grid), "cuMemAlloc");
            long partials = p[0];
            MemorySegment args = arena.allocate(256, 16);
            args.set(ValueLayout.JAVA_LONG, 128, args.address());
            DeviceCheck.gather(args, 0, base, dTable, partials, regionStride, pageBytes, pageBytes, n, regions);
            long[] lib = new long[1];
            MemorySegment fatbinMagic = arena.allocate(16, 16);
            fatbinMagic.set(ValueLayout.JAVA_INT, 0, 0xBA55ED50);
            check(d, d.cuLibraryLoadData(lib, new com.sun.jna.Pointer(fatbinMagic.address()), null, null, 0, null, null, 0), "load");
            check(d, d.cuLibraryGetKernel(p, lib[0], DeviceCheck.GATHER), "cuLibraryGetKernel");
            check(d, d.cuLaunchKernel(p[0], grid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, 0, args.address() + 128, 0), "launch");
            MemorySegment out = arena.allocate(8L * grid, 16);
            check(d, d.cuMemcpyDtoHAsync(out.address(), partials, 8L * grid, 0), "cuMemcpyDtoHAsync");
            long got = 0;
            for (int b = 0; b < grid; b++) {
                got += out.getAtIndex(ValueLayout.JAVA_LONG, b);
            }
            assertEquals(want, got);
            assertTrue(want != 0);
            // one more table entry, one more page per region: the sum must change
            DeviceCheck.gather(args, 0, base, dTable, partials, regionStride, pageBytes, pageBytes, n + 1, regions);
            check(d, d.cuLaunchKernel(p[0], grid, 1, 1, LaunchPlanner.THREADS, 1, 1, 0, 0, args.address() + 128, 0), "launch");
            check(d, d.cuMemcpyDtoHAsync(out.address(), partials, 8L * grid, 0), "cuMemcpyDtoHAsync");
            long more = 0;
            for (int b = 0; b < grid; b++) {
                more += out.getAtIndex(ValueLayout.JAVA_LONG, b);
            }
            for (int r = 0; r < regions; r++) {
                for (long w = 0; w < pageBytes; w += 8) {
                    want += host.get(ValueLayout.JAVA_LONG, r * regionStride + table[n] * pageBytes + w);
                }
            }
            assertEquals(want, more);
        }
    }
}
