package io.kvchecksum;

import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verifying copy on both CPU backends against the definition: on seeded random pairs of layouts (page sizes, page
 * ids, NHD/HND, padding between cells, head ranges, byte cells, both modes) the values equal the destination's block
 * checksums after the copy, the destination's copied cells equal the source's, nothing else of the destination is
 * written, and the cpu backend (1 to 3 threads) writes the same bytes as the reference; and every refusal.
 */
class CopyTest {
    private static final long SEED = 20261207L;
    private final KvChecksum reference = KvChecksums.reference();
    /**
     * The shipped CPU backend at 1, 2 and 3 threads, and at 2 and 3 threads its copy's other choices (the split over the
     * pool by run ranges, the loops for memory on every copy: {@code CpuChoices.copyChoices}).
     */
    private final List<KvChecksum> fast = java.util.stream.Stream.of(
            List.of(KvChecksums.cpu(1), KvChecksums.cpu(2), KvChecksums.cpu(3)),
            io.kvchecksum.internal.CpuChoices.copyChoices(2), io.kvchecksum.internal.CpuChoices.copyChoices(3))
            .flatMap(List::stream).toList();

    /** One side of a copy: a group over its own buffers and the request's table into it. */
    record Side(KvCacheGroup group, RequestBlocks request, List<MemorySegment> buffers) {
    }

    /** A layer of the model: its number, heads, K and V bytes (V 0: K only). */
    record Spec(int layer, int heads, int kBytes, int vBytes) {
    }

    static List<Spec> model(Random rnd, boolean byteCells) {
        int layers = 1 + rnd.nextInt(3);
        int heads = 1 + rnd.nextInt(4) * 2;
        int kPieces = rnd.nextInt(4) == 0 ? 32 : 1 + rnd.nextInt(20);
        int vPieces = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(4) == 0 ? 32 : 1 + rnd.nextInt(20);
        int kBytes = 8 * kPieces;
        int vBytes = 8 * vPieces;
        if (byteCells) {
            kBytes = 1 + rnd.nextInt(40);
            vBytes = rnd.nextInt(3) == 0 ? 0 : 1 + rnd.nextInt(40);
        }
        List<Spec> out = new ArrayList<>();
        List<Integer> used = new ArrayList<>();
        for (int i = 0; i < layers; i++) {
            int layer;
            do {
                layer = rnd.nextInt(60);
            } while (used.contains(layer));
            used.add(layer);
            out.add(new Spec(layer, heads, kBytes, vBytes));
        }
        return out;
    }

