package io.kvchecksum.internal;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Both CPU kernels' constant-stride loops against the definition written out term by term, on the cell sizes of real
 * models (32 pieces: bf16 head dim 128; 72 and 144: MLA fp8 and bf16; 64: fp32 head dim 128) and odd ones, with
 * contiguous and padded token strides and unaligned bases.
 */
class SliceKernelTest {
    private static final long SEED = 1313L;
    private static final ValueLayout.OfLong LE = ValueLayout.JAVA_LONG_UNALIGNED;

    private static long definition(MemorySegment s, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        return definition(s, base, stride, n, t0, cellPieces, pieceBase, regionPieces, false);
    }

    /** The definition term by term; {@code mixed}: each piece through {@code Definition.feistel3} first. */
    private static long definition(MemorySegment s, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces, boolean mixed) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            for (int p = 0; p < regionPieces; p++) {
                long j = (t0 + i) * cellPieces + pieceBase + p;
                long x = s.get(LE, base + i * stride + 8L * p);
                sum += (mixed ? io.kvchecksum.Definition.feistel3(x) : x) * (2 * j + 1);
            }
        }
        return sum;
    }

    /** 1 MiB of random words from {@code rnd}: every test's memory. */
    private static MemorySegment randomSegment(Arena arena, SplittableRandom rnd) {
        MemorySegment s = arena.allocate(1 << 20, 8);
        for (long o = 0; o < s.byteSize(); o += 8) {
            s.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
        }
        return s;
    }

    @Test
    void constantStrideLoopsMatchTheDefinition() {
        System.out.println("seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        List<SliceKernel> kernels = List.of(new ScalarSliceKernel(), new VectorSliceKernel(KernelSpecies.Streams.PREFERRED),
                new VectorSliceKernel(KernelSpecies.Streams.NARROW));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            int[] regions = {32, 72, 144, 64, 8, 16, 4, 12, 5, 1};
            int cases = 0;
            for (int rep = 0; rep < 40; rep++) {
                for (int region : regions) {
                    boolean kOnly = rnd.nextBoolean();
                    int other = kOnly ? 0 : regions[rnd.nextInt(regions.length)];
                    int cell = region + other;
                    int pieceBase = kOnly || rnd.nextBoolean() ? 0 : other;
                    long stride = 8L * region + (rnd.nextInt(3) == 0 ? 8L * rnd.nextInt(40) : 0);
                    int n = 1 + rnd.nextInt(20);
                    long base = rnd.nextInt(64) + (rnd.nextBoolean() ? 0 : 4096);
                    long t0 = rnd.nextInt(1 << 20);
                    long expected = definition(s, base, stride, n, t0, cell, pieceBase, region);
                    for (SliceKernel k : kernels) {
                        if (!k.affine(region, stride, cell)) {
                            continue;
                        }
                        assertEquals(expected, k.sumAffine(s, base, stride, n, t0, cell, pieceBase, region),
                                k.describe() + ": region " + region + " of " + cell + " (base piece " + pieceBase
                                        + "), stride " + stride + ", n " + n + ", base " + base + ", t0 " + t0);
                        cases++;
                    }
                }
            }
            System.out.println(cases + " kernel cases");
        }
    }

    @Test
    void oneHeadsKAndVTogetherMatchTheDefinition() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        List<SliceKernel> kernels = List.of(new ScalarSliceKernel(), new VectorSliceKernel(KernelSpecies.Streams.PREFERRED),
                new VectorSliceKernel(KernelSpecies.Streams.NARROW));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            // 16 and 32 pieces: one group of four vectors at 256 and 512 bits (the fused K+V loop), 8 and 64 not
            for (int pieces : new int[] {16, 32, 8, 64}) {
                for (int rep = 0; rep < 30; rep++) {
                    int n = 1 + rnd.nextInt(20);
                    long kStride = 8L * pieces * (1 + rnd.nextInt(8));
                    long vStride = 8L * pieces * (1 + rnd.nextInt(8));
                    long kBase = rnd.nextInt(64);
                    long vBase = 200_000 + rnd.nextInt(64);
                    long t0 = rnd.nextInt(1 << 20);
                    long expected = definition(s, kBase, kStride, n, t0, 2 * pieces, 0, pieces)
                            + definition(s, vBase, vStride, n, t0, 2 * pieces, pieces, pieces);
                    for (SliceKernel k : kernels) {
                        if (k.affine(pieces, kStride, 2 * pieces) && k.affine(pieces, vStride, 2 * pieces)) {
                            assertEquals(expected, k.headAffine(s, kBase, kStride, pieces, s, vBase, vStride, pieces, n, t0),
                                    k.describe() + ": " + pieces + " pieces, n " + n + ", strides " + kStride + "/" + vStride);
                        }
                    }
                }
            }
        }
    }

    @Test
    void everyHeadOfALayerInOneCallMatchesTheDefinition() {
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        System.out.println("headsAffine seed " + (SEED + 2));
        List<SliceKernel> kernels = List.of(new ScalarSliceKernel(), new VectorSliceKernel(KernelSpecies.Streams.PREFERRED),
                new VectorSliceKernel(KernelSpecies.Streams.NARROW));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            int cases = 0;
            for (int pieces : new int[] {16, 32, 64, 8, 72}) {
                for (int rep = 0; rep < 20; rep++) {
                    int heads = 1 + rnd.nextInt(8);
                    boolean kOnly = rnd.nextInt(4) == 0;
                    int cell = kOnly ? pieces : 2 * pieces;
                    // heads side by side (token-major rows) or a head's tokens together (head-major)
                    boolean sideBySide = rnd.nextBoolean();
                    int n = 1 + rnd.nextInt(16);
                    long headStride = sideBySide ? 8L * pieces : 8L * pieces * n;
                    long tokenStride = sideBySide ? 8L * pieces * heads : 8L * pieces;
                    long kBase = rnd.nextInt(64);
                    long vBase = 400_000 + rnd.nextInt(64);
                    long t0 = rnd.nextInt(1 << 20);
                    long[] expected = new long[heads];
                    for (int h = 0; h < heads; h++) {
                        expected[h] = definition(s, kBase + h * headStride, tokenStride, n, t0, cell, 0, pieces)
                                + (kOnly ? 0 : definition(s, vBase + h * headStride, tokenStride, n, t0, cell, pieces, pieces));
                    }
                    for (SliceKernel k : kernels) {
                        if (!k.affine(pieces, tokenStride, cell)) {
                            continue;
                        }
                        long[] out = new long[heads + 1];
                        out[heads] = 42;
                        boolean fromMemory = rnd.nextBoolean();
                        k.headsAffine(s, kBase, tokenStride, headStride, pieces, kOnly ? null : s, vBase, tokenStride,
                                headStride, kOnly ? 0 : pieces, heads, n, t0, fromMemory, out);
                        assertArrayEquals(expected, Arrays.copyOf(out, heads), k.describe() + ": " + heads
                                + " heads of " + pieces + " pieces" + (kOnly ? " (K only)" : "") + (fromMemory ? ", from memory" : "")
                                + ", n " + n + ", strides "
                                + tokenStride + "/" + headStride);
                        assertEquals(42, out[heads], "nothing written past the heads");
                        cases++;
                    }
                }
            }
            System.out.println(cases + " headsAffine cases, " + kernels.stream().map(SliceKernel::describe).toList());
            assertTrue(cases > 100, "too few cases ran: " + cases);
        }
    }

    /**
     * The prepared plans' in-cache call ({@code SliceKernel.headsInCache}: at 512 bits two tokens per iteration for
     * cells of four vectors, at 256 bits K then V for cells of eight) against the definition and {@code headsAffine}:
     * the cell sizes of real models and odd ones, even and odd token counts (an odd block takes {@code headsAffine}),
     * heads side by side and head-major, K alone and K with V, padded strides, unaligned bases.
     */
    @Test
    void everyHeadOfALayerInCacheMatchesTheDefinition() {
        SplittableRandom rnd = new SplittableRandom(SEED + 8);
        System.out.println("headsInCache seed " + (SEED + 8));
        List<SliceKernel> kernels = List.of(new ScalarSliceKernel(), new VectorSliceKernel(KernelSpecies.Streams.PREFERRED),
                new VectorSliceKernel(KernelSpecies.Streams.NARROW, true, false));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            int cases = 0;
            for (int pieces : new int[] {32, 16, 64, 8, 72}) {
                for (int rep = 0; rep < 24; rep++) {
                    int heads = 1 + rnd.nextInt(8);
                    boolean kOnly = rnd.nextInt(4) == 0;
                    int cell = kOnly ? pieces : 2 * pieces;
                    boolean sideBySide = rnd.nextBoolean();
                    int n = rep < 12 ? 2 * (1 + rnd.nextInt(8)) : 1 + rnd.nextInt(16);
                    long pad = rnd.nextInt(3) == 0 ? 8L * rnd.nextInt(9) : 0;
                    long headStride = sideBySide ? 8L * pieces : (8L * pieces + pad) * n;
                    long tokenStride = sideBySide ? 8L * pieces * heads + pad : 8L * pieces + pad;
                    long kBase = rnd.nextInt(64);
                    long vBase = 400_000 + rnd.nextInt(64);
                    long t0 = rnd.nextLong(1L << 40);
                    long[] expected = new long[heads];
                    for (int h = 0; h < heads; h++) {
                        expected[h] = definition(s, kBase + h * headStride, tokenStride, n, t0, cell, 0, pieces)
                                + (kOnly ? 0 : definition(s, vBase + h * headStride, tokenStride, n, t0, cell, pieces, pieces));
                    }
                    for (SliceKernel k : kernels) {
                        if (!k.affine(pieces, tokenStride, cell)) {
                            continue;
                        }
                        long[] out = new long[heads + 1];
                        out[heads] = 42;
                        k.headsInCache(s, kBase, tokenStride, headStride, pieces, kOnly ? null : s, vBase, tokenStride,
                                headStride, kOnly ? 0 : pieces, heads, n, t0, out);
                        String what = k.describe() + ": " + heads + " heads of " + pieces + " pieces"
                                + (kOnly ? " (K only)" : "") + ", n " + n + ", strides " + tokenStride + "/" + headStride;
                        assertArrayEquals(expected, Arrays.copyOf(out, heads), what);
                        assertEquals(42, out[heads], "nothing written past the heads: " + what);
                        cases++;
                    }
                }
            }
            System.out.println(cases + " headsInCache cases at " + KernelSpecies.S.vectorBitSize() + " bits");
            assertTrue(cases > 100, "too few cases ran: " + cases);
        }
    }

    /**
     * Two layers' streams in one call ({@code SliceKernel.streamPair}, MLA's latent rows in the prepared plans): the
     * factors' weighted sum of both streams' definitions, on MLA's cells (144 and 72 pieces), a cell of whole vector
     * groups and odd ones (a tail after the last group), large factors (the sums wrap), unaligned bases.
     */
    @Test
    void twoLayersStreamsInOneCallMatchTheDefinition() {
        SplittableRandom rnd = new SplittableRandom(SEED + 9);
        System.out.println("streamPair seed " + (SEED + 9));
        List<SliceKernel> kernels = List.of(new ScalarSliceKernel(), new VectorSliceKernel(KernelSpecies.Streams.PREFERRED),
                new VectorSliceKernel(KernelSpecies.Streams.NARROW));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            int cases = 0;
            for (int pieces : new int[] {144, 72, 64, 32, 5, 1, 13}) {
                for (int rep = 0; rep < 12; rep++) {
                    int n = 1 + rnd.nextInt(16);
                    long aBase = rnd.nextInt(64) + (rnd.nextBoolean() ? 0 : 4096);
                    long bBase = 400_000 + rnd.nextInt(64);
                    long fa = rnd.nextLong();
                    long fb = rep == 0 ? 1 : rnd.nextLong();
                    long t0 = rnd.nextLong(1L << 40);
                    long stride = 8L * pieces;
                    long expected = fa * definition(s, aBase, stride, n, t0, pieces, 0, pieces)
                            + fb * definition(s, bBase, stride, n, t0, pieces, 0, pieces);
                    for (SliceKernel k : kernels) {
                        assertEquals(expected, k.streamPair(s, aBase, fa, s, bBase, fb, n, t0, pieces),
                                k.describe() + (k.pairsStreams() ? " (one loop)" : "") + ": " + pieces + " pieces, n " + n
                                        + ", bases " + aBase + "/" + bBase + ", t0 " + t0);
                        cases++;
                    }
                }
            }
            System.out.println(cases + " streamPair cases at " + KernelSpecies.S.vectorBitSize() + " bits");
        }
    }

    /**
     * One position's row of side-by-side heads in one call ({@code SliceKernel.oneRowAffine}, Jlama's pages of one
     * position): every head count and cell size {@code oneRow} takes at this JVM's width (the Llama-3-8B TP1 row of 8
     * heads of 32 pieces among them at 256 bits), K alone and K with V, unaligned bases, large positions.
     */
    @Test
    void oneRowOfHeadsMatchesTheDefinition() {
        SplittableRandom rnd = new SplittableRandom(SEED + 7);
        System.out.println("one-row seed " + (SEED + 7));
        List<SliceKernel> kernels = List.of(new ScalarSliceKernel(), new VectorSliceKernel(KernelSpecies.Streams.PREFERRED),
                new VectorSliceKernel(KernelSpecies.Streams.NARROW));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            int cases = 0;
            for (int pieces : new int[] {16, 32, 64, 8, 72}) {
                for (int heads = 2; heads <= 8; heads++) {
                    for (boolean kOnly : new boolean[] {false, true}) {
                        int cell = kOnly ? pieces : 2 * pieces;
                        long tokenStride = 8L * pieces * heads;
                        long kBase = rnd.nextInt(64);
                        long vBase = 400_000 + rnd.nextInt(64);
                        long t0 = rnd.nextLong(1L << 40);
                        long[] expected = new long[heads];
                        for (int h = 0; h < heads; h++) {
                            expected[h] = definition(s, kBase + 8L * pieces * h, tokenStride, 1, t0, cell, 0, pieces)
                                    + (kOnly ? 0 : definition(s, vBase + 8L * pieces * h, tokenStride, 1, t0, cell, pieces, pieces));
                        }
                        for (SliceKernel k : kernels) {
                            if (!k.oneRow(heads, pieces, 8L * pieces, kOnly ? 0 : pieces, 8L * pieces)) {
                                continue;
                            }
                            long[] out = new long[heads + 1];
                            Arrays.fill(out, 7);
                            k.oneRowAffine(s, kBase, 8L * pieces, pieces, kOnly ? null : s, vBase, 8L * pieces,
                                    kOnly ? 0 : pieces, heads, t0, out);
                            String what = k.describe() + ": " + heads + " heads of " + pieces + " pieces"
                                    + (kOnly ? " (K only)" : "") + ", t0 " + t0;
                            assertArrayEquals(expected, Arrays.copyOf(out, heads), what);
                            assertEquals(7, out[heads], "nothing written past the heads: " + what);
                            cases++;
                        }
                    }
                }
            }
            System.out.println(cases + " one-row cases at " + KernelSpecies.S.vectorBitSize() + " bits");
            assertTrue(cases >= 8, "too few one-row cases ran: " + cases);
        }
    }

    /**
     * Side-by-side heads read a whole row per pass from memory ({@code VectorSliceKernel.rowsAffine}): every head count,
     * cell size and token count the row pass takes at this JVM's width, K alone and K with V, padded token strides,
     * against the definition and the head-by-head loops; the Llama-3-8B TP1 row (8 heads of 32 pieces, V beside) is
     * among them at 512 bits and at 256 (where 2 KiB rows take the 256-bit row pass), four heads of 16 pieces at 256.
     */
    @Test
    void rowsReadInOnePassMatchTheDefinition() {
        SplittableRandom rnd = new SplittableRandom(SEED + 5);
        System.out.println("row pass seed " + (SEED + 5));
        VectorSliceKernel rows = new VectorSliceKernel(KernelSpecies.Streams.PREFERRED, true);
        VectorSliceKernel headByHead = new VectorSliceKernel(KernelSpecies.Streams.PREFERRED, false);
        VectorSliceKernel narrowRows = new VectorSliceKernel(KernelSpecies.Streams.NARROW, true);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            int cases = 0;
            for (int pieces : new int[] {16, 32, 64, 8, 72}) {
                for (int heads = 2; heads <= 8; heads++) {
                    for (boolean kOnly : new boolean[] {false, true}) {
                        int cell = kOnly ? pieces : 2 * pieces;
                        if (!rows.rowsAffine(heads, pieces, 8L * pieces, kOnly ? 0 : pieces, 8L * pieces)) {
                            continue;
                        }
                        for (int n : new int[] {1, 2, 7, 16}) {
                            long tokenStride = 8L * pieces * heads + (rnd.nextBoolean() ? 0 : 64);
                            long kBase = rnd.nextInt(64);
                            long vBase = 400_000 + rnd.nextInt(64);
                            long t0 = rnd.nextLong(1L << 40);
                            long[] expected = new long[heads];
                            for (int h = 0; h < heads; h++) {
                                expected[h] = definition(s, kBase + 8L * pieces * h, tokenStride, n, t0, cell, 0, pieces)
                                        + (kOnly ? 0 : definition(s, vBase + 8L * pieces * h, tokenStride, n, t0, cell, pieces, pieces));
                            }
                            String what = heads + " heads of " + pieces + " pieces" + (kOnly ? " (K only)" : "") + ", n " + n
                                    + ", stride " + tokenStride + ", t0 " + t0;
                            for (VectorSliceKernel k : List.of(rows, headByHead, narrowRows)) {
                                long[] out = new long[heads + 1];
                                Arrays.fill(out, 7);
                                k.headsAffine(s, kBase, tokenStride, 8L * pieces, pieces, kOnly ? null : s, vBase, tokenStride,
                                        8L * pieces, kOnly ? 0 : pieces, heads, n, t0, true, out);
                                assertArrayEquals(expected, Arrays.copyOf(out, heads), what);
                                assertEquals(7, out[heads], "nothing written past the heads: " + what);
                            }
                            cases++;
                        }
                    }
                }
            }
            System.out.println(cases + " row-pass cases at " + KernelSpecies.S.vectorBitSize() + " bits");
            assertTrue(cases >= 8, "too few row-pass cases ran: " + cases);
            int bits = KernelSpecies.S.vectorBitSize();
            assertEquals(bits >= 256, rows.rowsAffine(8, 32, 256, 32, 256),
                    "Llama-3-8B TP1's row in one pass at 512 bits, and at 256 (AVX2) in 256-bit vectors");
            assertEquals(false, headByHead.rowsAffine(8, 32, 256, 32, 256));
        }
    }

    /**
     * The widths come from data only: the JVM's preferred width (set it with JVM flags, e.g. {@code -XX:UseAVX=2}, as
     * the pom's {@code vector-avx2} execution does), and 256-bit MLA streams and head rows from memory on AMD families 25
     * and 26 with more.
     */
    @Test
    void theWidthIsTheJvmsPreferredOneAndTheStreamsFollowTheCpuFamily() {
        int preferred = jdk.incubator.vector.LongVector.SPECIES_PREFERRED.vectorBitSize();
        String d = new VectorSliceKernel().describe();
        assertTrue(d.startsWith("Vector API " + preferred + "-bit, preferred width"), d);
        assertEquals(KernelSpecies.CHOSEN.why(), d.substring(d.indexOf(", ") + 2), d);
        List<String> zen4 = List.of("processor\t: 0", "vendor_id\t: AuthenticAMD", "cpu family\t: 25", "model\t\t: 17");
        List<String> zen3OnFamily25 = zen4;   // Zen 3 is family 25 too, but has no AVX-512: its preferred width is 256
        List<String> intel = List.of("processor\t: 0", "vendor_id\t: GenuineIntel", "cpu family\t: 6", "model\t\t: 143");
        List<String> zen5 = List.of("processor\t: 0", "vendor_id\t: AuthenticAMD", "cpu family\t: 26", "model\t\t: 2");
        assertEquals(KernelSpecies.Streams.NARROW, KernelSpecies.choose(512, zen4));
        assertEquals(KernelSpecies.Streams.PREFERRED, KernelSpecies.choose(256, zen3OnFamily25));
        assertEquals(KernelSpecies.Streams.PREFERRED, KernelSpecies.choose(512, intel));
        assertEquals(KernelSpecies.Streams.NARROW, KernelSpecies.choose(512, zen5));
        assertEquals(KernelSpecies.Streams.PREFERRED, KernelSpecies.choose(256, zen5));
        assertEquals(KernelSpecies.Streams.PREFERRED, KernelSpecies.choose(512, List.of()), "no /proc/cpuinfo");
        assertEquals(List.of(KernelSpecies.Streams.NARROW, KernelSpecies.Streams.PREFERRED), KernelSpecies.choices(512),
                "the choices the golden suites run at 512 bits");
        assertEquals(List.of(KernelSpecies.Streams.PREFERRED), KernelSpecies.choices(256));
        assertEquals(4, KernelSpecies.mixedStreams(intel), "the mixed mode's 2 KiB rows in four streams on Intel");
        assertEquals(1, KernelSpecies.mixedStreams(zen4));
        assertEquals(1, KernelSpecies.mixedStreams(zen5));
        assertEquals(1, KernelSpecies.mixedStreams(List.of()), "no /proc/cpuinfo");
        assertEquals(List.of(1, 4), KernelSpecies.mixedChoices(), "the mixed choices the golden suites run");
        assertTrue(KernelSpecies.streamHalves(512, zen4), "MLA's blocks in two halves with AVX-512's registers");
        assertTrue(KernelSpecies.streamHalves(256, intel), "and on Intel at 256 bits");
        assertFalse(KernelSpecies.streamHalves(256, zen3OnFamily25), "one stream at 256 bits elsewhere");
        assertFalse(KernelSpecies.streamHalves(256, List.of()), "no /proc/cpuinfo");
        assertTrue(new VectorSliceKernel(KernelSpecies.Streams.NARROW).describe()
                .endsWith("-bit, preferred width; MLA streams and 2 KiB head rows from memory 256-bit (AMD family 25 or 26)"));
    }

    @Test
    void theVectorKernelTakesTheCellsOfRealModelsWithoutOffsets() {
        VectorSliceKernel v = new VectorSliceKernel();
        // MLA rows back to back (fp8 576 bytes, bf16 1152): one stream
        assertEquals(true, v.affine(72, 576, 72));
        assertEquals(true, v.affine(144, 1152, 144));
        // bf16 head dim 128 with V elsewhere, heads side by side (token stride 8 heads x 256 bytes)
        assertEquals(true, v.affine(32, 2048, 64));
    }

    @Test
    void mixedKernelsMatchTheMixedDefinitionOnEveryPath() {
        // Constant stride (one and four vectors per token, eight at 256 bits, MLA streams), the fused K+V loop and the
        // offset table, each against the definition with the mixer applied term by term.
        System.out.println("seed " + (SEED + 2));
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        List<SliceKernel> kernels = List.of(new MixedScalarSliceKernel(), new MixedVectorSliceKernel());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            int[] regions = {32, 72, 144, 64, 16, 8, 4, 12, 5, 1};
            int cases = 0;
            for (int rep = 0; rep < 30; rep++) {
                for (int region : regions) {
                    boolean kOnly = rnd.nextBoolean();
                    int other = kOnly ? 0 : regions[rnd.nextInt(regions.length)];
                    int cell = region + other;
                    int pieceBase = kOnly || rnd.nextBoolean() ? 0 : other;
                    long stride = 8L * region + (rnd.nextInt(3) == 0 ? 8L * rnd.nextInt(40) : 0);
                    int n = 1 + rnd.nextInt(20);
                    long base = rnd.nextInt(64) + (rnd.nextBoolean() ? 0 : 4096);
                    long t0 = rnd.nextInt(1 << 20);
                    long expected = definition(s, base, stride, n, t0, cell, pieceBase, region, true);
                    long[] off = new long[n];
                    for (int i = 0; i < n; i++) {
                        off[i] = base + i * stride;
                    }
                    String what = ": region " + region + " of " + cell + " (base piece " + pieceBase + "), stride "
                            + stride + ", n " + n + ", base " + base + ", t0 " + t0;
                    for (SliceKernel k : kernels) {
                        assertEquals(expected, k.sum(s, off, 0, n, t0, cell, pieceBase, region), k.describe() + " offsets" + what);
                        if (k.affine(region, stride, cell)) {
                            assertEquals(expected, k.sumAffine(s, base, stride, n, t0, cell, pieceBase, region),
                                    k.describe() + what);
                            if (k instanceof MixedVectorSliceKernel) {
                                // the 256-bit (AVX2) order, whatever this machine's width
                                assertEquals(expected, MixedVectorSliceKernel.positionMajor(s, base, stride, n, t0, cell,
                                        pieceBase, region), "position-major" + what);
                            }
                        }
                        cases++;
                    }
                    if (!kOnly && pieceBase == 0 && other == region) {
                        long vBase = 300_000 + rnd.nextInt(64);
                        long both = expected + definition(s, vBase, stride, n, t0, cell, region, region, true);
                        for (SliceKernel k : kernels) {
                            if (k.affine(region, stride, cell)) {
                                assertEquals(both, k.headAffine(s, base, stride, region, s, vBase, stride, region, n, t0),
                                        k.describe() + " K+V" + what);
                            }
                        }
                    }
                }
            }
            System.out.println(cases + " mixed kernel cases");
        }
    }

    @Test
    void mixedRowsLoopMatchesTheMixedDefinition() {
        SplittableRandom rnd = new SplittableRandom(SEED + 3);
        List<SliceKernel> kernels = List.of(new MixedScalarSliceKernel(), new MixedVectorSliceKernel());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = randomSegment(arena, rnd);
            for (int rep = 0; rep < 40; rep++) {
                int region = new int[] {32, 16, 5, 72}[rep % 4];
                int heads = 1 + rnd.nextInt(8);
                int n = 1 + rnd.nextInt(16);
                int cell = 2 * region;
                long rowBytes = 8L * heads * region;
                long t0 = rnd.nextInt(1 << 20);
                long[] off = new long[n];
                for (int i = 0; i < n; i++) {
                    off[i] = rnd.nextInt(64) + i * (rowBytes + 8L * rnd.nextInt(4));
                }
                long[] expected = new long[heads];
                for (int h = 0; h < heads; h++) {
                    for (int i = 0; i < n; i++) {
                        expected[h] += definition(s, off[i] + 8L * h * region, 0, 1, t0 + i, cell, region, region, true);
                    }
                }
                for (SliceKernel k : kernels) {
                    long[] out = new long[heads];
                    k.sumRows(s, off, n, t0, cell, region, region, heads, new long[heads * region], new long[heads * region], out);
                    org.junit.jupiter.api.Assertions.assertArrayEquals(expected, out,
                            k.describe() + ": rows of " + heads + " x " + region + ", n " + n);
                }
            }
        }
    }
}
