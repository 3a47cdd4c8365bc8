package io.kvchecksum.internal;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The chunked, parallel page digest against the literal one ({@code java.util.zip.Adler32} over the runs in order):
 * chunk edges inside runs and across runs, many chunks, the cpu backend's own parallel path. (The values themselves
 * are checked against zlib in the golden module.)
 */
class PageDigestParallelTest {
    private static final long SEED = 0xAD1E_0016L;

    private static PageDigestPlan randomPlan(Arena arena, Random rnd, int numPages, int pageSize, int heads, int dim,
            int layers, int tokens) {
        KvLayouts.PagedShape s = new KvLayouts.PagedShape(numPages, pageSize, heads, dim, 2);
        List<KvMemory> ks = new ArrayList<>();
        List<KvMemory> vs = new ArrayList<>();
        long bytes = (long) numPages * pageSize * heads * dim * 2;
        for (int l = 0; l < 2 * layers; l++) {
            MemorySegment m = arena.allocate(bytes, 64);
            for (long i = 0; i < bytes; i += 8) {
                m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
            }
            (l % 2 == 0 ? ks : vs).add(KvMemory.host(m));
        }
        int[] layerNumbers = new int[layers];
        for (int l = 0; l < layers; l++) {
            layerNumbers[l] = l;
        }
        KvCacheGroup g = KvLayouts.sglang(s, 0, layerNumbers, ks, vs);
        int pages = (tokens + pageSize - 1) / pageSize;
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < numPages; i++) {
            ids.add(i);
        }
        java.util.Collections.shuffle(ids, rnd);
        int[] table = ids.subList(0, pages).stream().mapToInt(Integer::intValue).toArray();
        MemorySegment state = arena.allocate(4099);
        state.fill((byte) 0xFF);
        return PageDigestPlan.of(SlicePlan.of(g, RequestBlocks.of(table, tokens, 16)),
                List.of(new StateRow("ssm", KvMemory.host(state), 3, 4096)));
    }

    /** The loops this JVM runs: java.util.zip.Adler32 always, the Vector API one where the module is there. */
    private static boolean[] loops() {
        return PageDigestParallel.VECTOR ? new boolean[] {false, true} : new boolean[] {false};
    }

    @Test
    void chunkEdgesAnywhereGiveTheLiteralDigest() {
        System.out.println("PageDigestParallelTest seed 0x" + Long.toHexString(SEED));
        Random rnd = new Random(SEED);
        ForkJoinPool pool = new ForkJoinPool(3);
        try (Arena arena = Arena.ofShared()) {
            PageDigestPlan four = randomPlan(arena, rnd, 12, 16, 2, 64, 2, 150);   // 4 KiB pages, 10 of them per buffer
            // 2 KiB pages, 19 per buffer: groups of four from memory at 256 bits too (4 KiB pages are 8 blocks there)
            PageDigestPlan two = randomPlan(arena, rnd, 24, 8, 2, 64, 2, 150);
            for (PageDigestPlan plan : List.of(four, two)) {
                long literal = PageDigestReference.digest(plan, "reference");
                for (long chunk : new long[] {1, 7, 1000, 2048, 4096, 4097, 65521, 65536, 100_000,
                        plan.totalBytes() - 1, plan.totalBytes(), 1L << 40}) {
                    for (boolean vector : loops()) {
                        for (boolean fromMemory : new boolean[] {false, true}) {
                            assertEquals(literal, PageDigestParallel.digest(plan, "cpu", pool, true, chunk, vector,
                                    fromMemory), "chunk " + chunk + (vector ? ", Vector API loop"
                                    : ", java.util.zip.Adler32") + (fromMemory ? ", from memory" : ""));
                        }
                    }
                }
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void pagesInAddressOrderAreReadAsLongerPiecesWithTheSameResult() {
        Random rnd = new Random(SEED + 2);
        ForkJoinPool pool = new ForkJoinPool(2);
        try (Arena arena = Arena.ofShared()) {
            KvLayouts.PagedShape s = new KvLayouts.PagedShape(16, 1, 2, 64, 2);   // page size 1: 256-byte pages
            List<KvMemory> ks = new ArrayList<>();
            for (int l = 0; l < 2; l++) {
                MemorySegment m = arena.allocate(16 * 256, 64);
                for (long i = 0; i < m.byteSize(); i += 8) {
                    m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
                }
                ks.add(KvMemory.host(m));
            }
            // pages 3..12 in order, then 0 and 1: runs that continue each other, and a jump back
            int[] table = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 1};
            PageDigestPlan plan = PageDigestPlan.of(SlicePlan.of(KvLayouts.sglang(s, 0, new int[] {0, 1}, ks, null),
                    RequestBlocks.of(table, table.length, 4)));
            long literal = PageDigestReference.digest(plan, "reference");
            for (long chunk : new long[] {100, 256, 1000, 2560, Long.MAX_VALUE}) {
                for (boolean vector : loops()) {
                    for (boolean fromMemory : new boolean[] {false, true}) {
                        assertEquals(literal, PageDigestParallel.digest(plan, "cpu", pool, true, chunk, vector,
                                fromMemory), "chunk " + chunk + (vector ? ", Vector API loop" : ", java.util.zip.Adler32")
                                + (fromMemory ? ", from memory" : ""));
                    }
                }
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void theCpuBackendsParallelPathGivesTheLiteralDigest() {
        Random rnd = new Random(SEED + 1);
        try (Arena arena = Arena.ofShared()) {
            // 2 layers x K,V x 40 pages of 32 KiB: 5 MiB, past the backend's parallel threshold
            PageDigestPlan plan = randomPlan(arena, rnd, 48, 16, 8, 128, 2, 40 * 16 - 5);
            long literal = KvChecksums.reference().pageDigest(plan);
            assertEquals(literal, new FastCpuBackend(2).pageDigest(plan));
            assertEquals(literal, new FastCpuBackend(3).pageDigest(plan));
            assertEquals(literal, new FastCpuBackend(1).pageDigest(plan));
        }
        try (Arena confined = Arena.ofConfined()) {   // readable by its owner only: the calling thread
            PageDigestPlan plan = randomPlan(confined, rnd, 48, 16, 8, 128, 2, 40 * 16);
            assertEquals(KvChecksums.reference().pageDigest(plan), new FastCpuBackend(2).pageDigest(plan));
        }
    }
}
