import jdk.incubator.vector.*;
import java.lang.foreign.*;
import java.nio.ByteOrder;
import java.util.*;

/**
 * Stand-alone loops behind docs/bench-cpu.md's "SGLang's page digest" notes on the pair loop's form: a plain vector
 * read and VectorAdler32's five-operation body (sums only, no close, values not Adler-32) over shuffled 2 KiB pages
 * of one segment (offsets in a {@code long[]}), per page or two pages in lockstep, flat or in blocks of 16 vectors;
 * best of 3000 after warm-up, GB/s. Not a benchmark of record; run as a source file:
 * {@code java --add-modules jdk.incubator.vector jmh/ab/PageLoops.java 262144} (bytes; {@code inorder} after the size
 * keeps the pages in address order; add {@code -XX:UseAVX=2} for 256 bits).
 */
public class PageLoops {
    static final VectorSpecies<Short> SS = ShortVector.SPECIES_PREFERRED;
    static final VectorSpecies<Long> SL = LongVector.SPECIES_PREFERRED;
    static final int V = SS.vectorByteSize();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    static final ShortVector EIGHT = ShortVector.broadcast(SS, (short) 8);
    static final int PAGE = 2048;
    static MemorySegment seg;
    static long[] offs;

    static long g1() { // read, per page
        LongVector a = LongVector.zero(SL);
        for (long p : offs) for (long o = 0; o < PAGE; o += V) a = a.add(LongVector.fromMemorySegment(SL, seg, p + o, LE));
        return a.reduceLanes(VectorOperators.ADD);
    }
    static long g2() { // body per page flat
        ShortVector at = ShortVector.zero(SS), ao = at, bt = at, bo = at; ShortVector e8 = EIGHT;
        for (long p : offs) for (long o = 0; o < PAGE; o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + o, LE);
            bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
        }
        return at.add(ao).add(bt).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long g3() { // body pairs lockstep flat
        ShortVector at = ShortVector.zero(SS), ao = at, bt = at, bo = at, ct = at, co = at, dt = at, d0 = at; ShortVector e8 = EIGHT;
        for (int i = 0; i + 1 < offs.length; i += 2) {
            long p = offs[i], q = offs[i + 1];
            for (long o = 0; o < PAGE; o += V) {
                ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + o, LE);
                ShortVector y = ShortVector.fromMemorySegment(SS, seg, q + o, LE);
                bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
                dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.LSHR, e8));
            }
        }
        return at.add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0).reduceLanes(VectorOperators.ADD);
    }
    static long g4() { // body per page, blocks of 16 with int k loop, reset per block (sum into acc)
        ShortVector acc = ShortVector.zero(SS); ShortVector e8 = EIGHT; ShortVector z = acc;
        for (long p : offs) for (long b = 0; b < PAGE; b += 16L * V) {
            ShortVector at = z, ao = z, bt = z, bo = z;
            for (int k = 0; k < 16; k++) {
                ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + b + (long) k * V, LE);
                bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
            }
            acc = acc.add(at).add(ao).add(bt).add(bo);
        }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static long g5() { // pairs, blocks of 16, reset per block
        ShortVector acc = ShortVector.zero(SS); ShortVector e8 = EIGHT; ShortVector z = acc;
        for (int i = 0; i + 1 < offs.length; i += 2) {
            long p = offs[i], q = offs[i + 1];
            for (long b = 0; b < PAGE; b += 16L * V) {
                ShortVector at = z, ao = z, bt = z, bo = z, ct = z, co = z, dt = z, d0 = z;
                for (int k = 0; k < 16; k++) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + b + (long) k * V, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, seg, q + b + (long) k * V, LE);
                    bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
                    dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.LSHR, e8));
                }
                acc = acc.add(at).add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0);
            }
        }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static long g6() { // flat over the whole segment in order (no pages)
        ShortVector at = ShortVector.zero(SS), ao = at, bt = at, bo = at; ShortVector e8 = EIGHT;
        long n = seg.byteSize();
        for (long o = 0; o < n; o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, seg, o, LE);
            bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
        }
        return at.add(ao).add(bt).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long g7() { // read flat whole
        LongVector a = LongVector.zero(SL);
        long n = seg.byteSize();
        for (long o = 0; o < n; o += V) a = a.add(LongVector.fromMemorySegment(SL, seg, o, LE));
        return a.reduceLanes(VectorOperators.ADD);
    }
    static long g8() { // pairs, flat loop over the page, close every 16 vectors by a branch
        ShortVector acc = ShortVector.zero(SS); ShortVector e8 = EIGHT; ShortVector z = acc;
        ShortVector at = z, ao = z, bt = z, bo = z, ct = z, co = z, dt = z, d0 = z;
        for (int i = 0; i + 1 < offs.length; i += 2) {
            long p = offs[i], q = offs[i + 1];
            for (int k = 0; k < PAGE / V; k++) {
                ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + (long) k * V, LE);
                ShortVector y = ShortVector.fromMemorySegment(SS, seg, q + (long) k * V, LE);
                bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
                dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.LSHR, e8));
                if ((k & 15) == 15) {
                    acc = acc.add(at).add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0);
                    at = ao = bt = bo = ct = co = dt = d0 = z;
                }
            }
        }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static long g9() { // pairs, blocks16 with a long offset loop
        ShortVector acc = ShortVector.zero(SS); ShortVector e8 = EIGHT; ShortVector z = acc;
        for (int i = 0; i + 1 < offs.length; i += 2) {
            long p = offs[i], q = offs[i + 1];
            for (long b = 0; b < PAGE; b += 16L * V) {
                ShortVector at = z, ao = z, bt = z, bo = z, ct = z, co = z, dt = z, d0 = z;
                long d = q - p;
                for (long o = p + b; o < p + b + 16L * V; o += V) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, seg, o, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, seg, o + d, LE);
                    bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
                    dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.LSHR, e8));
                }
                acc = acc.add(at).add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0);
            }
        }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static long g10() { // pairs, one block = whole 16 steps fully written for block via two halves of 8 (k loop of 8, twice)
        ShortVector acc = ShortVector.zero(SS); ShortVector e8 = EIGHT; ShortVector z = acc;
        for (int i = 0; i + 1 < offs.length; i += 2) {
            long p = offs[i], q = offs[i + 1];
            for (int blk = 0; blk < PAGE / (16 * V); blk++) {
                ShortVector at = z, ao = z, bt = z, bo = z, ct = z, co = z, dt = z, d0 = z;
                long pb = p + (long) blk * 16 * V, qb = q + (long) blk * 16 * V;
                for (int k = 0; k < 16; k += 2) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, seg, pb + (long) k * V, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, seg, qb + (long) k * V, LE);
                    bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
                    dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.LSHR, e8));
                    x = ShortVector.fromMemorySegment(SS, seg, pb + (long) (k + 1) * V, LE);
                    y = ShortVector.fromMemorySegment(SS, seg, qb + (long) (k + 1) * V, LE);
                    bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
                    dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.LSHR, e8));
                }
                acc = acc.add(at).add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0);
            }
        }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    interface F { long f(); }
    public static void main(String[] a) {
        long size = Long.parseLong(a[0]);
        seg = Arena.ofShared().allocate(size, 64);
        Random r = new Random(1);
        for (long o = 0; o < size; o += 8) seg.set(ValueLayout.JAVA_LONG_UNALIGNED, o, r.nextLong());
        List<Long> l = new ArrayList<>();
        for (long o = 0; o < size; o += PAGE) l.add(o);
        if (a.length < 2 || !a[1].equals("inorder")) Collections.shuffle(l, r);
        offs = l.stream().mapToLong(Long::longValue).toArray();
        F[] fs = {PageLoops::g1, PageLoops::g2, PageLoops::g3, PageLoops::g4, PageLoops::g5, PageLoops::g6, PageLoops::g7, PageLoops::g8, PageLoops::g9, PageLoops::g10};
        String[] names = {"read per page", "body per page flat", "body pairs flat", "body per page blocks16", "body pairs blocks16", "body flat whole", "read flat whole", "pairs flat, close by branch", "pairs blocks16 long loop", "pairs blocks16 k+=2"};
        long sink = 0;
        long until = System.nanoTime() + 3_000_000_000L;
        while (System.nanoTime() < until) for (F f : fs) sink += f.f();
        double[] best = new double[fs.length]; Arrays.fill(best, 1e18);
        for (int k = 0; k < 3000; k++) for (int i = 0; i < fs.length; i++) { long t = System.nanoTime(); sink += fs[i].f(); best[i] = Math.min(best[i], System.nanoTime() - t); }
        for (int i = 0; i < fs.length; i++) System.out.printf("%-28s %6.1f GB/s%n", names[i], size / best[i]);
        System.out.println(sink == 1 ? "" : "");
    }
}
