package io.kvchecksum.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Whether the mixed kernel's 2 KiB row passes compile at every tier (not a benchmark; jmh/ab/mixer-compile-check.sh
 * runs it with {@code -XX:+PrintCompilation} under the tier flags given and greps for {@code COMPILE SKIPPED}):
 * calls {@code MixedVectorSliceKernel.rowTwo} (two streams, shipped on Intel), {@code rowRegs} (one stream) and the A/B
 * copy of the first two-stream form ({@code MixerTouchKernel.rowTwo}, constants built in the loop body) on blocks of
 * 4096 tokens first (long loops: compiled on-stack, the compile that C1 gave up on; unchecked, so that the loops
 * under test take all the interpreter's time) and then of 16 tokens (normal compiles), each result checked against
 * {@code rowRegs}'s; {@code forms} (default {@code 012}) picks the forms
 * (0: {@code rowTwo}, 1: the A/B copy, 2: {@code rowRegs}, 3: {@code MixerTouchKernel.rowFour}, 4:
 * {@code MixerTouchKernel.rowFourHalves}, 5: {@code MixedVectorSliceKernel.rowFour}, the shipped four-stream form on
 * Intel, 6: {@code MixerTouchKernel.rowFourRegs}; the four-stream forms on blocks short of a multiple of four tokens too).
 * docs/bench-cpu.md, "On Intel (Emerald Rapids): two streams every tier compiles".
 *
 * <p>Arguments: seconds to run each phase (default 4), forms (default 012).
 */
public final class MixerCompileCheck {
    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 4;
        String forms = args.length > 1 ? args[1] : "012";
        if (!MixedVectorSliceKernel.regsRow(8, 32, 64)) {
            System.out.println("no 512-bit vectors with AVX-512's registers: the 2 KiB row passes do not run");
            return;
        }
        int rowBytes = 2048;
        int bigN = 4096;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate((long) rowBytes * bigN + 4096, 64);
            SplittableRandom rnd = new SplittableRandom(28);
            for (long o = 0; o < s.byteSize(); o += 8) {
                s.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            long calls = 0;
            for (int phase = 0; phase < 2; phase++) {
                int n = phase == 0 ? bigN : 16;
                long until = System.nanoTime() + (long) (seconds * 1e9);
                while (System.nanoTime() < until) {
                    for (int form = 0; form < 7; form++) {
                        if (forms.indexOf('0' + form) < 0) {
                            continue;
                        }
                        long t0 = calls * 7;
                        long base = 64L * (calls % 8);
                        long[] expected = new long[8];
                        long[] got = new long[8];
                        if (phase == 1) {
                            MixedVectorSliceKernel.rowRegs(s, base, rowBytes, n - (int) (calls & (form >= 3 ? 3 : 1)), t0, 64,
                                    0, 4, expected);
                        }
                        switch (form) {
                            case 0 -> MixedVectorSliceKernel.rowTwo(s, base, rowBytes, n - (int) (calls & 1), t0, 64, 0, 4, got);
                            case 1 -> MixerTouchKernel.rowTwo(s, base, rowBytes, n - (int) (calls & 1), t0, 64, 0, 4, got);
                            case 4 -> MixerTouchKernel.rowFourHalves(s, base, rowBytes, n - (int) (calls & 3), t0, 64, 0, 4, got);
                            case 5 -> MixedVectorSliceKernel.rowFour(s, base, rowBytes, n - (int) (calls & 3), t0, 64, 0, 4, got);
                            case 6 -> MixerTouchKernel.rowFourRegs(s, base, rowBytes, n - (int) (calls & 3), t0, 64, 0, 4, got);
                            case 3 -> MixerTouchKernel.rowFour(s, base, rowBytes, n - (int) (calls & 3), t0, 64, 0, 4, got);
                            default -> MixedVectorSliceKernel.rowRegs(s, base, rowBytes, n - (int) (calls & 1), t0, 64, 0, 4, got);
                        }
                        if (phase == 1 && !Arrays.equals(expected, got)) {
                            throw new AssertionError("form " + form + " differs from rowRegs at n " + n);
                        }
                        calls++;
                    }
                }
            }
            System.out.println(calls + " calls, all equal to rowRegs");
        }
    }
}
