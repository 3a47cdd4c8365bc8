package io.kvchecksum.internal;

import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.List;

/**
 * Kept for {@code jmh/ab/digest-ab.sh}'s {@code five}: {@code VectorAdler32} before the lockstep pairs and the
 * cheaper block close (docs/bench-cpu.md, "SGLang's page digest"), as it shipped then.
 *
 * <p>Adler-32 over a stretch of a page digest's stream with the Vector API, for SGLang's small pages: the running sums
 * go on from one page to the next in vector registers, where {@code java.util.zip.Adler32} starts and ends a call per
 * page. Loaded only where the JVM has {@code jdk.incubator.vector}; the values are zlib's ({@code java.util.zip.Adler32}'s)
 * exactly (VectorAdler32Test, the digest goldens).
 *
 * <p>The stream is read in vectors of {@code V} bytes as 16-bit lanes; a byte's place {@code f} in its vector
 * ({@code 0 <= f < V}) is a sum of its own. Five vector operations per vector (the fewest found; docs/bench-cpu.md,
 * "SGLang's page digest"): the odd bytes shifted down ({@code o = x >>> 8}), and the running sums
 * {@code bt += at; bo += ao; at += x; ao += o} of the whole lanes ({@code at}, wrapping) and of the odd bytes
 * ({@code ao}). After a block of {@value #BLOCK} vectors the even bytes' sums are {@code at - (ao << 8)} and
 * {@code bt - (bo << 8)} modulo {@code 2^16}, exact because they are below {@code 2^16}. The block's sums
 * ({@code a}: the bytes; {@code b}: each vector weighted by the vectors after it in the block) are widened into
 * int lanes, where across blocks the running-sum form goes on ({@code B += 16 A + b + a; A += a}, in vector units),
 * and the even and odd sums per place stay in 16-bit lanes ({@code pe}, {@code po}) for the place correction.
 * Every {@value #FOLD} vectors, {@code N} bytes, Adler-32's {@code s1 += sum(b_j)} and
 * {@code s2 += N s1 + sum((N - j) b_j)} are {@code s1 += sum A} and {@code s2 += N s1 + V sum B - sum_f f A_f},
 * computed in longs modulo 65521 ("folded").
 *
 * <p>Sizes that keep every lane exact, for up to 16 int lanes (512 bits): in a block {@code at - (ao << 8)} is at most
 * {@code 255 * 16} and {@code bt - (bo << 8)} at most {@code 255 * 120}, so the even plus the odd weighted sums,
 * {@code 61200}, still fit 16 bits; between folds a place's sum is at most {@code 255 * 256 < 2^16}, an int lane's
 * {@code B} at most {@code 4 * 255 * 256 * 257 / 2} and the sum of 16 of them below {@code 2^31}. A stretch that ends
 * inside a block is padded with zero vectors to the block's end, folded, and the padding taken out of {@code s2}
 * ({@code s2 -= zeros * s1}); bytes short of a whole vector at the end of a piece are then added one by one (a page of
 * {@code V}-byte multiples, SGLang's case, never takes that path).
 */
final class VectorAdler32Five {
    private static final VectorSpecies<Short> SS = ShortVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;
    /** Bytes per vector. */
    private static final int V = SS.vectorByteSize();
    /** Int lanes per vector. */
    private static final int L = S.length();
    /** Vectors per block: the 16-bit weighted sums' limit. */
    static final int BLOCK = 16;
    /** Blocks between folds: the per-place 16-bit sums' limit. */
    private static final int FOLD_BLOCKS = 16;
    /** Vectors between folds into {@code s1, s2}. */
    static final int FOLD = FOLD_BLOCKS * BLOCK;
    private static final int MOD = 65521;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    // Shift counts as vectors where AVX-512 shifts 16-bit lanes by a vector count (vpsrlvw): with a scalar count C2's
    // loop ran at half the speed. AVX2 has no such shift (C2 emulates it, slower still), so below 512 bits the count
    // is a scalar; shifting in int lanes by a vector count and masking measured no faster there
    private static final boolean SHORT_SHIFTS = S.vectorBitSize() >= 512;
    private static final ShortVector EIGHT = ShortVector.broadcast(SS, (short) 8);
    private static final IntVector FOUR = IntVector.broadcast(S, 4);
    private static final IntVector SIXTEEN = IntVector.broadcast(S, 16);
    private static final IntVector LOW16 = IntVector.broadcast(S, 0xFFFF);

