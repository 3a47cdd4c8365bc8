import jdk.incubator.vector.*;
import java.lang.foreign.*;
import java.nio.ByteOrder;
import java.util.Arrays;
/**
 * Single-loop micro-benchmarks behind VectorAdler32's five-operation body (docs/bench-cpu.md, "SGLang's page digest"):
 * each loop sums one contiguous segment of the given bytes; best of 300 after warm-up, GB/s. Not a benchmark of
 * record; run as a source file: {@code java --add-modules jdk.incubator.vector jmh/ab/AdlerLoops.java 262144}.
 */
public class AdlerLoops {
    static final VectorSpecies<Short> SS = ShortVector.SPECIES_PREFERRED;
    static final VectorSpecies<Long> SL = LongVector.SPECIES_PREFERRED;
    static final int V = SS.vectorByteSize();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    static long m1(MemorySegment s) { // read only, 1 acc
        LongVector a = LongVector.zero(SL);
        for (long o = 0; o < s.byteSize(); o += V) a = a.add(LongVector.fromMemorySegment(SL, s, o, LE));
        return a.reduceLanes(VectorOperators.ADD);
    }
    static long m2(MemorySegment s) { // a+=x only, shorts
        ShortVector a = ShortVector.zero(SS);
        for (long o = 0; o < s.byteSize(); o += V) a = a.add(ShortVector.fromMemorySegment(SS, s, o, LE));
        return a.reduceLanes(VectorOperators.ADD);
    }
    static long m3(MemorySegment s) { // a+=x; b+=a
        ShortVector a = ShortVector.zero(SS), b = a;
        for (long o = 0; o < s.byteSize(); o += V) { a = a.add(ShortVector.fromMemorySegment(SS, s, o, LE)); b = b.add(a); }
        return a.reduceLanes(VectorOperators.ADD) + b.reduceLanes(VectorOperators.ADD);
    }
    static long m4(MemorySegment s) { // full body
        ShortVector ae = ShortVector.zero(SS), ao = ae, be = ae, bo = ae;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ae = ae.add(x.and((short) 0xFF)); ao = ao.add(x.lanewise(VectorOperators.LSHR, 8)); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long m5(MemorySegment s) { // full body, int counter inner 16
        ShortVector ae = ShortVector.zero(SS), ao = ae, be = ae, bo = ae;
        long r = 0;
        for (long o = 0; o < s.byteSize(); o += 16 * V) {
            for (int k = 0; k < 16; k++) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o + (long) k * V, LE);
            ae = ae.add(x.and((short) 0xFF)); ao = ao.add(x.lanewise(VectorOperators.LSHR, 8)); be = be.add(ae); bo = bo.add(ao);
            }
            r += be.reinterpretAsInts().lane(0);
        }
        return r + ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long m6(MemorySegment s) { // int lanes masks like VectorAdler32
        VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;
        IntVector ae = IntVector.zero(S), ao = ae, be = ae, bo = ae;
        for (long o = 0; o < s.byteSize(); o += V) {
            IntVector x = IntVector.fromMemorySegment(S, s, o, LE);
            ae = ae.add(x.and(0x00FF00FF)); ao = ao.add(x.lanewise(VectorOperators.LSHR, 8).and(0x00FF00FF)); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long m7(MemorySegment s) { // 2 independent halves (ILP): first half/second half streams
        ShortVector ae = ShortVector.zero(SS), ao = ae, be = ae, bo = ae, ce=ae, co=ae, de=ae, dO=ae;
        long h = s.byteSize() / 2;
        for (long o = 0; o < h; o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ShortVector y = ShortVector.fromMemorySegment(SS, s, o + h, LE);
            ae = ae.add(x.and((short) 0xFF)); ao = ao.add(x.lanewise(VectorOperators.LSHR, 8)); be = be.add(ae); bo = bo.add(ao);
            ce = ce.add(y.and((short) 0xFF)); co = co.add(y.lanewise(VectorOperators.LSHR, 8)); de = de.add(ce); dO = dO.add(co);
        }
        return ae.add(ao).add(be).add(bo).add(ce).add(co).add(de).add(dO).reduceLanes(VectorOperators.ADD);
    }

    static final ShortVector MASK = ShortVector.broadcast(SS, (short) 0xFF);
    static long m8(MemorySegment s) { // full body, hoisted mask
        ShortVector ae = ShortVector.zero(SS), ao = ae, be = ae, bo = ae;
        ShortVector m = MASK;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ae = ae.add(x.and(m)); ao = ao.add(x.lanewise(VectorOperators.LSHR, 8)); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long m9(MemorySegment s) { // only and pair
        ShortVector ae = ShortVector.zero(SS), be = ae;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ae = ae.add(x.and((short) 0xFF)); be = be.add(ae);
        }
        return ae.add(be).reduceLanes(VectorOperators.ADD);
    }
    static long m10(MemorySegment s) { // only shift pair
        ShortVector ao = ShortVector.zero(SS), bo = ao;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ao = ao.add(x.lanewise(VectorOperators.LSHR, 8)); bo = bo.add(ao);
        }
        return ao.add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long m11(MemorySegment s) { // two pairs, no split (x and x)
        ShortVector ae = ShortVector.zero(SS), ao = ae, be = ae, bo = ae;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ae = ae.add(x); ao = ao.add(x.neg()); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }

    static final VectorSpecies<Byte> B256 = ByteVector.SPECIES_256;
    static final VectorSpecies<Short> S512 = ShortVector.SPECIES_512;
    static long m12(MemorySegment s) { // zero-extend 256-bit byte loads to 512-bit shorts
        ShortVector ae = ShortVector.zero(S512), ao = ae, be = ae, bo = ae;
        for (long o = 0; o < s.byteSize(); o += 64) {
            ShortVector x = (ShortVector) ByteVector.fromMemorySegment(B256, s, o, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S512, 0);
            ShortVector y = (ShortVector) ByteVector.fromMemorySegment(B256, s, o + 32, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S512, 0);
            ae = ae.add(x); ao = ao.add(y); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static final VectorSpecies<Byte> B512 = ByteVector.SPECIES_512;
    static long m13(MemorySegment s) { // 512-bit byte load, two parts
        ShortVector ae = ShortVector.zero(S512), ao = ae, be = ae, bo = ae;
        for (long o = 0; o < s.byteSize(); o += 64) {
            ByteVector b = ByteVector.fromMemorySegment(B512, s, o, LE);
            ShortVector x = (ShortVector) b.convertShape(VectorOperators.ZERO_EXTEND_B2S, S512, 0);
            ShortVector y = (ShortVector) b.convertShape(VectorOperators.ZERO_EXTEND_B2S, S512, 1);
            ae = ae.add(x); ao = ao.add(y); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static final VectorSpecies<Short> S256 = ShortVector.SPECIES_256;
    static long m14(MemorySegment s) { // 256-bit shorts, full body mask/shift
        ShortVector ae = ShortVector.zero(S256), ao = ae, be = ae, bo = ae;
        for (long o = 0; o < s.byteSize(); o += 32) {
            ShortVector x = ShortVector.fromMemorySegment(S256, s, o, LE);
            ae = ae.add(x.and((short) 0xFF)); ao = ao.add(x.lanewise(VectorOperators.LSHR, 8)); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }

    static final VectorSpecies<Integer> SI = IntVector.SPECIES_PREFERRED;
    static long n1(MemorySegment s) { // int lshr + and
        IntVector ao = IntVector.zero(SI), bo = ao;
        for (long o = 0; o < s.byteSize(); o += V) {
            IntVector x = IntVector.fromMemorySegment(SI, s, o, LE);
            ao = ao.add(x.lanewise(VectorOperators.LSHR, 8).and(0x00FF00FF)); bo = bo.add(ao);
        }
        return ao.add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long n2(MemorySegment s) { // long lshr + and
        LongVector ao = LongVector.zero(SL), bo = ao;
        for (long o = 0; o < s.byteSize(); o += V) {
            LongVector x = LongVector.fromMemorySegment(SL, s, o, LE);
            ao = ao.add(x.lanewise(VectorOperators.LSHR, 8).and(0x00FF00FF00FF00FFL)); bo = bo.add(ao);
        }
        return ao.add(bo).reduceLanes(VectorOperators.ADD);
    }
    static final ShortVector EIGHT = ShortVector.broadcast(SS, (short) 8);
    static long n3(MemorySegment s) { // short lshr by vector
        ShortVector ao = ShortVector.zero(SS), bo = ao; ShortVector e = EIGHT;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ao = ao.add(x.lanewise(VectorOperators.LSHR, e)); bo = bo.add(ao);
        }
        return ao.add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long n4(MemorySegment s) { // int ror + and
        IntVector ao = IntVector.zero(SI), bo = ao;
        for (long o = 0; o < s.byteSize(); o += V) {
            IntVector x = IntVector.fromMemorySegment(SI, s, o, LE);
            ao = ao.add(x.lanewise(VectorOperators.ROR, 8).and(0x00FF00FF)); bo = bo.add(ao);
        }
        return ao.add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long n5(MemorySegment s) { // and pair only, int lanes
        IntVector ao = IntVector.zero(SI), bo = ao;
        for (long o = 0; o < s.byteSize(); o += V) {
            IntVector x = IntVector.fromMemorySegment(SI, s, o, LE);
            ao = ao.add(x.and(0x00FF00FF)); bo = bo.add(ao);
        }
        return ao.add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long n6(MemorySegment s) { // both pairs, even via and, odd via int and 0xFF00FF00 then int lshr 8 of the SUM? (not exact, timing only)
        IntVector ae = IntVector.zero(SI), ao = ae, be = ae, bo = ae;
        for (long o = 0; o < s.byteSize(); o += V) {
            IntVector x = IntVector.fromMemorySegment(SI, s, o, LE);
            ae = ae.add(x.and(0x00FF00FF)); ao = ao.add(x.and(0xFF00FF00)); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }

    static long p1(MemorySegment s) { // full body, vector shift, flat loop
        ShortVector ae = ShortVector.zero(SS), ao = ae, be = ae, bo = ae; ShortVector e8 = EIGHT, m = MASK;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ae = ae.add(x.and(m)); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8)); be = be.add(ae); bo = bo.add(ao);
        }
        return ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long p2(MemorySegment s) { // full body, vector shift, inner 16
        ShortVector ae = ShortVector.zero(SS), ao = ae, be = ae, bo = ae; ShortVector e8 = EIGHT, m = MASK;
        long r = 0;
        for (long o = 0; o < s.byteSize(); o += 16 * V) {
            for (int k = 0; k < 16; k++) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o + (long) k * V, LE);
            ae = ae.add(x.and(m)); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8)); be = be.add(ae); bo = bo.add(ao);
            }
            r += be.reinterpretAsInts().lane(0);
        }
        return r + ae.add(ao).add(be).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static long p3(MemorySegment s) { // combined: t=e+o, at+=t, b+=at, ao+=o
        ShortVector at = ShortVector.zero(SS), ao = at, b = at; ShortVector e8 = EIGHT, m = MASK;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            ShortVector od = x.lanewise(VectorOperators.LSHR, e8);
            at = at.add(x.and(m).add(od)); ao = ao.add(od); b = b.add(at);
        }
        return at.add(ao).add(b).reduceLanes(VectorOperators.ADD);
    }

    static long p4(MemorySegment s) { // p2 + real widening
        VectorSpecies<Integer> S = SI;
        ShortVector zs = ShortVector.zero(SS), ae = zs, ao = ae, be = ae, bo = ae; ShortVector e8 = EIGHT, m = MASK;
        IntVector zero = IntVector.zero(S), ael = zero, aeh = zero, aol = zero, aoh = zero, bel = zero, beh = zero, bol = zero, boh = zero;
        for (long o = 0; o < s.byteSize(); o += 16 * V) {
            for (int k = 0; k < 16; k++) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o + (long) k * V, LE);
            ae = ae.add(x.and(m)); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8)); be = be.add(ae); bo = bo.add(ao);
            }
                        IntVector aei = ae.reinterpretAsInts(), aoi = ao.reinterpretAsInts();
                        IntVector bei = be.reinterpretAsInts(), boi = bo.reinterpretAsInts();
                        bel = bel.add(ael.mul(16)).add(bei.and(0xFFFF));
                        beh = beh.add(aeh.mul(16)).add(bei.lanewise(VectorOperators.LSHR, 16));
                        bol = bol.add(aol.mul(16)).add(boi.and(0xFFFF));
                        boh = boh.add(aoh.mul(16)).add(boi.lanewise(VectorOperators.LSHR, 16));
                        ael = ael.add(aei.and(0xFFFF));
                        aeh = aeh.add(aei.lanewise(VectorOperators.LSHR, 16));
                        aol = aol.add(aoi.and(0xFFFF));
                        aoh = aoh.add(aoi.lanewise(VectorOperators.LSHR, 16));
                        ae = ao = be = bo = zs;
        }
        return ael.add(aeh).add(aol).add(aoh).add(bel).add(beh).add(bol).add(boh).reduceLanes(VectorOperators.ADD);
    }
    static long p5(MemorySegment s) { // p2 + real widening
        VectorSpecies<Integer> S = SI;
        ShortVector zs = ShortVector.zero(SS), ae = zs, ao = ae, be = ae, bo = ae; ShortVector e8 = EIGHT, m = MASK; IntVector l16 = IntVector.broadcast(SI, 0xFFFF), s16 = IntVector.broadcast(SI, 16), f4 = IntVector.broadcast(SI, 4);
        IntVector zero = IntVector.zero(S), ael = zero, aeh = zero, aol = zero, aoh = zero, bel = zero, beh = zero, bol = zero, boh = zero;
        for (long o = 0; o < s.byteSize(); o += 16 * V) {
            for (int k = 0; k < 16; k++) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o + (long) k * V, LE);
            ae = ae.add(x.and(m)); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8)); be = be.add(ae); bo = bo.add(ao);
            }
                        IntVector aei = ae.reinterpretAsInts(), aoi = ao.reinterpretAsInts();
                        IntVector bei = be.reinterpretAsInts(), boi = bo.reinterpretAsInts();
                        bel = bel.add(ael.lanewise(VectorOperators.LSHL, f4)).add(bei.and(l16));
                        beh = beh.add(aeh.lanewise(VectorOperators.LSHL, f4)).add(bei.lanewise(VectorOperators.LSHR, s16));
                        bol = bol.add(aol.lanewise(VectorOperators.LSHL, f4)).add(boi.and(l16));
                        boh = boh.add(aoh.lanewise(VectorOperators.LSHL, f4)).add(boi.lanewise(VectorOperators.LSHR, s16));
                        ael = ael.add(aei.and(l16));
                        aeh = aeh.add(aei.lanewise(VectorOperators.LSHR, s16));
                        aol = aol.add(aoi.and(l16));
                        aoh = aoh.add(aoi.lanewise(VectorOperators.LSHR, s16));
                        ae = ao = be = bo = zs;
        }
        return ael.add(aeh).add(aol).add(aoh).add(bel).add(beh).add(bol).add(boh).reduceLanes(VectorOperators.ADD);
    }
    static long p6(MemorySegment s) { // p2 + real widening
        VectorSpecies<Integer> S = SI;
        ShortVector zs = ShortVector.zero(SS), ae = zs, ao = ae, be = ae, bo = ae; ShortVector e8 = EIGHT, m = MASK; IntVector l16 = IntVector.broadcast(SI, 0xFFFF), s16 = IntVector.broadcast(SI, 16), f4 = IntVector.broadcast(SI, 4);
        IntVector zero = IntVector.zero(S), cel = zero, ceh = zero, col = zero, coh = zero, ael = zero, aeh = zero, aol = zero, aoh = zero, bel = zero, beh = zero, bol = zero, boh = zero;
        for (long o = 0; o < s.byteSize(); o += 16 * V) {
            for (int k = 0; k < 16; k++) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o + (long) k * V, LE);
            ae = ae.add(x.and(m)); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8)); be = be.add(ae); bo = bo.add(ao);
            }
                        IntVector aei = ae.reinterpretAsInts(), aoi = ao.reinterpretAsInts();
                        IntVector bei = be.reinterpretAsInts(), boi = bo.reinterpretAsInts();
                        cel = cel.add(ael); bel = bel.add(bei.and(l16));
                        ceh = ceh.add(aeh); beh = beh.add(bei.lanewise(VectorOperators.LSHR, s16));
                        col = col.add(aol); bol = bol.add(boi.and(l16));
                        coh = coh.add(aoh); boh = boh.add(boi.lanewise(VectorOperators.LSHR, s16));
                        ael = ael.add(aei.and(l16));
                        aeh = aeh.add(aei.lanewise(VectorOperators.LSHR, s16));
                        aol = aol.add(aoi.and(l16));
                        aoh = aoh.add(aoi.lanewise(VectorOperators.LSHR, s16));
                        ae = ao = be = bo = zs;
        }
        return cel.add(ceh).add(col).add(coh).add(ael).add(aeh).add(aol).add(aoh).add(bel).add(beh).add(bol).add(boh).reduceLanes(VectorOperators.ADD);
    }

    static final IntVector EIGHTI = IntVector.broadcast(SI, 8);
    static long q1(MemorySegment s) { // int lshr by vector + and
        IntVector ao = IntVector.zero(SI), bo = ao; IntVector e = EIGHTI; IntVector m = IntVector.broadcast(SI, 0x00FF00FF);
        for (long o = 0; o < s.byteSize(); o += V) {
            IntVector x = IntVector.fromMemorySegment(SI, s, o, LE);
            ao = ao.add(x.lanewise(VectorOperators.LSHR, e).and(m)); bo = bo.add(ao);
        }
        return ao.add(bo).reduceLanes(VectorOperators.ADD);
    }

    static long r1(MemorySegment s) { // VectorAdler32's body: whole lanes and odd bytes
        ShortVector at = ShortVector.zero(SS), ao = at, bt = at, bo = at; ShortVector e8 = EIGHT;
        for (long o = 0; o < s.byteSize(); o += V) {
            ShortVector x = ShortVector.fromMemorySegment(SS, s, o, LE);
            bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, e8));
        }
        return at.add(ao).add(bt).add(bo).reduceLanes(VectorOperators.ADD);
    }
    static final String[] NAMES = {"read, LongVector sum", "a += x, short lanes", "a += x; b += a", "old body in short lanes, scalar shift count", "same, inner loop of 16", "old body (int lanes, masks)", "two streams at once", "old body, mask hoisted", "and-pair only", "short shift (scalar count) pair only", "two pairs, negate instead of split", "zero-extend 256-bit byte loads to 512-bit shorts", "zero-extend a 512-bit byte load, two parts", "old body at 256 bits", "int shift (scalar count) + and pair", "long shift + and pair", "short shift by vector count pair", "int rotate + and pair", "and pair, int lanes", "two pairs with ands only", "body with vector shift count", "same, inner loop of 16", "t = e + o form", "inner 16 + old widening", "widening with vector shifts", "widening with deferred C", "int shift by vector count + and pair", "five-operation body (VectorAdler32)"};
    interface F { long f(MemorySegment s); }
    public static void main(String[] a) {
        long size = Long.parseLong(a[0]);
        MemorySegment s = Arena.ofShared().allocate(size, 64);
        for (long o = 0; o < size; o++) s.set(ValueLayout.JAVA_BYTE, o, (byte) (o * 31 + 7));
        F[] fs = {AdlerLoops::m1, AdlerLoops::m2, AdlerLoops::m3, AdlerLoops::m4, AdlerLoops::m5, AdlerLoops::m6, AdlerLoops::m7, AdlerLoops::m8, AdlerLoops::m9, AdlerLoops::m10, AdlerLoops::m11, AdlerLoops::m12, AdlerLoops::m13, AdlerLoops::m14, AdlerLoops::n1, AdlerLoops::n2, AdlerLoops::n3, AdlerLoops::n4, AdlerLoops::n5, AdlerLoops::n6, AdlerLoops::p1, AdlerLoops::p2, AdlerLoops::p3, AdlerLoops::p4, AdlerLoops::p5, AdlerLoops::p6, AdlerLoops::q1, AdlerLoops::r1};
        long sink = 0;
        for (int w = 0; w < 3000; w++) for (F f : fs) sink += f.f(s);
        double[] best = new double[fs.length];
        Arrays.fill(best, 1e18);
        for (int r = 0; r < 300; r++) for (int i = 0; i < fs.length; i++) { long t = System.nanoTime(); sink += fs[i].f(s); best[i] = Math.min(best[i], System.nanoTime() - t); }
        for (int i = 0; i < fs.length; i++) System.out.printf("%-48s %6.1f GB/s%n", NAMES[i], size / best[i]);
        System.out.println(sink == 1 ? "" : "");
    }
}
