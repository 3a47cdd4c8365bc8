package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Random;
import java.util.zip.Adler32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** {@link Adler32Parts} against {@code java.util.zip.Adler32} over the whole stream. */
class Adler32PartsTest {
    private static final long SEED = 0x5A_D1E2_3202L;

    private static long adler(byte[] b, int from, int to) {
        Adler32 a = new Adler32();
        a.update(b, from, to - from);
        return a.getValue();
    }

    @Test
    void randomSplitsCombineToTheWholeStreamsAdler() {
        System.out.println("Adler32PartsTest seed 0x" + Long.toHexString(SEED));
        Random rnd = new Random(SEED);
        for (int trial = 0; trial < 300; trial++) {
            // lengths past 65521 and 5552 (zlib's block) included; high bytes (0xFF runs) make A and B wrap
            int n = trial % 3 == 0 ? rnd.nextInt(200_000) : rnd.nextInt(600);
            byte[] b = new byte[n];
            if (trial % 5 == 0) {
                Arrays.fill(b, (byte) 0xFF);
            } else {
                rnd.nextBytes(b);
            }
            int pieces = 1 + rnd.nextInt(8);
            int[] cut = new int[pieces + 1];
            cut[pieces] = n;
            for (int i = 1; i < pieces; i++) {
                cut[i] = n == 0 ? 0 : rnd.nextInt(n + 1);
            }
            Arrays.sort(cut);
            long acc = Adler32Parts.EMPTY;
            for (int i = 0; i < pieces; i++) {
                acc = Adler32Parts.combine(acc, adler(b, cut[i], cut[i + 1]), cut[i + 1] - cut[i]);
            }
            assertEquals(adler(b, 0, n), acc, "trial " + trial + " (seed 0x" + Long.toHexString(SEED) + "), n=" + n);
        }
    }

    @Test
    void lengthsOfMoreThan65521BytesAndExtremeValues() {
        // A1 = 0 makes len2*(A1-1) negative; A1 = 65520, B at the top; a 2^40-byte second part (len2 mod 65521).
        long[] values = {0x0000_0000L, 0x0000_0001L, 0xFFF0_FFF0L, 0x0001_0000L, 0x1234_0000L};
        long[] lens = {0, 1, 65520, 65521, 65522, 1L << 40, Long.MAX_VALUE};
        for (long a1v : values) {
            for (long a2v : values) {
                for (long len2 : lens) {
                    long a1 = a1v & 0xFFFF, b1 = a1v >>> 16, a2 = a2v & 0xFFFF, b2 = a2v >>> 16;
                    java.math.BigInteger m = java.math.BigInteger.valueOf(65521);
                    long a = Math.floorMod(a1 + a2 - 1, 65521);
                    long b = java.math.BigInteger.valueOf(b1 + b2).add(java.math.BigInteger.valueOf(len2)
                            .multiply(java.math.BigInteger.valueOf(a1 - 1))).mod(m).longValueExact();
                    assertEquals(b << 16 | a, Adler32Parts.combine(a1v, a2v, len2), a1v + " " + a2v + " " + len2);
                }
            }
        }
    }

    @Test
    void fromSumsIsTheDefinition() {
        Random rnd = new Random(SEED + 1);
        byte[] b = new byte[70_000];
        rnd.nextBytes(b);
        long s = 0, w = 0;
        for (int i = 0; i < b.length; i++) {
            s += b[i] & 0xFF;
            w += (long) (b.length - i) * (b[i] & 0xFF);
        }
        assertEquals(adler(b, 0, b.length), Adler32Parts.fromSums(s, w, b.length));
    }

    @Test
    void valuesThatAreNotAdlerAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> Adler32Parts.combine(0xFFF1, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> Adler32Parts.combine(1, 0xFFF1_0000L, 0));
        assertThrows(IllegalArgumentException.class, () -> Adler32Parts.combine(1, 1L << 32, 0));
        assertThrows(IllegalArgumentException.class, () -> Adler32Parts.combine(1, 1, -1));
    }
}
