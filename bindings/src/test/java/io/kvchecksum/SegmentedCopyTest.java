package io.kvchecksum;

import io.kvchecksum.CopyTest.Side;
import io.kvchecksum.CopyTest.Spec;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A verifying copy into a segmented destination ({@link KvSegments}, Jlama's pages) as one plan: on seeded random
 * cases (segments of several page sizes, pages of one position, blocks straddling segments, a later first block, TP
 * head ranges, byte cells, both modes) the values equal the segments' block checksums after the copy
 * ({@link KvSegments#plan}), the cpu backend (1 to 3 threads) writes the reference's bytes and values, running the
 * segment plans one at a time gives the same values, and a backend without segmented copies in its limits gets the
 * segment plans one by one from the front.
 */
class SegmentedCopyTest {
    private static final long SEED = 20261208L;
    private final KvChecksum reference = KvChecksums.reference();
    private final List<KvChecksum> fast = List.of(KvChecksums.cpu(1), KvChecksums.cpu(2), KvChecksums.cpu(3));

    /** A segment: {@code pages} pages of {@code pageSize} positions, its layers in the model's order. */
    private static Side segment(Arena arena, Random rnd, List<Spec> model, int from, int to, int pages, int pageSize) {
        Side s = CopyTest.side(arena, rnd, model, from, to, (long) pages * pageSize, 0, 1, pageSize);
        List<CacheLayer> layers = new ArrayList<>(s.group().layers());
        layers.sort(Comparator.comparingInt(CacheLayer::layer));
        return new Side(KvCacheGroup.of(pageSize, pages, layers), null, s.buffers());
    }

    private record Case(Side src, List<Side> segments, KvSegments destination, RequestBlocks request, ChecksumSpec spec) {
        List<MemorySegment> destinationBuffers() {
            List<MemorySegment> out = new ArrayList<>();
            segments.forEach(s -> out.addAll(s.buffers()));
            return out;
        }
    }

    private static Case randomCase(Arena arena, Random rnd, boolean byteCells, int i) {
        ChecksumSpec spec = new ChecksumSpec(i % 3 == 2 ? ChecksumMode.MIXED : ChecksumMode.STANDARD,
                byteCells ? CellPadding.ZEROS : CellPadding.NONE);
        List<Spec> model = CopyTest.model(rnd, byteCells);
        int heads = model.getFirst().heads();
        // the source holds every head, or the lower half and one more (the destination's other heads stay as they were);
        // the destination all of them or the upper half (a TP rank)
        int dFrom = heads > 1 && rnd.nextBoolean() ? heads / 2 : 0;
        int sTo = heads > 2 && dFrom == 0 && rnd.nextInt(3) == 0 ? heads / 2 + 1 : heads;
        boolean later = rnd.nextBoolean();
        int blockSize = later ? 8 * (1 + rnd.nextInt(3)) : 1 + rnd.nextInt(20);
        long numTokens = 1 + rnd.nextInt(120);
        long firstBlock = later ? rnd.nextInt((int) Math.ceilDiv(numTokens, blockSize)) : 0;
        // segment lengths are multiples of 4 (or of 8): the source's pages of 1, 2 or 4 fit every segment start
        List<Side> segments = new ArrayList<>();
        long held = 0;
        while (held < numTokens) {
            int pd = rnd.nextInt(4) == 0 ? 1 : 1 << rnd.nextInt(3);
            int pages = (4 / pd) * (1 + rnd.nextInt(3));
            segments.add(segment(arena, rnd, model, dFrom, heads, pages, pd));
            held += (long) pages * pd;
        }
        KvSegments destination = KvSegments.of(segments.stream().map(Side::group).toList());
        int ps = 1 << rnd.nextInt(3);
        long start = firstBlock * blockSize;
        Side src = CopyTest.side(arena, rnd, model, 0, sTo, numTokens, start / ps, ps, ps);
        RequestBlocks sq = RequestBlocks.of(src.request().pageTable(), numTokens, firstBlock, blockSize);
        return new Case(new Side(src.group(), sq, src.buffers()), segments, destination,
                KvSegments.request(numTokens, firstBlock, blockSize), spec);
    }

    @Test
    void segmentedCopiesAgreeWithTheSegmentsChecksumsAndOneCopyPerSegment() {
        System.out.println("seed " + SEED);
        Random rnd = new Random(SEED);
        for (int i = 0; i < 150; i++) {
            try (Arena arena = Arena.ofShared()) {
                Case c = randomCase(arena, rnd, i % 5 == 4, i);
                check(c, "case " + i + " B" + c.request.blockSize() + " N" + c.request.numTokens() + " F"
                        + c.request.firstBlock() + " Ps " + c.src.group().pageSize() + " segments "
                        + c.destination.segments().stream().map(x -> x.startToken() + "+" + x.group().numPages() + "x"
                                + x.group().pageSize()).toList() + " " + c.spec);
            }
        }
    }

    /** Pages of one position, large enough for the pool (from 4 MiB): one pass over every segment. */
    @Test
    void onePositionPagesSplitOverThreads() {
        Random rnd = new Random(SEED + 1);
        try (Arena arena = Arena.ofShared()) {
            List<Spec> model = List.of(new Spec(3, 8, 256, 256), new Spec(7, 8, 256, 256));
            List<Side> segments = new ArrayList<>();
            for (int t = 0; t < 700; t++) {
                segments.add(segment(arena, rnd, model, 0, 8, 1, 1));
            }
            Side src = CopyTest.side(arena, rnd, model, 0, 8, 700, 0, 16, 1);   // a staging buffer of Jlama's pages
            KvSegments destination = KvSegments.of(segments.stream().map(Side::group).toList());
            for (long first : new long[] {0, 3}) {
                RequestBlocks sq = RequestBlocks.of(src.request().pageTable(), 700, first, 16);
                RequestBlocks dq = KvSegments.request(700, first, 16);
                Side s = new Side(src.group(), sq, src.buffers());
                check(new Case(s, segments, destination, dq, ChecksumSpec.STANDARD), "one-position pages from block " + first);
            }
        }
    }

    private void check(Case c, String what) {
        List<MemorySegment> dst = c.destinationBuffers();
        List<byte[]> before = bytes(dst);
        CopyPlan plan;
        try {
            plan = reference.compileCopy(c.src.group(), c.src.request(), c.destination, c.request, c.spec);
        } catch (InvalidLayoutException e) {
            throw new AssertionError(what, e);
        }
        assertTrue(plan.isSegmented(), what);
        long[] expected = reference.copyAndChecksum(plan);
        List<byte[]> after = bytes(dst);
        long[] written;
        if (plan.pairs().size() == c.destination.geometry().numSlices()) {
            written = c.destination.plan(c.request.numTokens(), c.request.firstBlock(), c.request.blockSize(), c.spec)
                    .blockChecksums(reference);
        } else {   // some heads not copied: each segment plan's copied slices, checksummed after the copy
            written = new long[plan.numBlocks()];
            for (int i = 0; i < plan.segments().size(); i++) {
                CopyPlan part = plan.segments().get(i);
                plan.addSegment(i, reference.blockChecksums(SlicePlan.of(part.copiedDestination(),
                        part.destinationRequest(), c.spec)), written);
            }
        }
        assertArrayEquals(written, expected, what + ": reference values vs the segments' checksums after the copy");
        for (KvChecksum f : fast) {
            restore(dst, before);
            CopyPlan mine = f.compileCopy(c.src.group(), c.src.request(), c.destination, c.request, c.spec);
            assertArrayEquals(expected, f.copyAndChecksum(mine), what + ": " + f.description());
            assertBytes(after, dst, what + ": " + f.description());
            // one copy per segment plan, the values added: what the engine ran before
            restore(dst, before);
            long[] perSegment = new long[mine.numBlocks()];
            for (int i = 0; i < mine.segments().size(); i++) {
                CopyPlan part = mine.segments().get(i);
                assertFalse(part.isSegmented());
                mine.addSegment(i, f.copyAndChecksum(part), perSegment);
            }
            assertArrayEquals(expected, perSegment, what + ": " + f.description() + " one copy per segment");
            assertBytes(after, dst, what + ": " + f.description() + " one copy per segment");
        }
        restore(dst, before);
        KvChecksum split = KvChecksum.of(new OneGroupPerCall(reference));
        assertArrayEquals(expected, split.copyAndChecksum(split.compileCopy(c.src.group(), c.src.request(), c.destination,
                c.request, c.spec)), what + ": the front's segment by segment copy");
        assertBytes(after, dst, what + ": the front's segment by segment copy");
    }

    @Test
    void refusals() {
        Random rnd = new Random(SEED + 2);
        try (Arena arena = Arena.ofConfined()) {
            List<Spec> model = List.of(new Spec(0, 2, 64, 64));
            List<Side> segments = List.of(segment(arena, rnd, model, 0, 2, 3, 1), segment(arena, rnd, model, 0, 2, 1, 4));
            KvSegments destination = KvSegments.of(segments.stream().map(Side::group).toList());
            Side src = CopyTest.side(arena, rnd, model, 0, 2, 7, 0, 4, 2);
            // the second segment starts at position 3, inside a source page of 2
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> reference.compileCopy(src.group(),
                    src.request(), destination, KvSegments.request(7, 0, 4), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("destination segment 1") && e.getMessage().contains("page size"),
                    e.getMessage());
            Side src8 = CopyTest.side(arena, rnd, model, 0, 2, 9, 0, 4, 1);
            e = assertThrows(InvalidLayoutException.class, () -> reference.compileCopy(src8.group(), src8.request(),
                    destination, KvSegments.request(9, 0, 4), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("segments hold positions 0..6"), e.getMessage());
            e = assertThrows(InvalidLayoutException.class, () -> reference.compileCopy(src8.group(), src8.request(),
                    destination, KvSegments.request(7, 0, 4), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("same positions"), e.getMessage());
            // the second segment read from position 5: one slot into a page of 4
            Side one = CopyTest.side(arena, rnd, model, 0, 2, 7, 5, 1, 1);
            e = assertThrows(InvalidLayoutException.class, () -> reference.compileCopy(one.group(), one.request(),
                    destination, KvSegments.request(7, 5, 1), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("not a page boundary"), e.getMessage());
            CopyPlan plan = reference.compileCopy(one.group(), RequestBlocks.of(one.request().pageTable(), 7, 7, 1),
                    destination, KvSegments.request(7, 7, 1), ChecksumSpec.STANDARD);
            assertTrue(plan.isEmpty());
            assertEquals(0, reference.copyAndChecksum(plan).length);
        }
    }

    private static List<byte[]> bytes(List<MemorySegment> buffers) {
        return buffers.stream().map(b -> b.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).toList();
    }

    private static void restore(List<MemorySegment> buffers, List<byte[]> bytes) {
        for (int i = 0; i < bytes.size(); i++) {
            MemorySegment.copy(MemorySegment.ofArray(bytes.get(i)), 0, buffers.get(i), 0, bytes.get(i).length);
        }
    }

    private static void assertBytes(List<byte[]> expected, List<MemorySegment> buffers, String what) {
        List<byte[]> got = bytes(buffers);
        for (int i = 0; i < expected.size(); i++) {
            assertArrayEquals(expected.get(i), got.get(i), what + ": buffer " + i);
        }
    }

    /** Copies one group per call (no segmented copies in its limits), through the reference backend. */
    private record OneGroupPerCall(KvChecksum inner) implements Backend {
        @Override
        public String name() {
            return "one-group";
        }

        @Override
        public String description() {
            return "one-group";
        }

        @Override
        public BackendLimits limits() {
            BackendLimits c = BackendLimits.CPU;
            return new BackendLimits(c.reads(), c.readsOnStream(), c.maxByteCellSlices(), c.hint(), c.copies(),
                    c.copiesOnStream(), 0);
        }

        @Override
        public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
            throw new AssertionError("not called");
        }

        @Override
        public PendingChecksums runCopy(CopyPlan plan, OptionalLong stream) {
            assertFalse(plan.isSegmented(), "a segmented plan reached a backend that copies one group per call");
            return PendingChecksums.completed(inner.copyAndChecksum(plan));
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
