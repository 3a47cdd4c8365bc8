package io.kvchecksum.internal;

import io.kvchecksum.Adler32Parts;
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
 * Adler-32 over a stretch of a page digest's stream with the Vector API, for SGLang's small pages: the running sums
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
 * 0.62 to about 0.8 of the same-order read (docs/bench-cpu.md, "SGLang's page digest"). From memory, where lines in
 * flight set the rate, {@link #digest(List, int, long, long, boolean)} reads such pages four at a time, and long pieces
 * as four stretches ({@code fours}).
 */
final class VectorAdler32 {
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
    /**
     * From memory, pieces of at least this many bytes are read as groups of four stretches in lockstep: pages in
     * address order merged into pieces of 4 MiB read 1.1-1.4 times as fast so at 512 bits (alike at 256); 32 KiB pages
     * (page size 16) read about 8 % slower, pieces of 128 KiB to 1 MiB alike (docs/bench-cpu.md, "From memory").
     */
    private static final long LONG_PIECE = 1L << 20;
    /** Bytes per block. */
    private static final long BB = (long) BLOCK * V;
    private static final int MOD = 65521;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    // Shift counts as vectors where AVX-512 shifts 16-bit lanes by a vector count (vpsrlvw): with a scalar count C2's
    // loop ran at half the speed. AVX2 has no such shift (C2 emulates it, slower still), so below 512 bits the count
    // is a scalar; shifting in int lanes by a vector count and masking measured no faster there. The choice is written
    // out at every use: a helper method for it was not always inlined (NodeCountInliningCutoff in fours), and a call
    // with a vector argument boxes it (the groups of four ran three times slower)
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

    private VectorAdler32() {
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
        ShortVector at = zs, ao = zs, bt = zs, bo = zs;   // this block, 16-bit lanes
        ShortVector pt = zs, po = zs;                      // whole lanes and odd bytes per place since the last fold
        // int lanes since the last fold, each as a raw sum of the block's 16-bit pairs (I) and of their high halves
        // (H), so that a lane's pair total is I - 65535 H (mod 2^32, exact): a, the bytes; r, a's prefix before each
        // block; b, the blocks' weighted sums
        IntVector aI = zero, aH = zero, rI = zero, rH = zero, bI = zero, bH = zero;
        // the helpers' arguments (vectors passed to a call would be boxed): the place-weighted sums (lanes 0 to L), then
        // a, r and b as raw and high-half sums (to the fold), then pt and po (to places)
        int[] stash = new int[10 * L];
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
                        ao = bo.add(SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight) : x.lanewise(VectorOperators.LSHR, 8));
                        ct = ct.add(y);
                        co = co.add(SHORT_SHIFTS ? y.lanewise(VectorOperators.LSHR, eight) : y.lanewise(VectorOperators.LSHR, 8));
                        for (int k = 2; k < BLOCK; k++) {
                            x = ShortVector.fromMemorySegment(SS, seg, pb + (long) k * V, LE);
                            y = ShortVector.fromMemorySegment(SS, qs, qb + (long) k * V, LE);
                            bt = bt.add(at);
                            bo = bo.add(ao);
                            at = at.add(x);
                            ao = ao.add(SHORT_SHIFTS ? x.lanewise(VectorOperators.LSHR, eight) : x.lanewise(VectorOperators.LSHR, 8));
                            dt = dt.add(ct);
                            dO = dO.add(co);
                            ct = ct.add(y);
                            co = co.add(SHORT_SHIFTS ? y.lanewise(VectorOperators.LSHR, eight) : y.lanewise(VectorOperators.LSHR, 8));
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
                        pt.reinterpretAsInts().intoArray(stash, 8 * L);
                        po.reinterpretAsInts().intoArray(stash, 9 * L);
                        places(stash);
                        pt = po = zs;
                        placeBlocks = 0;
                    }
                    if (blocks == FOLD_BLOCKS) {
                        aI.intoArray(stash, 2 * L);
                        aH.intoArray(stash, 3 * L);
                        rI.intoArray(stash, 4 * L);
                        rH.intoArray(stash, 5 * L);
                        bI.intoArray(stash, 6 * L);
                        bH.intoArray(stash, 7 * L);
                        adler = fold(adler, FOLD, stash);
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
                        ao = bo.add(SHORT_SHIFTS ? x0.lanewise(VectorOperators.LSHR, eight) : x0.lanewise(VectorOperators.LSHR, 8));
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
                            pt.reinterpretAsInts().intoArray(stash, 8 * L);
                            po.reinterpretAsInts().intoArray(stash, 9 * L);
                            places(stash);
                            pt = po = zs;
                            placeBlocks = 0;
                        }
                        if (++blocks == FOLD_BLOCKS) {
                            aI.intoArray(stash, 2 * L);
                            aH.intoArray(stash, 3 * L);
                            rI.intoArray(stash, 4 * L);
                            rH.intoArray(stash, 5 * L);
                            bI.intoArray(stash, 6 * L);
                            bH.intoArray(stash, 7 * L);
                            adler = fold(adler, FOLD, stash);
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
                pt.reinterpretAsInts().intoArray(stash, 8 * L);
                po.reinterpretAsInts().intoArray(stash, 9 * L);
                places(stash);
                pt = po = zs;
                placeBlocks = 0;
                aI.intoArray(stash, 2 * L);
                aH.intoArray(stash, 3 * L);
                rI.intoArray(stash, 4 * L);
                rH.intoArray(stash, 5 * L);
                bI.intoArray(stash, 6 * L);
                bH.intoArray(stash, 7 * L);
                adler = unpad(fold(adler, blocks * BLOCK, stash), zeros);
                aI = aH = rI = rH = bI = bH = zero;
                blocks = 0;
            }
            if (tail == null) {
                return adler;
            }
            adler = bytes(adler, tail, tailFrom, tailTo);
        }
    }

    /**
     * {@link #digest(List, int, long, long)} for a stretch read from memory ({@code fromMemory}): pages of at most four
     * blocks four at a time and pieces (pages in address order) of at least {@link #LONG_PIECE} bytes as groups of four
     * stretches (four streams of loads in flight: faster from memory, slower in cache than two), the rest by
     * {@link #digest(List, int, long, long)}, joined with {@link Adler32Parts#combine}. The in-cache loop is left as it
     * was: with these paths inside it, C2 compiled it about 6 % slower at 256 bits.
     */
    static long digest(List<PageDigestPlan.Run> runs, int run, long skip, long length, boolean fromMemory) {
        if (!fromMemory) {
            return digest(runs, run, skip, length);
        }
        long adler = Adler32Parts.EMPTY;
        int[] stash = new int[10 * L];
        long[] io = new long[3];   // fours' Adler-32, bytes left and bytes of a piece read, in and out
        int i = run;
        long left = length;
        int from = i;        // the stretch not summed yet: from run `from`, `fromSkip` bytes in, `pending` bytes
        long fromSkip = skip;
        long pending = 0;
        int n = runs.size();
        while (left > 0) {
            PageDigestPlan.Run r = runs.get(i);
            MemorySegment seg = ((KvMemory.Host) r.memory()).segment();
            long at0 = r.offset() + skip;
            // the piece from here: runs that continue each other in memory
            long len = Math.min(r.length() - skip, left);
            int k = i + 1;
            while (len < left && len < LONG_PIECE && k < n && runs.get(k).offset() == at0 + len
                    && ((KvMemory.Host) runs.get(k).memory()).segment() == seg) {
                len += Math.min(runs.get(k).length(), left - len);
                k++;
            }
            boolean piece = len >= LONG_PIECE;
            boolean four = !piece && skip == 0 && len == r.length() && groupOfFour(runs, i, left);
            if (piece || four) {
                if (pending > 0) {
                    adler = Adler32Parts.combine(adler, digest(runs, from, fromSkip, pending), pending);
                    pending = 0;
                }
                io[0] = adler;
                io[1] = left;
                if (four) {
                    i = fours(runs, i, io, stash, null, 0, 0);
                    adler = io[0];
                    left = io[1];
                    from = i;
                    fromSkip = 0;
                    skip = 0;
                    continue;
                }
                // the whole piece (runs on while they continue it), its front in groups of four stretches
                while (k < n && len < left && runs.get(k).offset() == at0 + len
                        && ((KvMemory.Host) runs.get(k).memory()).segment() == seg) {
                    len += Math.min(runs.get(k).length(), left - len);
                    k++;
                }
                fours(runs, i, io, stash, seg, at0, len);
                adler = io[0];
                long done = io[2];
                left -= done;
                // where the piece's rest starts
                skip += done;
                while (skip > 0 && skip >= runs.get(i).length()) {
                    skip -= runs.get(i).length();
                    i++;
                }
                from = i;
                fromSkip = skip;
                len -= done;
            }
            // the piece (or its rest) is left to the in-cache loop
            pending += len;
            left -= len;
            i = k;
            skip = 0;
        }
        if (pending > 0) {
            adler = Adler32Parts.combine(adler, digest(runs, from, fromSkip, pending), pending);
        }
        return adler;
    }

    /** Whether runs {@code i} to {@code i + 3} are a group for {@link #fours}: one length of at most four blocks. */
    private static boolean groupOfFour(List<PageDigestPlan.Run> runs, int i, long left) {
        if (i + 3 >= runs.size()) {
            return false;
        }
        long len = runs.get(i).length();
        return len > 0 && len % BB == 0 && len / BB * 4 <= PLACE_BLOCKS && left >= 4 * len
                && runs.get(i + 1).length() == len && runs.get(i + 2).length() == len && runs.get(i + 3).length() == len;
    }

    /**
     * Groups of four pieces of the same whole number of blocks (at most four) from run {@code i} on, read in lockstep,
     * for as long as the stream has them: four streams of loads in flight, for pages read from memory (a method of its
     * own, so that its sixteen running sums get the registers). Starts and ends with every sum folded; {@code io}
     * holds the Adler-32 so far and the bytes left of the stretch, updated. Returns the run after the last group.
     * With a {@code piece} ({@code pieceLen} bytes of it from {@code pieceAt}), its front instead, as groups of four
     * consecutive stretches of {@value #PLACE_BLOCKS}{@code / 4} blocks; {@code io[2]} gets the bytes read.
     *
     * <p>The order of the pieces matters only for {@code r} (a's prefix before each block): every one of the group's
     * {@code 4m} blocks has the prefix before the group ({@code 4m A}), the pieces before its own, {@code m} blocks
     * each ({@code m (3 a0 + 2 a1 + a2)}, kept as {@code w}), and its own piece's blocks before it ({@code rw}: the
     * group's running {@code a} before each step, summed, since all four pieces are at the same block). The four
     * {@code a}'s sum ({@code <= 4 * 255 * 32}) and {@code w}'s step ({@code <= 6 * 255 * 32}) are exact in 16 bits.
     */
    private static int fours(List<PageDigestPlan.Run> runs, int i, long[] io, int[] stash, MemorySegment piece,
            long pieceAt, long pieceLen) {
        long done = 0;   // of the piece
        ShortVector zs = ShortVector.zero(SS);
        IntVector zero = IntVector.zero(S);
        ShortVector eight = EIGHT;
        ShortVector w255 = W255;
        IntVector sixteen = SIXTEEN;
        ShortVector pt = zs, po = zs;
        IntVector aI = zero, aH = zero, rI = zero, rH = zero, bI = zero, bH = zero;
        int blocks = 0;
        int placeBlocks = 0;
        long adler = io[0];
        long left = io[1];
        while (piece != null ? done + 4L * PLACE_BLOCKS * BB <= pieceLen : i + 3 < runs.size()) {
            long len;
            int m;
            if (piece != null) {
                m = PLACE_BLOCKS / 4;
                len = m * BB;
            } else {
                len = runs.get(i).length();
                m = (int) (len / BB);
                if (len != m * BB || m == 0 || 4 * m > PLACE_BLOCKS || left < 4 * len
                        || runs.get(i + 1).length() != len || runs.get(i + 2).length() != len
                        || runs.get(i + 3).length() != len) {
                    break;
                }
            }
            if (blocks + 4 * m > FOLD_BLOCKS || placeBlocks + 4 * m > PLACE_BLOCKS) {
                // a group that would not fit (pieces of a block count that does not divide 16): fold first
                pt.reinterpretAsInts().intoArray(stash, 8 * L);
                po.reinterpretAsInts().intoArray(stash, 9 * L);
                places(stash);
                aI.intoArray(stash, 2 * L);
                aH.intoArray(stash, 3 * L);
                rI.intoArray(stash, 4 * L);
                rH.intoArray(stash, 5 * L);
                bI.intoArray(stash, 6 * L);
                bH.intoArray(stash, 7 * L);
                adler = fold(adler, blocks * BLOCK, stash);
                aI = aH = rI = rH = bI = bH = zero;
                pt = po = zs;
                blocks = 0;
                placeBlocks = 0;
            }
            // four pieces of whole blocks in lockstep: P0 (seg), P1, P2, P3, in stream order
            MemorySegment seg, s1, s2, s3;
            long at0, o1, o2, o3;
            if (piece != null) {
                seg = s1 = s2 = s3 = piece;
                at0 = pieceAt + done;
                o1 = at0 + len;
                o2 = o1 + len;
                o3 = o2 + len;
                done += 4 * len;
            } else {
                PageDigestPlan.Run r0 = runs.get(i);
                PageDigestPlan.Run r1 = runs.get(i + 1);
                PageDigestPlan.Run r2 = runs.get(i + 2);
                PageDigestPlan.Run r3 = runs.get(i + 3);
                i += 4;
                left -= 4 * len;
                seg = ((KvMemory.Host) r0.memory()).segment();
                s1 = ((KvMemory.Host) r1.memory()).segment();
                s2 = ((KvMemory.Host) r2.memory()).segment();
                s3 = ((KvMemory.Host) r3.memory()).segment();
                at0 = r0.offset();
                o1 = r1.offset();
                o2 = r2.offset();
                o3 = r3.offset();
            }
            // shared over the four: g, the group's a so far (all pieces' blocks before j); rw, the sum of
            // each block's prefix within its own piece; w, 3 a0 + 2 a1 + a2 (the pieces before each piece)
            IntVector gI = zero, gH = zero, rwI = zero, rwH = zero, wI = zero, wH = zero;
            for (int j = 0; j < m; j++) {
                long d = j * BB;
                ShortVector x0 = ShortVector.fromMemorySegment(SS, seg, at0 + d, LE);
                ShortVector x1 = ShortVector.fromMemorySegment(SS, s1, o1 + d, LE);
                ShortVector x2 = ShortVector.fromMemorySegment(SS, s2, o2 + d, LE);
                ShortVector x3 = ShortVector.fromMemorySegment(SS, s3, o3 + d, LE);
                ShortVector b0t = x0, b1t = x1, b2t = x2, b3t = x3;
                ShortVector b0o = (SHORT_SHIFTS ? x0.lanewise(VectorOperators.LSHR, eight) : x0.lanewise(VectorOperators.LSHR, 8));
                ShortVector b1o = (SHORT_SHIFTS ? x1.lanewise(VectorOperators.LSHR, eight) : x1.lanewise(VectorOperators.LSHR, 8));
                ShortVector b2o = (SHORT_SHIFTS ? x2.lanewise(VectorOperators.LSHR, eight) : x2.lanewise(VectorOperators.LSHR, 8));
                ShortVector b3o = (SHORT_SHIFTS ? x3.lanewise(VectorOperators.LSHR, eight) : x3.lanewise(VectorOperators.LSHR, 8));
                x0 = ShortVector.fromMemorySegment(SS, seg, at0 + d + V, LE);
                x1 = ShortVector.fromMemorySegment(SS, s1, o1 + d + V, LE);
                x2 = ShortVector.fromMemorySegment(SS, s2, o2 + d + V, LE);
                x3 = ShortVector.fromMemorySegment(SS, s3, o3 + d + V, LE);
                ShortVector a0t = b0t.add(x0), a1t = b1t.add(x1), a2t = b2t.add(x2), a3t = b3t.add(x3);
                ShortVector a0o = b0o.add(SHORT_SHIFTS ? x0.lanewise(VectorOperators.LSHR, eight) : x0.lanewise(VectorOperators.LSHR, 8));
                ShortVector a1o = b1o.add(SHORT_SHIFTS ? x1.lanewise(VectorOperators.LSHR, eight) : x1.lanewise(VectorOperators.LSHR, 8));
                ShortVector a2o = b2o.add(SHORT_SHIFTS ? x2.lanewise(VectorOperators.LSHR, eight) : x2.lanewise(VectorOperators.LSHR, 8));
                ShortVector a3o = b3o.add(SHORT_SHIFTS ? x3.lanewise(VectorOperators.LSHR, eight) : x3.lanewise(VectorOperators.LSHR, 8));
                for (int k = 2; k < BLOCK; k++) {
                    long e = d + (long) k * V;
                    x0 = ShortVector.fromMemorySegment(SS, seg, at0 + e, LE);
                    x1 = ShortVector.fromMemorySegment(SS, s1, o1 + e, LE);
                    x2 = ShortVector.fromMemorySegment(SS, s2, o2 + e, LE);
                    x3 = ShortVector.fromMemorySegment(SS, s3, o3 + e, LE);
                    b0t = b0t.add(a0t);
                    b0o = b0o.add(a0o);
                    a0t = a0t.add(x0);
                    a0o = a0o.add(SHORT_SHIFTS ? x0.lanewise(VectorOperators.LSHR, eight) : x0.lanewise(VectorOperators.LSHR, 8));
                    b1t = b1t.add(a1t);
                    b1o = b1o.add(a1o);
                    a1t = a1t.add(x1);
                    a1o = a1o.add(SHORT_SHIFTS ? x1.lanewise(VectorOperators.LSHR, eight) : x1.lanewise(VectorOperators.LSHR, 8));
                    b2t = b2t.add(a2t);
                    b2o = b2o.add(a2o);
                    a2t = a2t.add(x2);
                    a2o = a2o.add(SHORT_SHIFTS ? x2.lanewise(VectorOperators.LSHR, eight) : x2.lanewise(VectorOperators.LSHR, 8));
                    b3t = b3t.add(a3t);
                    b3o = b3o.add(a3o);
                    a3t = a3t.add(x3);
                    a3o = a3o.add(SHORT_SHIFTS ? x3.lanewise(VectorOperators.LSHR, eight) : x3.lanewise(VectorOperators.LSHR, 8));
                }
                // each piece's block sums, exact in 16 bits (a <= 255 * 32, b <= 61200); the four a's sum
                // (<= 32640) and 3 a0 + 2 a1 + a2 (<= 48960) still fit 16 bits
                ShortVector a0 = a0t.sub(a0o.mul(w255));
                ShortVector a1 = a1t.sub(a1o.mul(w255));
                ShortVector a2 = a2t.sub(a2o.mul(w255));
                ShortVector a3 = a3t.sub(a3o.mul(w255));
                ShortVector p01 = a0.add(a1);
                ShortVector p012 = p01.add(a2);
                IntVector sa = p012.add(a3).reinterpretAsInts();
                IntVector wa = p012.add(p01).add(a0).reinterpretAsInts();
                IntVector b0 = b0t.sub(b0o.mul(w255)).reinterpretAsInts();
                IntVector b1 = b1t.sub(b1o.mul(w255)).reinterpretAsInts();
                IntVector b2 = b2t.sub(b2o.mul(w255)).reinterpretAsInts();
                IntVector b3 = b3t.sub(b3o.mul(w255)).reinterpretAsInts();
                pt = pt.add(a0t.add(a1t)).add(a2t.add(a3t));
                po = po.add(a0o.add(a1o)).add(a2o.add(a3o));
                rwI = rwI.add(gI);
                rwH = rwH.add(gH);
                gI = gI.add(sa);
                gH = gH.add(sa.lanewise(VectorOperators.LSHR, sixteen));
                wI = wI.add(wa);
                wH = wH.add(wa.lanewise(VectorOperators.LSHR, sixteen));
                bI = bI.add(b0.add(b1)).add(b2.add(b3));
                bH = bH.add(b0.lanewise(VectorOperators.LSHR, sixteen).add(b1.lanewise(VectorOperators.LSHR, sixteen)))
                        .add(b2.lanewise(VectorOperators.LSHR, sixteen).add(b3.lanewise(VectorOperators.LSHR, sixteen)));
            }
            // every one of the 4m blocks has the prefix before the group (a), its pieces before it (w, m
            // blocks each) and its own piece's blocks before it (rw)
            rI = rI.add(aI.mul(4 * m)).add(rwI).add(wI.mul(m));
            rH = rH.add(aH.mul(4 * m)).add(rwH).add(wH.mul(m));
            aI = aI.add(gI);
            aH = aH.add(gH);
            blocks += 4 * m;
            placeBlocks += 4 * m;
            if (placeBlocks == PLACE_BLOCKS) {
                pt.reinterpretAsInts().intoArray(stash, 8 * L);
                po.reinterpretAsInts().intoArray(stash, 9 * L);
                places(stash);
                pt = po = zs;
                placeBlocks = 0;
            }
            if (blocks == FOLD_BLOCKS) {
                aI.intoArray(stash, 2 * L);
                aH.intoArray(stash, 3 * L);
                rI.intoArray(stash, 4 * L);
                rH.intoArray(stash, 5 * L);
                bI.intoArray(stash, 6 * L);
                bH.intoArray(stash, 7 * L);
                adler = fold(adler, FOLD, stash);
                aI = aH = rI = rH = bI = bH = zero;
                blocks = 0;
            }
        }
        if (blocks > 0) {
            // everything into s1, s2: the caller goes on from a clean state
            pt.reinterpretAsInts().intoArray(stash, 8 * L);
            po.reinterpretAsInts().intoArray(stash, 9 * L);
            places(stash);
            aI.intoArray(stash, 2 * L);
            aH.intoArray(stash, 3 * L);
            rI.intoArray(stash, 4 * L);
            rH.intoArray(stash, 5 * L);
            bI.intoArray(stash, 6 * L);
            bH.intoArray(stash, 7 * L);
            adler = fold(adler, blocks * BLOCK, stash);
        }
        io[0] = adler;
        io[1] = left;
        io[2] = done;
        return i;
    }

    /**
     * Adds the place sums stashed by the caller at {@code 8L} ({@code pt}, whole lanes) and {@code 9L} ({@code po}, odd
     * bytes) to {@code stash}'s place-weighted lanes (0 to {@code L}) before they pass {@code 2^16}: the odd bytes' sum
     * per place is {@code po}, the even bytes' {@code pt - (po << 8)}, both exact below {@code 2^16}. Every loop's place
     * flush. The vectors come through the array, as to {@link #fold}: C2 does not inline a method of this size into
     * the loops (NodeCountInliningCutoff, "callee is too large"), and vectors passed as arguments to a call would be
     * boxed (docs/bench-cpu.md, "The flush code folded").
     */
    private static void places(int[] stash) {
        IntVector sixteen = SIXTEEN;
        IntVector low16 = LOW16;
        IntVector pw = IntVector.fromArray(S, stash, 9 * L);
        IntVector pe = IntVector.fromArray(S, stash, 8 * L).reinterpretAsShorts()
                .sub(pw.reinterpretAsShorts().lanewise(VectorOperators.LSHL, EIGHT)).reinterpretAsInts();
        IntVector.fromArray(S, stash, 0)
                .add(pe.and(low16).mul(PLACE_EL))
                .add(pe.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_EH))
                .add(pw.and(low16).mul(PLACE_OL))
                .add(pw.lanewise(VectorOperators.LSHR, sixteen).mul(PLACE_OH))
                .intoArray(stash, 0);
    }

    /** A lane's pair total from its raw sum and its high halves' sum: {@code I - 65535 H}, modulo 2^32. */
    private static IntVector pairs(int[] stash, int at) {
        IntVector raw = IntVector.fromArray(S, stash, at);
        IntVector high = IntVector.fromArray(S, stash, at + L);
        return raw.sub(high.lanewise(VectorOperators.LSHL, 16)).add(high);
    }

    /**
     * {@code adler} followed by the {@code vectors * V} bytes whose sums are in {@code stash}: the place-weighted sums
     * ({@code sum_f f A_f} in lanes), then {@code a}, {@code r} and {@code b} as raw and high-half sums; zeroes the
     * place-weighted lanes for the next fold. The caller stores the vectors (a call with them as arguments, not
     * inlined, would box them: the loop doubled in speed once they came through this array; with the six stores in a
     * helper taking the vectors, not inlined, the in-cache loop ran 1.7 times slower, docs/bench-cpu.md, "The flush
     * code folded"). So each fold site stores them itself.
     */
    private static long fold(long adler, int vectors, int[] stash) {
        IntVector placedLanes = IntVector.fromArray(S, stash, 0);
        IntVector.zero(S).intoArray(stash, 0);
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
