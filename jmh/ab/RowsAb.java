package io.kvchecksum.internal;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import io.kvchecksum.jmh.KvFixture;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.Constructor;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A/B of the CPU backend's side-by-side-heads loops in one JVM (not a benchmark; built and run by
 * {@code jmh/ab/rows-ab.sh}): {@code old}, heads read head by head with the next block touched ahead (the loops before
 * the row pass), against {@code rows}, the backend as it ships (whole rows per pass from memory where
 * {@code VectorSliceKernel.rowsAffine} says so), {@code prev}, the row pass before branch fusedmem (512-bit rows on AMD
 * family 26; at AVX2 width the same code as {@code rows}, a control; with {@code -Drowsab.prev=narrow} or
 * {@code =preferred} that choice instead, e.g. AMD's {@code Streams.NARROW} on Intel), {@code read}, the same backend with the row pass replaced by a plain
 * read of the same rows ({@link ReadKernel}: same blocks in the same order, same thread split, K's rows then V's,
 * sixteen loads a body at the width the row pass reads (256 bits where it takes {@code rowPass256}, else the
 * preferred width), summed into four accumulators, no weights; its values are not checksums), and
 * {@code bound}, the project's read bound (its default reader), one call each in turn with the order rotating, so a
 * loaded machine's noise hits all alike; prints best and median GB/s and each side's best over the first's and over
 * the bound's. The checksumming sides' block checksums are compared first (exit on a difference).
 *
 * <p>{@code read} answers where the row pass's time goes from memory: a plain read well below the bound means the
 * access pattern costs; a plain read near the bound means the pass's arithmetic (register spills) does.
 *
 * <p>Arguments: shape ({@code llama3-8b-tp1}), size ({@code 1MiB}, {@code 256MiB}, {@code 1GiB}), threads (the
 * backend's and the bound's; the machine's processors as the backend ships), rounds.
 */
public final class RowsAb {
    public static void main(String[] args) throws Exception {
        String shape = args[0];
        String size = args[1];
        int threads = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        try (KvFixture fx = KvFixture.of(shape, size)) {
            SlicePlan plan = SlicePlan.of(fx.group(), fx.request());
            Constructor<FastCpuBackend> c = FastCpuBackend.class.getDeclaredConstructor(int.class, SliceKernel.class, long.class);
            c.setAccessible(true);
            List<String> names = new ArrayList<>();
            List<KvChecksum> kcs = new ArrayList<>();
            names.add("old");
            kcs.add(KvChecksum.of(c.newInstance(threads, new VectorSliceKernel(KernelSpecies.CHOSEN, false), FastCpuBackend.PARALLEL_BYTES)));
            names.add("rows");
            kcs.add(KvChecksum.of(c.newInstance(threads, new VectorSliceKernel(KernelSpecies.CHOSEN, true), FastCpuBackend.PARALLEL_BYTES)));
            // the row pass before branch fusedmem: AMD family 26 at its preferred width (512-bit rows)
            KernelSpecies.Streams before = KernelSpecies.CHOSEN == KernelSpecies.Streams.NARROW
                    && io.kvchecksum.spi.CpuModel.amdFamily(io.kvchecksum.spi.CpuModel.cpuinfo(), 26)
                    ? KernelSpecies.Streams.PREFERRED : KernelSpecies.CHOSEN;
            // -Drowsab.prev=narrow|preferred: the prev side with that choice instead (e.g. AMD's NARROW on Intel)
            String prev = System.getProperty("rowsab.prev", "");
            if (!prev.isEmpty()) {
                before = prev.equals("narrow") ? KernelSpecies.Streams.NARROW : KernelSpecies.Streams.PREFERRED;
            }
            names.add("prev");
            kcs.add(KvChecksum.of(c.newInstance(threads, new VectorSliceKernel(before, true),
                    FastCpuBackend.PARALLEL_BYTES)));
            int exact = kcs.size();
            for (String mode : System.getProperty("rowsab.reads", "read").split(",")) {
                names.add(mode);
                kcs.add(KvChecksum.of(c.newInstance(threads, new ReadKernel(new VectorSliceKernel(KernelSpecies.CHOSEN, true), mode),
                        FastCpuBackend.PARALLEL_BYTES)));
            }
            for (int i = 1; i < kcs.size(); i++) {
                if ((i < exact || names.get(i).equals("eight") || names.get(i).equals("mone") || names.get(i).equals("mquarters")) && !Arrays.equals(kcs.get(0).blockChecksums(plan), kcs.get(i).blockChecksums(plan))) {
                    throw new AssertionError("old and " + names.get(i) + " differ");
                }
            }
            names.add("bound");
            int sides = names.size();
            int b = sides - 1;
            try (MemoryBound bound = new MemoryBound(fx.segments(), threads)) {
                long sink = 0;
                long until = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < until) {
                    for (KvChecksum kc : kcs) {
                        sink += kc.blockChecksums(plan)[0];
                    }
                    sink += bound.read();
                }
                double[][] t = new double[sides][rounds];
                for (int r = 0; r < rounds; r++) {
                    for (int j = 0; j < sides; j++) {
                        int w = (j + r) % sides;
                        long s = System.nanoTime();
                        sink += w == b ? bound.read() : kcs.get(w).blockChecksums(plan)[0];
                        t[w][r] = System.nanoTime() - s;
                    }
                }
                long bytes = fx.kvBytes();
                StringBuilder sb = new StringBuilder(String.format("%s %s, %d threads, %d rounds, %s:", shape, size, threads,
                        rounds, kcs.get(1).description()));
                for (int w = 0; w < sides; w++) {
                    Arrays.sort(t[w]);
                }
                for (int w = 0; w < sides; w++) {
                    sb.append(String.format("%n  %-5s best %6.1f GB/s, median %6.1f GB/s, best / old's best %.3f,"
                            + " / bound's best %.3f, median / bound's median %.3f", names.get(w),
                            bytes / t[w][0], bytes / t[w][rounds / 2], t[0][0] / t[w][0], t[b][0] / t[w][0],
                            t[b][rounds / 2] / t[w][rounds / 2]));
                }
                System.out.println(sb + (sink == 42 ? " " : ""));
            }
        }
    }

    /**
     * {@code kernel}, except that side-by-side heads from memory that it would read in row passes are only read: each
     * token's row front to back as the row pass reads it (sixteen loads a body at its width, K's rows of a
     * block then V's), the loads summed into four accumulators, the sum put in head 0's slot. Not a checksum.
     */
    static final class ReadKernel implements SliceKernel {
        private static final VectorSpecies<Long> S256 = LongVector.SPECIES_256;
        private static final VectorSpecies<Long> S = KernelSpecies.S;
        /** Whether the kernel reads 2 KiB rows at 256 bits ({@code VectorSliceKernel.rows256}), else at the preferred width. */
        private static final boolean NARROW = KernelSpecies.CHOSEN.narrow() || S.vectorBitSize() == 256;
        private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
        private final VectorSliceKernel k;
        /** K's and V's quarter rows in turn (token by token) instead of a block's K rows then its V rows. */
        private final boolean kv;
        /** Blocks ahead whose 4 KiB pages' first lines are touched (0: none); assumes the next block follows in memory. */
        private final int ahead;
        private final boolean narrow;
        /** Reads nothing: the backend's own cost around the row pass (tasks, blocks, calls). */
        private final boolean nop;
        /** Two streams at the preferred width: {@code readlk} tokens {@code i} and {@code i + n/2} in lockstep, {@code readkw} K's and V's rows. */
        private final String lock;
        /** Exact sums: the 2 KiB rows of eight units by {@code VectorSliceKernel.rowEight}, one token at a time (the loop before {@code rowEightHalves}). */
        private final boolean eight;
        /**
         * MLA's block streams from memory: {@code mread1} a plain read, {@code mread2} its two halves in lockstep,
         * {@code mquarters} exact sums of its four quarters in lockstep, {@code mone} exact sums in one stream
         * ({@code VectorSliceKernel.sumAffine}: the loop before {@code streamHalves}).
         */
        private final String mla;

        /**
         * {@code mode}: {@code read}, {@code readkv}, {@code readta<d>} (touch-ahead {@code d} blocks), {@code read256},
         * {@code nop} (nothing read); two or four streams a block at the preferred width: {@code readlk} (the block's
         * two halves of tokens in lockstep), {@code readl4} (its four quarters), {@code readkw} (its K and V rows);
         * and one exact side, {@code eight}: the row pass one token at a time ({@code VectorSliceKernel.rowEight}, the
         * loop before the two halves in lockstep), its checksums compared with {@code old}'s.
         */
        ReadKernel(VectorSliceKernel k, String mode) {
            this.k = k;
            this.kv = mode.contains("kv");
            this.ahead = mode.contains("ta") ? Integer.parseInt(mode.substring(mode.indexOf("ta") + 2)) : 0;
            this.narrow = NARROW || mode.contains("256");
            this.nop = mode.equals("nop");
            this.lock = mode.equals("readlk") || mode.equals("readkw") || mode.equals("readl4") ? mode : "";
            this.eight = mode.equals("eight");
            this.mla = mode.startsWith("m") ? mode : "";
        }

        @Override
        public void headsAffine(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces,
                MemorySegment vSeg, long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0,
                boolean fromMemory, long[] out) {
            if (!mla.isEmpty() && fromMemory && vSeg == null && heads == 1 && kStride == 8L * kPieces) {
                long total = (long) n * kPieces;
                long groups = total / (4L * S.length());
                if (total % (4L * S.length()) == 0 && (groups & 1) == 0) {
                    out[0] = switch (mla) {
                        case "mread1" -> readWide(kSeg, kBase, total * 8, 1, total * 8);
                        case "mread2" -> readTwo(kSeg, kBase, total * 4, kSeg, kBase + total * 4, 1, total * 4);
                        case "mquarters" -> (groups & 3) == 0 ? streamQuarters(kSeg, kBase, groups, t0, kPieces)
                                : k.sumAffine(kSeg, kBase, kStride, n, t0, kPieces, 0, kPieces);
                        default -> k.sumAffine(kSeg, kBase, kStride, n, t0, kPieces, 0, kPieces);
                    };
                    return;
                }
            }
            if (fromMemory && k.rowsAffine(heads, kPieces, kHeadStride, vSeg == null ? 0 : vPieces, vHeadStride)) {
                Arrays.fill(out, 0, heads, 0);
                long s = 0;
                if (nop) {
                    out[0] = kBase;
                    return;
                }
                if (ahead > 0) {
                    s += touch(kSeg, kBase + ahead * n * kStride, n * kStride);
                    if (vSeg != null) {
                        s += touch(vSeg, vBase + ahead * n * vStride, n * vStride);
                    }
                }
                if (eight && heads * kPieces == 32 * S.length()
                        && (vSeg == null || heads * vPieces == 32 * S.length())) {
                    int cell = kPieces + (vSeg == null ? 0 : vPieces);
                    int perHead = kPieces / (4 * S.length());
                    int shift = Integer.numberOfTrailingZeros(cell / S.length());
                    VectorSliceKernel.rowEight(kSeg, kBase, kStride, n, t0, cell, 0, perHead, 0, shift, out);
                    if (vSeg != null) {
                        VectorSliceKernel.rowEight(vSeg, vBase, vStride, n, t0, cell, kPieces, vPieces / (4 * S.length()), 0,
                                shift, out);
                    }
                    return;
                }
                if (lock.equals("readkw") && vSeg != null) {
                    s += readTwo(kSeg, kBase, kStride, vSeg, vBase, n, heads * kPieces * 8L);
                } else if (lock.equals("readl4") && (n & 3) == 0) {
                    s += readFour(kSeg, kBase, kStride, n / 4, heads * kPieces * 8L);
                    if (vSeg != null) {
                        s += readFour(vSeg, vBase, vStride, n / 4, heads * vPieces * 8L);
                    }
                } else if (lock.equals("readlk") && (n & 1) == 0) {
                    s += readTwo(kSeg, kBase, kStride, kSeg, kBase + (n / 2) * kStride, n / 2, heads * kPieces * 8L);
                    if (vSeg != null) {
                        s += readTwo(vSeg, vBase, vStride, vSeg, vBase + (n / 2) * vStride, n / 2, heads * vPieces * 8L);
                    }
                } else if (kv && vSeg != null) {
                    s += readKv(kSeg, kBase, kStride, vSeg, vBase, vStride, n, heads * kPieces * 8L);
                } else {
                    s += narrow ? read(kSeg, kBase, kStride, n, heads * kPieces * 8L)
                            : readWide(kSeg, kBase, kStride, n, heads * kPieces * 8L);
                    if (vSeg != null) {
                        s += narrow ? read(vSeg, vBase, vStride, n, heads * vPieces * 8L)
                                : readWide(vSeg, vBase, vStride, n, heads * vPieces * 8L);
                    }
                }
                out[0] = s;
                return;
            }
            k.headsAffine(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces, heads, n,
                    t0, fromMemory, out);
        }

        /** The rows' words summed, {@code rowPass256}'s loop without its arithmetic: quarter rows of 512 bytes. */
        private static long read(MemorySegment seg, long base, long stride, int n, long rowBytes) {
            final LongVector zero = LongVector.zero(S256);
            final long vb = 32;
            int q = (int) (rowBytes / 512);
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            for (int k = 0; k < q * n; k++) {
                long p = base + (k / q) * stride + (k % q) * 16 * vb;
                s0 = s0.add(LongVector.fromMemorySegment(S256, seg, p, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, seg, p + vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, seg, p + 2 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, seg, p + 3 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S256, seg, p + 4 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, seg, p + 5 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, seg, p + 6 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, seg, p + 7 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S256, seg, p + 8 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, seg, p + 9 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, seg, p + 10 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, seg, p + 11 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S256, seg, p + 12 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, seg, p + 13 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, seg, p + 14 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, seg, p + 15 * vb, LE));
            }
            return s0.add(s1).add(s2.add(s3)).reduceLanes(VectorOperators.ADD);
        }

        /** One byte of the first line of every 4 KiB page of {@code bytes} at {@code at}, where within the segment. */
        private static long touch(MemorySegment seg, long at, long bytes) {
            long s = 0;
            long end = Math.min(at + bytes, seg.byteSize());
            for (long p = (at + 4095) & ~4095L; p < end; p += 4096) {
                s += seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, p);
            }
            return s;
        }

        /** {@link #read} of K's and V's rows token by token, half a quarter row (eight 256-bit loads) of each in turn. */
        private static long readKv(MemorySegment kSeg, long kBase, long kStride, MemorySegment vSeg, long vBase, long vStride,
                int n, long rowBytes) {
            final LongVector zero = LongVector.zero(S256);
            final long vb = 32;
            int q = (int) (rowBytes / 256);
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            for (int k = 0; k < q * n; k++) {
                long p = kBase + (k / q) * kStride + (k % q) * 8 * vb;
                long r = vBase + (k / q) * vStride + (k % q) * 8 * vb;
                s0 = s0.add(LongVector.fromMemorySegment(S256, kSeg, p, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, kSeg, p + vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, kSeg, p + 2 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, kSeg, p + 3 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S256, kSeg, p + 4 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, kSeg, p + 5 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, kSeg, p + 6 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, kSeg, p + 7 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S256, vSeg, r, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, vSeg, r + vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, vSeg, r + 2 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, vSeg, r + 3 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S256, vSeg, r + 4 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S256, vSeg, r + 5 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S256, vSeg, r + 6 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S256, vSeg, r + 7 * vb, LE));
            }
            return s0.add(s1).add(s2.add(s3)).reduceLanes(VectorOperators.ADD);
        }

        /**
         * Two streams of rows in lockstep at the preferred width, a quarter row (eight loads) of each per body: rows
         * {@code a + i*stride} and {@code b + i*stride} for {@code i < n} ({@code readlk}: the block's two halves of
         * tokens; {@code readkw}: its K rows and its V rows, same stride).
         */
        private static long readTwo(MemorySegment aSeg, long a, long stride, MemorySegment bSeg, long b, int n, long rowBytes) {
            final LongVector zero = LongVector.zero(S);
            final long vb = S.vectorByteSize();
            int q = (int) (rowBytes / (8 * vb));
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            for (int k = 0; k < q * n; k++) {
                long d = (k / q) * stride + (k % q) * 8 * vb;
                long p = a + d;
                long r = b + d;
                s0 = s0.add(LongVector.fromMemorySegment(S, aSeg, p, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, bSeg, r, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, aSeg, p + vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, bSeg, r + vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, aSeg, p + 2 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, bSeg, r + 2 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, aSeg, p + 3 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, bSeg, r + 3 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, aSeg, p + 4 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, bSeg, r + 4 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, aSeg, p + 5 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, bSeg, r + 5 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, aSeg, p + 6 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, bSeg, r + 6 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, aSeg, p + 7 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, bSeg, r + 7 * vb, LE));
            }
            return s0.add(s1).add(s2.add(s3)).reduceLanes(VectorOperators.ADD);
        }

        /**
         * {@code VectorSliceKernel.streamHalves} with the block's four quarters in lockstep ({@code groups} a multiple of four, {@code q}
         * a quarter's groups): {@code a += x1 + x2 + x3 + x4; s += a; e += 3 x1 + 2 x2 + x3}, and {@code s + q*e} is the
         * single pass's {@code s}.
         */
        static long streamQuarters(MemorySegment seg, long base, long groups, long t0, int cellPieces) {
            final LongVector zero = LongVector.zero(S);
            LongVector a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            LongVector e0 = zero, e1 = zero, e2 = zero, e3 = zero;
            final long vb = S.vectorByteSize();
            final long q = groups / 4;
            final long qb = q * 4 * vb;
            final long end = base + qb;
            for (long p = base; p < end; p += 4 * vb) {
                LongVector x, u, v;
                x = LongVector.fromMemorySegment(S, seg, p, LE);
                u = x.add(LongVector.fromMemorySegment(S, seg, p + qb, LE));
                v = u.add(LongVector.fromMemorySegment(S, seg, p + 2 * qb, LE));
                a0 = a0.add(v.add(LongVector.fromMemorySegment(S, seg, p + 3 * qb, LE)));
                e0 = e0.add(x.add(u).add(v));
                s0 = s0.add(a0);
                x = LongVector.fromMemorySegment(S, seg, p + vb, LE);
                u = x.add(LongVector.fromMemorySegment(S, seg, p + qb + vb, LE));
                v = u.add(LongVector.fromMemorySegment(S, seg, p + 2 * qb + vb, LE));
                a1 = a1.add(v.add(LongVector.fromMemorySegment(S, seg, p + 3 * qb + vb, LE)));
                e1 = e1.add(x.add(u).add(v));
                s1 = s1.add(a1);
                x = LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE);
                u = x.add(LongVector.fromMemorySegment(S, seg, p + qb + 2 * vb, LE));
                v = u.add(LongVector.fromMemorySegment(S, seg, p + 2 * qb + 2 * vb, LE));
                a2 = a2.add(v.add(LongVector.fromMemorySegment(S, seg, p + 3 * qb + 2 * vb, LE)));
                e2 = e2.add(x.add(u).add(v));
                s2 = s2.add(a2);
                x = LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE);
                u = x.add(LongVector.fromMemorySegment(S, seg, p + qb + 3 * vb, LE));
                v = u.add(LongVector.fromMemorySegment(S, seg, p + 2 * qb + 3 * vb, LE));
                a3 = a3.add(v.add(LongVector.fromMemorySegment(S, seg, p + 3 * qb + 3 * vb, LE)));
                e3 = e3.add(x.add(u).add(v));
                s3 = s3.add(a3);
            }
            long c0 = 2 * t0 * cellPieces + 1;
            LongVector sAll = s0.add(s1).add(s2.add(s3)).add(e0.add(e1).add(e2.add(e3)).mul(q));
            return VectorSliceKernel.close(a0, a1, a2, a3, sAll, c0, groups);
        }

        /** The block's four quarters of tokens in lockstep ({@code m} tokens each), an eighth of a row (four loads) of each per body. */
        private static long readFour(MemorySegment seg, long a, long stride, int m, long rowBytes) {
            final LongVector zero = LongVector.zero(S);
            final long vb = S.vectorByteSize();
            final long quarter = m * stride;
            int q = (int) (rowBytes / (4 * vb));
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            for (int k = 0; k < q * m; k++) {
                long p = a + (k / q) * stride + (k % q) * 4 * vb;
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + quarter, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 2 * quarter, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 3 * quarter, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p + vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + quarter + vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 2 * quarter + vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 3 * quarter + vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + quarter + 2 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 2 * quarter + 2 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 3 * quarter + 2 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + quarter + 3 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 2 * quarter + 3 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 3 * quarter + 3 * vb, LE));
            }
            return s0.add(s1).add(s2.add(s3)).reduceLanes(VectorOperators.ADD);
        }

        /** {@link #read} at the preferred width, as {@code rowEight} reads rows at 512 bits: sixteen loads a body. */
        private static long readWide(MemorySegment seg, long base, long stride, int n, long rowBytes) {
            final LongVector zero = LongVector.zero(S);
            final long vb = S.vectorByteSize();
            int q = (int) (rowBytes / (16 * vb));
            LongVector s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            for (int k = 0; k < q * n; k++) {
                long p = base + (k / q) * stride + (k % q) * 16 * vb;
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 2 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 3 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p + 4 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + 5 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 6 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 7 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p + 8 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + 9 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 10 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 11 * vb, LE));
                s0 = s0.add(LongVector.fromMemorySegment(S, seg, p + 12 * vb, LE));
                s1 = s1.add(LongVector.fromMemorySegment(S, seg, p + 13 * vb, LE));
                s2 = s2.add(LongVector.fromMemorySegment(S, seg, p + 14 * vb, LE));
                s3 = s3.add(LongVector.fromMemorySegment(S, seg, p + 15 * vb, LE));
            }
            return s0.add(s1).add(s2.add(s3)).reduceLanes(VectorOperators.ADD);
        }

        @Override
        public long sum(MemorySegment segment, long[] tokenOffsets, long extra, int n, long t0, int cellPieces, int pieceBase,
                int regionPieces) {
            return k.sum(segment, tokenOffsets, extra, n, t0, cellPieces, pieceBase, regionPieces);
        }

        @Override
        public void sumRows(MemorySegment segment, long[] tokenOffsets, int n, long t0, int cellPieces, int pieceBase,
                int regionPieces, int heads, long[] a, long[] t, long[] out) {
            k.sumRows(segment, tokenOffsets, n, t0, cellPieces, pieceBase, regionPieces, heads, a, t, out);
        }

        @Override
        public boolean affine(int regionPieces, long tokenStride, int cellPieces) {
            return k.affine(regionPieces, tokenStride, cellPieces);
        }

        @Override
        public long sumAffine(MemorySegment segment, long base, long tokenStride, int n, long t0, int cellPieces,
                int pieceBase, int regionPieces) {
            return k.sumAffine(segment, base, tokenStride, n, t0, cellPieces, pieceBase, regionPieces);
        }

        @Override
        public long headAffine(MemorySegment kSeg, long kBase, long kStride, int kPieces, MemorySegment vSeg, long vBase,
                long vStride, int vPieces, int n, long t0) {
            return k.headAffine(kSeg, kBase, kStride, kPieces, vSeg, vBase, vStride, vPieces, n, t0);
        }

        @Override
        public boolean oneRow(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
            return k.oneRow(heads, kPieces, kHeadStride, vPieces, vHeadStride);
        }

        @Override
        public void oneRowAffine(MemorySegment kSeg, long kBase, long kHeadStride, int kPieces, MemorySegment vSeg,
                long vBase, long vHeadStride, int vPieces, int heads, long t0, long[] out) {
            k.oneRowAffine(kSeg, kBase, kHeadStride, kPieces, vSeg, vBase, vHeadStride, vPieces, heads, t0, out);
        }

        @Override
        public void headsInCache(MemorySegment kSeg, long kBase, long kStride, long kHeadStride, int kPieces,
                MemorySegment vSeg, long vBase, long vStride, long vHeadStride, int vPieces, int heads, int n, long t0,
                long[] out) {
            k.headsInCache(kSeg, kBase, kStride, kHeadStride, kPieces, vSeg, vBase, vStride, vHeadStride, vPieces, heads, n,
                    t0, out);
        }

        @Override
        public boolean pairsStreams() {
            return k.pairsStreams();
        }

        @Override
        public long streamPair(MemorySegment aSeg, long aBase, long fa, MemorySegment bSeg, long bBase, long fb, int n,
                long t0, int pieces) {
            return k.streamPair(aSeg, aBase, fa, bSeg, bBase, fb, n, t0, pieces);
        }

        @Override
        public boolean rowsAffine(int heads, int kPieces, long kHeadStride, int vPieces, long vHeadStride) {
            return k.rowsAffine(heads, kPieces, kHeadStride, vPieces, vHeadStride);
        }

        @Override
        public boolean streamRows() {
            return k.streamRows();
        }

        @Override
        public String describe() {
            return "read only: " + k.describe();
        }
    }
}
