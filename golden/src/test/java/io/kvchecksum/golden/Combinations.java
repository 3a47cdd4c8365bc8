package io.kvchecksum.golden;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.Definition;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.KvSource;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import org.junit.jupiter.api.DynamicTest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The combination test: random cases drawn over every axis the compiled plan combines (source kind, layout, cell
 * sizes, mode, padding, memory kind, request shapes, requests per plan), each run through one backend and compared
 * exactly with an oracle that knows nothing of regions, plans or backends. The oracle sees only the logical content:
 * every cell byte is a hash of (segment, layer, head, page, slot, byte), written into memory at the addresses the
 * case's own layout gives and recomputed by the oracle from the hash, so a wrong address, table, split or placement
 * anywhere in the library changes a value.
 *
 * <p>A case is either equal to the oracle for every request (block checksums; slice sums and submit on every third
 * case; each request also compiled and run alone), or refused when compiled with an {@link InvalidLayoutException} that
 * names a limit the backend declares ({@link BackendLimits}: its message starts with {@code "backend '<name>'"}).
 * Every case here lives in host memory, which every backend reads, so refusals are not expected; the test requires at
 * least 90 % accepted, and always accepted: padding with segments, the mixed mode with byte cells, several requests in
 * one plan. A compiled plan of several requests must reach the backend in exactly one call, also when each request
 * reads its own source ({@link KvChecksum#compile(List, List, io.kvchecksum.ChecksumSpec)}).
 *
 * <p>Reproducible: the seed is printed ({@value #SEED_PROPERTY} sets it, {@value #CASES_PROPERTY} the number of cases,
 * {@value #ONLY_PROPERTY} runs one case by its index); each case draws from its own {@code Random(seed + index)}.
 * A backend module runs it with
 * <pre>{@code
 * @TestFactory DynamicTest combinations() { return Combinations.test(backend); }
 * }</pre>
 */
public final class Combinations {
    /** System property: the seed (a long, decimal or {@code 0x} hex). */
    public static final String SEED_PROPERTY = "kvchecksum.combinations.seed";
    /** System property: the number of cases per backend. */
    public static final String CASES_PROPERTY = "kvchecksum.combinations.cases";
    /** System property: run only the case of this index (to reproduce a failure). */
    public static final String ONLY_PROPERTY = "kvchecksum.combinations.only";
    /** The seed CI uses. */
    public static final long DEFAULT_SEED = 0xC0_2026_1202L;
    /** The cases CI runs per backend. */
    public static final int DEFAULT_CASES = 2000;

    private static final ValueLayout.OfLong LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    private Combinations() {
    }

    /**
     * {@return {@code n} requests of one engine step over {@code g}: random token counts, first blocks and page tables;
     * each has blocks but the second, which has no tokens} The GPU backends' batched-launch tests draw their steps here.
     *
     * @param rnd the test's seeded random source
     * @param g the group the page tables address
     * @param blockSize tokens per block of every request
     * @param n how many requests, at least 2
     */
    public static List<RequestBlocks> step(Random rnd, KvCacheGroup g, int blockSize, int n) {
        List<RequestBlocks> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long tokens = i == 1 ? 0 : 1 + rnd.nextInt(100);
            long firstBlock = tokens > 0 && rnd.nextInt(3) == 0 ? rnd.nextLong(Math.ceilDiv(tokens, blockSize)) : 0;
            int pages = (int) Math.max(0, Math.ceilDiv(tokens - firstBlock * blockSize, (long) g.pageSize()));
            int[] table = new int[pages];
            for (int p = 0; p < pages; p++) {
                table[p] = (int) rnd.nextLong(g.numPages());
            }
            out.add(RequestBlocks.of(table, tokens, firstBlock, blockSize));
        }
        return out;
    }

    /**
     * {@return the combination test of {@code backend} as one dynamic test, with the seed and case count from the
     * system properties (defaults {@link #DEFAULT_SEED}, {@link #DEFAULT_CASES})}
     *
     * @param backend the backend under test
     */
    public static DynamicTest test(KvChecksum backend) {
        return test(backend, "host memory", UnaryOperator.identity());
    }

    /**
     * As {@link #test(KvChecksum)}, with every region's memory moved by {@code place} once its content is written
     * (e.g. to a GPU backend's device memory): the backend reads what {@code place} returns.
     *
     * @param backend the backend under test
     * @param where what {@code place} does, for the test's name
     * @param place given a host memory holding a region's bytes, returns the memory the backend reads (the same bytes)
     * @return the combination test as one dynamic test, named after {@code where}
     */
    public static DynamicTest test(KvChecksum backend, String where, UnaryOperator<KvMemory> place) {
        long seed = Long.decode(System.getProperty(SEED_PROPERTY, Long.toString(DEFAULT_SEED)));
        int cases = Integer.getInteger(CASES_PROPERTY, DEFAULT_CASES);
        return DynamicTest.dynamicTest(backend.name() + " · combinations, " + where + " (seed " + seed + ", " + cases
                + " cases)", () -> run(backend, seed, cases, place));
    }

    /**
     * Runs {@code cases} drawn cases through {@code backend} and asserts the properties in the class comment.
     *
     * @param backend the backend under test
     * @param seed the seed; case {@code i} draws from {@code new Random(seed + i)}
     * @param cases how many cases
     * @return the counts, per combination class: how many cases of it were drawn and how many accepted
     */
    public static Report run(KvChecksum backend, long seed, int cases) {
        return run(backend, seed, cases, UnaryOperator.identity());
    }

    /**
     * As {@link #run(KvChecksum, long, int)}, the backend reading memory moved by {@code place}.
     *
     * @param backend the backend under test
     * @param seed the seed; case {@code i} draws from {@code new Random(seed + i)}
     * @param cases how many cases
     * @param place given a host memory holding a region's bytes, returns the memory the backend reads
     * @return the counts, per combination class
     */
    public static Report run(KvChecksum backend, long seed, int cases, UnaryOperator<KvMemory> place) {
        String only = System.getProperty(ONLY_PROPERTY);
        Report report = new Report(backend.name(), seed);
        Counting counting = new Counting(backend.backend());
        KvChecksum counted = KvChecksum.of(counting);
        for (int i = 0; i < cases; i++) {
            if (only != null && Integer.parseInt(only) != i) {
                continue;
            }
            try (Arena arena = Arena.ofShared(); Arena confined = Arena.ofConfined()) {
                Case c = Case.draw(new Random(seed + i), arena, confined, place);
                String who = backend.name() + " case " + i + " (seed " + seed + ", -D" + ONLY_PROPERTY + "=" + i + "): " + c;
                boolean accepted = check(backend, counted, counting, c, i, who);
                report.count(c, accepted);
            }
        }
        System.out.println(report);
        if (only == null) {
            assertTrue(report.accepted * 10 >= report.cases * 9, report.toString());
            for (String always : List.of("padding x segments", "mixed x byte cells", "several requests")) {
                Report.Tally t = report.classes.get(always);
                // each class is about a tenth of the cases or more: a run of a few hundred draws every one
                assertTrue(t != null ? t.accepted == t.drawn : cases < 300, always + " must always be accepted: " + report);
            }
        }
        return report;
    }

    private static boolean check(KvChecksum k, KvChecksum counted, Counting counting, Case c, int index, String who) {
        CompiledPlan plan;
        try {
            plan = k.compile(c.source, c.requests, c.spec);
        } catch (InvalidLayoutException e) {
            assertTrue(e.getMessage().startsWith("backend '" + k.name() + "'"),
                    who + ": refused for a reason that is not a declared limit of the backend: " + e.getMessage());
            return false;
        }
        long[][] expected = new long[c.requests.size()][];
        for (int r = 0; r < expected.length; r++) {
            expected[r] = c.oracle(r, false);
        }
        int before = counting.runs;
        List<long[]> got = counted.blockChecksums(plan);
        assertEquals(plan.isEmpty() ? before : before + 1, counting.runs, who + ": one backend call per compiled plan");
        for (int r = 0; r < expected.length; r++) {
            assertArrayEquals(expected[r], got.get(r), who + " request " + r + " block checksums");
        }
        if (index % 3 == 0) {
            List<SliceSums> sums = k.sliceSums(plan);
            for (int r = 0; r < expected.length; r++) {
                assertArrayEquals(c.oracle(r, true), sums.get(r).values(), who + " request " + r + " slice sums");
            }
            try (PendingChecksums p = k.submit(plan)) {
                long[] all = p.get();
                for (int r = 0; r < expected.length; r++) {
                    int from = plan.offset(CompiledPlan.Output.BLOCK_CHECKSUMS, r);
                    assertArrayEquals(expected[r], Arrays.copyOfRange(all, from, from + expected[r].length),
                            who + " request " + r + " submit");
                }
            }
        }
        if (c.requests.size() > 1) {
            for (int r = 0; r < expected.length; r++) {
                long[] alone = k.blockChecksums(k.compile(c.source, List.of(c.requests.get(r)), c.spec)).get(0);
                assertArrayEquals(expected[r], alone, who + " request " + r + " compiled alone");
            }
            // One source per request (several sessions of one step): every other request reads an equal source that is
            // another object, so its launches are its own, yet the step is still one plan and one backend call.
            List<KvSource> sources = new ArrayList<>();
            for (int r = 0; r < expected.length; r++) {
                sources.add(r % 2 == 0 ? c.source : switch (c.source) {
                    case KvCacheGroup g -> KvCacheGroup.of(g.pageSize(), g.numPages(), g.layers());
                    case KvSegments s -> KvSegments.of(s.segments().stream().map(KvSegments.Segment::group).toList());
                });
            }
            CompiledPlan step = k.compile(sources, c.requests, c.spec);
            before = counting.runs;
            List<long[]> each = counted.blockChecksums(step);
            assertEquals(step.isEmpty() ? before : before + 1, counting.runs, who + ": one backend call per step of sources");
            for (int r = 0; r < expected.length; r++) {
                assertArrayEquals(expected[r], each.get(r), who + " request " + r + " (one source per request)");
            }
        }
        return true;
    }

    /** What a run drew and accepted, per combination class. */
    public static final class Report {
        private final String backend;
        private final long seed;
        private int cases;
        private int accepted;
        private final TreeMap<String, Tally> classes = new TreeMap<>();

        private Report(String backend, long seed) {
            this.backend = backend;
            this.seed = seed;
        }

        /** Drawn and accepted cases of one class. */
        private static final class Tally {
            int drawn;
            int accepted;
        }

        private void count(Case c, boolean ok) {
            cases++;
            accepted += ok ? 1 : 0;
            for (String cls : c.classes()) {
                Tally t = classes.computeIfAbsent(cls, x -> new Tally());
                t.drawn++;
                t.accepted += ok ? 1 : 0;
            }
        }

        /** {@return the number of cases run} */
        public int cases() {
            return cases;
        }

        /** {@return the number of cases the backend accepted (and computed exactly)} */
        public int accepted() {
            return accepted;
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("combinations: " + backend + ", seed " + seed + ": " + accepted + " of "
                    + cases + " cases accepted and exact");
            classes.forEach((k, t) -> b.append("; ").append(k).append(' ').append(t.accepted).append('/').append(t.drawn));
            return b.toString();
        }
    }

    /** A backend that counts its runs: one per compiled plan, however many requests and launches it has. */
    private static final class Counting implements Backend {
        private final Backend inner;
        private int runs;

        Counting(Backend inner) {
            this.inner = inner;
        }

        @Override
        public String name() {
            return inner.name();
        }

        @Override
        public String description() {
            return inner.description();
        }

        @Override
        public BackendLimits limits() {
            return inner.limits();
        }

        @Override
        public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
            runs++;
            return inner.run(plan, output, stream);
        }

        @Override
        public long pageDigest(PageDigestPlan plan) {
            return inner.pageDigest(plan);
        }

        @Override
        public void close() {
            // the backend under test belongs to the caller
        }
    }

    /** Where the dimensions of a layer's region go, outermost first. */
    private enum Order {
        PAGE_SLOT_HEAD, PAGE_HEAD_SLOT, HEAD_PAGE_SLOT, SLOT_PAGE_HEAD, HEAD_SLOT_PAGE, SLOT_HEAD_PAGE
    }

    /** One layer's shape, the same in every segment: its cell bytes and how its regions are laid out. */
    private record LayerShape(int layer, int firstHead, int heads, int kBytes, int vBytes, boolean interleaved, Order order,
                              int align, int[] gaps) {
        int cellBytes() {
            return kBytes + vBytes;
        }
    }

    /** One drawn case: its source, requests and spec, and what the oracle needs to recompute every value. */
    private static final class Case {
        final List<LayerShape> shapes = new ArrayList<>();
        final List<KvCacheGroup> groups = new ArrayList<>();
        final List<Long> starts = new ArrayList<>();
        final List<RequestBlocks> requests = new ArrayList<>();
        KvSource source;
        ChecksumSpec spec;
        boolean segmented;
        String memoryKind;
        long salt;
        UnaryOperator<KvMemory> place;
        /** Each host memory moved once, though K and V regions may share it. */
        final java.util.Map<KvMemory, KvMemory> moved = new java.util.HashMap<>();

        static Case draw(Random rnd, Arena shared, Arena confined, UnaryOperator<KvMemory> place) {
            Case c = new Case();
            c.place = place;
            c.salt = rnd.nextLong();
            c.segmented = rnd.nextInt(10) < 3;
            ChecksumMode mode = rnd.nextBoolean() ? ChecksumMode.STANDARD : ChecksumMode.MIXED;
            int layers = 1 + rnd.nextInt(3);
            boolean padded = false;
            int nextLayer = rnd.nextInt(4);
            for (int l = 0; l < layers; l++) {
                int[] kv = cell(rnd);
                padded |= (kv[0] + kv[1]) % 8 != 0;
                int heads = 1 + rnd.nextInt(4);
                int[] gaps = {rnd.nextInt(3) * 8, rnd.nextInt(2) * 16, rnd.nextInt(2) * 24};
                int align = new int[] {1, 8, 16, 16}[rnd.nextInt(4)];
                c.shapes.add(new LayerShape(nextLayer, rnd.nextInt(3) * heads, heads, kv[0], kv[1],
                        kv[1] > 0 && rnd.nextBoolean(), Order.values()[rnd.nextInt(6)], align, gaps));
                nextLayer += 1 + rnd.nextInt(40);
            }
            c.spec = new ChecksumSpec(mode, padded || rnd.nextInt(8) == 0 ? CellPadding.ZEROS : CellPadding.NONE);
            int kind = rnd.nextInt(10);
            c.memoryKind = kind < 6 ? "shared" : kind < 8 ? "confined" : "heap";
            Arena arena = kind < 6 ? shared : confined;
            if (!c.segmented) {
                int pageSize = 1 + rnd.nextInt(8);
                int pages = 1 + rnd.nextInt(8);
                c.groups.add(c.group(rnd, arena, 0, pageSize, pages));
                c.starts.add(0L);
                c.source = c.groups.get(0);
                int n = 1 + (rnd.nextInt(3) == 0 ? rnd.nextInt(4) : 0);
                for (int r = 0; r < n; r++) {
                    int blockSize = 1 + rnd.nextInt(16);
                    long numTokens = rnd.nextInt(pageSize * pages * 2 + 1);
                    long nb = Math.ceilDiv(numTokens, blockSize);
                    long firstBlock = nb == 0 ? 0 : rnd.nextInt(3) == 0 ? rnd.nextLong(nb) : 0;
                    long start = firstBlock * blockSize;
                    int[] table = new int[(int) Math.ceilDiv(numTokens - start, pageSize)];
                    for (int i = 0; i < table.length; i++) {
                        table[i] = rnd.nextInt(pages);
                    }
                    c.requests.add(RequestBlocks.of(table, numTokens, firstBlock, blockSize));
                }
            } else {
                // Every page size divides q and every segment length is a multiple of q, so segments start on page
                // boundaries; a consumer's first block is used only where it starts on one too.
                int q = new int[] {1, 2, 4, 8}[rnd.nextInt(4)];
                int segs = 1 + rnd.nextInt(4);
                long start = 0;
                for (int s = 0; s < segs; s++) {
                    int pageSize = q >> rnd.nextInt(Integer.numberOfTrailingZeros(q) + 1);
                    int pages = (q / pageSize) * (1 + rnd.nextInt(3));
                    c.groups.add(c.group(rnd, arena, s, pageSize, pages));
                    c.starts.add(start);
                    start += (long) pageSize * pages;
                }
                c.source = KvSegments.of(c.groups);
                int n = 1 + (rnd.nextInt(3) == 0 ? rnd.nextInt(4) : 0);
                for (int r = 0; r < n; r++) {
                    int blockSize = 1 + rnd.nextInt(16);
                    long numTokens = rnd.nextLong(start + 1);
                    long nb = Math.ceilDiv(numTokens, blockSize);
                    long firstBlock = blockSize % q == 0 && nb > 0 && rnd.nextInt(3) == 0 ? rnd.nextLong(nb) : 0;
                    c.requests.add(KvSegments.request(numTokens, firstBlock, blockSize));
                }
            }
            return c;
        }

        /** K and V bytes of a cell: whole pieces, pieces straddling K and V, or cells to pad (index-K's 132 bytes). */
        private static int[] cell(Random rnd) {
            return switch (rnd.nextInt(6)) {
                case 0, 1 -> new int[] {8 * (1 + rnd.nextInt(16)), 0};
                case 2 -> {
                    int k = 8 * (1 + rnd.nextInt(8));
                    yield new int[] {k, k};
                }
                case 3 -> {
                    int k = 1 + rnd.nextInt(30);
                    yield new int[] {k, 8 * (1 + rnd.nextInt(4)) - k % 8};
                }
                case 4 -> new int[] {rnd.nextBoolean() ? 132 : 4 + rnd.nextInt(60), 0};
                default -> new int[] {1 + rnd.nextInt(20), 1 + rnd.nextInt(20)};
            };
        }

        /** Segment {@code seg}'s group: each layer's regions laid out as drawn, its content written from the hash. */
        private KvCacheGroup group(Random rnd, Arena arena, int seg, int pageSize, int pages) {
            List<CacheLayer> layers = new ArrayList<>();
            for (int li = 0; li < shapes.size(); li++) {
                LayerShape s = shapes.get(li);
                int kSpan = s.interleaved() ? s.cellBytes() : s.kBytes();
                long[] strides = strides(s, kSpan, pageSize, pages);
                long offset = s.align() * (long) rnd.nextInt(4);
                long size = offset + extent(s, strides, pageSize, pages, kSpan) + rnd.nextInt(8);
                KvMemory km = memory(arena, size);
                KvRegion k = new KvRegion(km, offset, strides[0], strides[1], strides[2], s.kBytes());
                KvRegion v = null;
                if (s.vBytes() > 0) {
                    if (s.interleaved()) {
                        v = new KvRegion(km, offset + s.kBytes(), strides[0], strides[1], strides[2], s.vBytes());
                    } else {
                        long[] vs = strides(s, s.vBytes(), pageSize, pages);
                        long vOffset = s.align() * (long) rnd.nextInt(4);
                        v = new KvRegion(memory(arena, vOffset + extent(s, vs, pageSize, pages, s.vBytes())), vOffset,
                                vs[0], vs[1], vs[2], s.vBytes());
                    }
                }
                for (int page = 0; page < pages; page++) {
                    for (int slot = 0; slot < pageSize; slot++) {
                        for (int h = 0; h < s.heads(); h++) {
                            for (int q = 0; q < s.cellBytes(); q++) {
                                KvRegion r = q < s.kBytes() ? k : v;
                                long at = r.offset() + page * r.pageStride() + slot * r.tokenStride() + h * r.headStride()
                                        + (q < s.kBytes() ? q : q - s.kBytes());
                                segment(r.memory()).set(ValueLayout.JAVA_BYTE, at, contentByte(seg, li, h, page, slot, q));
                            }
                        }
                    }
                }
                k = moved(k);
                v = v == null ? null : moved(v);
                layers.add(v == null ? CacheLayer.kOnly(s.layer(), s.firstHead(), s.heads(), k)
                        : CacheLayer.of(s.layer(), s.firstHead(), s.heads(), k, v));
            }
            return KvCacheGroup.of(pageSize, pages, layers);
        }

        /** The region over the memory {@link #place} gives for its host memory, once its content is written. */
        private KvRegion moved(KvRegion r) {
            KvMemory m = moved.computeIfAbsent(r.memory(), place);
            return m == r.memory() ? r : new KvRegion(m, r.offset(), r.pageStride(), r.tokenStride(), r.headStride(),
                    r.cellBytes());
        }

        /** Page, token and head strides of a region whose cells span {@code span} bytes, in the layer's order. */
        private static long[] strides(LayerShape s, int span, int pageSize, int pages) {
            long unit = roundUp(span, s.align());
            long[] sizes = new long[3];   // page, slot, head
            sizes[0] = pages;
            sizes[1] = pageSize;
            sizes[2] = s.heads();
            int[] dims = switch (s.order()) {   // outermost first: indices into page/slot/head
                case PAGE_SLOT_HEAD -> new int[] {0, 1, 2};
                case PAGE_HEAD_SLOT -> new int[] {0, 2, 1};
                case HEAD_PAGE_SLOT -> new int[] {2, 0, 1};
                case SLOT_PAGE_HEAD -> new int[] {1, 0, 2};
                case HEAD_SLOT_PAGE -> new int[] {2, 1, 0};
                case SLOT_HEAD_PAGE -> new int[] {1, 2, 0};
            };
            long[] out = new long[3];
            long stride = unit + s.gaps()[0];
            for (int i = 2; i >= 0; i--) {
                out[dims[i]] = stride;
                stride = stride * sizes[dims[i]] + s.gaps()[Math.min(2, 3 - i)];
            }
            return out;
        }

        private static long extent(LayerShape s, long[] strides, int pageSize, int pages, int span) {
            return (pages - 1) * strides[0] + (pageSize - 1) * strides[1] + (s.heads() - 1) * strides[2] + span;
        }

        private static long roundUp(long x, int a) {
            return (x + a - 1) / a * a;
        }

        private KvMemory memory(Arena arena, long size) {
            if (memoryKind.equals("heap")) {
                return KvMemory.host(MemorySegment.ofArray(new byte[(int) size]));
            }
            return KvMemory.host(arena.allocate(size, 16));
        }

        private static MemorySegment segment(KvMemory m) {
            return ((KvMemory.Host) m).segment();
        }

        /** The content of byte {@code q} of a cell, from the case's salt alone: what the oracle reads. */
        byte contentByte(int seg, int layerIndex, int head, long page, long slot, int q) {
            long x = salt ^ (seg * 0x9E3779B97F4A7C15L) ^ (layerIndex * 0xBF58476D1CE4E5B9L) ^ (head * 0x94D049BB133111EBL)
                    ^ (page * 0x2545F4914F6CDD1DL) ^ (slot * 0x5851F42D4C957F2DL) ^ ((long) q * 0x14057B7EF767814FL);
            x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
            x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
            return (byte) (x ^ (x >>> 31));
        }

        /**
         * Request {@code r}'s block checksums (or slice sums, slice-major) from the definition and the content alone:
         * position {@code t} is in the page its table names (a segmented cache: the segment holding it), each cell K
         * bytes then V bytes then zeros to whole pieces, little-endian.
         */
        long[] oracle(int r, boolean slices) {
            RequestBlocks q = requests.get(r);
            int nb = q.numBlocks();
            int rows = 0;
            for (LayerShape s : shapes) {
                rows += s.heads();
            }
            long[] out = new long[slices ? rows * nb : nb];
            int row = 0;
            for (int li = 0; li < shapes.size(); li++) {
                LayerShape s = shapes.get(li);
                int pieces = (s.cellBytes() + 7) / 8;
                for (int h = 0; h < s.heads(); h++, row++) {
                    long m = Definition.factor(s.layer(), s.firstHead() + h);
                    for (int b = 0; b < nb; b++) {
                        long block = q.firstBlock() + b;
                        long sum = 0;
                        for (long t = q.blockStart(block); t < q.blockEnd(block); t++) {
                            long[] where = locate(q, t);
                            for (int p = 0; p < pieces; p++) {
                                long x = 0;
                                for (int by = 7; by >= 0; by--) {
                                    int at = 8 * p + by;
                                    byte v = at < s.cellBytes() ? contentByte((int) where[0], li, h, where[1], where[2], at) : 0;
                                    x = (x << 8) | (v & 0xFF);
                                }
                                sum += Definition.pieceValue(x, spec.mode()) * (2 * (t * pieces + p) + 1);
                            }
                        }
                        if (slices) {
                            out[row * nb + b] = sum;
                        } else {
                            out[b] += m * sum;
                        }
                    }
                }
            }
            return out;
        }

        /** Segment, page and slot of request position {@code t}. */
        private long[] locate(RequestBlocks q, long t) {
            if (!segmented) {
                int pageSize = groups.get(0).pageSize();
                long i = t - q.startToken();
                return new long[] {0, q.page((int) (i / pageSize)), i % pageSize};
            }
            for (int s = groups.size() - 1; s >= 0; s--) {
                if (t >= starts.get(s)) {
                    int pageSize = groups.get(s).pageSize();
                    return new long[] {s, (t - starts.get(s)) / pageSize, (t - starts.get(s)) % pageSize};
                }
            }
            throw new IllegalStateException("position " + t + " before the first segment");
        }

        /** The combination classes this case belongs to. */
        List<String> classes() {
            List<String> out = new ArrayList<>();
            boolean byteCells = shapes.stream().anyMatch(s -> s.kBytes() % 8 != 0 || s.vBytes() % 8 != 0);
            boolean notWhole = shapes.stream().anyMatch(s -> s.cellBytes() % 8 != 0);
            out.add(segmented ? "segments" : "group");
            out.add(spec.mode().wireName());
            out.add("memory " + memoryKind);
            if (segmented && notWhole) {
                out.add("padding x segments");
            }
            if (spec.mode() == ChecksumMode.MIXED && byteCells) {
                out.add("mixed x byte cells");
            }
            if (requests.size() > 1) {
                out.add("several requests");
            }
            return out;
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder(segmented ? "segments" : "group").append(' ').append(spec).append(", ")
                    .append(memoryKind).append(" memory, layers ");
            for (LayerShape s : shapes) {
                b.append("[layer ").append(s.layer()).append(" heads ").append(s.firstHead()).append('+').append(s.heads())
                        .append(" K ").append(s.kBytes()).append(" V ").append(s.vBytes())
                        .append(s.interleaved() ? " interleaved " : " ").append(s.order()).append(" align ")
                        .append(s.align()).append(']');
            }
            b.append(", pages");
            for (KvCacheGroup g : groups) {
                b.append(' ').append(g.numPages()).append('x').append(g.pageSize());
            }
            return b.append(", requests ").append(requests).toString();
        }
    }
}
