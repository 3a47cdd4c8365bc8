package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import java.lang.foreign.*;
import java.nio.ByteOrder;
import java.util.*;
import java.util.concurrent.*;

/**
 * The mixer from memory in one or more streams (not a benchmark; {@code jmh/ab/mixed-streams-ab.sh}): one buffer of
 * {@code MiB} in 32 KiB blocks visited in a seeded shuffle (as a paged cache's blocks), each block read by the shipped
 * mixer ({@link MixedVectorSliceKernel#mix}, written out in every loop so that C2 inlines it) with running sums:
 * {@code s1} front to back, {@code s2}/{@code s4} its halves/quarters in lockstep (64-byte interleave), {@code r2k} and
 * {@code r256} its halves alternating every 2 KiB / 256 bytes, {@code plain} the sums without the mixer. The loops in
 * rotating turns; on one thread each turn's thread CPU time too (GB per CPU second: memory stalls count, other
 * processes' time slices do not). docs/bench-cpu.md, "On Intel (Emerald Rapids): the mixer".
 *
 * <p>Arguments: MiB, rounds, threads.
 */
public final class MixedStreamsAb {
    static final VectorSpecies<Long> S = KernelSpecies.S;
    static final int L = S.length();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    static final long M32 = 0xFFFFFFFFL, HI = ~M32;
    static final long BLOCK = 32 << 10;
    static volatile long bh;

    static LongVector mix(LongVector x) { return MixedVectorSliceKernel.mix(x); }

