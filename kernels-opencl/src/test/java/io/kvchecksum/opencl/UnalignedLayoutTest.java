package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Offsets and strides 1..15 bytes off every load width (16-byte vector loads, 8-byte words), on the OpenCL device
 * and on the Java CPU backend, compared exactly with the reference. The kernel reads such pieces byte-wise
 * ({@code vload8} of uchar), which has no alignment requirement; these cases pin that down for every residue.
 */
class UnalignedLayoutTest {
    private static final long SEED = 0x0DD_0C1L;

    private static KvRegion region(Random rnd, Arena arena, int skew, int pieces, int heads, int pageSize, int numPages) {
        int cell = 8 * pieces;
        long headStride = 16L * Math.ceilDiv(cell, 16) + skew;
        long tokenStride = heads * headStride + (skew + 5) % 16;
        long pageStride = pageSize * tokenStride + (skew + 11) % 16;
        long bytes = skew + (numPages - 1) * pageStride + (pageSize - 1) * tokenStride + (heads - 1) * headStride + cell;
        MemorySegment seg = arena.allocate(bytes, 64);
        for (long i = 0; i < bytes; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return new KvRegion(KvMemory.host(seg), skew, pageStride, tokenStride, headStride, cell);
    }

    @Test
    void offsetsAndStridesOf1To15BytesMatchTheReference() {
        KvChecksum cl = OpenClTests.checksum();
        KvChecksum cpu = KvChecksums.cpu();
        KvChecksum ref = KvChecksums.reference();
        System.out.println("UnalignedLayoutTest seed = " + SEED);
        Random rnd = new Random(SEED);
        for (int skew = 1; skew <= 15; skew++) {
            try (Arena arena = Arena.ofShared()) {
                int pageSize = 1 + rnd.nextInt(16);
                int numPages = 2 + rnd.nextInt(6);
                int heads = 1 + rnd.nextInt(3);
                List<CacheLayer> layers = new ArrayList<>();
                for (int l = 0; l < 2; l++) {
                    int vPieces = rnd.nextInt(4);
                    layers.add(new CacheLayer(2 * l, 0, heads, region(rnd, arena, skew, 1 + rnd.nextInt(6), heads, pageSize, numPages),
                            vPieces == 0 ? null : region(rnd, arena, (skew * 7) % 16, vPieces, heads, pageSize, numPages)));
                }
                KvCacheGroup g = new KvCacheGroup(layers, pageSize, numPages);
                long tokens = 1 + rnd.nextInt(pageSize * numPages);
                int[] table = new int[(int) Math.ceilDiv(tokens, (long) pageSize)];
                for (int i = 0; i < table.length; i++) {
                    table[i] = rnd.nextInt(numPages);
                }
                RequestBlocks r = RequestBlocks.of(table, tokens, 0, 1 + rnd.nextInt(20));
                String who = "seed " + SEED + ", skew " + skew;
                long[] expected = ref.blockChecksums(g, r);
                assertArrayEquals(expected, cl.blockChecksums(g, r), who + " (opencl)");
                assertArrayEquals(expected, cpu.blockChecksums(g, r), who + " (cpu)");
                assertEquals(ref.sliceSums(g, r), cl.sliceSums(g, r), who + " (opencl slice sums)");
            }
        }
    }
}
