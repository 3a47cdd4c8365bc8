package io.kvchecksum.internal;

import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The page digest's vector loop before issue 28's five-operation body (VectorAdler32 at commit b024234), kept for
 * the A/B in {@code DigestAb} only: about eight vector operations per vector, 21-22 GB/s in cache at 512 bits.
 *
 * <p>Adler-32 over a stretch of a page digest's stream with the Vector API, for SGLang's small pages: the running sums
 * go on from one page to the next in vector registers, where {@code java.util.zip.Adler32} starts and ends a call per
 * page. Loaded only where the JVM has {@code jdk.incubator.vector}; the values are zlib's ({@code java.util.zip.Adler32}'s)
 * exactly (VectorAdler32Test, the digest goldens).
 *
 * <p>The stream is read in vectors of {@code V} bytes as int lanes. A byte's place {@code f} in its vector
 * ({@code 0 <= f < V}) is a field of its own: even and odd bytes are masked apart ({@code x & 0x00FF00FF},
 * {@code (x >>> 8) & 0x00FF00FF}) into 16-bit fields, so an int lane carries two bytes' sums. Per vector, the running
 * sums {@code a += x; b += a} (two adds per field pair, no multiply: the same running-sum form as the checksum
 * kernels) give, after {@code K} vectors, {@code A_f}, the sum of the bytes at place {@code f}, and {@code B_f}, the
 * same bytes weighted by {@code K - k} for vector {@code k}. For the {@code N = V K} bytes, Adler-32's
 * {@code s1 += sum(b_j)} and {@code s2 += N s1 + sum((N - j) b_j)} are then {@code s1 += sum_f A_f} and
 * {@code s2 += N s1 + V sum_f B_f - sum_f f A_f}, computed in longs modulo 65521 ("folded") every {@value #FOLD}
 * vectors and at the end.
 *
 * <p>Sizes that keep every lane exact: the 16-bit fields are widened into int lanes every {@value #INNER} vectors
 * ({@code b <= 255 * 16 * 17 / 2 = 34680 < 2^16}); between folds a lane's {@code B} stays below
 * {@code 255 * FOLD (FOLD + 1) / 2} and the sum of {@code B} over one vector's 16 lanes below {@code 2^31}. Bytes
 * short of a whole vector at the end of a piece are added one by one after a fold (a page of {@code V}-byte multiples,
 * SGLang's case, never takes that path).
 */
final class VectorAdler32Old {
    private static final VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;
    /** Bytes per vector. */
    private static final int V = S.vectorByteSize();
    /** Vectors between widenings of the 16-bit fields. */
    private static final int INNER = 16;
    /** Vectors between folds into {@code s1, s2}: a multiple of {@link #INNER} small enough for int lanes. */
    static final int FOLD = 63 * INNER;
    private static final int MOD = 65521;
    private static final int LOW_BYTES = 0x00FF00FF;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /** Lane {@code i}'s place of its low even byte ({@code 4i}), high even ({@code 4i+2}), low odd, high odd. */
    private static final IntVector PLACE_EL = IntVector.zero(S).addIndex(4);
    private static final IntVector PLACE_EH = PLACE_EL.add(2);
    private static final IntVector PLACE_OL = PLACE_EL.add(1);
    private static final IntVector PLACE_OH = PLACE_EL.add(3);

    private VectorAdler32Old() {
    }

    /** {@return the bytes per vector of this JVM's loop} */
    static int vectorBytes() {
        return V;
    }

    /** {@return whether the loop's sizes hold at this JVM's width: at most 16 int lanes (512 bits)} */
    static boolean usable() {
        return S.length() <= 16;
    }

    /**
     * Adler-32 of {@code length} bytes of the stream of {@code runs} starting {@code skip} bytes into run {@code run}.
     * Runs that continue each other in memory are read as one piece.
     */
    static long digest(List<PageDigestPlan.Run> runs, int run, long skip, long length) {
        long adler = 1;
        IntVector zero = IntVector.zero(S);
        IntVector ae = zero, ao = zero, be = zero, bo = zero;                      // 16-bit fields, this inner block
        IntVector ael = zero, aeh = zero, aol = zero, aoh = zero;                  // A per place, since the last fold
        IntVector bel = zero, beh = zero, bol = zero, boh = zero;                  // B per place, since the last fold
        int inner = 0;   // vectors in the 16-bit fields
        int outer = 0;   // vectors in the int lanes
        long left = length;
        int i = run;
        while (left > 0) {
            PageDigestPlan.Run r = runs.get(i++);
            MemorySegment seg = ((KvMemory.Host) r.memory()).segment();
            long at = r.offset() + skip;
            long len = Math.min(r.length() - skip, left);
            skip = 0;
            // pages in address order: one piece
            while (len < left && i < runs.size() && runs.get(i).offset() == at + len
                    && ((KvMemory.Host) runs.get(i).memory()).segment() == seg) {
                len += Math.min(runs.get(i).length(), left - len);
                i++;
            }
            left -= len;
            long end = at + len - len % V;
            long o = at;
            while (o < end) {
                int n = (int) Math.min((end - o) / V, INNER - inner);
                long base = o;
                for (int k = 0; k < n; k++) {   // an int counter: C2 then unrolls it and checks bounds outside it
                    IntVector x = IntVector.fromMemorySegment(S, seg, base + (long) k * V, LE);
                    ae = ae.add(x.and(LOW_BYTES));
                    ao = ao.add(x.lanewise(VectorOperators.LSHR, 8).and(LOW_BYTES));
                    be = be.add(ae);
                    bo = bo.add(ao);
                }
                o += (long) n * V;
                inner += n;
                if (inner == INNER) {
                    // widen: the inner block's b on top of the A it started from, repeated once per vector
                    bel = bel.add(ael.mul(INNER)).add(be.and(0xFFFF));
                    beh = beh.add(aeh.mul(INNER)).add(be.lanewise(VectorOperators.LSHR, 16));
                    bol = bol.add(aol.mul(INNER)).add(bo.and(0xFFFF));
                    boh = boh.add(aoh.mul(INNER)).add(bo.lanewise(VectorOperators.LSHR, 16));
                    ael = ael.add(ae.and(0xFFFF));
                    aeh = aeh.add(ae.lanewise(VectorOperators.LSHR, 16));
                    aol = aol.add(ao.and(0xFFFF));
                    aoh = aoh.add(ao.lanewise(VectorOperators.LSHR, 16));
                    ae = zero;
                    ao = zero;
                    be = zero;
                    bo = zero;
                    inner = 0;
                    outer += INNER;
                    if (outer == FOLD) {
                        adler = fold(adler, outer, ael, aeh, aol, aoh, bel, beh, bol, boh);
                        ael = aeh = aol = aoh = bel = beh = bol = boh = zero;
                        outer = 0;
                    }
                }
            }
            if (end < at + len) {
                // bytes short of a vector: everything so far into s1, s2 first, then byte by byte
                if (inner > 0) {
                    bel = bel.add(ael.mul(inner)).add(be.and(0xFFFF));
                    beh = beh.add(aeh.mul(inner)).add(be.lanewise(VectorOperators.LSHR, 16));
                    bol = bol.add(aol.mul(inner)).add(bo.and(0xFFFF));
                    boh = boh.add(aoh.mul(inner)).add(bo.lanewise(VectorOperators.LSHR, 16));
                    ael = ael.add(ae.and(0xFFFF));
                    aeh = aeh.add(ae.lanewise(VectorOperators.LSHR, 16));
                    aol = aol.add(ao.and(0xFFFF));
                    aoh = aoh.add(ao.lanewise(VectorOperators.LSHR, 16));
                    ae = ao = be = bo = zero;
                    outer += inner;
                    inner = 0;
                }
                if (outer > 0) {
                    adler = fold(adler, outer, ael, aeh, aol, aoh, bel, beh, bol, boh);
                    ael = aeh = aol = aoh = bel = beh = bol = boh = zero;
                    outer = 0;
                }
                adler = bytes(adler, seg, end, at + len);
            }
        }
        if (inner > 0) {
            bel = bel.add(ael.mul(inner)).add(be.and(0xFFFF));
            beh = beh.add(aeh.mul(inner)).add(be.lanewise(VectorOperators.LSHR, 16));
            bol = bol.add(aol.mul(inner)).add(bo.and(0xFFFF));
            boh = boh.add(aoh.mul(inner)).add(bo.lanewise(VectorOperators.LSHR, 16));
            ael = ael.add(ae.and(0xFFFF));
            aeh = aeh.add(ae.lanewise(VectorOperators.LSHR, 16));
            aol = aol.add(ao.and(0xFFFF));
            aoh = aoh.add(ao.lanewise(VectorOperators.LSHR, 16));
            outer += inner;
        }
        if (outer > 0) {
            adler = fold(adler, outer, ael, aeh, aol, aoh, bel, beh, bol, boh);
        }
        return adler;
    }

    /** {@code adler} followed by the {@code vectors * V} bytes whose per-place sums {@code A} and {@code B} are given. */
    private static long fold(long adler, int vectors, IntVector ael, IntVector aeh, IntVector aol, IntVector aoh,
            IntVector bel, IntVector beh, IntVector bol, IntVector boh) {
        long s1 = adler & 0xFFFF;
        long s2 = adler >>> 16;
        // each reduction's lanes sum to under 2^31 (class comment), so an int reduction is exact
        long a = (long) ael.reduceLanes(VectorOperators.ADD) + aeh.reduceLanes(VectorOperators.ADD)
                + aol.reduceLanes(VectorOperators.ADD) + aoh.reduceLanes(VectorOperators.ADD);
        long b = (long) bel.reduceLanes(VectorOperators.ADD) + beh.reduceLanes(VectorOperators.ADD)
                + bol.reduceLanes(VectorOperators.ADD) + boh.reduceLanes(VectorOperators.ADD);
        long placed = (long) ael.mul(PLACE_EL).reduceLanes(VectorOperators.ADD)
                + aeh.mul(PLACE_EH).reduceLanes(VectorOperators.ADD)
                + aol.mul(PLACE_OL).reduceLanes(VectorOperators.ADD)
                + aoh.mul(PLACE_OH).reduceLanes(VectorOperators.ADD);
        long n = (long) vectors * V;
        // V b - placed is the sum over places of V B_f - f A_f, each term >= 0 (B_f >= A_f, V > f)
        s2 = (s2 + n % MOD * s1 + V * b - placed) % MOD;
        s1 = (s1 + a) % MOD;
        return s2 << 16 | s1;
    }

    /** {@code adler} followed by the bytes {@code [from, to)} of {@code seg}, fewer than a vector's. */
    private static long bytes(long adler, MemorySegment seg, long from, long to) {
        long s1 = adler & 0xFFFF;
        long s2 = adler >>> 16;
        for (long o = from; o < to; o++) {
            s1 += seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, o) & 0xFF;
            s2 += s1;
        }
        return (s2 % MOD) << 16 | (s1 % MOD);
    }
}
