package io.kvchecksum.golden;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.spi.BackendLimits;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verifying copy through one backend: every vector of {@code vectors-copy/} (NumPy's layouts, values and the
 * SHA-256 of every buffer after the copy), and the fault tests. A backend module runs it with
 * <pre>{@code
 * @TestFactory Stream<DynamicNode> copy() { return CopySuite.tests(backend); }
 * @TestFactory Stream<DynamicNode> copyFaults() { return CopySuite.faults(backend); }
 * }</pre>
 * and a GPU backend with a {@link Placement} that puts each buffer into device memory and reads it back.
 */
public final class CopySuite {
    /** The vectors the fault tests use: a page permutation, a block-size change, TP re-sharding, MLA, byte cells. */
    private static final List<String> FAULT_VECTORS = List.of("perm-flash", "pages-16-to-4-b8", "tp-8-into-4-7",
            "mla-576", "straddle-k12-v12", "mixed-nhd-to-hnd");

    private CopySuite() {
    }

    /**
     * Where a test's buffers live: host memory, or device memory a GPU backend copies. One placement per test, closed
     * after it.
     */
    public interface Placement extends AutoCloseable {
        /**
         * {@return the memory the backend reads or writes for a buffer whose initial bytes are {@code host}}
         *
         * @param host the buffer's bytes in host memory (the generator's fill)
         * @param destination whether the copy writes it
         */
        KvMemory place(MemorySegment host, boolean destination);

        /**
         * Copies the bytes of {@code placed} into {@code into} (nothing to do for host memory placed as itself).
         *
         * @param placed what {@link #place} returned
         * @param into the host buffer it was placed from
         */
        void readBack(KvMemory placed, MemorySegment into);

        /** Frees what the placement allocated. */
        @Override
        default void close() {
        }
    }

    /** Host memory: each buffer as itself. */
    public static final Supplier<Placement> HOST = () -> new Placement() {
        @Override
        public KvMemory place(MemorySegment host, boolean destination) {
            return KvMemory.host(host);
        }

        @Override
        public void readBack(KvMemory placed, MemorySegment into) {
            MemorySegment s = ((KvMemory.Host) placed).segment();
            if (!s.equals(into)) {
                MemorySegment.copy(s, 0, into, 0, into.byteSize());
            }
        }
    };

    /**
     * Host memory marked pinned ({@link KvMemory#pinnedHost}): each buffer as itself, for backends that read pinned host
     * memory as host memory (the CPU backends).
     */
    public static final Supplier<Placement> PINNED_HOST = () -> new Placement() {
        @Override
        public KvMemory place(MemorySegment host, boolean destination) {
            return KvMemory.pinnedHost(host);
        }

        @Override
        public void readBack(KvMemory placed, MemorySegment into) {
            HOST.get().readBack(placed, into);
        }
    };

