package io.kvchecksum;

/**
 * Adler-32 ({@code java.util.zip.Adler32}, zlib's {@code adler32}) of a stream from the Adler-32 values of its
 * consecutive pieces, so that pieces can be computed in parallel (CPU threads, GPU warps) and joined in order.
 *
 * <p>An Adler-32 value packs {@code B << 16 | A}, where for bytes {@code x_0 .. x_{n-1}}, {@code A = 1 + Σ x_i} and
 * {@code B = n + Σ (n - i) x_i}, both mod 65521. For a stream {@code P1 P2} with {@code len2 = |P2|}:
 * {@code A = A1 + A2 - 1} and {@code B = B1 + B2 + len2·(A1 - 1)} (mod 65521): P2's bytes see {@code A1 - 1} more
 * in each of their {@code len2} running sums. This is zlib's {@code adler32_combine}; {@code len2} is reduced mod
 * 65521 first, so any 64-bit length is exact and every intermediate fits in a {@code long}.
 */
public final class Adler32Parts {
    /** The Adler-32 modulus, the largest prime below 2^16. */
    public static final int MOD = 65521;
    /** The Adler-32 of no bytes: {@code A = 1}, {@code B = 0}. */
    public static final long EMPTY = 1;

    private Adler32Parts() {
    }

    /**
     * The Adler-32 of the stream {@code P1 P2}, from {@code adler1} of {@code P1}, {@code adler2} of {@code P2} and
     * {@code P2}'s length in bytes.
     *
     * @param adler1 the Adler-32 of the first part, in {@code [0, 2^32)} with both 16-bit halves below 65521
     * @param adler2 the Adler-32 of the second part, the same range
     * @param len2 the second part's length in bytes, non-negative (any size: it is reduced modulo 65521)
     * @return the Adler-32 of the two parts one after the other, in {@code [0, 2^32)}
     * @throws IllegalArgumentException when a value is not an Adler-32 ({@code A} or {@code B} outside
     *     {@code [0, 65521)}, or bits above 32) or {@code len2} is negative
     */
    public static long combine(long adler1, long adler2, long len2) {
        check(adler1, "adler1");
        check(adler2, "adler2");
        if (len2 < 0) {
            throw new IllegalArgumentException("len2 must be non-negative, got " + len2);
        }
        long a1 = adler1 & 0xFFFF;
        long b1 = adler1 >>> 16;
        long a2 = adler2 & 0xFFFF;
        long b2 = adler2 >>> 16;
        long rem = len2 % MOD;
        long a = (a1 + a2 + MOD - 1) % MOD;
        // a1 - 1 may be -1: a1 + MOD - 1 is the same residue and non-negative; the product stays below 2^34
        long b = (b1 + b2 + rem * (a1 + MOD - 1)) % MOD;
        return b << 16 | a;
    }

    /**
     * The Adler-32 of {@code len} bytes from their byte sum {@code s = Σ x_i} and weighted sum {@code w = Σ (n-i) x_i}
     * over positions {@code i} of the piece (either may be any non-negative value: they are reduced here), the form a
     * kernel's lanes add up.
     *
     * @param s the sum of the piece's bytes (each 0..255), non-negative
     * @param w the sum of each byte times its distance from the piece's end, {@code n - i}, non-negative
     * @param len the piece's length {@code n} in bytes, non-negative
     * @return the piece's Adler-32, in {@code [0, 2^32)}
     * @throws IllegalArgumentException when a sum or the length is negative
     */
    public static long fromSums(long s, long w, long len) {
        if (s < 0 || w < 0 || len < 0) {
            throw new IllegalArgumentException("sums and length must be non-negative: " + s + ", " + w + ", " + len);
        }
        long a = (1 + s % MOD) % MOD;
        long b = (len % MOD + w % MOD) % MOD;
        return b << 16 | a;
    }

    private static void check(long adler, String what) {
        if ((adler >>> 32) != 0 || (adler & 0xFFFF) >= MOD || ((adler >>> 16) & 0xFFFF) >= MOD) {
            throw new IllegalArgumentException(what + " = 0x" + Long.toHexString(adler) + " is not an Adler-32 value");
        }
    }
}
