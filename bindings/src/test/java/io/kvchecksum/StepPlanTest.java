package io.kvchecksum;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * One engine step as one compiled plan: several requests, each over its own source (segmented sessions of random
 * segment lengths and page sizes, and plain groups), compiled together ({@link CompiledPlan#compile(List, List,
 * ChecksumSpec)}) must give exactly what each request gives alone over one allocation of the same bytes, on the
 * reference and on the CPU backend at 1 to 3 threads (below and above the size from which the CPU backend splits the
 * step over its threads).
 */
class StepPlanTest {
    static final long SEED = Long.getLong("stepplan.seed", 0x57E9_2026_1207L);

    /** A session of the geometry {@code geometrySeed} and {@code cap} draw, its own random content. */
    private static KvSegmentsTest.Single session(Arena arena, long geometrySeed, int cap, Random content) {
        KvSegmentsTest.Single s = KvSegmentsTest.single(arena, new Random(geometrySeed), cap);
        for (int l = 0; l < s.group().layers().size(); l++) {
            MemorySegment m = s.memory(l);
            for (long o = 0; o < m.byteSize(); o += 8) {
                m.set(ValueLayout.JAVA_LONG, o, content.nextLong());
            }
        }
        return s;
    }

    /** {@code s}'s positions copied into segments of 1 .. maxLen positions, page sizes dividing their lengths. */
    private static KvSegments segmented(Arena arena, Random rnd, KvSegmentsTest.Single s, int maxLen, boolean anyPage) {
        List<KvCacheGroup> groups = new ArrayList<>();
        for (int at = 0; at < s.cap(); ) {
            int len = Math.min(s.cap() - at, 1 + rnd.nextInt(maxLen));
            List<Integer> pages = new ArrayList<>();
            for (int p = 1; p <= len; p++) {
                if (len % p == 0 && (anyPage || p == 1)) {
                    pages.add(p);
                }
            }
            groups.add(KvSegmentsTest.copy(arena, rnd, s, at, len, pages.get(rnd.nextInt(pages.size()))));
            at += len;
        }
        return KvSegments.of(groups);
    }