    static long s1(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long o = 0; o < BLOCK; o += 8L * L) {
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                t = t.add(a);
            }
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long r2k(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long m = 0; m < BLOCK; m += 8L * L) {
                long o = ((m / 2048) & 1) * (BLOCK / 2) + (m / 2048 / 2) * 2048 + m % 2048;
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                t = t.add(a);
            }
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long r256(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long m = 0; m < BLOCK; m += 8L * L) {
                long o = ((m / 256) & 1) * (BLOCK / 2) + (m / 256 / 2) * 256 + m % 256;
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                t = t.add(a);
            }
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long s2(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S), c = LongVector.zero(S), u = LongVector.zero(S);
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long o = 0; o < BLOCK / 2; o += 8L * L) {
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + BLOCK / 2 + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
            }
        }
        return a.add(t).add(c).add(u).reduceLanes(VectorOperators.ADD);
    }

    static long p1(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S);
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long o = 0; o < BLOCK; o += 8L * L) {
                a = a.add(LongVector.fromMemorySegment(S, seg, base + o, LE));
                t = t.add(a);
            }
        }
        return a.add(t).reduceLanes(VectorOperators.ADD);
    }

    static long s4(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S), c = LongVector.zero(S), u = LongVector.zero(S);
        final long q = BLOCK / 4;
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long o = 0; o < q; o += 8L * L) {
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 2 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 3 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
            }
        }
        return a.add(t).add(c).add(u).reduceLanes(VectorOperators.ADD);
    }

    static long s8(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S), c = LongVector.zero(S), u = LongVector.zero(S);
        final long q = BLOCK / 8;
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long o = 0; o < q; o += 8L * L) {
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 2 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 3 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 4 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 5 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 6 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 7 * q + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
            }
        }
        return a.add(t).add(c).add(u).reduceLanes(VectorOperators.ADD);
    }

    static long s2b(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S), c = LongVector.zero(S), u = LongVector.zero(S);
        for (int b = from; b + 1 < to; b += 2) {
            long base = blocks[b], base2 = blocks[b + 1];
            for (long o = 0; o < BLOCK; o += 8L * L) {
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base2 + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
            }
        }
        return a.add(t).add(c).add(u).reduceLanes(VectorOperators.ADD);
    }

    static long two1(MemorySegment seg, long[] blocks, int from, int to) {
        LongVector a = LongVector.zero(S), t = LongVector.zero(S), c = LongVector.zero(S), u = LongVector.zero(S);
        for (int b = from; b < to; b++) {
            long base = blocks[b];
            for (long o = 0; o < BLOCK; o += 16L * L) {
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                a = a.add(mm); }
                { LongVector xx = LongVector.fromMemorySegment(S, seg, base + 8L * L + o, LE), mm;
                { LongVector p, y, lo;
                p = xx.and(M32).mul(LongVector.broadcast(S, 0x9E3779B9L).and(M32));
                y = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32));
                p = y.lanewise(VectorOperators.LSHR, 32).mul(LongVector.broadcast(S, 0x85EBCA6BL).and(M32));
                lo = xx.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHR, 32)).and(M32);
                p = lo.mul(LongVector.broadcast(S, 0xC2B2AE35L).and(M32));
                mm = y.lanewise(VectorOperators.XOR, p).lanewise(VectorOperators.XOR, p.lanewise(VectorOperators.LSHL, 32)).and(HI).or(lo); }
                c = c.add(mm); }
                t = t.add(a);
                u = u.add(c);
            }
        }
        return a.add(t).add(c).add(u).reduceLanes(VectorOperators.ADD);
    }

    interface Loop { long run(MemorySegment seg, long[] blocks, int from, int to); }

    public static void main(String[] args) throws Exception {
        long bytes = Long.parseLong(args[0]) << 20;
        int rounds = Integer.parseInt(args[1]);
        int threads = Integer.parseInt(args[2]);
        MemorySegment seg = Arena.global().allocate(bytes, 4096);
        for (long o = 0; o < bytes; o += 8) seg.set(ValueLayout.JAVA_LONG, o, o * 0x9E3779B97F4A7C15L);
        int nb = (int) (bytes / BLOCK);
        List<Long> bl = new ArrayList<>();
        for (int i = 0; i < nb; i++) bl.add(i * BLOCK);
        Collections.shuffle(bl, new Random(7));
        long[] blocks = bl.stream().mapToLong(Long::longValue).toArray();
        String[] names = {"plain", "s1", "s2", "s4", "r2k", "r256"};
        Loop[] loops = {MixedStreamsAb::p1, MixedStreamsAb::s1, MixedStreamsAb::s2, MixedStreamsAb::s4, MixedStreamsAb::r2k, MixedStreamsAb::r256};
        ExecutorService ex = Executors.newFixedThreadPool(threads);
        double[][] t = new double[loops.length][rounds];
        double[][] ct = new double[loops.length][rounds];
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int r = -3; r < rounds; r++) {
            for (int j = 0; j < loops.length; j++) {
                int w = (j + Math.max(r, 0)) % loops.length;
                Loop lp = loops[w];
                long s = System.nanoTime();
                if (threads == 1) {
                    long c0 = mx.getCurrentThreadCpuTime();
                    bh = lp.run(seg, blocks, 0, nb);
                    long c1 = mx.getCurrentThreadCpuTime();
                    if (r >= 0) { t[w][r] = System.nanoTime() - s; ct[w][r] = c1 - c0; }
                    continue;
                }
                List<Future<Long>> fs = new ArrayList<>();
                for (int k = 0; k < threads; k++) {
                    int from = nb * k / threads, to = nb * (k + 1) / threads;
                    fs.add(ex.submit(() -> lp.run(seg, blocks, from, to)));
                }
                long sum = 0;
                for (Future<Long> f : fs) sum += f.get();
                bh = sum;
                if (r >= 0) t[w][r] = System.nanoTime() - s;
            }
        }
        ex.shutdown();
        System.out.printf("%d MiB, %d threads, %d-bit, load %s%n", bytes >> 20, threads, S.vectorBitSize(),
                java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim());
        for (int w = 0; w < loops.length; w++) {
            Arrays.sort(t[w]);
            Arrays.sort(ct[w]);
            System.out.printf("%-6s best %6.1f GB/s median %6.1f GB/s   per CPU s: best %6.1f median %6.1f%n", names[w], bytes / t[w][0], bytes / t[w][rounds / 2], bytes / ct[w][0], bytes / ct[w][rounds / 2]);
        }
    }
}
