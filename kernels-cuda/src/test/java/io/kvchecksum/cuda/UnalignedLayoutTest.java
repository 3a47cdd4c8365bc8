package io.kvchecksum.cuda;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Layouts whose offsets and strides are 1..15 bytes off the load width. On a GPU a misaligned 8- or 16-byte load is
 * a sticky {@code CUDA_ERROR_MISALIGNED_ADDRESS} that kills the engine's context; the host build of the load
 * functions traps the same way (the emulated launch fails with that error), so these tests fail if the backend ever
 * picks a variant too wide for the layout. Values are compared exactly with the reference backend, and the Java CPU
 * backend (which reads MemorySegments, any alignment) is compared on the same layouts.
 */
class UnalignedLayoutTest {
    private static final long SEED = Long.getLong("kvchecksum.seed", 0x0DD_B17E5L);

    /** K and V regions token-major within pages, every offset and stride {@code skew} bytes past a multiple of 16. */
    static KvCacheGroup skewed(Random rnd, Arena arena, int skew, int kPieces, int vPieces, int heads, int pageSize, int numPages) {
        List<CacheLayer> layers = new ArrayList<>();
        for (int l = 0; l < 2; l++) {
            KvRegion k = region(rnd, arena, skew, kPieces, heads, pageSize, numPages);
            KvRegion v = vPieces == 0 ? null : region(rnd, arena, (skew * 7) % 16, vPieces, heads, pageSize, numPages);
            layers.add(new CacheLayer(3 * l + 1, 0, heads, k, v));
        }
        return new KvCacheGroup(layers, pageSize, numPages);
    }

    private static KvRegion region(Random rnd, Arena arena, int skew, int pieces, int heads, int pageSize, int numPages) {
        int cell = 8 * pieces;
        long headStride = 16L * Math.ceilDiv(cell, 16) + skew;
        long tokenStride = heads * headStride + (skew == 0 ? 0 : (skew + 5) % 16);
        long pageStride = pageSize * tokenStride + (skew == 0 ? 0 : (skew + 11) % 16);
        long offset = skew;
        long bytes = offset + (numPages - 1) * pageStride + (pageSize - 1) * tokenStride + (heads - 1) * headStride + cell;
        MemorySegment seg = arena.allocate(bytes, 64);
        for (long i = 0; i < bytes; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return new KvRegion(KvMemory.host(seg), offset, pageStride, tokenStride, headStride, cell);
    }

    static RequestBlocks request(Random rnd, int pageSize, int numPages, int blockSize) {
        long tokens = 1 + rnd.nextInt(pageSize * numPages);
        int[] table = new int[(int) Math.ceilDiv(tokens, (long) pageSize)];
        for (int i = 0; i < table.length; i++) {
            table[i] = rnd.nextInt(numPages);
        }
        return RequestBlocks.of(table, tokens, 0, blockSize);
    }

    @Test
    void offsetsAndStridesOf1To15BytesMatchReferenceOnEveryPath() {
        System.out.println("UnalignedLayoutTest seed = " + SEED + " (rerun with -Dkvchecksum.seed=" + SEED + ")");
        Random rnd = new Random(SEED);
        KvChecksum ref = KvChecksums.reference();
        KvChecksum cpu = KvChecksums.cpu();
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        RecordingDriver rec = new RecordingDriver(fake);
        try (CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            for (int skew = 1; skew <= 15; skew++) {
                try (Arena arena = Arena.ofConfined()) {
                    int pageSize = 1 + rnd.nextInt(16);
                    int numPages = 2 + rnd.nextInt(6);
                    KvCacheGroup g = skewed(rnd, arena, skew, 1 + rnd.nextInt(6), rnd.nextInt(4), 1 + rnd.nextInt(3), pageSize, numPages);
                    RequestBlocks r = request(rnd, pageSize, numPages, 1 + rnd.nextInt(20));
                    String who = "seed " + SEED + ", skew " + skew;
                    long[] expected = ref.blockChecksums(g, r);
                    assertArrayEquals(expected, cpu.blockChecksums(g, r), who + " (cpu backend)");
                    rec.take();
                    assertArrayEquals(expected, cuda.blockChecksums(g, r), who + " (cuda, host memory)");
                    for (RecordingDriver.Call c : rec.take()) {
                        if (c.name().equals("cuLaunchKernel")) {
                            String k = RandomLayoutTest.kernelName(backend, c.longArg(0));
                            if (k.startsWith("kvc_block_checksums")) {
                                assertEquals(CudaBackend.BLOCK_CHECKSUMS_1B, k, who + ": an unaligned layout needs the byte-assembling kernel");
                            }
                        }
                    }
                    SliceSums slices = ref.sliceSums(g, r);
                    assertEquals(slices, cuda.sliceSums(g, r), who + " (cuda slice sums)");
                    assertEquals(slices, cpu.sliceSums(g, r), who + " (cpu slice sums)");
                    List<Long> uploads = new ArrayList<>();
                    KvCacheGroup dev = RandomLayoutTest.onDevice(fake, g, uploads);
                    try (PendingChecksums p = cuda.submit(dev, r, 0x5EA11L)) {
                        assertArrayEquals(expected, p.get(), who + " (cuda, device memory, submit on a caller stream)");
                    }
                    uploads.forEach(fake::cuMemFree);
                }
            }
        }
    }

    /** Device pointers themselves off by 1..15 bytes (an engine's tensor view at an odd byte offset). */
    @Test
    void unalignedDevicePointersUseTheByteAssemblingKernel() {
        Random rnd = new Random(SEED + 1);
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            for (int skew = 1; skew <= 15; skew++) {
                // An aligned layout (skew 0 within its memory), its memory placed `skew` bytes into an allocation.
                KvCacheGroup g = skewed(rnd, arena, 0, 2, 2, 2, 4, 3);
                RequestBlocks r = request(rnd, 4, 3, 3);
                long[] expected = KvChecksums.reference().blockChecksums(g, r);
                List<Long> uploads = new ArrayList<>();
                final int s = skew;
                java.util.Map<MemorySegment, KvMemory> moved = new java.util.LinkedHashMap<>();
                KvCacheGroup dev = Relocation.relocate(g, m -> moved.computeIfAbsent(((KvMemory.Host) m).segment(), seg -> {
                    MemorySegment padded = arena.allocate(seg.byteSize() + s, 16);
                    MemorySegment.copy(seg, 0, padded, s, seg.byteSize());
                    long p = fake.upload(padded);
                    uploads.add(p);
                    return KvMemory.device(p + s, seg.byteSize());
                }));
                try (PendingChecksums p = cuda.submit(dev, r, 0x5EA11L)) {
                    assertArrayEquals(expected, p.get(), "seed " + (SEED + 1) + ", pointer skew " + skew);
                }
                uploads.forEach(fake::cuMemFree);
            }
        }
    }

