package io.kvchecksum.cuda;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random layouts through the CUDA backend's host path and the kernels' arithmetic (host test library), compared
 * exactly with the reference backend; planner settings vary so that single-part and multi-part grids, chunked
 * launches, and the 8- and 16-byte kernel variants all run.
 */
class RandomLayoutTest {
    private static final long SEED = Long.getLong("kvchecksum.seed", 0x5EED_C0DAL);

    @Test
    void randomLayoutsMatchReference() {
        System.out.println("RandomLayoutTest seed = " + SEED + " (rerun with -Dkvchecksum.seed=" + SEED + ")");
        Random rnd = new Random(SEED);
        KvChecksum ref = KvChecksums.reference();
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        RecordingDriver rec = new RecordingDriver(fake);
        int[][] configs = {{1, 1}, {4, 3}, {132, 1 << 20}, {2, 1}};
        boolean sawV1 = false;
        boolean sawV2 = false;
        boolean sawReduce = false;
        for (int[] cfg : configs) {
            fake.smCount = cfg[0];
            try (CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), cfg[1])) {
                KvChecksum cuda = KvChecksum.of(backend);
                for (int i = 0; i < 60; i++) {
                    try (Arena arena = Arena.ofConfined()) {
                        RandomCase c = RandomCase.make(rnd, arena, i % 2 == 0);
                        String who = "seed " + SEED + ", sm " + cfg[0] + ", maxBlocks " + cfg[1] + ", case " + i + ": " + c.label();
                        long[] expected = ref.blockChecksums(c.group(), c.request());
                        rec.take();
                        assertArrayEquals(expected, cuda.blockChecksums(c.group(), c.request()), who + " (host memory)");
                        for (RecordingDriver.Call call : rec.take()) {
                            if (call.name().equals("cuLaunchKernel")) {
                                String k = kernelName(backend, call.longArg(0));
                                sawV1 |= k.equals(CudaBackend.BLOCK_CHECKSUMS_8B);
                                sawV2 |= k.equals(CudaBackend.BLOCK_CHECKSUMS_16B);
                                sawReduce |= k.startsWith("kvc_block_checksums") && call.longArg(2) > 1;
                                assertTrue(!k.equals("kvc_sum_parts"), who + ": one launch per checksum, no reduce kernel");
                                if (i % 2 == 0 && k.startsWith("kvc_block_checksums")) {
                                    assertEquals(CudaBackend.BLOCK_CHECKSUMS_16B, k, who + ": an aligned layout must use 16-byte loads");
                                }
                            }
                        }
                        SliceSums slices = ref.sliceSums(c.group(), c.request());
                        assertEquals(slices, cuda.sliceSums(c.group(), c.request()), who + " (slice sums)");
                        List<Long> uploads = new ArrayList<>();
                        KvCacheGroup dev = onDevice(fake, c.group(), uploads);
                        try (PendingChecksums p = cuda.submit(dev, c.request())) {
                            assertArrayEquals(expected, p.get(), who + " (device memory, submit)");
                        }
                        try (PendingChecksums p = cuda.submit(dev, c.request(), 0x5EA11L)) {
                            assertArrayEquals(expected, p.get(), who + " (device memory, submit on a caller stream)");
                        }
                        uploads.forEach(fake::cuMemFree);
                    }
                }
            }
        }
        assertTrue(sawV1 && sawV2 && sawReduce, "the cases must exercise both load widths and blocks split into parts (atomic adds): v1 " + sawV1
                + ", v2 " + sawV2 + ", parts " + sawReduce);
        assertEquals(0, fake.liveDeviceAllocations(), "device memory leaked");
        assertEquals(0, fake.livePinnedAllocations(), "pinned memory leaked");
    }

    static String kernelName(CudaBackend b, long handle) {
        for (String k : CudaBackend.KERNELS) {
            if (b.kernel(k) == handle) {
                return k;
            }
        }
        return "?";
    }

    static KvCacheGroup onDevice(FakeCudaDriver fake, KvCacheGroup g, List<Long> uploads) {
        Map<MemorySegment, KvMemory> moved = new LinkedHashMap<>();
        return Relocation.relocate(g, m -> moved.computeIfAbsent(((KvMemory.Host) m).segment(), s -> {
            long p = fake.upload(s);
            uploads.add(p);
            return KvMemory.device(p, s.byteSize());
        }));
    }
}
