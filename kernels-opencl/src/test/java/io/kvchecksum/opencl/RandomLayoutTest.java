package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** Random layouts, every operation, compared exactly with the reference backend. Seeds are fixed and printed. */
class RandomLayoutTest {
    private static final long FIRST_SEED = 20_250_401L;
    private static final int CASES = 120;
    private static final KvChecksum REFERENCE = KvChecksums.reference();

    @TestFactory
    Stream<? extends DynamicNode> randomLayoutsMatchTheReference() {
        return OpenClTests.dynamic("random layouts", this::randomLayouts);
    }

    private Stream<DynamicTest> randomLayouts() {
        KvChecksum cl = OpenClTests.checksum();
        System.out.println("RandomLayoutTest: seeds " + FIRST_SEED + " .. " + (FIRST_SEED + CASES - 1));
        return LongStream.range(FIRST_SEED, FIRST_SEED + CASES).mapToObj(seed -> DynamicTest.dynamicTest("seed " + seed, () -> {
            try (Arena arena = Arena.ofShared()) {
                RandomLayouts.Case c = RandomLayouts.random(seed, arena);
                check(cl, c.group(), c.request(), c.label());
            }
        }));
    }

    /** A Llama-3-8B-like slice (bf16, 128-dim heads, 8 KV heads, FlashAttention layout): many work-groups per block. */
    @Test
    void realisticShapeMatchesTheReference() {
        KvChecksum cl = OpenClTests.checksum();
        long seed = 7;
        System.out.println("realisticShapeMatchesTheReference: seed " + seed);
        Random r = new Random(seed);
        KvLayouts.PagedShape shape = new KvLayouts.PagedShape(12, 16, 8, 128, 2);
        try (Arena arena = Arena.ofShared()) {
            List<KvMemory> caches = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                long bytes = 2L * shape.numPages() * shape.pageSize() * shape.heads() * shape.headDim() * shape.elemBytes();
                MemorySegment seg = arena.allocate(bytes, 64);
                byte[] b = new byte[(int) bytes];
                r.nextBytes(b);
                MemorySegment.copy(MemorySegment.ofArray(b), 0, seg, 0, bytes);
                caches.add(KvMemory.host(seg));
            }
            KvCacheGroup g = KvLayouts.vllmFlash(shape, 8, new int[] {3, 17}, caches);
            for (RequestBlocks req : List.of(RequestBlocks.of(new int[] {5, 2, 9, 0, 11}, 77, 16),
                    RequestBlocks.of(new int[] {4}, 16, 16), RequestBlocks.of(new int[] {7, 1}, 50, 1, 32))) {
                check(cl, g, req, req.toString());
            }
        }
    }

    private static void check(KvChecksum cl, KvCacheGroup g, RequestBlocks req, String label) {
        long[] expected = REFERENCE.blockChecksums(g, req);
        SliceSums expectedSlices = REFERENCE.sliceSums(g, req);
        assertArrayEquals(expected, cl.blockChecksums(g, req), label + " (fused)");
        assertEquals(expectedSlices, cl.sliceSums(g, req), label + " (slice sums)");
        try (PendingChecksums p = cl.submit(g, req)) {
            assertArrayEquals(expected, p.get(), label + " (submit)");
        }
    }

    /** A changed byte anywhere in the read range changes a checksum: the kernels read what the layout says. */
    @Test
    void everyReadByteMatters() {
        KvChecksum cl = OpenClTests.checksum();
        try (Arena arena = Arena.ofShared()) {
            long seed = FIRST_SEED;
            RandomLayouts.Case c = RandomLayouts.random(seed, arena);
            while (c.request().numBlocks() == 0) {
                c = RandomLayouts.random(++seed, arena);
            }
            KvCacheGroup g = c.group();
            RequestBlocks req = c.request();
            long[] before = cl.blockChecksums(g, req);
            CacheLayer l = g.layers().get(0);
            MemorySegment seg = ((KvMemory.Host) l.k().memory()).segment();
            long at = l.k().cellOffset(req.page(0), 0, 0);
            seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, at, (byte) (seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at) ^ 0x40));
            long[] after = cl.blockChecksums(g, req);
            assertFalse(Arrays.equals(before, after), c.label() + ": flipping a bit of token " + req.startToken()
                    + " changed nothing");
            assertArrayEquals(REFERENCE.blockChecksums(g, req), after, c.label());
        }
    }
}
