package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvSegments;
import io.kvchecksum.KvSource;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.Rechunked;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The golden suite for one backend, as JUnit dynamic tests: every vector through every operation, compared exactly,
 * each (backend, vector) pair its own test named {@code "<backend> · <vector>"}; then every vector again in the
 * {@link ChecksumMode#MIXED mixed mode} against NumPy's mixed expectations ({@code "<backend> · mixed · <vector>"});
 * then the cell vectors ({@code "<backend> · cells · <vector>"}: pieces straddling K and V, index-K caches, padded cells),
 * then the combination vectors ({@link CombinationVector}, {@code "<backend> · combinations · <vector>"}: padded and
 * straddling cells in a segmented cache, the mixed mode over layers of both cell kinds, several requests in one compiled
 * plan), then NumPy's state-row digests ({@link GoldenStateRows}, {@code "<backend> · state rows · <case>"}).
 * (Combining and rechunking are pure functions of the slice sums, the same in every mode.) A backend module runs it with
 * <pre>{@code
 * @TestFactory Stream<DynamicNode> golden() { return GoldenSuite.tests(backend); }
 * }</pre>
 */
public final class GoldenSuite {
    private GoldenSuite() {
    }

    /**
     * {@return all vectors and relations through {@code backend}}
     *
     * @param backend the backend under test, reading each vector's cache in host memory
     */
    public static Stream<DynamicNode> tests(KvChecksum backend) {
        return tests(backend, HostCase::group);
    }

    /**
     * As {@link #tests(KvChecksum)}, with a hook that may move each vector's cache elsewhere (e.g. to device memory)
     * before it is checksummed; the hook receives the host layout and returns the layout to pass to the backend.
     *
     * @param backend the backend under test
     * @param placement given each vector's host cache, returns the layout the backend reads (the same bytes, wherever
     *     it put them); called once per test, inside it
     * @return the dynamic tests: one per vector, the relations, the mixed-mode tests, the cell and combination vectors
     *     and the state rows
     */
    public static Stream<DynamicNode> tests(KvChecksum backend, Function<HostCase, KvCacheGroup> placement) {
        String b = backend.name() + " · ";
        Stream<DynamicTest> vectors = each(b, GoldenVectors.all(),
                (v, who) -> checkVector(backend, v, ChecksumMode.STANDARD, who, placement));
        Stream<DynamicTest> relations = DynamicTest.stream(GoldenVectors.relations().stream(),
                r -> b + r.get("kind").asText() + " · " + label(r), r -> checkRelation(backend, r, placement));
        Stream<DynamicTest> mixed = each(b + "mixed · ", GoldenVectors.all(),
                (v, who) -> checkVector(backend, GoldenVectors.mixed(v.name()), ChecksumMode.MIXED, who, placement));
        Stream<DynamicTest> cells = each(b + "cells · ", GoldenVectors.cells(), (v, who) -> {
            checkVector(backend, v, ChecksumMode.STANDARD, who, placement);
            checkVector(backend, GoldenVectors.mixedOf(v), ChecksumMode.MIXED, who + " (mixed)", placement);
        });
        Stream<DynamicTest> combinations = each(b + "combinations · ", GoldenVectors.combinations(),
                (v, who) -> checkCombination(backend, v, who, placement));
        return Stream.concat(vectors, Stream.of(DynamicContainer.dynamicContainer(b + "relations", relations),
                DynamicContainer.dynamicContainer(b + "mixed mode", mixed),
                DynamicContainer.dynamicContainer(b + "cells (straddling, index-K, padded)", cells),
                DynamicContainer.dynamicContainer(b + "combinations (padded segments, mixed byte cells, several requests)",
                        combinations),
                GoldenStateRows.tests(backend, placement)));
    }

    /** One test per item, named {@code prefix} and the item, that name passed to {@code check} for its messages. */
    private static <T> Stream<DynamicTest> each(String prefix, List<T> items, BiConsumer<T, String> check) {
        return items.stream().map(t -> {
            String who = prefix + t;
            return DynamicTest.dynamicTest(who, () -> check.accept(t, who));
        });
    }

    /**
     * One golden vector in {@code mode}, compared exactly with NumPy's values: the combine of NumPy's slice sums, one
     * plan's block checksums (twice), slice sums and submitted values, and the family's ready-made constructor where
     * the vector has one; in the standard mode also the group's own entry points, which refuse a padded vector (one
     * whose expectations need {@link CellPadding#ZEROS}) before anything is read.
     */
    private static void checkVector(KvChecksum k, GoldenVector v, ChecksumMode mode, String who,
            Function<HostCase, KvCacheGroup> placement) {
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> buffers = v.buffers(arena);
            KvCacheGroup g = placement.apply(new HostCase(v, v.group(buffers), buffers));
            RequestBlocks r = v.request();
            long[] expected = v.expected();
            SliceSums expectedSlices = v.expectedSlices();
            assertArrayEquals(expected, expectedSlices.combine(), who + " (combine of NumPy's slice sums)");
            if (mode == ChecksumMode.STANDARD && v.padCells()) {
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> k.blockChecksums(g, r),
                        who + ": computed without padding");
                assertTrue(e.getMessage().contains("not whole 8-byte pieces"), e.getMessage());
            } else if (mode == ChecksumMode.STANDARD) {
                assertArrayEquals(expected, k.blockChecksums(g, r), who + " (fused, generic layout)");
                assertEquals(expectedSlices, k.sliceSums(g, r), who + " (slice sums, generic layout)");
                try (PendingChecksums p = k.submit(g, r)) {
                    assertArrayEquals(expected, p.get(), who + " (submit, generic layout)");
                }
            }
            SlicePlan plan = SlicePlan.of(g, r, mode, v.padCells() ? CellPadding.ZEROS : CellPadding.NONE);
            for (int call = 0; call < 2; call++) {
                assertArrayEquals(expected, k.blockChecksums(plan), who + " (one plan, call " + call + ")");
            }
            assertEquals(expectedSlices, k.sliceSums(plan), who + " (slice sums)");
            try (PendingChecksums p = k.submit(plan)) {
                assertArrayEquals(expected, p.get(), who + " (submit of a reused plan)");
            }
            GoldenVector.FamilyLayout f = v.familyLayout(buffers);
            if (f != null) {
                KvCacheGroup fg = placement.apply(new HostCase(v, f.group(), buffers));
                assertArrayEquals(expected, k.blockChecksums(SlicePlan.of(fg, f.request(), mode)),
                        who + " (fused, " + v.family() + " constructor)");
            }
        }
    }

    /**
     * A combination vector ({@code vectors-combinations}) in both modes: all its requests compiled into one plan
     * ({@link KvChecksum#compile}), each request's block checksums, slice sums and share of the submitted values
     * compared exactly with NumPy's; then each request compiled alone, and through the one-request entry point of its
     * source ({@link SlicePlan} for a group, {@link KvSegments#plan} for segments), which must give the same values. A
     * vector with padded cells is first refused without {@link CellPadding#ZEROS}, before anything is read.
     */
    private static void checkCombination(KvChecksum k, CombinationVector v, String who,
            Function<HostCase, KvCacheGroup> placement) {
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> buffers = v.buffers(arena);
            List<KvCacheGroup> groups = new ArrayList<>();
            for (KvCacheGroup g : v.groups(buffers)) {
                groups.add(placement.apply(new HostCase(null, g, buffers)));
            }
            KvSource source = v.segmented() ? KvSegments.of(groups) : groups.get(0);
            List<RequestBlocks> requests = v.requests();
            int n = requests.size();
            CellPadding padding = v.padCells() ? CellPadding.ZEROS : CellPadding.NONE;
            if (v.padCells()) {
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                        () -> k.compile(source, requests, ChecksumSpec.STANDARD), who + ": compiled without padding");
                assertTrue(e.getMessage().contains("not whole 8-byte pieces"), e.getMessage());
            }
            for (ChecksumMode mode : ChecksumMode.values()) {
                ChecksumSpec spec = new ChecksumSpec(mode, padding);
                String w = who + " (" + mode.wireName() + ")";
                CompiledPlan plan = k.compile(source, requests, spec);
                for (int call = 0; call < 2; call++) {
                    List<long[]> blocks = k.blockChecksums(plan);
                    assertEquals(n, blocks.size(), w + ": one array per request");
                    for (int r = 0; r < n; r++) {
                        assertArrayEquals(v.expected(r, mode), blocks.get(r), w + ": request " + r + " (one plan, fused, call "
                                + call + ")");
                    }
                }
                List<SliceSums> slices = k.sliceSums(plan);
                assertEquals(n, slices.size(), w + ": slice sums per request");
                long[] all;
                try (PendingChecksums p = k.submit(plan)) {
                    all = p.get();
                }
                assertEquals(plan.offset(CompiledPlan.Output.BLOCK_CHECKSUMS, n), all.length, w + ": submitted values");
                for (int r = 0; r < n; r++) {
                    String wr = w + ": request " + r;
                    long[] expected = v.expected(r, mode);
                    SliceSums expectedSlices = v.expectedSlices(r, mode);
                    assertArrayEquals(expected, expectedSlices.combine(), wr + " (combine of NumPy's slice sums)");
                    assertEquals(expectedSlices, slices.get(r), wr + " (one plan, slice sums)");
                    assertArrayEquals(expected, Arrays.copyOfRange(all, plan.offset(CompiledPlan.Output.BLOCK_CHECKSUMS, r),
                            plan.offset(CompiledPlan.Output.BLOCK_CHECKSUMS, r + 1)), wr + " (one plan, submit)");
                    CompiledPlan alone = k.compile(source, List.of(requests.get(r)), spec);
                    assertArrayEquals(expected, k.blockChecksums(alone).get(0), wr + " (compiled alone, fused)");
                    assertEquals(expectedSlices, k.sliceSums(alone).get(0), wr + " (compiled alone, slice sums)");
                    RequestBlocks q = requests.get(r);
                    if (source instanceof KvSegments s) {
                        KvSegments.Plan sp = s.plan(q.numTokens(), q.firstBlock(), q.blockSize(), spec);
                        assertArrayEquals(expected, sp.blockChecksums(k), wr + " (KvSegments.plan, fused)");
                        assertEquals(expectedSlices, sp.sliceSums(k), wr + " (KvSegments.plan, slice sums)");
                    } else {
                        SlicePlan sp = SlicePlan.of(groups.get(0), q, spec);
                        assertArrayEquals(expected, k.blockChecksums(sp), wr + " (SlicePlan, fused)");
                        assertEquals(expectedSlices, k.sliceSums(sp), wr + " (SlicePlan, slice sums)");
                    }
                }
            }
        }
    }

    /**
     * A vector's cache in host memory, with the vector it came from; {@code vector} is {@code null} for the state-row
     * cases ({@link GoldenStateRows}), whose group is one layer covering {@code vectors-state/state.bin}, and for the
     * {@link CombinationVector combination vectors}, whose every group (each segment of a segmented cache) is placed on
     * its own, over all of the vector's buffers.
     *
     * @param vector the vector being checked, or {@code null} (state rows, combination vectors)
     * @param group the vector's generic layout over {@code buffers}
     * @param buffers the vector's buffers in host memory, alive only while the test runs
     */
    public record HostCase(GoldenVector vector, KvCacheGroup group, List<MemorySegment> buffers) {
    }

    private static long[] compute(KvChecksum k, String name, Function<HostCase, KvCacheGroup> placement) {
        GoldenVector v = GoldenVectors.get(name);
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> buffers = v.buffers(arena);
            KvCacheGroup g = placement.apply(new HostCase(v, v.group(buffers), buffers));
            return k.blockChecksums(g, v.request());
        }
    }

    private static String label(JsonNode r) {
        return switch (r.get("kind").asText()) {
            case "sum" -> r.get("whole").asText() + " = sum of " + r.get("parts").size() + " parts";
            case "rechunk" -> r.get("small").asText() + " x" + r.get("factor").asInt() + " = " + r.get("large").asText();
            default -> r.get("a").asText() + " != " + r.get("b").asText();
        };
    }

    private static void checkRelation(KvChecksum k, JsonNode r, Function<HostCase, KvCacheGroup> placement) {
        switch (r.get("kind").asText()) {
            case "sum" -> {
                long[] whole = compute(k, r.get("whole").asText(), placement);
                long[] sum = new long[whole.length];
                for (JsonNode p : r.get("parts")) {
                    long[] part = compute(k, p.asText(), placement);
                    assertEquals(whole.length, part.length, "part " + p.asText() + " block count");
                    for (int i = 0; i < sum.length; i++) {
                        sum[i] += part[i];
                    }
                }
                assertArrayEquals(whole, sum, k.name() + ": parts of " + r.get("whole").asText() + " do not add up");
            }
            case "rechunk" -> {
                long[] small = compute(k, r.get("small").asText(), placement);
                long[] large = compute(k, r.get("large").asText(), placement);
                Rechunked re = Rechunked.of(small, GoldenVectors.get(r.get("small").asText()).firstBlock(), r.get("factor").asInt());
                assertEquals(GoldenVectors.get(r.get("large").asText()).firstBlock(), re.firstChunk(), "first chunk");
                assertArrayEquals(large, re.values(), k.name() + ": rechunked " + r.get("small").asText());
            }
            case "differs" -> {
                long[] a = compute(k, r.get("a").asText(), placement);
                long[] b = compute(k, r.get("b").asText(), placement);
                assertFalse(Arrays.equals(a, b), k.name() + ": " + r.get("a").asText() + " and " + r.get("b").asText() + " agree");
            }
            default -> throw new IllegalStateException("unknown relation " + r);
        }
    }
}
