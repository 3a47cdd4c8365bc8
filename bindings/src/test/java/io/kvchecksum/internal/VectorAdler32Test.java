package io.kvchecksum.internal;

import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.Adler32;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The Vector API Adler-32 of the page digest against {@code java.util.zip.Adler32} over the same bytes: random
 * streams of pieces of every length around the vector size, zlib's NMAX (5552) and the loop's own fold, all-0xFF
 * bytes (the largest sums, where a lane would overflow first), stretches that start inside a run, and scattered pages
 * of whole blocks, which the loop reads two at a time (four at a time from memory: both ways checked).
 */
class VectorAdler32Test {
    private static final long SEED = 0xAD1E_5552L;

    @BeforeAll
    static void needsTheVectorModule() {
        Assumptions.assumeTrue(PageDigestParallel.VECTOR, "the JVM lacks jdk.incubator.vector (or a usable width)");
        System.out.println("VectorAdler32Test seed 0x" + Long.toHexString(SEED) + ", " + VectorAdler32.vectorBytes()
                + "-byte vectors");
    }

    /** Runs of the given lengths, each in its own place of one segment filled from {@code rnd} (or 0xFF). */
    private static List<PageDigestPlan.Run> runs(Arena arena, Random rnd, long[] lengths, boolean ones, boolean adjacent) {
        long total = 0;
        long[] gaps = new long[lengths.length];
        for (int i = 0; i < lengths.length; i++) {
            gaps[i] = adjacent ? 0 : 64 + rnd.nextInt(64);
            total += lengths[i] + gaps[i];
        }
        MemorySegment m = arena.allocate(Math.max(1, total), 64);
        if (ones) {
            m.fill((byte) 0xFF);
        } else {
            byte[] b = new byte[(int) m.byteSize()];
            rnd.nextBytes(b);
            MemorySegment.copy(MemorySegment.ofArray(b), 0, m, 0, b.length);
        }
        List<PageDigestPlan.Run> out = new ArrayList<>();
        long at = 0;
        KvMemory host = KvMemory.host(m);
        for (int i = 0; i < lengths.length; i++) {
            out.add(new PageDigestPlan.Run(host, at, lengths[i]));
            at += lengths[i] + gaps[i];
        }
        // a stream's pages come in table order, not address order: reverse every other pair
        for (int i = 0; i + 1 < out.size() && !adjacent; i += 4) {
            java.util.Collections.swap(out, i, i + 1);
        }
        return out;
    }

    private static long zlib(List<PageDigestPlan.Run> runs, int run, long skip, long length) {
        Adler32 a = new Adler32();
        for (int i = run; length > 0; i++) {
            PageDigestPlan.Run r = runs.get(i);
            long n = Math.min(r.length() - skip, length);
            a.update(((KvMemory.Host) r.memory()).segment().asSlice(r.offset() + skip, n).asByteBuffer());
            length -= n;
            skip = 0;
        }
        return a.getValue();
    }

    private static long total(List<PageDigestPlan.Run> runs) {
        return runs.stream().mapToLong(PageDigestPlan.Run::length).sum();
    }

    private static void check(List<PageDigestPlan.Run> runs, String what) {
        long t = total(runs);
        long expected = zlib(runs, 0, 0, t);
        assertEquals(expected, VectorAdler32.digest(runs, 0, 0, t), what);
        assertEquals(expected, VectorAdler32.digest(runs, 0, 0, t, true), what + ", from memory (four at a time)");
    }

    @Test
    void singlePiecesOfEveryLengthAroundTheEdges() {
        Random rnd = new Random(SEED);
        int v = VectorAdler32.vectorBytes();
        long fold = (long) VectorAdler32.FOLD * v;
        long[] edges = {0, 1, 2, 3, 4, 5, 7, 8, v - 1, v, v + 1, 2 * v - 1, 16L * v - 1, 16L * v, 16L * v + 1,
                5551, 5552, 5553, 2 * 5552 + 1, fold - 1, fold, fold + 1, 2 * fold + v + 3, 3 * fold};
        try (Arena arena = Arena.ofConfined()) {
            for (boolean ones : new boolean[] {false, true}) {
                for (long n : edges) {
                    check(runs(arena, rnd, new long[] {n}, ones, true), (ones ? "0xFF " : "random ") + n + " bytes");
                }
            }
        }
    }

