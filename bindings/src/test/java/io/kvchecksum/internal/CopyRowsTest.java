package io.kvchecksum.internal;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The verifying copy's rows loops ({@link CopyLoop#copyRows}: the Vector API's row pass in units, the multiply
 * loop and the head-by-head loops, and the backend's choice among them) against the scalar loop head by head, sum and destination bytes: head counts 1-16, cells of real
 * models (32 pieces: bf16 head dim 128; 16, 64, 72) and single vectors, K alone and K with V, head factors of any
 * value, a layer's (stepping by 2) or stepping by any constant, token-major and
 * head-major sides (vLLM flash into FlashInfer HND), padded strides, unaligned bases, large first tokens. Runs at the
 * JVM's preferred width and, in the {@code vector-avx2} execution, at 256 bits.
 */
class CopyRowsTest {
    private static final long SEED = 2929L;

    @Test
    void rowsMatchTheScalarCopyHeadByHead() {
        assumeTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(), "no jdk.incubator.vector module");
        SplittableRandom rnd = new SplittableRandom(SEED);
        SplittableRandom kinds = new SplittableRandom(SEED + 7);
        int lanes = KernelSpecies.S.length();
        CopyLoop scalar = new ScalarCopyLoop(false);
        CopyLoop[] loops = {new VectorCopyLoop(VectorCopyLoop.Rows.UNITS), new VectorCopyLoop(VectorCopyLoop.Rows.MULTIPLY),
                new VectorCopyLoop(), new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, false),
                new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, false, false, !VectorCopyLoop.NARROW_STREAMS),
                new VectorCopyLoop(VectorCopyLoop.Rows.AUTO, true, false, VectorCopyLoop.NARROW_STREAMS, true)};
        int cases = 0;
        try (Arena arena = Arena.ofConfined()) {
            long size = 1 << 20;
            MemorySegment src = arena.allocate(size, 64);
            for (long o = 0; o < size; o += 8) {
                src.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            MemorySegment want = arena.allocate(size, 64);
            MemorySegment got = arena.allocate(size, 64);
            for (int heads : new int[] {1, 2, 3, 4, 8, 16}) {
                for (int pieces : new int[] {32, 16, 64, 72, 128, lanes, 4 * lanes, 8 * lanes}) {
                    for (boolean withV : new boolean[] {false, true}) {
                        for (int layout = 0; layout < 4; layout++) {
                            int n = 1 + rnd.nextInt(20);
                            int cell = withV ? 2 * pieces : pieces + (layout == 3 ? 1 : 0);   // a cell of 2^k*L and not
                            int base = withV && rnd.nextBoolean() ? pieces : 0;
                            long t0 = rnd.nextBoolean() ? rnd.nextInt(100) : (1L << 40) + rnd.nextInt(1000);
                            long region = 8L * pieces;
                            long sBase = 8L * rnd.nextInt(4);
                            long dBase = 8L * rnd.nextInt(4);
                            // layout 0: same rows both sides; 1: rows into head-major; 2: head-major into rows;
                            // 3: rows with padded heads (not side by side) into rows
                            long rowPad = 8L * rnd.nextInt(3);
                            long sHead = layout == 3 ? region + 64 : layout == 2 ? n * region + 8 : region;
                            long sTok = layout == 2 ? region : heads * sHead + rowPad;
                            long dHead = layout == 1 ? n * region : region;
                            long dTok = layout == 1 ? region : heads * region + rowPad;
                            long[] factors = new long[heads + 3];
                            for (int i = 0; i < factors.length; i++) {
                                factors[i] = rnd.nextLong();
                            }
                            int f0 = rnd.nextInt(3);
                            // any factors, a layer's (stepping by 2), or any stepping by one constant: the row loops
                            // without a multiply per unit (VectorCopyLoop.stepped) take the last two
                            int kind = kinds.nextInt(3);
                            long layer = kinds.nextInt(100);
                            long first = kinds.nextLong();
                            long step = kinds.nextLong();
                            for (int i = 0; kind > 0 && i < factors.length; i++) {
                                factors[i] = kind == 1 ? 2 * (layer * 65536 + i) + 1 : first + i * step;
                            }
                            long span = dBase + (heads - 1) * dHead + (n - 1) * dTok + region;
                            assertTrue(span <= size && sBase + (heads - 1) * sHead + (n - 1) * sTok + region <= size);
                            want.asSlice(0, span).fill((byte) 0x5a);
                            long expected = scalar.copyRows(src, sBase, sTok, sHead, want, dBase, dTok, dHead, n, t0, cell,
                                    base, pieces, heads, factors, f0);
                            for (CopyLoop loop : loops) {
                                got.asSlice(0, span).fill((byte) 0x5a);
                                long value = loop.copyRows(src, sBase, sTok, sHead, got, dBase, dTok, dHead, n, t0, cell,
                                        base, pieces, heads, factors, f0);
                                String what = (loop == loops[0] ? "units" : loop == loops[1] ? "multiply" : loop == loops[2] ? "auto"
                                        : loop == loops[3] ? "auto from memory" : loop == loops[4]
                                        ? "auto from memory, other stream width" : "auto, stepped flat quads")
                                        + " heads " + heads + " pieces " + pieces + " cell " + cell + " base " + base + " layout " + layout
                                        + " n " + n + " t0 " + t0 + " factors " + (kind == 0 ? "any" : kind == 1
                                        ? "of layer " + layer : "stepping by " + step);
                                assertEquals(expected, value, what);
                                assertEquals(-1L, want.asSlice(0, span).mismatch(got.asSlice(0, span)), what);
                                cases++;
                            }
                        }
                    }
                }
            }
        }
        assertTrue(cases > 500, "cases " + cases);
    }

    /**
     * Cells back to back on both sides (MLA rows: the contiguous stream) at the backend's width and at 256 bits
     * ({@link VectorCopyLoop#stream256}, chosen on AMD family 25) against the scalar loop: lengths that leave every
     * remainder of pieces past the last whole step, unaligned bases, large first tokens.
     */
    @Test
    void streamsMatchTheScalarCopy() {
        assumeTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(), "no jdk.incubator.vector module");
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        CopyLoop scalar = new ScalarCopyLoop(false);
        CopyLoop vector = new VectorCopyLoop();
        try (Arena arena = Arena.ofConfined()) {
            long size = 1 << 20;
            MemorySegment src = arena.allocate(size, 64);
            for (long o = 0; o < size; o += 8) {
                src.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            MemorySegment want = arena.allocate(size, 64);
            MemorySegment got = arena.allocate(size, 64);
            int cases = 0;
            for (int pieces : new int[] {144, 72, 37, 16, 8, 3, 1}) {
                for (int k = 0; k < 12; k++) {
                    int n = 1 + rnd.nextInt(24);
                    long t0 = rnd.nextBoolean() ? rnd.nextInt(100) : (1L << 40) + rnd.nextInt(1000);
                    long sBase = 8L * rnd.nextInt(8);
                    long dBase = 8L * rnd.nextInt(8);
                    long span = dBase + 8L * pieces * n;
                    want.asSlice(0, span).fill((byte) 0x5a);
                    long expected = scalar.copy(src, sBase, 8L * pieces, want, dBase, 8L * pieces, n, t0, pieces, 0, pieces);
                    String what = "pieces " + pieces + " n " + n + " t0 " + t0;
                    got.asSlice(0, span).fill((byte) 0x5a);
                    assertEquals(expected, vector.copy(src, sBase, 8L * pieces, got, dBase, 8L * pieces, n, t0, pieces, 0,
                            pieces), what);
                    assertEquals(-1L, want.asSlice(0, span).mismatch(got.asSlice(0, span)), what);
                    got.asSlice(0, span).fill((byte) 0x5a);
                    assertEquals(expected, VectorCopyLoop.stream256(src, sBase, got, dBase, (long) n * pieces, t0 * pieces),
                            "256-bit " + what);
                    assertEquals(-1L, want.asSlice(0, span).mismatch(got.asSlice(0, span)), "256-bit " + what);
                    cases++;
                }
            }
            assertTrue(cases > 50, "cases " + cases);
        }
    }
}
