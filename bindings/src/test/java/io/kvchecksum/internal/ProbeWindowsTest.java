package io.kvchecksum.internal;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/**
 * The probe's window loops in this JVM's form ({@link ProbeWindows#INSTANCE}: the Vector API at the preferred width, or
 * the scalar form without the module) against the scalar form, run by run and over all runs at once, on random
 * windows (fixed seed). The build runs it at this machine's width and with {@code -XX:UseAVX=2} (256 bits).
 */
class ProbeWindowsTest {
    private static final long SEED = 0x9C0D;

    @Test
    void theJvmsFormAgreesWithTheScalarForm() {
        System.out.println("ProbeWindowsTest seed = " + SEED + ", form " + ProbeWindows.INSTANCE.describe());
        Random rnd = new Random(SEED);
        ProbeWindows scalar = new ProbeWindows();
        try (Arena arena = Arena.ofConfined()) {
            for (int trial = 0; trial < 50; trial++) {
                int runs = 1 + rnd.nextInt(6);
                MemorySegment[] seg = new MemorySegment[runs];
                int[] start = new int[runs + 1];
                boolean[] of8 = new boolean[runs];
                for (int r = 0; r < runs; r++) {
                    seg[r] = arena.allocate(1 << 14, 8);
                    for (long o = 0; o < seg[r].byteSize(); o += 8) {
                        seg[r].set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
                    }
                    start[r + 1] = start[r] + 1 + rnd.nextInt(9);
                    of8[r] = rnd.nextInt(4) != 0;
                }
                int parts = start[runs];
                long[] base = new long[parts];
                long[] pageStride = new long[parts];
                long[] tokenStride = new long[parts];
                long[] tailSkip = new long[parts];
                long[] w = new long[parts];
                long page = rnd.nextInt(4);
                long lastSlot = rnd.nextInt(4);
                for (int j = 0; j < parts; j++) {
                    // unaligned offsets too: windows are read at any 8-byte (or odd) address
                    base[j] = rnd.nextInt(1024);
                    pageStride[j] = rnd.nextInt(1024);
                    tokenStride[j] = rnd.nextInt(512);
                    tailSkip[j] = 8L * rnd.nextInt(24);
                    w[j] = rnd.nextLong() | 1;
                }
                long[] want = new long[2];
                long[] got = new long[2];
                long[] all = new long[2];
                for (int r = 0; r < runs; r++) {
                    long[] one = new long[2];
                    long[] vec = new long[2];
                    scalar.sum8(seg[r], base, pageStride, tokenStride, tailSkip, w, start[r], start[r + 1], page, lastSlot, one);
                    ProbeWindows.INSTANCE.sum8(seg[r], base, pageStride, tokenStride, tailSkip, w, start[r], start[r + 1],
                            page, lastSlot, vec);
                    assertArrayEquals(one, vec, "sum8, trial " + trial + " run " + r);
                    if (of8[r]) {
                        want[0] += one[0];
                        want[1] += one[1];
                    }
                }
                scalar.sumRuns(seg, start, of8, base, pageStride, tokenStride, tailSkip, w, page, lastSlot, all);
                assertArrayEquals(want, all, "scalar sumRuns, trial " + trial);
                got[0] = 7;
                got[1] = -7;
                ProbeWindows.INSTANCE.sumRuns(seg, start, of8, base, pageStride, tokenStride, tailSkip, w, page, lastSlot, got);
                assertArrayEquals(new long[] {want[0] + 7, want[1] - 7}, got, "sumRuns adds to out, trial " + trial);
            }
        }
    }
}
