package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The fast CPU backend against the reference on seeded random layouts, and the laws of the definition. */
class CpuBackendsTest {
    private static final long SEED = 20261129L;
    private final KvChecksum reference = KvChecksums.reference();
    /**
     * The backend as it ships, at 1 to 3 threads, and with every choice of vector widths its selector can make in this
     * JVM (on AMD family 25 and elsewhere), every request through the loops for memory, and in cache with every plan
     * prepared on its first call and as before issue 28's in-cache work ({@code CpuChoices.inCacheForms}).
     */
    private final List<KvChecksum> fast = java.util.stream.Stream.of(
            java.util.stream.Stream.of(KvChecksums.cpu(1), KvChecksums.cpu(2), KvChecksums.cpu(3)),
            io.kvchecksum.internal.CpuChoices.everyChoice(1).stream(),
            io.kvchecksum.internal.CpuChoices.inCacheForms(1).stream()).flatMap(x -> x).toList();

    @Test
    void aPlanRunAgainAgreesWithReference() {
        // The backend prepares a plan in cache on its second call (a flat form of the plan's arguments): every call of
        // the same plan, whole-piece and mixed, single- and multi-block, agrees with the reference.
        Random rnd = new Random(SEED + 6);
        for (int i = 0; i < 150; i++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCaches.Case c = RandomCaches.random(arena, rnd, 200);
                SlicePlan plan = SlicePlan.of(c.group(), c.request());
                SlicePlan mixed = SlicePlan.of(c.group(), c.request(), ChecksumMode.MIXED);
                long[] expected = reference.blockChecksums(plan);
                long[] expectedMixed = reference.blockChecksums(mixed);
                for (KvChecksum k : fast) {
                    String msg = k.description() + " · case " + i + " " + c.label();
                    for (int call = 0; call < 3; call++) {
                        assertArrayEquals(expected, k.blockChecksums(plan), "call " + call + " · " + msg);
                        assertArrayEquals(expectedMixed, k.blockChecksums(mixed), "mixed, call " + call + " · " + msg);
                    }
                    assertEquals(reference.sliceSums(plan), k.sliceSums(plan), msg);
                }
            }
        }
    }

    @Test
    void fastAgreesWithReferenceOnRandomLayouts() {
        System.out.println("seed " + SEED + "; " + fast.getFirst().description());
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            assertTrue(fast.getFirst().description().contains("scalar"), fast.getFirst().description());
        }
        Random rnd = new Random(SEED);
        for (int i = 0; i < 300; i++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCaches.Case c = RandomCaches.random(arena, rnd, 200);
                long[] expected = reference.blockChecksums(c.group(), c.request());
                SliceSums expectedSlices = reference.sliceSums(c.group(), c.request());
                SlicePlan mixed = SlicePlan.of(c.group(), c.request(), ChecksumMode.MIXED);
                SliceSums expectedMixed = reference.sliceSums(mixed);
                for (KvChecksum k : fast) {
                    String msg = k.description() + " · case " + i + " " + c.label();
                    assertArrayEquals(expected, k.blockChecksums(c.group(), c.request()), msg);
                    assertEquals(expectedSlices, k.sliceSums(c.group(), c.request()), msg);
                    assertArrayEquals(expected, k.sliceSums(c.group(), c.request()).combine(), msg);
                    assertEquals(expectedMixed, k.sliceSums(mixed), "mixed · " + msg);
                    assertArrayEquals(expectedMixed.combine(), k.blockChecksums(mixed), "mixed · " + msg);
                }
            }
        }
    }

    @Test
    void parallelPathAgreesOnALargeRequest() {
        // Over PARALLEL_BYTES so the work is split across threads (shared arena), or stays on the caller (confined).
        try (Arena shared = Arena.ofShared(); Arena confined = Arena.ofConfined()) {
            largeRequest(shared);
            largeRequest(confined);
        }
    }

    private void largeRequest(Arena arena) {
        {
            KvLayouts.PagedShape s = new KvLayouts.PagedShape(80, 16, 8, 128, 2);
            long bytes = 2L * 80 * 16 * 8 * 128 * 2;
            Random rnd = new Random(SEED + 1);
            List<KvMemory> caches = new java.util.ArrayList<>();
            for (int l = 0; l < 4; l++) {
                MemorySegment seg = arena.allocate(bytes, 64);
                for (long o = 0; o < bytes; o += 8) {
                    seg.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
                }
                caches.add(KvMemory.host(seg));
            }
            KvCacheGroup g = KvLayouts.vllmFlash(s, 0, new int[] {0, 1, 2, 3}, caches);
            int[] table = new int[80];
            for (int i = 0; i < 80; i++) {
                table[i] = 79 - i;
            }
            RequestBlocks r = RequestBlocks.of(table, 80 * 16 - 5, 16);
            long[] expected = reference.blockChecksums(g, r);
            for (KvChecksum k : fast) {
                assertArrayEquals(expected, k.blockChecksums(g, r), k.description());
                assertEquals(reference.sliceSums(g, r), k.sliceSums(g, r), k.description());
            }
            // The mixed mode's own loop, split over threads the same way.
            SlicePlan mixed = SlicePlan.of(g, r, ChecksumMode.MIXED);
            long[] expectedMixed = reference.blockChecksums(mixed);
            for (KvChecksum k : fast) {
                assertArrayEquals(expectedMixed, k.blockChecksums(mixed), "mixed · " + k.description());
            }
        }
    }

    @Test
    void streamingPathAgreesOnRandomLayouts() {
        // Requests over FastCpuBackend.PARALLEL_BYTES take the streaming (row-wise) loop and the thread split, with
        // odd piece and head counts that leave vector tails.
        Random rnd = new Random(SEED + 4);
        int checked = 0;
        for (int i = 0; i < 40 && checked < 6; i++) {
            try (Arena arena = Arena.ofShared()) {
                RandomCaches.Case c = RandomCaches.random(arena, rnd, 20_000, 40_000);
                long bytes = c.group().bytesPerToken() * (c.request().numTokens() - c.request().startToken());
                if (bytes < (4L << 20)) {
                    continue;
                }
                checked++;
                long[] expected = reference.blockChecksums(c.group(), c.request());
                for (KvChecksum k : fast) {
                    assertArrayEquals(expected, k.blockChecksums(c.group(), c.request()), k.description() + " · " + c.label());
                }
            }
        }
        assertEquals(6, checked, "streaming cases generated");
    }

    @Test
    void streamingRowLoopAgreesOnTokenMajorLayouts() {
        // Token-major layouts (heads side by side) over PARALLEL_BYTES read rows front to back; heads x pieces that
        // are not multiples of the vector width exercise the scalar tail.
        int[][] shapes = {{3, 8, 1}, {5, 24, 2}, {1, 576, 2}, {8, 128, 2}, {2, 40, 4}};
        Random rnd = new Random(SEED + 5);
        for (int[] sh : shapes) {
            try (Arena arena = Arena.ofShared()) {
                int heads = sh[0], headDim = sh[1], elem = sh[2];
                long perPage = 2L * 16 * heads * headDim * elem;
                int pages = (int) Math.max(8, (5L << 20) / 2 / perPage + 1);
                var shape = new KvLayouts.PagedShape(pages, 16, heads, headDim, elem);
                List<KvMemory> caches = new java.util.ArrayList<>();
                for (int l = 0; l < 2; l++) {
                    MemorySegment seg = arena.allocate(perPage * pages, 64);
                    for (long o = 0; o + 8 <= seg.byteSize(); o += 8) {
                        seg.set(ValueLayout.JAVA_LONG_UNALIGNED, o, rnd.nextLong());
                    }
                    caches.add(KvMemory.host(seg));
                }
                KvCacheGroup g = KvLayouts.vllmFlash(shape, 2 * heads, new int[] {5, 9}, caches);
                java.util.List<Integer> ids = new java.util.ArrayList<>();
                for (int i = 0; i < pages; i++) {
                    ids.add(i);
                }
                java.util.Collections.shuffle(ids, rnd);
                int[] table = ids.stream().mapToInt(Integer::intValue).toArray();
                RequestBlocks r = RequestBlocks.of(table, pages * 16L - 7, 16);
                long[] expected = reference.blockChecksums(g, r);
                for (KvChecksum k : fast) {
                    String msg = k.description() + " · heads " + heads + " head dim " + headDim + " x" + elem;
                    assertArrayEquals(expected, k.blockChecksums(g, r), msg);
                    assertEquals(reference.sliceSums(g, r), k.sliceSums(g, r), msg);
                }
            }
        }
    }

    @Test
    void blocksRechunkIntoLargerBlocks() {
        // Only requests from block 0 can be rechunked against a coarser request over the same table: draw until 100
        // of them have been checked, and say so.
        Random rnd = new Random(SEED + 2);
        int checked = 0;
        for (int i = 0; i < 2000 && checked < 100; i++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCaches.Case c = RandomCaches.random(arena, rnd, 150);
                RequestBlocks r = c.request();
                if (r.firstBlock() != 0) {
                    continue;
                }
                checked++;
                int factor = 1 + rnd.nextInt(4);
                int large = r.blockSize() * factor;
                for (KvChecksum k : List.of(reference, fast.get(0))) {
                    long[] small = k.blockChecksums(c.group(), r);
                    long[] big = reference.blockChecksums(c.group(), RequestBlocks.of(r.pageTable(), r.numTokens(), large));
                    Rechunked re = Rechunked.of(small, 0, factor);
                    assertEquals(0, re.firstChunk());
                    assertArrayEquals(big, re.values(), k.name() + " · " + c.label() + " factor " + factor);
                }
            }
        }
        assertEquals(100, checked, "rechunk cases from block 0 checked");
    }

    @Test
    void rechunkDropsChunksNotCoveredWhole() {
        long[] v = {1, 2, 3, 4, 5, 6, 7};
        Rechunked r = Rechunked.of(v, 3, 4); // blocks 3..9; chunk 0 = blocks 0..3 is not whole
        assertEquals(1, r.firstChunk());
        assertArrayEquals(new long[] {2 + 3 + 4 + 5, 6 + 7}, r.values());
        assertArrayEquals(new long[] {1 + 2, 3 + 4, 5 + 6, 7}, Rechunked.of(v, 0, 2).values());
        assertEquals(0, Rechunked.of(new long[] {9}, 1, 4).values().length);
    }

    @Test
    void everySinglePieceChangeChangesTheChecksum() {
        Random rnd = new Random(SEED + 3);
        try (Arena arena = Arena.ofConfined()) {
            RandomCaches.Case c = RandomCaches.random(arena, rnd, 40);
            long[] before = fast.get(0).blockChecksums(c.group(), c.request());
            CacheLayer l = c.group().layers().get(0);
            MemorySegment seg = ((KvMemory.Host) l.k().memory()).segment();
            long off = l.k().cellOffset(c.request().page(0), 0, 0);
            for (int bit = 0; bit < 64; bit++) {
                long old = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, off);
                seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off, old ^ (1L << bit));
                long[] after = fast.get(0).blockChecksums(c.group(), c.request());
                assertNotEquals(before[0], after[0], "bit " + bit + " of " + c.label());
                seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off, old);
            }
        }
    }

    @Test
    void fastestFallsBackToCpuWithoutGpuModules() {
        // BrokenProvider (test class path) ranks above the CPU backend but fails the self-test: it must be skipped.
        KvChecksum k = KvChecksums.fastest();
        assertEquals("cpu", k.name());
    }

    @Test
    void statusReportsSelfTestFailures() {
        var status = KvChecksums.status();
        var broken = status.get("broken");
        assertFalse(broken.available(), broken.toString());
        assertTrue(broken.reason().contains("wrong checksums on a small known input"), broken.reason());
        assertTrue(status.get("cpu").available());
        assertEquals(java.util.Set.of("broken", "cuda", "opencl", "cpu", "reference"), status.keySet());
        assertEquals("broken", status.keySet().iterator().next(), "providers come first, by priority");
    }
}