    /** Lane {@code i}'s place of its low even byte ({@code 4i}), high even ({@code 4i+2}), low odd, high odd. */
    private static final IntVector PLACE_EL = IntVector.zero(S).addIndex(4);
    private static final IntVector PLACE_EH = PLACE_EL.add(2);
    private static final IntVector PLACE_OL = PLACE_EL.add(1);
    private static final IntVector PLACE_OH = PLACE_EL.add(3);

    private VectorAdler32Five() {
    }

    /** {@return the bytes per vector of this JVM's loop} */
    static int vectorBytes() {
        return V;
    }

    /** {@return whether the loop's sizes hold at this JVM's width: at most 16 int lanes (512 bits)} */
    static boolean usable() {
        return L <= 16 && SS.vectorBitSize() == S.vectorBitSize();
    }

    /**
     * Adler-32 of {@code length} bytes of the stream of {@code runs} starting {@code skip} bytes into run {@code run}.
     * Runs that continue each other in memory are read as one piece.
     */
    static long digest(List<PageDigestPlan.Run> runs, int run, long skip, long length) {
        long adler = 1;
        ShortVector zs = ShortVector.zero(SS);
        IntVector zero = IntVector.zero(S);
        ShortVector eight = EIGHT;
        IntVector four = FOUR;
        IntVector sixteen = SIXTEEN;
        IntVector low16 = LOW16;
        ShortVector at = zs, ao = zs, bt = zs, bo = zs;   // this block, 16-bit lanes
        ShortVector pe = zs, po = zs;                      // even and odd bytes per place since the last fold
        IntVector sa = zero, sb = zero;                   // A and B since the last fold, int lanes
        int[] stash = new int[4 * L];                     // the fold's arguments: a call with vectors would box them
        int inner = 0;   // vectors in this block
        int blocks = 0;  // blocks since the last fold
        long left = length;
        int i = run;
        while (true) {
            MemorySegment tail = null;
            long tailFrom = 0;
            long tailTo = 0;
            if (left > 0) {
                PageDigestPlan.Run r = runs.get(i++);
                MemorySegment seg = ((KvMemory.Host) r.memory()).segment();
                long at0 = r.offset() + skip;
                long len = Math.min(r.length() - skip, left);
                skip = 0;
                // pages in address order: one piece
                while (len < left && i < runs.size() && runs.get(i).offset() == at0 + len
                        && ((KvMemory.Host) runs.get(i).memory()).segment() == seg) {
                    len += Math.min(runs.get(i).length(), left - len);
                    i++;
                }
                left -= len;
                long end = at0 + len - len % V;
                long o = at0;
                while (o < end) {
                    int n = (int) Math.min((end - o) / V, BLOCK - inner);
                    long base = o;
                    for (int k = 0; k < n; k++) {   // an int counter: C2 then unrolls it and checks bounds outside it
                        ShortVector x = ShortVector.fromMemorySegment(SS, seg, base + (long) k * V, LE);
                        bt = bt.add(at);
                        bo = bo.add(ao);
                        at = at.add(x);
                        ao = ao.add(SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight)
                                : x.lanewise(VectorOperators.LSHR, 8));
                    }
                    o += (long) n * V;
                    inner += n;
                    if (inner == BLOCK) {
                        ShortVector ae = at.sub(SHORT_SHIFTS ? ao.lanewise(VectorOperators.LSHL, eight)
                                : ao.lanewise(VectorOperators.LSHL, 8));
                        ShortVector be = bt.sub(SHORT_SHIFTS ? bo.lanewise(VectorOperators.LSHL, eight)
                                : bo.lanewise(VectorOperators.LSHL, 8));
                        pe = pe.add(ae);
                        po = po.add(ao);
                        IntVector a = ae.add(ao).reinterpretAsInts();
                        IntVector b = be.add(bo).reinterpretAsInts();
                        IntVector aw = a.and(low16).add(a.lanewise(VectorOperators.LSHR, sixteen));
                        sb = sb.add(sa.lanewise(VectorOperators.LSHL, four)).add(aw)
                                .add(b.and(low16)).add(b.lanewise(VectorOperators.LSHR, sixteen));
                        sa = sa.add(aw);
                        at = ao = bt = bo = zs;
                        inner = 0;
                        if (++blocks == FOLD_BLOCKS) {
                            sa.intoArray(stash, 0);
                            sb.intoArray(stash, L);
                            pe.reinterpretAsInts().intoArray(stash, 2 * L);
                            po.reinterpretAsInts().intoArray(stash, 3 * L);
                            adler = fold(adler, FOLD, stash);
                            sa = sb = zero;
                            pe = po = zs;
                            blocks = 0;
                        }
                    }
                }
                if (end == at0 + len) {
                    continue;
                }
                tail = seg;
                tailFrom = end;
                tailTo = at0 + len;
            }
            // the end of the stretch, or bytes short of a vector follow: everything so far into s1, s2
            long zeros = 0;
            if (inner > 0) {
                // pad the block with zero vectors (its sums' weights assume BLOCK vectors), taken out after the fold
                for (; inner < BLOCK; inner++) {
                    bt = bt.add(at);
                    bo = bo.add(ao);
                    zeros += V;
                }
                ShortVector ae = at.sub(SHORT_SHIFTS ? ao.lanewise(VectorOperators.LSHL, eight)
                        : ao.lanewise(VectorOperators.LSHL, 8));
                ShortVector be = bt.sub(SHORT_SHIFTS ? bo.lanewise(VectorOperators.LSHL, eight)
                        : bo.lanewise(VectorOperators.LSHL, 8));
                pe = pe.add(ae);
                po = po.add(ao);
                IntVector a = ae.add(ao).reinterpretAsInts();
                IntVector b = be.add(bo).reinterpretAsInts();
                IntVector aw = a.and(low16).add(a.lanewise(VectorOperators.LSHR, sixteen));
                sb = sb.add(sa.lanewise(VectorOperators.LSHL, four)).add(aw)
                        .add(b.and(low16)).add(b.lanewise(VectorOperators.LSHR, sixteen));
                sa = sa.add(aw);
                at = ao = bt = bo = zs;
                inner = 0;
                blocks++;
            }
            if (blocks > 0) {
                sa.intoArray(stash, 0);
                sb.intoArray(stash, L);
                pe.reinterpretAsInts().intoArray(stash, 2 * L);
                po.reinterpretAsInts().intoArray(stash, 3 * L);
                adler = unpad(fold(adler, blocks * BLOCK, stash), zeros);
                sa = sb = zero;
                pe = po = zs;
                blocks = 0;
            }
            if (tail == null) {
                return adler;
            }
            adler = bytes(adler, tail, tailFrom, tailTo);
        }
    }

    /**
     * {@code adler} followed by the {@code vectors * V} bytes whose sums are in {@code stash}: {@code A} and {@code B}
     * (int lanes), then the even and the odd bytes' sums per place (16-bit fields).
     */
    private static long fold(long adler, int vectors, int[] stash) {
        IntVector sa = IntVector.fromArray(S, stash, 0);
        IntVector sb = IntVector.fromArray(S, stash, L);
        IntVector pe = IntVector.fromArray(S, stash, 2 * L);
        IntVector po = IntVector.fromArray(S, stash, 3 * L);
        long s1 = adler & 0xFFFF;
        long s2 = adler >>> 16;
        // each reduction's lanes sum to under 2^31 (class comment), so an int reduction is exact
        long a = sa.reduceLanes(VectorOperators.ADD);
        long b = sb.reduceLanes(VectorOperators.ADD);
        long placed = (long) pe.and(0xFFFF).mul(PLACE_EL).reduceLanes(VectorOperators.ADD)
                + pe.lanewise(VectorOperators.LSHR, 16).mul(PLACE_EH).reduceLanes(VectorOperators.ADD)
                + po.and(0xFFFF).mul(PLACE_OL).reduceLanes(VectorOperators.ADD)
                + po.lanewise(VectorOperators.LSHR, 16).mul(PLACE_OH).reduceLanes(VectorOperators.ADD);
        long n = (long) vectors * V;
        // V b - placed is the sum over the bytes of (N - j) b_j, >= 0
        s2 = (s2 + n % MOD * s1 + V * b - placed) % MOD;
        s1 = (s1 + a) % MOD;
        return s2 << 16 | s1;
    }

    /** {@code adler} of a stream that ended in {@code zeros} zero bytes, without them: {@code s2 -= zeros * s1}. */
    private static long unpad(long adler, long zeros) {
        long s1 = adler & 0xFFFF;
        long s2 = adler >>> 16;
        s2 = ((s2 - zeros % MOD * s1) % MOD + MOD) % MOD;
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
