package io.kvchecksum.internal;

import io.kvchecksum.Definition;
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
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The mixed kernel's row pass ({@code MixedVectorSliceKernel.rowsAffine}: side-by-side heads from memory, a token's
 * row of heads per pass) against the mixed definition written out term by term and against the head-by-head loops it
 * replaces from memory: head counts 2-8, cells of real models (32 pieces: bf16 head dim 128; 16, 64) and one of a
 * single vector, K alone and K with V, padded token strides, unaligned bases, large first tokens.
 */
class MixedRowPassTest {
    private static final long SEED = 2828L;
    private static final ValueLayout.OfLong LE = ValueLayout.JAVA_LONG_UNALIGNED;

    /** {@code sum f(x) * (2*((t0+i)*cell + pieceBase + p) + 1)} with {@code f} = feistel3, term by term. */
    private static long definition(MemorySegment s, long base, long stride, int n, long t0, int cellPieces, int pieceBase,
            int regionPieces) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            for (int p = 0; p < regionPieces; p++) {
                long j = (t0 + i) * cellPieces + pieceBase + p;
                sum += Definition.feistel3(s.get(LE, base + i * stride + 8L * p)) * (2 * j + 1);
            }
        }
        return sum;
    }

    /**
     * Heads that are not side by side (one head: MLA's 72 and 144 pieces; head-major heads) from memory: at 256 bits
     * each head's rows go through the row pass instead of the position-major loop; at every width against the
     * definition.
     */
    /**
     * Each head's mixed slice sum by the definition: {@code heads} regions of {@code pieces} pieces {@code headStride}
     * bytes apart, K from {@code kBase} and V from {@code vBase} ({@code -1}: no V), a cell of K's pieces then V's.
     */
    private static long[] expectedHeads(MemorySegment s, long kBase, long vBase, long headStride, long tokenStride, int n,
            long t0, int pieces, int heads) {
        int cell = vBase < 0 ? pieces : 2 * pieces;
        long[] expected = new long[heads];
        for (int h = 0; h < heads; h++) {
            expected[h] = definition(s, kBase + h * headStride, tokenStride, n, t0, cell, 0, pieces)
                    + (vBase < 0 ? 0 : definition(s, vBase + h * headStride, tokenStride, n, t0, cell, pieces, pieces));
        }
        return expected;
    }

    /**
     * Runs {@code k.headsAffine} over {@code expected.length} heads into an array one longer, filled with 7: asserts
     * each head's sum and that nothing was written past the heads.
     */
    private static void assertHeads(long[] expected, MixedVectorSliceKernel k, MemorySegment s, long kBase, long vBase,
            boolean kOnly, long headStride, long tokenStride, int pieces, int n, long t0, boolean fromMemory, String what) {
        int heads = expected.length;
        long[] out = new long[heads + 1];
        Arrays.fill(out, 7);
        k.headsAffine(s, kBase, tokenStride, headStride, pieces, kOnly ? null : s, vBase, tokenStride, headStride,
                kOnly ? 0 : pieces, heads, n, t0, fromMemory, out);
        assertArrayEquals(expected, Arrays.copyOf(out, heads), what);
        assertEquals(7, out[heads], "nothing written past the heads: " + what);
    }

    @Test
    void oneHeadAtATimeFromMemoryMatchesTheMixedDefinition() {
        assumeTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(), "no jdk.incubator.vector module");
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        MixedVectorSliceKernel k = new MixedVectorSliceKernel();
        int lanes = KernelSpecies.S.length();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(1 << 20, 8);
            for (long o = 0; o < s.byteSize(); o += 8) {
                s.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            int cases = 0;
            for (int pieces : new int[] {144, 72, 32, lanes}) {
                if (pieces % lanes != 0) {
                    continue;
                }
                for (int heads : new int[] {1, 2, 3}) {
                    for (boolean kOnly : new boolean[] {true, false}) {
                        for (int n : new int[] {1, 5, 16, 64}) {
                            long tokenStride = 8L * pieces + (rnd.nextBoolean() ? 0 : 8L * lanes);
                            long headStride = tokenStride * n + 64;
                            long kBase = rnd.nextInt(64);
                            long vBase = 500_000 + rnd.nextInt(64);
                            long t0 = rnd.nextLong(1L << 40);
                            long[] expected = expectedHeads(s, kBase, kOnly ? -1 : vBase, headStride, tokenStride, n,
                                    t0, pieces, heads);
                            String what = heads + " heads of " + pieces + " pieces" + (kOnly ? " (K only)" : "") + ", n "
                                    + n + ", stride " + tokenStride + ", t0 " + t0;
                            assertHeads(expected, k, s, kBase, vBase, kOnly, headStride, tokenStride, pieces, n, t0, true,
                                    what);
                            cases++;
                        }
                    }
                }
            }
            System.out.println(cases + " mixed one-head-at-a-time cases at " + KernelSpecies.S.vectorBitSize() + " bits");
        }
    }

    /**
     * 2 KiB rows at 512 bits ({@code MixedVectorSliceKernel.rowRegs}: sums in registers; {@code rowTwo}: the
     * block's two halves of tokens in lockstep, an odd last token alone; {@code rowFour}: its four quarters, the last
     * {@code n % 4} tokens through {@code rowTwo}; the shipped choice and each of them, on blocks of every length mod 4): against
     * the definition and the scratch row pass, K alone and K with V, every unit split of the row (8 heads of 32 pieces, 4 of 64, 2 of 128),
     * padded strides, unaligned bases, large first tokens; and rows it does not take go through the scratch.
     */
    @Test
    void rowsInRegistersMatchTheMixedDefinition() {
        assumeTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(), "no jdk.incubator.vector module");
        assumeTrue(MixedVectorSliceKernel.regsRow(8, 32, 64), "no 512-bit vectors with AVX-512's registers");
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        MixedVectorSliceKernel regs = new MixedVectorSliceKernel();
        MixedVectorSliceKernel one = new MixedVectorSliceKernel(true, true, 1);
        MixedVectorSliceKernel two = new MixedVectorSliceKernel(true, true, 2);
        MixedVectorSliceKernel four = new MixedVectorSliceKernel(true, true, 4);
        MixedVectorSliceKernel scratch = new MixedVectorSliceKernel(true, false);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(1 << 20, 8);
            for (long o = 0; o < s.byteSize(); o += 8) {
                s.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            int cases = 0;
            for (int heads : new int[] {8, 4, 2}) {
                int pieces = 256 / heads;
                for (boolean kOnly : new boolean[] {false, true}) {
                    int cell = kOnly ? pieces : 2 * pieces;
                    assertTrue(MixedVectorSliceKernel.regsRow(heads, pieces, cell));
                    for (int n : new int[] {1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 33, 64, 66}) {
                        long tokenStride = 8L * pieces * heads + (rnd.nextBoolean() ? 0 : 8L * rnd.nextInt(1, 40));
                        long kBase = 8L * rnd.nextInt(8) + rnd.nextInt(8);
                        long vBase = 500_000 + rnd.nextInt(64);
                        long t0 = rnd.nextLong(1L << 40);
                        long[] expected = expectedHeads(s, kBase, kOnly ? -1 : vBase, 8L * pieces, tokenStride, n, t0,
                                pieces, heads);
                        String what = heads + " heads of " + pieces + " pieces" + (kOnly ? " (K only)" : "") + ", n " + n
                                + ", stride " + tokenStride + ", t0 " + t0;
                        for (MixedVectorSliceKernel k : List.of(regs, one, two, four, scratch)) {
                            assertHeads(expected, k, s, kBase, vBase, kOnly, 8L * pieces, tokenStride, pieces, n, t0,
                                    true, what);
                        }
                        cases++;
                    }
                }
            }
            System.out.println(cases + " mixed rows-in-registers cases");
            // not a 2 KiB row, a region not whole units, or a cell not a power of two vectors: the scratch row pass
            assertFalse(MixedVectorSliceKernel.regsRow(4, 32, 64));
            assertFalse(MixedVectorSliceKernel.regsRow(16, 16, 32));
            assertFalse(MixedVectorSliceKernel.regsRow(8, 32, 96));
        }
    }

    @Test
    void rowsOfSideBySideHeadsMatchTheMixedDefinition() {
        // the pom's scalar-loops run (no jdk.incubator.vector) runs it only when named with -Dtest
        assumeTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(), "no jdk.incubator.vector module");
        System.out.println("mixed row pass seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        MixedVectorSliceKernel rows = new MixedVectorSliceKernel();
        MixedVectorSliceKernel one = new MixedVectorSliceKernel(true, true, 1);
        MixedVectorSliceKernel two = new MixedVectorSliceKernel(true, true, 2);
        MixedVectorSliceKernel four = new MixedVectorSliceKernel(true, true, 4);
        MixedVectorSliceKernel headByHead = new MixedVectorSliceKernel(false);
        int lanes = KernelSpecies.S.length();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(1 << 20, 8);
            for (long o = 0; o < s.byteSize(); o += 8) {
                s.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            int cases = 0;
            for (int pieces : new int[] {32, 16, 64, lanes}) {
                for (int heads = 2; heads <= 8; heads++) {
                    for (boolean kOnly : new boolean[] {false, true}) {
                        assertTrue(rows.rowsAffine(heads, pieces, 8L * pieces, kOnly ? 0 : pieces, 8L * pieces));
                        assertFalse(headByHead.rowsAffine(heads, pieces, 8L * pieces, kOnly ? 0 : pieces, 8L * pieces));
                        for (int n : new int[] {1, 2, 3, 6, 7, 16}) {
                            long tokenStride = 8L * pieces * heads + (rnd.nextBoolean() ? 0 : 64);
                            long kBase = rnd.nextInt(64);
                            long vBase = 400_000 + rnd.nextInt(64);
                            long t0 = rnd.nextLong(1L << 40);
                            long[] expected = expectedHeads(s, kBase, kOnly ? -1 : vBase, 8L * pieces, tokenStride, n,
                                    t0, pieces, heads);
                            String what = heads + " heads of " + pieces + " pieces" + (kOnly ? " (K only)" : "") + ", n " + n
                                    + ", stride " + tokenStride + ", t0 " + t0;
                            for (MixedVectorSliceKernel k : List.of(rows, one, two, four, headByHead)) {
                                for (boolean fromMemory : new boolean[] {true, false}) {
                                    assertHeads(expected, k, s, kBase, vBase, kOnly, 8L * pieces, tokenStride, pieces, n,
                                            t0, fromMemory, what);
                                }
                            }
                            cases++;
                        }
                    }
                }
            }
            System.out.println(cases + " mixed row-pass cases at " + KernelSpecies.S.vectorBitSize() + " bits");
            // not whole vectors per head, one head, or heads not side by side: head by head
            assertFalse(rows.rowsAffine(8, lanes + 1, 8L * (lanes + 1), 0, 0));
            assertFalse(rows.rowsAffine(1, 32, 256, 32, 256));
            assertFalse(rows.rowsAffine(8, 32, 512, 32, 256));
        }
    }
}