    /**
     * One side holding heads {@code [from, to)} of every layer of {@code model}, random page size, layout and padding,
     * every byte random.
     */
    static Side side(Arena arena, Random rnd, List<Spec> model, int from, int to, long numTokens, long firstBlock,
                     int blockSize, int pageSize) {
        long start = firstBlock * blockSize;
        int pagesNeeded = (int) Math.ceilDiv(numTokens - start, pageSize);
        int numPages = pagesNeeded + rnd.nextInt(4);
        List<CacheLayer> layers = new ArrayList<>();
        List<MemorySegment> buffers = new ArrayList<>();
        int heads = to - from;
        for (Spec s : model) {
            boolean headMajor = rnd.nextBoolean();
            int pad = rnd.nextInt(3) * (s.kBytes % 8 == 0 && s.vBytes % 8 == 0 ? 8 : 3);
            int cell = s.kBytes + s.vBytes;
            long headStride;
            long tokenStride;
            long pageStride;
            if (headMajor) {
                tokenStride = cell + pad;
                headStride = tokenStride * pageSize + pad;
                pageStride = headStride * heads + pad;
            } else {
                headStride = cell + pad;
                tokenStride = headStride * heads + pad;
                pageStride = tokenStride * pageSize + pad;
            }
            int misalign = rnd.nextInt(8);
            long bytes = misalign + pageStride * numPages + 64;
            MemorySegment seg = arena.allocate(bytes, 8);
            fill(seg, rnd);
            buffers.add(seg);
            KvMemory m = KvMemory.host(seg);
            KvRegion k = new KvRegion(m, misalign, pageStride, tokenStride, headStride, s.kBytes);
            KvRegion v = s.vBytes == 0 ? null : new KvRegion(m, misalign + s.kBytes, pageStride, tokenStride, headStride, s.vBytes);
            layers.add(new CacheLayer(s.layer, from, heads, k, v));
        }
        Collections.shuffle(layers, rnd);
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < numPages; i++) {
            ids.add(i);
        }
        Collections.shuffle(ids, rnd);
        int[] table = new int[pagesNeeded];
        for (int i = 0; i < pagesNeeded; i++) {
            table[i] = ids.get(i);
        }
        return new Side(KvCacheGroup.of(pageSize, numPages, layers), RequestBlocks.of(table, numTokens, firstBlock, blockSize),
                buffers);
    }

    static void fill(MemorySegment seg, Random rnd) {
        for (long o = 0; o < seg.byteSize(); o++) {
            seg.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
        }
    }

    static List<byte[]> snapshot(Side s) {
        return s.buffers.stream().map(b -> b.toArray(ValueLayout.JAVA_BYTE)).toList();
    }

    static void restore(Side s, List<byte[]> bytes) {
        for (int i = 0; i < bytes.size(); i++) {
            MemorySegment.copy(MemorySegment.ofArray(bytes.get(i)), 0, s.buffers.get(i), 0, bytes.get(i).length);
        }
    }

    @Test
    void randomCopiesAgreeWithTheDefinition() {
        System.out.println("seed " + SEED + "; " + fast.getFirst().description());
        Random rnd = new Random(SEED);
        for (int i = 0; i < 200; i++) {
            boolean byteCells = i % 5 == 4;
            ChecksumSpec spec = new ChecksumSpec(i % 3 == 2 ? ChecksumMode.MIXED : ChecksumMode.STANDARD,
                    byteCells ? CellPadding.ZEROS : CellPadding.NONE);
            try (Arena arena = Arena.ofShared()) {
                List<Spec> model = model(rnd, byteCells);
                int heads = model.getFirst().heads();
                int blockSize = 1 + rnd.nextInt(20);
                long numTokens = 1 + rnd.nextInt(150);
                long firstBlock = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt((int) Math.ceilDiv(numTokens, blockSize));
                // TP: the source holds all heads, or one half; the destination all, or the other half's overlap
                int sFrom = 0;
                int sTo = heads;
                int dFrom = 0;
                int dTo = heads;
                if (heads > 1 && rnd.nextBoolean()) {
                    if (rnd.nextBoolean()) {
                        sTo = heads / 2;
                    } else {
                        dFrom = heads / 2;
                    }
                }
                long start = firstBlock * blockSize;
                int srcBlock = rnd.nextInt(2) == 0 ? blockSize : start == 0 ? 1 + rnd.nextInt(20) : 1;
                long srcFirst = start / srcBlock;
                Side src = side(arena, rnd, model, sFrom, sTo, numTokens, srcFirst, srcBlock, 1 + rnd.nextInt(9));
                Side dst = side(arena, rnd, model, dFrom, dTo, numTokens, firstBlock, blockSize, 1 + rnd.nextInt(9));
                check(src, dst, spec, "case " + i + " " + model + " heads src " + sFrom + ".." + sTo + " dst " + dFrom
                        + ".." + dTo + " B" + blockSize + " N" + numTokens + " F" + firstBlock + " Ps"
                        + src.group().pageSize() + " Pd" + dst.group().pageSize() + " " + spec);
            }
        }
    }

    /** Large enough to be split over threads (from 4 MiB). */
    @Test
    void largeCopiesSplitOverThreads() {
        Random rnd = new Random(SEED + 1);
        for (int i = 0; i < 3; i++) {
            try (Arena arena = Arena.ofShared()) {
                List<Spec> model = List.of(new Spec(3, 8, 256, 256), new Spec(7, 8, 256, 256));
                Side src = side(arena, rnd, model, 0, 8, 700 + i, 0, 16, 16);
                Side dst = side(arena, rnd, model, 0, 8, 700 + i, 0, 16, i == 0 ? 16 : 32);
                check(src, dst, ChecksumSpec.STANDARD, "large " + i);
            }
        }
    }

    private void check(Side src, Side dst, ChecksumSpec spec, String what) {
        List<byte[]> before = snapshot(dst);
        CopyPlan plan = reference.compileCopy(src.group(), src.request(), dst.group(), dst.request(), spec);
        long[] expected = reference.copyAndChecksum(plan);
        List<byte[]> after = snapshot(dst);
        assertArrayEquals(expected, reference.blockChecksums(SlicePlan.of(plan.copiedDestination(), dst.request(), spec)),
                what + ": reference values vs the destination's checksums");
        // every copied cell equals the source's; restoring them gives the destination as it was
        restoreCopiedCells(plan, src, dst, before);
        for (int b = 0; b < before.size(); b++) {
            assertArrayEquals(before.get(b), snapshot(dst).get(b), what + ": bytes outside the copied cells were written");
        }
        for (KvChecksum f : fast) {
            restore(dst, before);
            long[] got = f.copyAndChecksum(f.compileCopy(src.group(), src.request(), dst.group(), dst.request(), spec));
            assertArrayEquals(expected, got, what + ": " + f.description());
            List<byte[]> mine = snapshot(dst);
            for (int b = 0; b < after.size(); b++) {
                assertArrayEquals(after.get(b), mine.get(b), what + ": " + f.description() + " wrote other bytes");
            }
        }
    }

    /** Checks each copied cell equals its source cell and puts the destination's old bytes back there. */
    private static void restoreCopiedCells(CopyPlan plan, Side src, Side dst, List<byte[]> before) {
        RequestBlocks sq = src.request();
        RequestBlocks dq = dst.request();
        for (CopyPlan.Pair p : plan.pairs()) {
            for (long t = dq.startToken(); t < dq.numTokens(); t++) {
                long si = t - sq.startToken();
                long di = t - dq.startToken();
                int sp = sq.page((int) (si / src.group().pageSize()));
                long ss = si % src.group().pageSize();
                int dp = dq.page((int) (di / dst.group().pageSize()));
                long ds = di % dst.group().pageSize();
                List<SlicePlan.Part[]> parts = new ArrayList<>();
                parts.add(new SlicePlan.Part[] {p.source().k(), p.destination().k()});
                if (p.source().v() != null) {
                    parts.add(new SlicePlan.Part[] {p.source().v(), p.destination().v()});
                }
                for (SlicePlan.Part[] x : parts) {
                    MemorySegment a = ((KvMemory.Host) x[0].memory()).segment();
                    MemorySegment b = ((KvMemory.Host) x[1].memory()).segment();
                    long ao = x[0].cellOffset(sp, ss);
                    long bo = x[1].cellOffset(dp, ds);
                    assertEquals(-1L, a.asSlice(ao, x[0].bytes()).mismatch(b.asSlice(bo, x[1].bytes())),
                            "cell of layer " + p.layer() + " head " + p.head() + " position " + t + " differs from the source");
                    int buffer = dst.buffers().indexOf(b);
                    MemorySegment.copy(MemorySegment.ofArray(before.get(buffer)), bo, b, bo, x[1].bytes());
                }
            }
        }
    }

    // ---------------------------------------------------------------- refusals

    private static Side simple(Arena arena, int heads, int from, int kBytes, long numTokens, int pageSize, int blockSize) {
        return side(arena, new Random(1), List.of(new Spec(0, heads, kBytes, kBytes)), from, from + heads, numTokens, 0,
                blockSize, pageSize);
    }

    @Test
    void refusals() {
        try (Arena arena = Arena.ofConfined()) {
            Side a = simple(arena, 4, 0, 64, 40, 8, 16);
            Side b = simple(arena, 4, 0, 64, 41, 8, 16);
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                    () -> reference.compileCopy(a.group(), a.request(), b.group(), b.request(), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("40 tokens") && e.getMessage().contains("41"), e.getMessage());

            Side c = simple(arena, 4, 0, 32, 40, 8, 16);
            e = assertThrows(InvalidLayoutException.class,
                    () -> reference.compileCopy(a.group(), a.request(), c.group(), c.request(), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("cell geometry"), e.getMessage());

            Side d = simple(arena, 4, 4, 64, 40, 8, 16);
            e = assertThrows(InvalidLayoutException.class,
                    () -> reference.compileCopy(a.group(), a.request(), d.group(), d.request(), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("no (layer, head) is in both"), e.getMessage());

            RequestBlocks outOfRange = RequestBlocks.of(new int[] {0, 1, 2, 99, 4}, 40, 16);
            e = assertThrows(InvalidLayoutException.class,
                    () -> reference.compileCopy(a.group(), a.request(), simple(arena, 4, 0, 64, 40, 8, 16).group(),
                            outOfRange, ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("destination") && e.getMessage().contains("99"), e.getMessage());

            RequestBlocks twice = RequestBlocks.of(new int[] {0, 1, 2, 1, 4}, 40, 16);
            Side f = simple(arena, 4, 0, 64, 40, 8, 16);
            e = assertThrows(InvalidLayoutException.class,
                    () -> reference.compileCopy(a.group(), a.request(), f.group(), twice, ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("both page 1"), e.getMessage());

            // the same group as source and destination: the pages read and written overlap
            RequestBlocks other = RequestBlocks.of(new int[] {4, 3, 2, 1, 0}, 40, 16);
            e = assertThrows(InvalidLayoutException.class,
                    () -> reference.compileCopy(a.group(), a.request(), a.group(), other, ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("overlap"), e.getMessage());

            // a backend without the copy: refused with its name, before anything runs
            KvChecksum without = KvChecksum.of(new NoCopy());
            e = assertThrows(InvalidLayoutException.class,
                    () -> without.compileCopy(a.group(), a.request(), f.group(), f.request(), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("'nocopy'") && e.getMessage().contains("verifying copy"), e.getMessage());

            // device memory on a CPU backend
            KvMemory dev = KvMemory.device(0x1000, 1 << 20);
            CacheLayer dl = CacheLayer.of(0, 0, 4, new KvRegion(dev, 0, 4 * 8 * 128, 4 * 128, 128, 64),
                    new KvRegion(dev, 64, 4 * 8 * 128, 4 * 128, 128, 64));
            KvCacheGroup onDevice = KvCacheGroup.of(8, 5, List.of(dl));
            e = assertThrows(InvalidLayoutException.class,
                    () -> reference.compileCopy(a.group(), a.request(), onDevice, RequestBlocks.of(new int[] {0, 1, 2, 3, 4}, 40, 16),
                            ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("cannot copy host memory to device memory"), e.getMessage());
        }
    }

    /** Pages of one buffer that do not overlap are fine: a copy between two halves of one allocation. */
    @Test
    void disjointPagesOfOneBufferAreAccepted() {
        try (Arena arena = Arena.ofConfined()) {
            Side a = simple(arena, 2, 0, 64, 32, 8, 16);
            RequestBlocks lower = RequestBlocks.of(new int[] {0, 1}, 16, 16);
            RequestBlocks upper = RequestBlocks.of(new int[] {2, 3}, 16, 16);
            CopyPlan plan = reference.compileCopy(a.group(), lower, a.group(), upper, ChecksumSpec.STANDARD);
            assertEquals(1, plan.numBlocks());
            long[] v = reference.copyAndChecksum(plan);
            assertArrayEquals(v, reference.blockChecksums(SlicePlan.of(plan.copiedDestination(), upper)));
        }
    }

    private static final class NoCopy implements Backend {
        @Override
        public String name() {
            return "nocopy";
        }

        @Override
        public String description() {
            return "nocopy";
        }

        @Override
        public BackendLimits limits() {
            return BackendLimits.HOST_ONLY;
        }

        @Override
        public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
            throw new AssertionError("not called");
        }

        @Override
        public long pageDigest(PageDigestPlan plan) {
            throw new AssertionError("not called");
        }

        @Override
        public void close() {
        }
    }
}