    /**
     * The emulation must fault as the GPU does, or the tests above prove nothing: the same unaligned layout launched
     * with the 8-byte kernel (the driver swaps the kernel handle) fails with CUDA_ERROR_MISALIGNED_ADDRESS.
     */
    @Test
    void theHostBuildTrapsOnAMisalignedLoad() {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        long[] swap = new long[2];
        CudaDriver swapping = (CudaDriver) Proxy.newProxyInstance(CudaDriver.class.getClassLoader(), new Class<?>[] {CudaDriver.class},
                (proxy, m, args) -> {
                    if (m.getName().equals("cuLaunchKernel") && (long) args[0] == swap[0]) {
                        args[0] = swap[1];
                    }
                    try {
                        return m.invoke(fake, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        Random rnd = new Random(SEED + 2);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(swapping, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            KvCacheGroup g = skewed(rnd, arena, 3, 2, 2, 2, 4, 3);
            RequestBlocks r = RequestBlocks.of(new int[] {2, 0, 1}, 12, 0, 4);
            long[] expected = KvChecksums.reference().blockChecksums(g, r);
            assertArrayEquals(expected, cuda.blockChecksums(g, r), "the byte-assembling kernel");
            swap[0] = backend.kernel(CudaBackend.BLOCK_CHECKSUMS_1B);
            swap[1] = backend.kernel(CudaBackend.BLOCK_CHECKSUMS_8B);
            CudaException e = assertThrows(CudaException.class, () -> cuda.blockChecksums(g, r));
            assertEquals("CUDA_ERROR_MISALIGNED_ADDRESS", e.errorName(), e.getMessage());
            swap[1] = backend.kernel(CudaBackend.BLOCK_CHECKSUMS_16B);
            e = assertThrows(CudaException.class, () -> cuda.blockChecksums(g, r));
            assertTrue(e.getMessage().contains("MISALIGNED"), e.getMessage());
        }
    }
}