    @Test
    void aStepOfSegmentedSessionsIsOnePlanGivingEachRequestsValuesExactly() {
        System.out.println("StepPlanTest seed " + SEED + " (-Dstepplan.seed=...)");
        Random rnd = new Random(SEED);
        try (KvChecksum ref = KvChecksums.reference(); KvChecksum cpu1 = KvChecksums.cpu(1);
                KvChecksum cpu2 = KvChecksums.cpu(2); KvChecksum cpu3 = KvChecksums.cpu(3)) {
            for (int c = 0; c < 60; c++) {
                try (Arena arena = rnd.nextBoolean() ? Arena.ofShared() : Arena.ofConfined()) {
                    long geometry = rnd.nextLong();
                    int n = 1 + rnd.nextInt(4);
                    int blockSize = 1 + rnd.nextInt(16);
                    // one capacity: single() draws the layer numbers after the content, so the geometry seed alone
                    // gives one geometry only at one capacity
                    int cap = 1 + rnd.nextInt(60);
                    List<KvSource> sources = new ArrayList<>();
                    List<RequestBlocks> requests = new ArrayList<>();
                    List<SlicePlan> alone = new ArrayList<>();
                    List<SlicePlan> aloneMixed = new ArrayList<>();
                    for (int r = 0; r < n; r++) {
                        KvSegmentsTest.Single s = session(arena, geometry, cap, rnd);
                        long numTokens = rnd.nextInt(cap + 1);
                        long nb = Math.ceilDiv(numTokens, blockSize);
                        // a consumer's first block where segments of one-position pages allow any
                        long firstBlock = nb > 0 && rnd.nextInt(3) == 0 ? rnd.nextLong(nb) : 0;
                        boolean plain = rnd.nextInt(4) == 0;
                        sources.add(plain ? s.group() : segmented(arena, rnd, s, 12, firstBlock == 0));
                        requests.add(plain ? s.request(numTokens, firstBlock, blockSize)
                                : KvSegments.request(numTokens, firstBlock, blockSize));
                        alone.add(SlicePlan.of(s.group(), s.request(numTokens, firstBlock, blockSize)));
                        aloneMixed.add(SlicePlan.of(s.group(), s.request(numTokens, firstBlock, blockSize), ChecksumMode.MIXED));
                    }
                    String what = "case " + c + ": " + n + " requests, B" + blockSize + ", " + requests;
                    for (ChecksumSpec spec : List.of(ChecksumSpec.STANDARD, ChecksumSpec.of(ChecksumMode.MIXED))) {
                        List<SlicePlan> expectedPlans = spec.mode() == ChecksumMode.MIXED ? aloneMixed : alone;
                        for (KvChecksum k : List.of(ref, cpu1, cpu2, cpu3)) {
                            CompiledPlan plan = k.compile(sources, requests, spec);
                            List<long[]> got = k.blockChecksums(plan);
                            List<SliceSums> sums = k.sliceSums(plan);
                            long[] submitted;
                            try (PendingChecksums p = k.submit(plan)) {
                                submitted = p.get();
                            }
                            for (int r = 0; r < n; r++) {
                                String w = k.description() + " " + spec.mode().wireName() + " request " + r + " " + what;
                                long[] expected = ref.blockChecksums(expectedPlans.get(r));
                                assertArrayEquals(expected, got.get(r), w);
                                assertEquals(ref.sliceSums(expectedPlans.get(r)), sums.get(r), w + " (slice sums)");
                                int from = plan.offset(CompiledPlan.Output.BLOCK_CHECKSUMS, r);
                                assertArrayEquals(expected, Arrays.copyOfRange(submitted, from, from + expected.length),
                                        w + " (submit)");
                                assertTrue(plan.source(r) == sources.get(r), w + ": the request's own source");
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void aLargeStepOfJlamaLikePagesRunsOverThreadsExactly() {
        // Sessions whose pages hold 1 to 8 positions, each page its own memory: every launch far under the size from
        // which the CPU backend splits one launch, the step together over it (a shared arena: on the pool; confined: on
        // the caller, through the loops for memory).
        Random rnd = new Random(SEED + 1);
        // pages of 1 to 8 positions (every launch one unit of all its layers), then of 150 to 250 (launches over a
        // task's size: cut by layer and block range, read with the loops for memory)
        for (int[] pageLengths : new int[][] {{1, 8}, {150, 250}})
        for (boolean shared : new boolean[] {true, false}) {
            try (Arena arena = shared ? Arena.ofShared() : Arena.ofConfined(); KvChecksum ref = KvChecksums.reference();
                    KvChecksum cpu1 = KvChecksums.cpu(1); KvChecksum cpu2 = KvChecksums.cpu(2); KvChecksum cpu3 = KvChecksums.cpu(3)) {
                List<KvSource> sources = new ArrayList<>();
                List<RequestBlocks> requests = new ArrayList<>();
                List<long[]> expected = new ArrayList<>();
                long bytes = 0;
                for (int r = 0; r < 3; r++) {
                    int tokens = 200 + rnd.nextInt(pageLengths[0] == 1 ? 200 : 400);
                    KvCacheGroup whole = wide(arena, rnd, tokens);
                    List<KvCacheGroup> pages = new ArrayList<>();
                    for (int at = 0; at < tokens; ) {
                        int len = Math.min(tokens - at, pageLengths[0] + rnd.nextInt(pageLengths[1] - pageLengths[0] + 1));
                        pages.add(slice(whole, at, len));
                        at += len;
                    }
                    long numTokens = tokens - rnd.nextInt(3);
                    sources.add(KvSegments.of(pages));
                    requests.add(KvSegments.request(numTokens, 0, 16));
                    int[] table = java.util.stream.IntStream.range(0, tokens).toArray();
                    expected.add(ref.blockChecksums(SlicePlan.of(whole, RequestBlocks.of(table, numTokens, 0, 16))));
                    bytes += whole.bytesPerToken() * numTokens;
                }
                assertTrue(bytes >= 4L << 20, "the step must be over the parallel size: " + bytes);
                for (KvChecksum k : List.of(cpu1, cpu2, cpu3)) {
                    CompiledPlan plan = k.compile(sources, requests, ChecksumSpec.STANDARD);
                    assertTrue(pageLengths[0] > 1 || plan.launches().size() > 100, "many small launches: " + plan);
                    List<long[]> got = k.blockChecksums(plan);
                    List<SliceSums> sums = k.sliceSums(plan);
                    for (int r = 0; r < expected.size(); r++) {
                        String w = k.description() + (shared ? " shared" : " confined") + " request " + r;
                        assertArrayEquals(expected.get(r), got.get(r), w);
                        assertArrayEquals(expected.get(r), sums.get(r).combine(), w + " (slice sums)");
                        assertArrayEquals(expected.get(r), k.blockChecksums(k.compile(sources.subList(r, r + 1),
                                requests.subList(r, r + 1), ChecksumSpec.STANDARD)).get(0), w + " (alone)");
                    }
                }
            }
        }
    }

    /** One allocation per layer, token-major {@code [tokens][8 heads][K 128 | V 128]} bytes: 8 KiB per token. */
    private static KvCacheGroup wide(Arena arena, Random rnd, int tokens) {
        List<CacheLayer> layers = new ArrayList<>();
        int heads = 8;
        long token = heads * 256L;
        for (int l = 0; l < 4; l++) {
            MemorySegment m = arena.allocate(token * tokens, 64);
            for (long o = 0; o < m.byteSize(); o += 8) {
                m.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
            }
            layers.add(new CacheLayer(l, 0, heads, new KvRegion(KvMemory.host(m), 0, token, token, 256, 128),
                    new KvRegion(KvMemory.host(m), 128, token, token, 256, 128)));
        }
        return KvCacheGroup.of(1, tokens, layers);
    }

    /** Positions {@code [at, at + len)} of {@code whole} as a group over slices of its memory: one Jlama page. */
    private static KvCacheGroup slice(KvCacheGroup whole, int at, int len) {
        List<CacheLayer> layers = new ArrayList<>();
        for (CacheLayer l : whole.layers()) {
            MemorySegment m = ((KvMemory.Host) l.k().memory()).segment();
            long token = l.k().tokenStride();
            KvMemory page = KvMemory.host(m.asSlice(at * token, len * token));
            layers.add(new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), new KvRegion(page, 0, len * token, token, 256, 128),
                    new KvRegion(page, 128, len * token, token, 256, 128)));
        }
        return KvCacheGroup.of(len, 1, layers);
    }

    @Test
    void stepsOfMismatchedSourcesAreRefusedNamingTheProblem() {
        try (Arena arena = Arena.ofConfined(); KvChecksum ref = KvChecksums.reference()) {
            Random rnd = new Random(SEED + 2);
            KvSegmentsTest.Single a = KvSegmentsTest.single(arena, rnd, 8);
            KvSegmentsTest.Single other = null;
            while (other == null) {
                KvSegmentsTest.Single b = KvSegmentsTest.single(arena, rnd, 8);
                try {
                    KvSegments.requireSameGeometry(a.group(), b.group(), "b", "a's");
                } catch (InvalidLayoutException differs) {
                    other = b;
                }
            }
            RequestBlocks q = a.request(4, 0, 4);
            KvSegmentsTest.Single b = other;
            InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> ref.compile(
                    List.of(a.group(), b.group()), List.of(q, b.request(4, 0, 4)), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("the source of request 1"), e.getMessage());
            e = assertThrows(InvalidLayoutException.class, () -> ref.compile(List.of(a.group()), List.of(q, q),
                    ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("1 sources for 2 requests"), e.getMessage());
            List<KvSource> withNull = new ArrayList<>();
            withNull.add(a.group());
            withNull.add(null);
            e = assertThrows(InvalidLayoutException.class, () -> ref.compile(withNull, List.of(q, q), ChecksumSpec.STANDARD));
            assertTrue(e.getMessage().contains("the source of request 1 is null"), e.getMessage());
        }
    }
}
