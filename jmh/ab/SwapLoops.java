import jdk.incubator.vector.*;
import java.lang.foreign.*;
import java.nio.ByteOrder;
import java.util.*;
/**
 * Stand-alone loops behind docs/bench-cpu.md's "The flush code folded; AVX2's byte swap": VectorAdler32's pair body
 * (two shuffled 2 KiB pages in lockstep, blocks of 16 vectors, sums only, no close, values not Adler-32) with the odd
 * bytes' sums from a 16-bit shift by a scalar count ({@code shift}, what AVX2 ships), from the lanes with their bytes
 * swapped ({@code rev}, REVERSE_BYTES) or from an int shift by 8 and a mask ({@code ishift}); {@code none} the sums of
 * the whole lanes only, {@code read} a plain read of the same pages. Best and median of 1000 after warm-up, GB/s. Not a
 * benchmark of record; run as a source file:
 * {@code java --add-modules jdk.incubator.vector -XX:UseAVX=2 jmh/ab/SwapLoops.java 262144} (bytes).
 */
public class SwapLoops {
    static final VectorSpecies<Short> SS = ShortVector.SPECIES_PREFERRED;
    static final int V = SS.vectorByteSize();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    static MemorySegment seg; static long[] offs; static final int PAGE = 2048;
    static long shift() {
        ShortVector acc = ShortVector.zero(SS), z = acc;
        for (int i = 0; i + 1 < offs.length; i += 2) { long p = offs[i], q = offs[i + 1];
            for (long b = 0; b < PAGE; b += 16L * V) {
                ShortVector at = z, ao = z, bt = z, bo = z, ct = z, co = z, dt = z, d0 = z;
                for (int k = 0; k < 16; k++) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + b + (long) k * V, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, seg, q + b + (long) k * V, LE);
                    bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.LSHR, 8));
                    dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.LSHR, 8));
                }
                acc = acc.add(at).add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0);
            } }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static long rev() {
        ShortVector acc = ShortVector.zero(SS), z = acc;
        for (int i = 0; i + 1 < offs.length; i += 2) { long p = offs[i], q = offs[i + 1];
            for (long b = 0; b < PAGE; b += 16L * V) {
                ShortVector at = z, ao = z, bt = z, bo = z, ct = z, co = z, dt = z, d0 = z;
                for (int k = 0; k < 16; k++) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + b + (long) k * V, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, seg, q + b + (long) k * V, LE);
                    bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.lanewise(VectorOperators.REVERSE_BYTES));
                    dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.lanewise(VectorOperators.REVERSE_BYTES));
                }
                acc = acc.add(at).add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0);
            } }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static final IntVector M = IntVector.broadcast(IntVector.SPECIES_PREFERRED, 0x00FF00FF);
    static long ishift() {
        ShortVector acc = ShortVector.zero(SS), z = acc; IntVector m = M;
        for (int i = 0; i + 1 < offs.length; i += 2) { long p = offs[i], q = offs[i + 1];
            for (long b = 0; b < PAGE; b += 16L * V) {
                ShortVector at = z, ao = z, bt = z, bo = z, ct = z, co = z, dt = z, d0 = z;
                for (int k = 0; k < 16; k++) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + b + (long) k * V, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, seg, q + b + (long) k * V, LE);
                    bt = bt.add(at); bo = bo.add(ao); at = at.add(x); ao = ao.add(x.reinterpretAsInts().lanewise(VectorOperators.LSHR, 8).and(m).reinterpretAsShorts());
                    dt = dt.add(ct); d0 = d0.add(co); ct = ct.add(y); co = co.add(y.reinterpretAsInts().lanewise(VectorOperators.LSHR, 8).and(m).reinterpretAsShorts());
                }
                acc = acc.add(at).add(ao).add(bt).add(bo).add(ct).add(co).add(dt).add(d0);
            } }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static long none() { // only 4 ops: a += x; b += a per stream twice (timing: the floor without separation)
        ShortVector acc = ShortVector.zero(SS), z = acc;
        for (int i = 0; i + 1 < offs.length; i += 2) { long p = offs[i], q = offs[i + 1];
            for (long b = 0; b < PAGE; b += 16L * V) {
                ShortVector at = z, bt = z, ct = z, dt = z;
                for (int k = 0; k < 16; k++) {
                    ShortVector x = ShortVector.fromMemorySegment(SS, seg, p + b + (long) k * V, LE);
                    ShortVector y = ShortVector.fromMemorySegment(SS, seg, q + b + (long) k * V, LE);
                    bt = bt.add(at); at = at.add(x);
                    dt = dt.add(ct); ct = ct.add(y);
                }
                acc = acc.add(at).add(bt).add(ct).add(dt);
            } }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    static long read() {
        ShortVector acc = ShortVector.zero(SS), z = acc;
        for (int i = 0; i + 1 < offs.length; i += 2) { long p = offs[i], q = offs[i + 1];
            for (long b = 0; b < PAGE; b += 16L * V) {
                ShortVector at = z, ct = z;
                for (int k = 0; k < 16; k++) {
                    at = at.add(ShortVector.fromMemorySegment(SS, seg, p + b + (long) k * V, LE));
                    ct = ct.add(ShortVector.fromMemorySegment(SS, seg, q + b + (long) k * V, LE));
                }
                acc = acc.add(at).add(ct);
            } }
        return acc.reduceLanes(VectorOperators.ADD);
    }
    interface F { long f(); }
    public static void main(String[] a) {
        long size = Long.parseLong(a[0]);
        seg = Arena.ofShared().allocate(size, 64);
        for (long o = 0; o < size; o++) seg.set(ValueLayout.JAVA_BYTE, o, (byte) (o * 31 + 7));
        int n = (int) (size / PAGE); List<Long> l = new ArrayList<>(); for (int i = 0; i < n; i++) l.add((long) i * PAGE);
        Collections.shuffle(l, new Random(1)); offs = l.stream().mapToLong(Long::longValue).toArray();
        String[] names = {"read", "none(4 adds)", "shift", "rev", "ishift"};
        F[] fs = {SwapLoops::read, SwapLoops::none, SwapLoops::shift, SwapLoops::rev, SwapLoops::ishift};
        long sink = 0;
        for (int w = 0; w < 2000; w++) for (F f : fs) sink += f.f();
        double[][] t = new double[fs.length][1000];
        for (int r = 0; r < 1000; r++) for (int i = 0; i < fs.length; i++) { long s = System.nanoTime(); sink += fs[i].f(); t[i][r] = System.nanoTime() - s; }
        for (int i = 0; i < fs.length; i++) { Arrays.sort(t[i]); System.out.printf("%-14s best %6.1f GB/s median %6.1f%n", names[i], size / t[i][0], size / t[i][500]); }
        System.out.println(sink == 1 ? "" : "");
    }
}