    /**
     * vLLM flash ({@code [2][pages][pageSize][heads][cell]} per layer, the layers one after another in {@code m}) or,
     * with {@code hnd}, FlashInfer HND ({@code [2][pages][heads][pageSize][cell]}) over the same bytes: the two sides of
     * vLLM's in-place rearrangement, which the staged copies of every backend are tested and measured on.
     *
     * @param m the memory both sides share
     * @param layers the layers
     * @param heads the KV heads per layer
     * @param cell the bytes of one head's K (or V) of one position
     * @param pageSize the positions per page
     * @param pages the pages per layer
     * @param hnd whether the HND side is wanted (else flash, NHD)
     * @return the group
     */
    public static KvCacheGroup flashOrHnd(KvMemory m, int layers, int heads, int cell, int pageSize, int pages,
            boolean hnd) {
        long page = (long) pageSize * heads * cell;
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            long k = l * 2 * pages * page;
            long v = k + pages * page;
            ls.add(hnd ? CacheLayer.of(l, 0, heads, new KvRegion(m, k, page, cell, (long) pageSize * cell, cell),
                    new KvRegion(m, v, page, cell, (long) pageSize * cell, cell))
                    : CacheLayer.of(l, 0, heads, new KvRegion(m, k, page, (long) heads * cell, cell, cell),
                    new KvRegion(m, v, page, (long) heads * cell, cell, cell)));
        }
        return KvCacheGroup.of(pageSize, pages, ls);
    }

    /**
     * A staged copy's paths beyond the vectors, in place: {@link #flashOrHnd} flash read as HND on the same memory (4
     * KV heads, two layers) with whole aligned pieces (256-byte cells: 16-byte items on a GPU; 136: 8-byte pieces) and
     * byte cells (100), destination blocks smaller than a page (several blocks per unit), straddling page edges (B 12),
     * larger than a page (B 48), one position per block over pages of 32, a start past position 0, and the mixed mode.
     * Values and bytes equal the same copy out of place on the reference backend.
     *
     * @param backend the backend under test, which must stage the copy
     * @param placement where the buffer lives
     * @return one dynamic test per case
     */
    public static Stream<DynamicNode> stagedPiecesAndBlockSpans(KvChecksum backend, Supplier<Placement> placement) {
        record Case(int cell, int pageSize, int blockSize, long firstToken, ChecksumMode mode) {
        }
        return Stream.of(new Case(256, 16, 4, 0, ChecksumMode.STANDARD), new Case(136, 16, 12, 0, ChecksumMode.STANDARD),
                new Case(100, 32, 1, 0, ChecksumMode.STANDARD), new Case(256, 16, 8, 16, ChecksumMode.MIXED),
                new Case(136, 16, 48, 0, ChecksumMode.MIXED), new Case(100, 16, 5, 0, ChecksumMode.MIXED)).map(c ->
                DynamicTest.dynamicTest(c.toString(), () -> stagedAgainstReference(backend, placement, c.cell(),
                        c.pageSize(), c.blockSize(), c.firstToken(), c.mode())));
    }

    private static void stagedAgainstReference(KvChecksum backend, Supplier<Placement> placement, int cell, int pageSize,
            int blockSize, long firstToken, ChecksumMode mode) {
        int heads = 4;
        int pages = 6;
        long bytes = 2L * 2 * pages * pageSize * heads * cell;
        long tokens = firstToken + 2L * pageSize + 11;
        int[] table = Arrays.copyOf(new int[] {4, 1, 5, 0, 2}, (int) Math.ceilDiv(tokens - firstToken, (long) pageSize));
        RequestBlocks src = RequestBlocks.of(table, tokens, firstToken / pageSize, pageSize);
        RequestBlocks dst = RequestBlocks.of(table, tokens, firstToken / blockSize, blockSize);
        ChecksumSpec spec = new ChecksumSpec(mode, CellPadding.ZEROS);
        try (Arena arena = Arena.ofShared(); Placement p = placement.get()) {
            MemorySegment buf = arena.allocate(bytes, 64);
            Random rnd = new Random(2029);
            for (long i = 0; i < bytes / 8; i++) {
                buf.setAtIndex(ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            MemorySegment before = arena.allocate(bytes, 64).copyFrom(buf);
            MemorySegment after = arena.allocate(bytes, 64).copyFrom(buf);
            KvChecksum reference = KvChecksums.reference();
            long[] expected = reference.copyAndChecksum(reference.compileCopy(
                    flashOrHnd(KvMemory.host(before), 2, heads, cell, pageSize, pages, false), src,
                    flashOrHnd(KvMemory.host(after), 2, heads, cell, pageSize, pages, true), dst, spec));
            KvMemory m = p.place(buf, true);
            CopyPlan plan = backend.compileCopy(flashOrHnd(m, 2, heads, cell, pageSize, pages, false), src,
                    flashOrHnd(m, 2, heads, cell, pageSize, pages, true), dst, spec);
            assertTrue(plan.staged());
            assertArrayEquals(expected, backend.copyAndChecksum(plan));
            p.readBack(m, buf);
            assertEquals(-1, buf.mismatch(after), "the bytes after the copy");
        }
    }

    /**
     * Every vector with its buffers in host memory.
     *
     * @param backend the backend under test
     * @return one dynamic test per vector
     */
    public static Stream<DynamicNode> tests(KvChecksum backend) {
        return tests(backend, HOST);
    }

    /**
     * Every vector, each buffer placed by a fresh {@code placement}: the values compared exactly, every buffer's
     * SHA-256 after the copy (the source unchanged, the destination changed in the copied cells only), the plan run
     * twice, and {@code submitCopy} on stream 0 where the backend copies on a stream; a padded vector is first refused
     * without padding.
     *
     * @param backend the backend under test
     * @param placement makes a test's placement
     * @return one dynamic test per vector, named {@code "<backend> · copy · <vector>"}
     */
    public static Stream<DynamicNode> tests(KvChecksum backend, Supplier<Placement> placement) {
        return CopyVector.all().stream().map(v -> DynamicTest.dynamicTest(backend.name() + " · copy · " + v.name(), () -> {
            String who = backend.name() + " · copy · " + v.name() + " (" + v.description() + ")";
            try (Arena arena = Arena.ofShared(); Placement p = placement.get()) {
                List<MemorySegment> host = v.buffers(arena);
                for (int k = 0; k < host.size(); k++) {
                    assertEquals(v.initialSha256(k), CopyVector.sha256(host.get(k)), who + ": buffer " + k
                            + " filled differently from the generator's rule");
                }
                List<KvMemory> memory = place(v, host, p);
                KvCacheGroup src = v.source(memory);
                KvCacheGroup dst = v.destination(memory);
                if (v.inPlace() && !staging(backend, v, src, dst, who)) {
                    return;
                }
                if (v.spec().padding() == CellPadding.ZEROS) {
                    assertThrows(InvalidLayoutException.class, () -> backend.compileCopy(src, v.sourceRequest(), dst,
                            v.destinationRequest(), v.spec().withPadding(CellPadding.NONE)), who + ": unpadded must be refused");
                }
                CopyPlan plan = backend.compileCopy(src, v.sourceRequest(), dst, v.destinationRequest(), v.spec());
                long[] got = backend.copyAndChecksum(plan);
                assertArrayEquals(v.expected(), got, () -> who + ": values " + Arrays.toString(unsigned(got)));
                checkBuffers(v, host, memory, p, who);
                if (v.inPlace()) {   // the copy changed its own source: again only from the initial bytes
                    plan = refill(backend, v, host, memory, p, plan);
                }
                assertArrayEquals(v.expected(), backend.copyAndChecksum(plan), who + ": the same plan again");
                checkBuffers(v, host, memory, p, who + " (again)");
                if (copiesOnStream(backend, plan)) {
                    if (v.inPlace()) {
                        plan = refill(backend, v, host, memory, p, plan);
                    }
                    try (PendingChecksums pending = backend.submitCopy(plan, 0)) {
                        assertArrayEquals(v.expected(), pending.get(), who + ": submitCopy");
                    }
                    if (v.inPlace()) {
                        checkBuffers(v, host, memory, p, who + " (submitCopy)");
                    }
                }
            }
        }));
    }

    /**
     * An in-place vector: whether the backend stages it; where it does not (its
     * {@link BackendLimits#maxStagedUnitBytes()} below the plan's unit, or the placement's one memory kind for both
     * sides not a route it copies), checks that the copy is refused at compile time, naming the backend. The vector must be stageable ({@link CopyPlan#staged()}): each destination page reads only its
     * own bytes.
     */
    private static boolean staging(KvChecksum backend, CopyVector v, KvCacheGroup src, KvCacheGroup dst, String who) {
        CopyPlan unchecked = CopyPlan.compile(src, v.sourceRequest(), dst, v.destinationRequest(), v.spec());
        assertTrue(unchecked.overlaps() && unchecked.staged() && unchecked.stagingUnitBytes() > 0,
                who + ": an in-place vector must be a staged plan");
        BackendLimits limits = backend.backend().limits();
        long limit = limits.maxStagedUnitBytes();
        // one placement for both sides: a route the backend may not copy (pinned host memory to itself on CUDA)
        boolean routes = unchecked.launches().stream().allMatch(l -> limits.copies(l.route(), false));
        if (routes && unchecked.stagingUnitBytes() <= limit) {
            return true;
        }
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> backend.compileCopy(src,
                v.sourceRequest(), dst, v.destinationRequest(), v.spec()), who + ": must be refused, the backend stages "
                + limit + " bytes per unit");
        // refused for the staging, or before it for a route the placement gives (one memory kind for both sides)
        assertTrue(e.getMessage().contains("backend '" + backend.name() + "'"), who + ": " + e.getMessage());
        return false;
    }

    /**
     * The buffers of an in-place vector filled again; the plan itself where the placement gives the same memory
     * again (host memory), else one compiled over the new placement.
     */
    private static CopyPlan refill(KvChecksum backend, CopyVector v, List<MemorySegment> host, List<KvMemory> memory,
                                   Placement p, CopyPlan plan) {
        v.refill(host);
        List<KvMemory> again = place(v, host, p);
        if (again.equals(memory)) {
            return plan;
        }
        memory.clear();
        memory.addAll(again);
        return backend.compileCopy(v.source(memory), v.sourceRequest(), v.destination(memory), v.destinationRequest(),
                v.spec());
    }

    /**
     * In-place faults on a backend that stages ({@link BackendLimits#maxStagedUnitBytes()} above each in-place
     * vector's unit; none otherwise): a corrupted source byte differs at exactly the block holding its position, a
     * source described with the wrong head range (still within each page: staged) at every block; the
     * first two destination pages' source pages swapped (a unit reading another unit's page, an in-place page
     * permutation) is refused, naming both units; the staging limit below a vector's unit is refused, naming both
     * sizes.
     *
     * @param backend the backend under test
     * @return one dynamic test per fault and in-place vector, named {@code "<backend> · in-place fault · <fault> · <vector>"}
     */
    public static Stream<DynamicNode> inPlaceFaults(KvChecksum backend) {
        return inPlaceFaults(backend, HOST);
    }

    /**
     * The in-place faults with each buffer placed by a fresh {@code placement} (device memory for a GPU backend).
     *
     * @param backend the backend under test
     * @param placement makes a test's placement
     * @return one dynamic test per fault and in-place vector
     */
    public static Stream<DynamicNode> inPlaceFaults(KvChecksum backend, Supplier<Placement> placement) {
        List<DynamicNode> out = new ArrayList<>();
        for (CopyVector v : CopyVector.all()) {
            if (!v.inPlace()) {
                continue;
            }
            String prefix = backend.name() + " · in-place fault · ";
            if (backend.backend().limits().maxStagedUnitBytes() > 0) {
                out.add(fault(backend, placement, v, "corrupted source byte", CopySuite::corruptSourceByte, "in-place fault"));
                if (v.sourceHeadsPerLayer() > 1) {   // each head's data into the next head's cells of the same page
                    out.add(fault(backend, placement, v, "wrong head range", CopySuite::wrongHeads, "in-place fault"));
                }
            }
            out.add(DynamicTest.dynamicTest(prefix + "page permutation refused · " + v.name(), () -> {
                try (Arena arena = Arena.ofShared(); Placement p = placement.get()) {
                    List<KvMemory> memory = place(v, v.buffers(arena), p);
                    KvCacheGroup src = v.source(memory);
                    int[] table = v.sourceRequest().pageTable();
                    // the source pages of the first destination page and of the second, exchanged
                    int per = Math.max(1, v.destination(memory).pageSize() / src.pageSize());
                    for (int k = 0; k < per; k++) {
                        int x = table[k];
                        table[k] = table[per + k];
                        table[per + k] = x;
                    }
                    RequestBlocks sq = new RequestBlocks(table, v.sourceRequest().numTokens(),
                            v.sourceRequest().firstBlock(), v.sourceRequest().blockSize());
                    InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> backend.compileCopy(src,
                            sq, v.destination(memory), v.destinationRequest(), v.spec()));
                    int[] dt = v.destinationRequest().pageTable();
                    assertTrue(e.getMessage().contains("per-page staging cannot order it")
                            && e.getMessage().contains("destination page " + dt[0])
                            && e.getMessage().contains("destination page " + dt[1])
                            && e.getMessage().contains("copy through separate memory"), e.getMessage());
                }
            }));
            out.add(DynamicTest.dynamicTest(prefix + "unit above the limit refused · " + v.name(), () -> {
                try (Arena arena = Arena.ofShared(); Placement p = placement.get()) {
                    List<KvMemory> memory = place(v, v.buffers(arena), p);
                    CopyPlan plan = CopyPlan.compile(v.source(memory), v.sourceRequest(), v.destination(memory),
                            v.destinationRequest(), v.spec());
                    BackendLimits limits = backend.backend().limits().withStagedUnits(plan.stagingUnitBytes() - 1);
                    InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                            () -> plan.check(backend.name(), limits, false));
                    assertTrue(e.getMessage().contains("is " + plan.stagingUnitBytes() + " bytes")
                            && e.getMessage().contains("stages at most " + (plan.stagingUnitBytes() - 1) + " bytes")
                            && e.getMessage().contains("backend '" + backend.name() + "'"), e.getMessage());
                }
            }));
        }
        return out.stream();
    }

    /**
     * The fault tests with host memory.
     *
     * @param backend the backend under test
     * @return the dynamic tests
     */
    public static Stream<DynamicNode> faults(KvChecksum backend) {
        return faults(backend, HOST);
    }

    /**
     * Faults a verifying copy must reveal, each compared with the producer's record of the copied heads (the vector's
     * expected values: the source's block checksums over those heads in the destination's blocks, which an intact
     * copy returns): a corrupted source byte differs at exactly the block holding its position; two swapped
     * source-table entries (two destination pages receive each other's data) at exactly the blocks those pages'
     * positions fall in; a source described with the wrong head range at every block.
     *
     * @param backend the backend under test
     * @param placement makes a test's placement
     * @return one dynamic test per fault and vector, named {@code "<backend> · copy fault · <fault> · <vector>"}
     */
    public static Stream<DynamicNode> faults(KvChecksum backend, Supplier<Placement> placement) {
        List<CopyVector> vs = CopyVector.all().stream().filter(v -> FAULT_VECTORS.contains(v.name())).toList();
        if (vs.size() != FAULT_VECTORS.size()) {
            throw new IllegalStateException("fault vectors missing from vectors-copy: " + FAULT_VECTORS);
        }
        List<DynamicNode> out = new ArrayList<>();
        for (CopyVector v : vs) {
            out.add(fault(backend, placement, v, "corrupted source byte", CopySuite::corruptSourceByte, "copy fault"));
            out.add(fault(backend, placement, v, "swapped source pages", CopySuite::swapSourcePages, "copy fault"));
            if (v.sourceHeadsPerLayer() > 1) {   // one head moved has nothing in common with the destination: refused
                out.add(fault(backend, placement, v, "wrong head range", CopySuite::wrongHeads, "copy fault"));
            }
        }
        return out.stream();
    }

    /** A fault: changes the setting and returns the blocks (relative to the first) where the values must differ. */
    private interface Fault {
        Set<Integer> apply(Setting s);
    }

    /** A copy about to run: its host buffers (still changeable), then its source and request. */
    private static final class Setting {
        final CopyVector v;
        final List<MemorySegment> host;
        final RequestBlocks dq;
        RequestBlocks sq;
        int headShift;

        Setting(CopyVector v, List<MemorySegment> host) {
            this.v = v;
            this.host = host;
            this.dq = v.destinationRequest();
            this.sq = v.sourceRequest();
        }

        int block(long t) {
            return (int) ((t - dq.startToken()) / dq.blockSize());
        }
    }

    private static DynamicNode fault(KvChecksum backend, Supplier<Placement> placement, CopyVector v, String what, Fault f,
                                     String kind) {
        return DynamicTest.dynamicTest(backend.name() + " · " + kind + " · " + what + " · " + v.name(), () -> {
            String who = backend.name() + " · " + kind + " · " + what + " · " + v.name();
            try (Arena arena = Arena.ofShared(); Placement p = placement.get()) {
                Setting s = new Setting(v, v.buffers(arena));
                Set<Integer> expected = f.apply(s);
                List<KvMemory> memory = place(v, s.host, p);
                KvCacheGroup src = s.headShift == 0 ? v.source(memory) : v.sourceWithHeadsMoved(memory, s.headShift);
                CopyPlan plan = backend.compileCopy(src, s.sq, v.destination(memory), s.dq, v.spec());
                long[] got = backend.copyAndChecksum(plan);
                long[] producer = v.expected();
                Set<Integer> differ = new TreeSet<>();
                for (int b = 0; b < producer.length; b++) {
                    if (producer[b] != got[b]) {
                        differ.add(b);
                    }
                }
                assertTrue(!expected.isEmpty(), who + ": the fault touches no block");
                assertEquals(new TreeSet<>(expected), differ, who + ": blocks whose values differ from the producer's record");
            }
        });
    }

    /** Flips one byte of the middle position's cell in the source, in the middle copied slice. */
    private static Set<Integer> corruptSourceByte(Setting s) {
        KvCacheGroup src = s.v.source(s.host.stream().map(KvMemory::host).map(m -> (KvMemory) m).toList());
        CopyPlan plan = CopyPlan.compile(src, s.sq, s.v.destination(s.host.stream().map(m -> (KvMemory) KvMemory.host(m))
                .toList()), s.dq, s.v.spec());
        CopyPlan.Pair pair = plan.pairs().get(plan.pairs().size() / 2);
        long t = (s.dq.startToken() + s.dq.numTokens()) / 2;
        long i = t - s.sq.startToken();
        int page = s.sq.page((int) (i / src.pageSize()));
        long at = pair.source().k().cellOffset(page, i % src.pageSize()) + pair.source().k().bytes() - 1;
        MemorySegment seg = ((KvMemory.Host) pair.source().k().memory()).segment();
        seg.set(ValueLayout.JAVA_BYTE, at, (byte) (seg.get(ValueLayout.JAVA_BYTE, at) ^ 0x10));
        return Set.of(s.block(t));
    }

    /** Swaps the first and the last entry of the source table: each page's data goes to the other's positions. */
    private static Set<Integer> swapSourcePages(Setting s) {
        int[] table = s.sq.pageTable();
        int ps = s.v.source(s.host.stream().map(m -> (KvMemory) KvMemory.host(m)).toList()).pageSize();
        int needed = (int) s.sq.pagesNeeded(ps);
        int i = 0;
        int j = needed - 1;
        int x = table[i];
        table[i] = table[j];
        table[j] = x;
        s.sq = new RequestBlocks(table, s.sq.numTokens(), s.sq.firstBlock(), s.sq.blockSize());
        Set<Integer> blocks = new TreeSet<>();
        for (int e : new int[] {i, j}) {
            long from = s.sq.startToken() + (long) e * ps;
            long to = Math.min(from + ps, s.sq.numTokens());
            for (long t = from; t < to; t++) {
                blocks.add(s.block(t));
            }
        }
        return blocks;
    }

    /** Moves the source's head numbers by one: the copy writes each head's data into the next head's slot. */
    private static Set<Integer> wrongHeads(Setting s) {
        s.headShift = 1;
        Set<Integer> all = new TreeSet<>();
        for (int b = 0; b < s.dq.numBlocks(); b++) {
            all.add(b);
        }
        return all;
    }

    private static List<KvMemory> place(CopyVector v, List<MemorySegment> host, Placement p) {
        List<KvMemory> out = new ArrayList<>();
        for (int k = 0; k < host.size(); k++) {
            out.add(p.place(host.get(k), v.isDestination(k)));
        }
        return out;
    }

    private static void checkBuffers(CopyVector v, List<MemorySegment> host, List<KvMemory> memory, Placement p, String who) {
        for (int k = 0; k < host.size(); k++) {
            p.readBack(memory.get(k), host.get(k));
            assertEquals(v.finalSha256(k), CopyVector.sha256(host.get(k)), who + ": " + (v.isDestination(k)
                    ? "destination" : "source") + " buffer " + k + " after the copy");
        }
    }

    private static boolean copiesOnStream(KvChecksum backend, CopyPlan plan) {
        BackendLimits limits = backend.backend().limits();
        return plan.launches().stream().allMatch(l -> limits.copies(l.route(), true));
    }

    private static String[] unsigned(long[] v) {
        return Arrays.stream(v).mapToObj(Long::toUnsignedString).toArray(String[]::new);
    }
}
