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
 * Kept for {@code jmh/ab/digest-ab.sh}'s {@code prev}: {@code VectorAdler32} before the groups of four from memory
 * (docs/bench-cpu.md, "From memory"), as it shipped then.
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
 * {@code bt - (bo << 8)} modulo {@code 2^16}, exact because they are below {@code 2^16}, and the block's pair sums
 * ({@code a = at - 255 ao}: the bytes; {@code b = bt - 255 bo}: each vector weighted by the vectors after it in the
 * block) are exact 16-bit values. They go into int lanes without widening: each int lane keeps the raw sum of its
 * two 16-bit halves ({@code I}) and the sum of its high halves ({@code H}), whose pair total is {@code I - 65535 H}
 * modulo {@code 2^32} (one shift and two adds a quantity, where masking both halves took three and an add). Across
 * blocks the running-sum form goes on ({@code B = 16 R + b + a}, {@code R} the sum of {@code a}'s prefix before each
 * block, in vector units); the whole lanes' and the odd bytes' sums per place stay in 16-bit lanes ({@code pt},
 * {@code po}) for the place correction, the even bytes' being {@code pt - (po << 8)}, and every
 * {@value #PLACE_BLOCKS} blocks they go, weighted by their places, into int lanes.
 * Every {@value #FOLD} vectors, {@code N} bytes, Adler-32's {@code s1 += sum(b_j)} and
 * {@code s2 += N s1 + sum((N - j) b_j)} are {@code s1 += sum A} and {@code s2 += N s1 + V sum B - sum_f f A_f},
 * computed in longs modulo 65521 ("folded").
 *
 * <p>Sizes that keep every lane exact, for up to 16 int lanes (512 bits): in a block {@code a} is at most
 * {@code 255 * 32} and the even plus the odd weighted sums {@code b} at most {@code 2 * 255 * 120 = 61200}, so both
 * fit 16 bits; every pair total ({@code I - 65535 H}) stays far below {@code 2^31}; a place's 16-bit sum reaches at
 * most {@code 255 * 256 < 2^16} before it is widened (every {@value #PLACE_BLOCKS} blocks); over a fold of
 * {@value #FOLD} vectors the sum of {@code r}'s lanes stays below {@code 255 * 64 * 512 * 32}, {@code b}'s and
 * {@code a}'s below {@code 2^27}, the place-weighted lanes' below {@code 2^30}, all under {@code 2^31}. A stretch that
 * ends inside a block is padded with zero vectors to the block's end, folded, and the padding taken out of {@code s2}
 * ({@code s2 -= zeros * s1}); bytes short of a whole vector at the end of a piece are then added one by one (a page of
 * {@code V}-byte multiples, SGLang's case, never takes that path).
 *
 * <p>Scattered pages: a page's first lines wait for memory that no prefetcher saw coming, and one page's loop alone
 * does not overlap that wait with its arithmetic. Two pieces of the same whole number of blocks (SGLang's pages) are
 * therefore read in lockstep, a block of each at a time with their own 16-bit sums; the second piece's {@code a} and
 * prefix are kept apart and joined after the first's ({@code R += m A + R_Q; A += A_Q} for {@code m} blocks a piece),
 * while {@code b} and the place sums do not depend on the order. At 1 MiB over 2 KiB pages this took the loop from
 * 0.62 to about 0.8 of the same-order read (docs/bench-cpu.md, "SGLang's page digest").
 */
final class VectorAdler32Prev {
    private static final VectorSpecies<Short> SS = ShortVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;
    /** Bytes per vector. */
    private static final int V = SS.vectorByteSize();
    /** Int lanes per vector. */
    private static final int L = S.length();
    /** Vectors per block: the 16-bit weighted sums' limit. */
    static final int BLOCK = 16;
    /** Blocks between the place sums' widenings: the per-place 16-bit sums' limit. */
    static final int PLACE_BLOCKS = 16;
    /** Blocks between folds: the int reductions' limit ({@code sum B < 2^31}). */
    private static final int FOLD_BLOCKS = 32;
    /** Vectors between folds into {@code s1, s2}. */
    static final int FOLD = FOLD_BLOCKS * BLOCK;
    /** Bytes per block. */
    private static final long BB = (long) BLOCK * V;
    private static final int MOD = 65521;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    // Shift counts as vectors where AVX-512 shifts 16-bit lanes by a vector count (vpsrlvw): with a scalar count C2's
    // loop ran at half the speed. AVX2 has no such shift (C2 emulates it, slower still), so below 512 bits the count
    // is a scalar; shifting in int lanes by a vector count and masking measured no faster there
    private static final boolean SHORT_SHIFTS = S.vectorBitSize() >= 512;
    private static final ShortVector EIGHT = ShortVector.broadcast(SS, (short) 8);
    private static final ShortVector W255 = ShortVector.broadcast(SS, (short) 255);
    private static final IntVector SIXTEEN = IntVector.broadcast(S, 16);
    private static final IntVector LOW16 = IntVector.broadcast(S, 0xFFFF);

    /** Lane {@code i}'s place of its low even byte ({@code 4i}), high even ({@code 4i+2}), low odd, high odd. */
    private static final IntVector PLACE_EL = IntVector.zero(S).addIndex(4);
    private static final IntVector PLACE_EH = PLACE_EL.add(2);
    private static final IntVector PLACE_OL = PLACE_EL.add(1);
    private static final IntVector PLACE_OH = PLACE_EL.add(3);

    private VectorAdler32Prev() {
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
        ShortVector w255 = W255;
        IntVector sixteen = SIXTEEN;
        IntVector low16 = LOW16;
        ShortVector at = zs, ao = zs, bt = zs, bo = zs;   // this block, 16-bit lanes
        ShortVector pt = zs, po = zs;                      // whole lanes and odd bytes per place since the last fold
        // int lanes since the last fold, each as a raw sum of the block's 16-bit pairs (I) and of their high halves
        // (H), so that a lane's pair total is I - 65535 H (mod 2^32, exact): a, the bytes; r, a's prefix before each
        // block; b, the blocks' weighted sums
        IntVector aI = zero, aH = zero, rI = zero, rH = zero, bI = zero, bH = zero;
        // the fold's arguments: the place-weighted sums (lanes 0 to L), then a, r and b as raw and high-half sums
        int[] stash = new int[8 * L];
        int inner = 0;   // vectors in this block
        int blocks = 0;  // blocks since the last fold
        int placeBlocks = 0;   // blocks in the place sums pt, po
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
                int m = (int) (len / BB);
                if (inner == 0 && len == m * BB && m > 0 && blocks + 2 * m <= FOLD_BLOCKS
                        && placeBlocks + 2 * m <= PLACE_BLOCKS && left - len >= len
                        && i < runs.size() && runs.get(i).length() == len) {
                    // (before any merging of pages in address order below: two pages of a pair need not be apart)
                    left -= len;
                    // two pieces of whole blocks, P and the next, Q, read in lockstep: two streams of loads in flight
                    // where one page's first lines would wait alone (pages are scattered: no prefetcher follows them)
                    PageDigestPlan.Run qr = runs.get(i++);
                    MemorySegment qs = ((KvMemory.Host) qr.memory()).segment();
                    long q0 = qr.offset();
                    left -= len;
                    // Q's a and a's prefix before each of Q's blocks, from Q's start; b and the place sums do not
                    // depend on the order, so Q's go where P's do
                    IntVector cI = zero, cH = zero, sI = zero, sH = zero;
                    for (int j = 0; j < m; j++) {
                        long pb = at0 + j * BB;
                        long qb = q0 + j * BB;
                        // the first two vectors of each block peeled: the sums start from them, not from zero
                        ShortVector x = ShortVector.fromMemorySegment(SS, seg, pb, LE);
                        ShortVector y = ShortVector.fromMemorySegment(SS, qs, qb, LE);
                        bt = x;
                        bo = (SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight) : x.lanewise(VectorOperators.LSHR, 8));
                        ShortVector ct = y;
                        ShortVector co = (SHORT_SHIFTS ? y.lanewise(VectorOperators.LSHR, eight) : y.lanewise(VectorOperators.LSHR, 8));
                        ShortVector dt = ct;
                        ShortVector dO = co;
                        x = ShortVector.fromMemorySegment(SS, seg, pb + V, LE);
                        y = ShortVector.fromMemorySegment(SS, qs, qb + V, LE);
                        at = bt.add(x);
                        ao = bo.add((SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight) : x.lanewise(VectorOperators.LSHR, 8)));
                        ct = ct.add(y);
                        co = co.add((SHORT_SHIFTS ? y.lanewise(VectorOperators.LSHR, eight) : y.lanewise(VectorOperators.LSHR, 8)));
                        for (int k = 2; k < BLOCK; k++) {
                            x = ShortVector.fromMemorySegment(SS, seg, pb + (long) k * V, LE);
                            y = ShortVector.fromMemorySegment(SS, qs, qb + (long) k * V, LE);
                            bt = bt.add(at);
                            bo = bo.add(ao);
                            at = at.add(x);
                            ao = ao.add((SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight) : x.lanewise(VectorOperators.LSHR, 8)));
                            dt = dt.add(ct);
                            dO = dO.add(co);
                            ct = ct.add(y);
                            co = co.add((SHORT_SHIFTS ? y.lanewise(VectorOperators.LSHR, eight) : y.lanewise(VectorOperators.LSHR, 8)));
                        }
                        IntVector a = at.sub(ao.mul(w255)).reinterpretAsInts();
                        IntVector b = bt.sub(bo.mul(w255)).reinterpretAsInts();
                        IntVector c = ct.sub(co.mul(w255)).reinterpretAsInts();
                        IntVector d = dt.sub(dO.mul(w255)).reinterpretAsInts();
                        pt = pt.add(at).add(ct);
                        po = po.add(ao).add(co);
                        rI = rI.add(aI);
                        rH = rH.add(aH);
                        aI = aI.add(a);
                        aH = aH.add(a.lanewise(VectorOperators.LSHR, sixteen));
                        sI = sI.add(cI);
                        sH = sH.add(cH);
                        cI = cI.add(c);
                        cH = cH.add(c.lanewise(VectorOperators.LSHR, sixteen));
                        bI = bI.add(b).add(d);
                        bH = bH.add(b.lanewise(VectorOperators.LSHR, sixteen))
                                .add(d.lanewise(VectorOperators.LSHR, sixteen));
                    }
                    // Q's blocks come after all of P's: each one's prefix also holds everything up to P's end
                    rI = rI.add(aI.mul(m)).add(sI);
                    rH = rH.add(aH.mul(m)).add(sH);
                    aI = aI.add(cI);
                    aH = aH.add(cH);
                    at = ao = bt = bo = zs;
                    blocks += 2 * m;
                    placeBlocks += 2 * m;
                    if (placeBlocks == PLACE_BLOCKS) {
                        // the place sums into the stash's place-weighted lanes before they pass 2^16: the odd
                        // bytes' sum per place is po, the even bytes' pt - (po << 8), both exact below 2^16
                        IntVector pe = pt.sub(po.lanewise(VectorOperators.LSHL, eight)).reinterpretAsInts();
                        IntVector pw = po.reinterpretAsInts();
                        IntVector.fromArray(S, stash, 0)
                                .add(pe.and(low16).mul(PLACE_EL))
                                .add(pe.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_EH))
                                .add(pw.and(low16).mul(PLACE_OL))
                                .add(pw.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_OH))
                                .intoArray(stash, 0);
                        pt = po = zs;
                        placeBlocks = 0;
                    }
                    if (blocks == FOLD_BLOCKS) {
                        // into an array for the fold: a call with vectors would box them
                        aI.intoArray(stash, 2 * L);
                        aH.intoArray(stash, 3 * L);
                        rI.intoArray(stash, 4 * L);
                        rH.intoArray(stash, 5 * L);
                        bI.intoArray(stash, 6 * L);
                        bH.intoArray(stash, 7 * L);
                        adler = fold(adler, FOLD, stash);
                        zero.intoArray(stash, 0);
                        aI = aH = rI = rH = bI = bH = zero;
                        blocks = 0;
                    }
                    continue;
                }
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
                    if (inner == 0 && end - o >= (long) BLOCK * V) {
                        // a whole block: a constant trip count, which C2 compiles without pre- and post-loops
                        long base = o;
                        // the first two vectors peeled: the sums start from them, not from zero
                        ShortVector x0 = ShortVector.fromMemorySegment(SS, seg, base, LE);
                        bt = x0;
                        bo = (SHORT_SHIFTS ? x0.lanewise(VectorOperators.LSHR, eight) : x0.lanewise(VectorOperators.LSHR, 8));
                        x0 = ShortVector.fromMemorySegment(SS, seg, base + V, LE);
                        at = bt.add(x0);
                        ao = bo.add((SHORT_SHIFTS ? x0.lanewise(VectorOperators.LSHR, eight) : x0.lanewise(VectorOperators.LSHR, 8)));
                        for (int k = 2; k < BLOCK; k++) {
                            ShortVector x = ShortVector.fromMemorySegment(SS, seg, base + (long) k * V, LE);
                            bt = bt.add(at);
                            bo = bo.add(ao);
                            at = at.add(x);
                            ao = ao.add(SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight)
                                    : x.lanewise(VectorOperators.LSHR, 8));
                        }
                        o += (long) BLOCK * V;
                        inner = BLOCK;
                    } else {
                        int n = (int) Math.min((end - o) / V, BLOCK - inner);
                        long base = o;
                        for (int k = 0; k < n; k++) {
                            ShortVector x = ShortVector.fromMemorySegment(SS, seg, base + (long) k * V, LE);
                            bt = bt.add(at);
                            bo = bo.add(ao);
                            at = at.add(x);
                            ao = ao.add(SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight)
                                    : x.lanewise(VectorOperators.LSHR, 8));
                        }
                        o += (long) n * V;
                        inner += n;
                    }
                    if (inner == BLOCK) {
                        // the block's pair sums: a = at - 255 ao (even plus odd bytes), b = bt - 255 bo, exact
                        IntVector a = at.sub(ao.mul(w255)).reinterpretAsInts();
                        IntVector b = bt.sub(bo.mul(w255)).reinterpretAsInts();
                        pt = pt.add(at);
                        po = po.add(ao);
                        rI = rI.add(aI);
                        rH = rH.add(aH);
                        aI = aI.add(a);
                        aH = aH.add(a.lanewise(VectorOperators.LSHR, sixteen));
                        bI = bI.add(b);
                        bH = bH.add(b.lanewise(VectorOperators.LSHR, sixteen));
                        at = ao = bt = bo = zs;
                        inner = 0;
                        if (++placeBlocks == PLACE_BLOCKS) {
                            // the place sums into the stash's place-weighted lanes before they pass 2^16: the odd
                            // bytes' sum per place is po, the even bytes' pt - (po << 8), both exact below 2^16
                            IntVector pe = pt.sub(po.lanewise(VectorOperators.LSHL, eight)).reinterpretAsInts();
                            IntVector pw = po.reinterpretAsInts();
                            IntVector.fromArray(S, stash, 0)
                                    .add(pe.and(low16).mul(PLACE_EL))
                                    .add(pe.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_EH))
                                    .add(pw.and(low16).mul(PLACE_OL))
                                    .add(pw.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_OH))
                                    .intoArray(stash, 0);
                            pt = po = zs;
                            placeBlocks = 0;
                        }
                        if (++blocks == FOLD_BLOCKS) {
                            // into an array for the fold: a call with vectors would box them
                            aI.intoArray(stash, 2 * L);
                            aH.intoArray(stash, 3 * L);
                            rI.intoArray(stash, 4 * L);
                            rH.intoArray(stash, 5 * L);
                            bI.intoArray(stash, 6 * L);
                            bH.intoArray(stash, 7 * L);
                            adler = fold(adler, FOLD, stash);
                            zero.intoArray(stash, 0);
                            aI = aH = rI = rH = bI = bH = zero;
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
                IntVector a = at.sub(ao.mul(w255)).reinterpretAsInts();
                IntVector b = bt.sub(bo.mul(w255)).reinterpretAsInts();
                pt = pt.add(at);
                po = po.add(ao);
                rI = rI.add(aI);
                rH = rH.add(aH);
                aI = aI.add(a);
                aH = aH.add(a.lanewise(VectorOperators.LSHR, sixteen));
                bI = bI.add(b);
                bH = bH.add(b.lanewise(VectorOperators.LSHR, sixteen));
                at = ao = bt = bo = zs;
                inner = 0;
                blocks++;
                placeBlocks++;
            }
            if (blocks > 0) {
                // the place sums into the stash's place-weighted lanes before they pass 2^16: the odd
                // bytes' sum per place is po, the even bytes' pt - (po << 8), both exact below 2^16
                IntVector pe = pt.sub(po.lanewise(VectorOperators.LSHL, eight)).reinterpretAsInts();
                IntVector pw = po.reinterpretAsInts();
                IntVector.fromArray(S, stash, 0)
                        .add(pe.and(low16).mul(PLACE_EL))
                        .add(pe.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_EH))
                        .add(pw.and(low16).mul(PLACE_OL))
                        .add(pw.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_OH))
                        .intoArray(stash, 0);
                pt = po = zs;
                placeBlocks = 0;
                // into an array for the fold: a call with vectors would box them
                aI.intoArray(stash, 2 * L);
                aH.intoArray(stash, 3 * L);
                rI.intoArray(stash, 4 * L);
                rH.intoArray(stash, 5 * L);
                bI.intoArray(stash, 6 * L);
                bH.intoArray(stash, 7 * L);
                adler = unpad(fold(adler, blocks * BLOCK, stash), zeros);
                zero.intoArray(stash, 0);
                aI = aH = rI = rH = bI = bH = zero;
                blocks = 0;
            }
            if (tail == null) {
                return adler;
            }
            adler = bytes(adler, tail, tailFrom, tailTo);
        }
    }

    /** A lane's pair total from its raw sum and its high halves' sum: {@code I - 65535 H}, modulo 2^32. */
    private static IntVector pairs(int[] stash, int at) {
        IntVector raw = IntVector.fromArray(S, stash, at);
        IntVector high = IntVector.fromArray(S, stash, at + L);
        return raw.sub(high.lanewise(VectorOperators.LSHL, 16)).add(high);
    }

    /**
     * {@code adler} followed by the {@code vectors * V} bytes whose sums are in {@code stash}: the place-weighted sums
     * ({@code sum_f f A_f} in lanes), then {@code a}, {@code r} and {@code b} as raw and high-half sums.
     */
    private static long fold(long adler, int vectors, int[] stash) {
        IntVector placedLanes = IntVector.fromArray(S, stash, 0);
        IntVector a = pairs(stash, 2 * L);
        IntVector r = pairs(stash, 4 * L);
        IntVector b = pairs(stash, 6 * L);
        long s1 = adler & 0xFFFF;
        long s2 = adler >>> 16;
        // every lane and every reduction below stays under 2^31 (class comment), so the int arithmetic is exact
        long sa = a.reduceLanes(VectorOperators.ADD);
        // B, a lane's bytes weighted by the vectors from theirs to the end: 16 r + b + a
        long sb = 16L * r.reduceLanes(VectorOperators.ADD) + b.add(a).reduceLanes(VectorOperators.ADD);
        long placed = placedLanes.reduceLanes(VectorOperators.ADD);
        long n = (long) vectors * V;
        // V b - placed is the sum over the bytes of (N - j) b_j, >= 0
        s2 = (s2 + n % MOD * s1 + V * sb - placed) % MOD;
        s1 = (s1 + sa) % MOD;
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