    @Test
    void scatteredPagesOfManySizes() {
        Random rnd = new Random(SEED + 1);
        try (Arena arena = Arena.ofConfined()) {
            // 1024 to 6144: whole blocks read in pairs, with one to six blocks a page at 512 and 256 bits (3072 and 6144
            // do not divide the place sums' 16 blocks, so pairs and single blocks alternate)
            // from memory, pages of one to four blocks go four at a time (512, 1536: blocks at 256 bits only)
            for (int page : new int[] {1, 63, 64, 65, 96, 160, 512, 1024, 1536, 2048, 2050, 3072, 4096, 5552, 6144,
                    32768}) {
                for (boolean ones : new boolean[] {false, true}) {
                    int pages = (int) Math.min(600, Math.max(3, (3L << 20) / page));
                    long[] lengths = new long[pages];
                    java.util.Arrays.fill(lengths, page);
                    check(runs(arena, rnd, lengths, ones, false), (ones ? "0xFF " : "random ") + pages + " pages of " + page);
                    check(runs(arena, rnd, lengths, ones, true), "adjacent " + pages + " pages of " + page);
                }
            }
        }
    }

    @Test
    void randomPiecesAndStretchesStartingInsideARun() {
        Random rnd = new Random(SEED + 2);
        try (Arena arena = Arena.ofConfined()) {
            for (int trial = 0; trial < 200; trial++) {
                int n = 1 + rnd.nextInt(40);
                long[] lengths = new long[n];
                for (int i = 0; i < n; i++) {
                    lengths[i] = rnd.nextInt(8) == 0 ? rnd.nextInt(70_000) : rnd.nextInt(3000);
                }
                List<PageDigestPlan.Run> runs = runs(arena, rnd, lengths, trial % 5 == 0, rnd.nextBoolean());
                long t = total(runs);
                int run = rnd.nextInt(n);
                long skip = runs.get(run).length() == 0 ? 0 : rnd.nextLong(runs.get(run).length());
                long rest = t - runs.subList(0, run).stream().mapToLong(PageDigestPlan.Run::length).sum() - skip;
                long length = rest == 0 ? 0 : 1 + rnd.nextLong(rest);
                long expected = zlib(runs, run, skip, length);
                assertEquals(expected, VectorAdler32.digest(runs, run, skip, length),
                        "trial " + trial + ": run " + run + " + " + skip + ", " + length + " bytes");
                assertEquals(expected, VectorAdler32.digest(runs, run, skip, length, true),
                        "trial " + trial + ": run " + run + " + " + skip + ", " + length + " bytes, from memory");
            }
        }
    }

    @Test
    void longPiecesFromMemoryStartingAndEndingAnywhere() {
        // pages in address order past 1 MiB: read from memory as groups of four stretches, the rest by the in-cache
        // loop; stretches that start inside a run and end short of a group, with scattered pages around them
        Random rnd = new Random(SEED + 3);
        try (Arena arena = Arena.ofConfined()) {
            for (int trial = 0; trial < 12; trial++) {
                int n = 600 + rnd.nextInt(300);
                long[] lengths = new long[n];
                for (int i = 0; i < n; i++) {
                    lengths[i] = trial % 3 == 0 ? 2048 : trial % 3 == 1 ? 1 + rnd.nextInt(9000) : 4096 + 64 * rnd.nextInt(3);
                }
                List<PageDigestPlan.Run> runs = runs(arena, rnd, lengths, trial % 4 == 3, true);
                if (trial >= 6) {   // a scattered stretch in the middle: groups of four, then a piece again
                    java.util.Collections.swap(runs, n / 2, n / 2 + 7);
                }
                long t = total(runs);
                int run = rnd.nextInt(4);
                long skip = rnd.nextLong(runs.get(run).length());
                long rest = t - runs.subList(0, run).stream().mapToLong(PageDigestPlan.Run::length).sum() - skip;
                for (long length : new long[] {rest, rest - 1 - rnd.nextInt(70_000),
                        Math.min(rest, (1L << 20) + rnd.nextInt(70_000))}) {
                    assertEquals(zlib(runs, run, skip, length), VectorAdler32.digest(runs, run, skip, length, true),
                            "trial " + trial + ": run " + run + " + " + skip + ", " + length + " bytes, from memory");
                }
            }
        }
    }
}
