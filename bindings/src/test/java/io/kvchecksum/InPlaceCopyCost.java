package io.kvchecksum;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Not a test: the staged (in-place) verifying copy against the same copy out of place, on the cpu backend, in one JVM,
 * interleaved: per round one out-of-place copy (vLLM flash NHD pages into HND pages of another buffer, the same block
 * ids) and one in-place copy (NHD read as HND in the same buffer: {@link CopyPlan#staged()}), after 2 s of warm-up;
 * medians and best of the rounds in GB/s of KV moved; then the compilation of each (the in-place one classifies the
 * staging units, {@code CopyStaging}, after the overlap check both run): the last 100 of 200 turns. Shape: Llama-3-8B-like, {@code layers} x 8 KV heads x 256-byte cells, pages of
 * 16, {@code pages} pages in a scattered table. Run from the repository after
 * {@code mvn -o -q -pl bindings test-compile -Dkvchecksum.skipCuda=true}:
 * {@code java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector
 * -cp bindings/target/classes:bindings/target/test-classes io.kvchecksum.InPlaceCopyCost SECONDS LAYERS PAGES...}
 * (e.g. {@code 10 2 16 2048}: 1 MiB in cache and 128 MiB from memory).
 *
 * <p>{@code compile ROUNDS LAYERS POOL PAGES...} times the compilations only, at real sizes without the memory: a
 * pool of {@code POOL} pages as device memory (never touched: {@link CopyPlan#compile} reads no byte), a request of
 * {@code PAGES} scattered pages copied NHD to HND into another pool (out of place) and onto itself (in place),
 * interleaved, {@code ROUNDS} turns of which the first half warm up; e.g. {@code compile 400 32 4096 1000 4000}:
 * Llama-3-8B's 32 layers x 8 KV heads x 256-byte cells, pages of 16, vLLM's in-place rearrangement of 1000 and 4000
 * received blocks; and the same in place from remote blocks of 8 (a block-size change: each local page's two remote
 * blocks, NHD, read as the HND page they lie in); and TP re-sharding in place (heads 0-3 copied onto heads 4-7 of the
 * same NHD pages: the page spans meet, no byte is shared); and the block-size change in place where every layer lies
 * side by side in each token's row ({@code [pages][tokens][layers][K|V][heads][cell]} into
 * {@code [pages][tokens][layers][heads][K|V][cell]}, each page's two remote blocks swapped: staged since each layer's
 * units are shown apart from the others' by residues modulo the row; before, refused as not shown stageable).
 */
public final class InPlaceCopyCost {
    private static final int HEADS = 8;
    private static final int CELL = 256;
    private static final int PAGE = 16;

    private InPlaceCopyCost() {
    }

    /**
     * Runs each size.
     *
     * @param args seconds per size, layers, then page counts
     */
    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("compile")) {
            int rounds = Integer.parseInt(args[1]);
            int layers = Integer.parseInt(args[2]);
            int pool = Integer.parseInt(args[3]);
            for (int i = 4; i < args.length; i++) {
                compileOnly(rounds, layers, pool, Integer.parseInt(args[i]));
            }
            return;
        }
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        int layers = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        List<Integer> sizes = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            sizes.add(Integer.parseInt(args[i]));
        }
        if (sizes.isEmpty()) {
            sizes = List.of(16, 2048);
        }
        for (int pages : sizes) {
            run(seconds, layers, pages);
        }
    }

    private static KvCacheGroup group(KvMemory m, int layers, int pages, boolean hnd) {
        return group(m, layers, pages, hnd, PAGE);
    }

    private static KvCacheGroup group(KvMemory m, int layers, int pages, boolean hnd, int pageSize) {
        return InPlaceCopies.flashOrHnd(m, layers, HEADS, CELL, pageSize, pages, hnd);
    }

    private static void run(long seconds, int layers, int pages) {
        long bytes = 2L * layers * pages * PAGE * HEADS * CELL;
        int[] table = new int[pages];
        for (int i = 0; i < pages; i++) {
            table[i] = (int) ((i * 2654435761L + 7) % pages);   // scattered; a permutation when pages is a power of two
        }
        if (Arrays.stream(table).distinct().count() != pages) {
            throw new IllegalArgumentException("pages must be a power of two");
        }
        RequestBlocks q = RequestBlocks.of(table, (long) pages * PAGE, PAGE);
        KvChecksum cpu = KvChecksums.cpu();
        try (Arena arena = Arena.ofShared()) {
            KvMemory a = KvMemory.host(arena.allocate(bytes, 64).fill((byte) 3));
            KvMemory b = KvMemory.host(arena.allocate(bytes, 64).fill((byte) 5));
            KvMemory c = KvMemory.host(arena.allocate(bytes, 64).fill((byte) 7));
            CopyPlan apart = cpu.compileCopy(group(a, layers, pages, false), q, group(b, layers, pages, true), q,
                    ChecksumSpec.STANDARD);
            CopyPlan inPlace = cpu.compileCopy(group(c, layers, pages, false), q, group(c, layers, pages, true), q,
                    ChecksumSpec.STANDARD);
            if (apart.overlaps() || !inPlace.staged()) {
                throw new IllegalStateException("shapes");
            }
            long warm = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < warm) {
                cpu.copyAndChecksum(apart);
                cpu.copyAndChecksum(inPlace);
            }
            List<Long> ta = new ArrayList<>();
            List<Long> tb = new ArrayList<>();
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            while (System.nanoTime() < end) {
                long t0 = System.nanoTime();
                cpu.copyAndChecksum(apart);
                long t1 = System.nanoTime();
                cpu.copyAndChecksum(inPlace);
                long t2 = System.nanoTime();
                ta.add(t1 - t0);
                tb.add(t2 - t1);
            }
            List<Long> ca = new ArrayList<>();
            List<Long> cb = new ArrayList<>();
            for (int i = 0; i < 200; i++) {   // the first half warms the compiler up
                long t0 = System.nanoTime();
                CopyPlan.compile(group(a, layers, pages, false), q, group(b, layers, pages, true), q, ChecksumSpec.STANDARD);
                long t1 = System.nanoTime();
                CopyPlan.compile(group(c, layers, pages, false), q, group(c, layers, pages, true), q, ChecksumSpec.STANDARD);
                long t2 = System.nanoTime();
                if (i >= 100) {
                    ca.add(t1 - t0);
                    cb.add(t2 - t1);
                }
            }
            System.out.printf("%d layers x %d heads x %d B, %d pages of %d (%.1f MiB), %d rounds: out of place median %.2f GB/s"
                            + " (best %.2f), in place (staged) median %.2f GB/s (best %.2f), in place / out of place %.2f (medians);"
                            + " compile median %.0f us out of place, %.0f us in place%n",
                    layers, HEADS, CELL, pages, PAGE, bytes / 1048576.0, ta.size(), bytes / (double) median(ta),
                    bytes / (double) best(ta), bytes / (double) median(tb), bytes / (double) best(tb),
                    (double) median(ta) / median(tb), median(ca) / 1e3, median(cb) / 1e3);
        }
    }

    private static void compileOnly(int rounds, int layers, int pool, int pages) {
        long bytes = 2L * layers * pool * PAGE * HEADS * CELL;
        int[] table = new int[pages];
        for (int i = 0; i < pages; i++) {
            table[i] = (int) ((i * 2654435761L + 7) % pool);
        }
        if (Arrays.stream(table).distinct().count() != pages) {
            throw new IllegalArgumentException("the pool must be a power of two, at least the pages");
        }
        RequestBlocks q = RequestBlocks.of(table, (long) pages * PAGE - 5, PAGE);
        KvMemory a = KvMemory.device(1L << 40, bytes);
        KvMemory b = KvMemory.device(1L << 41, bytes);
        // vLLM's block-size change in place: remote NHD blocks of PAGE/2 (block j of local page p is remote block 2p+j)
        // read as the local HND pages they lie in
        int[] halves = new int[2 * pages];
        for (int i = 0; i < halves.length; i++) {
            halves[i] = 2 * table[i / 2] + i % 2;
        }
        RequestBlocks hq = RequestBlocks.of(halves, (long) pages * PAGE - 5, PAGE);
        List<Long> ca = new ArrayList<>();
        List<Long> cb = new ArrayList<>();
        List<Long> cc = new ArrayList<>();
        List<Long> cd = new ArrayList<>();
        List<Long> ce = new ArrayList<>();
        boolean tpOverlaps = false;
        boolean rowsStaged = false;
        // the same remote blocks rearranged in place where every layer lies side by side in each token's row
        int[] swapped = new int[2 * pages];
        for (int i = 0; i < swapped.length; i++) {
            swapped[i] = 2 * table[i / 2] + 1 - i % 2;
        }
        RequestBlocks sq = RequestBlocks.of(swapped, (long) pages * PAGE - 5, PAGE);
        for (int i = 0; i < rounds; i++) {   // the first half warms the compiler up
            long t0 = System.nanoTime();
            CopyPlan apart = CopyPlan.compile(group(a, layers, pool, false), q, group(b, layers, pool, true), q,
                    ChecksumSpec.STANDARD);
            long t1 = System.nanoTime();
            CopyPlan inPlace = CopyPlan.compile(group(a, layers, pool, false), q, group(a, layers, pool, true), q,
                    ChecksumSpec.STANDARD);
            long t2 = System.nanoTime();
            CopyPlan blocks = CopyPlan.compile(group(a, layers, 2 * pool, false, PAGE / 2), hq, group(a, layers, pool, true),
                    q, ChecksumSpec.STANDARD);
            long t3 = System.nanoTime();
            CopyPlan tp = CopyPlan.compile(heads(a, layers, pool, 0), q, heads(a, layers, pool, HEADS / 2), q,
                    ChecksumSpec.STANDARD);
            long t4 = System.nanoTime();
            CopyPlan rows = CopyPlan.compile(rows(a, layers, 2 * pool, PAGE / 2, true), sq,
                    rows(a, layers, pool, PAGE, false), q, ChecksumSpec.STANDARD);
            long t5 = System.nanoTime();
            tpOverlaps = tp.overlaps();
            rowsStaged = rows.staged();
            if (apart.overlaps() || !inPlace.staged() || !blocks.staged()) {
                throw new IllegalStateException("shapes");
            }
            if (i >= rounds / 2) {
                ca.add(t1 - t0);
                cb.add(t2 - t1);
                cc.add(t3 - t2);
                cd.add(t4 - t3);
                ce.add(t5 - t4);
            }
        }
        System.out.printf("compile only: %d layers x %d heads x %d B, pool of %d pages of %d, %d pages copied NHD to HND"
                        + " (%d rounds): out of place median %.0f us (best %.0f), in place median %.0f us (best %.0f),"
                        + " in place / out of place %.2f (medians); in place from remote blocks of %d median %.0f us"
                        + " (best %.0f)%n", layers, HEADS, CELL, pool, PAGE, pages, ca.size(),
                median(ca) / 1e3, best(ca) / 1e3, median(cb) / 1e3, best(cb) / 1e3, (double) median(cb) / median(ca),
                PAGE / 2, median(cc) / 1e3, best(cc) / 1e3);
        System.out.printf("  TP in place, heads 0-%d onto heads %d-%d of the same NHD pages: median %.0f us (best %.0f),"
                + " overlaps %s%n", HEADS / 2 - 1, HEADS / 2, HEADS - 1, median(cd) / 1e3, best(cd) / 1e3, tpOverlaps);
        System.out.printf("  layers side by side in each token's row, in place from remote blocks of %d (swapped within"
                + " each page, each layer's K heads then V heads rearranged to each head's K and V side by side): median"
                + " %.0f us (best %.0f), staged %s%n", PAGE / 2, median(ce) / 1e3, best(ce) / 1e3, rowsStaged);
    }

    /**
     * Layers side by side in each token's row ({@code [pages][tokens][layers][...]}): per layer K heads then V heads
     * ({@code split}), else each head's K and V side by side.
     */
    private static KvCacheGroup rows(KvMemory m, int layers, int pages, int pageSize, boolean split) {
        long seg = 2L * HEADS * CELL;
        long row = layers * seg;
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            long at = l * seg;
            ls.add(split
                    ? CacheLayer.of(l, 0, HEADS, new KvRegion(m, at, pageSize * row, row, CELL, CELL),
                            new KvRegion(m, at + (long) HEADS * CELL, pageSize * row, row, CELL, CELL))
                    : CacheLayer.of(l, 0, HEADS, new KvRegion(m, at, pageSize * row, row, 2L * CELL, CELL),
                            new KvRegion(m, at + CELL, pageSize * row, row, 2L * CELL, CELL)));
        }
        return KvCacheGroup.of(pageSize, pages, ls);
    }

    /** The NHD pool's first half of heads as global heads 0.. at pool heads {@code at ..}: one TP rank's range. */
    private static KvCacheGroup heads(KvMemory m, int layers, int pages, int at) {
        long page = (long) PAGE * HEADS * CELL;
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            long k = l * 2 * pages * page + (long) at * CELL;
            ls.add(CacheLayer.of(l, 0, HEADS / 2, new KvRegion(m, k, page, (long) HEADS * CELL, CELL, CELL),
                    new KvRegion(m, k + pages * page, page, (long) HEADS * CELL, CELL, CELL)));
        }
        return KvCacheGroup.of(PAGE, pages, ls);
    }

    private static long median(List<Long> v) {
        long[] s = v.stream().mapToLong(Long::longValue).sorted().toArray();
        return s[s.length / 2];
    }

    private static long best(List<Long> v) {
        return v.stream().mapToLong(Long::longValue).min().orElseThrow();
    }
}
