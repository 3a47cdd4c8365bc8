package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvSegments;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.KvDump;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.EnumMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The adapter's checksums equal those the CLI's dump reader computes from the same KV written out as a dump, for
 * sessions in one Jlama page, in one page per position and layer, and in pages that split the layers and end inside
 * blocks.
 */
class JlamaKvTest {
    static final long SEED = 20261129L;

    enum Model {
        ONE_PAGE(TinyLlama.Shape.ONE_PAGE, 512),
        POSITION_PAGES(TinyLlama.Shape.POSITION_PAGES, 1),
        LAYER_PAGES(TinyLlama.Shape.LAYER_PAGES, 186);

        final TinyLlama.Shape shape;
        /** Positions per Jlama page, worked out from Jlama's page search by hand (see {@link TinyLlama.Shape}). */
        final int positionsPerPage;

        Model(TinyLlama.Shape shape, int positionsPerPage) {
            this.shape = shape;
            this.positionsPerPage = positionsPerPage;
        }
    }

    static final Map<Model, JlamaInstance> jlama = new EnumMap<>(Model.class);

    @TempDir
    static Path models;

    @TempDir
    Path out;

    @BeforeAll
    static void load() {
        for (Model m : Model.values()) {
            jlama.put(m, JlamaInstance.load(m.name(), TinyLlama.write(models.resolve(m.name()), SEED, m.shape)));
        }
    }

    @AfterAll
    static void close() {
        jlama.values().forEach(JlamaInstance::close);
    }

    static int[] prompt(long seed, int n) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] p = new int[n];
        p[0] = TinyLlama.BOS;
        for (int i = 1; i < n; i++) {
            p[i] = 3 + r.nextInt(TinyLlama.VOCAB - 3);
        }
        return p;
    }

    static Stream<Arguments> sessions() {
        return Stream.of(
                Arguments.of(Model.ONE_PAGE, 1, 16), Arguments.of(Model.ONE_PAGE, 15, 16), Arguments.of(Model.ONE_PAGE, 16, 16),
                Arguments.of(Model.ONE_PAGE, 17, 16), Arguments.of(Model.ONE_PAGE, 37, 16),
                Arguments.of(Model.ONE_PAGE, 100, 16),
                Arguments.of(Model.POSITION_PAGES, 1, 16), Arguments.of(Model.POSITION_PAGES, 17, 16),
                Arguments.of(Model.POSITION_PAGES, 100, 16), Arguments.of(Model.POSITION_PAGES, 77, 12),
                Arguments.of(Model.LAYER_PAGES, 17, 16), Arguments.of(Model.LAYER_PAGES, 186, 16),
                Arguments.of(Model.LAYER_PAGES, 187, 16), Arguments.of(Model.LAYER_PAGES, 390, 16),
                Arguments.of(Model.LAYER_PAGES, 390, 12), Arguments.of(Model.LAYER_PAGES, 200, 64));
    }

    @ParameterizedTest(name = "{0}: {1} tokens, blocks of {2}")
    @MethodSource("sessions")
    void adapterChecksumsEqualTheCliReadingADump(Model model, int n, int blockSize) throws Exception {
        System.out.println("JlamaKvTest seed " + SEED + ", prompt seed " + (SEED + n));
        JlamaInstance j = jlama.get(model);
        int layers = model.shape.layers();
        try (var kv = j.newSession(); KvChecksum fast = KvChecksums.fastest(); KvChecksum ref = KvChecksums.reference()) {
            j.prefill(kv, prompt(SEED + n, n), 0);
            JlamaKv view = JlamaKv.of(j.model(), kv, blockSize, n);
            assertEquals(model.positionsPerPage, view.positionsPerPage());
            KvSegments segs = view.segments();
            int pages = Math.ceilDiv(n, model.positionsPerPage);
            assertEquals(pages, segs.segments().size(), "one segment per Jlama context page");
            assertEquals(layers, segs.geometry().layers().size());
            assertEquals(TinyLlama.KV_HEADS, segs.geometry().layers().get(0).numHeads());
            // Zero-copy: each segment's memory is Jlama's own page slice, for the first and the last layer.
            for (int l : new int[] {0, layers - 1}) {
                var jlamaPages = kv.getKeyTensorsUptoPosition(l, n - 1);
                for (int c = 0; c < pages; c++) {
                    // Jlama hands out a new slice object per call: the same bytes are the same address and size.
                    var jl = jlamaPages[c].getMemorySegment();
                    var ours = ((KvMemory.Host) segs.segments().get(c).group().layers().get(l).k().memory()).segment();
                    assertEquals(jl.address(), ours.address(), "layer " + l + " page " + c);
                    assertEquals(jl.byteSize(), ours.byteSize(), "layer " + l + " page " + c);
                }
            }
            long[] adapter = segs.plan(n, 0, blockSize).blockChecksums(fast);

            Path dump = out.resolve("jlama-" + model + "-" + n + ".safetensors");
            GatheredDump.write(dump, kv, layers, TinyLlama.KV_HEADS, TinyLlama.HEAD_DIM, n);
            try (DumpFile f = DumpFile.open(dump)) {
                KvDump d = KvDump.of(f, new KvDump.Options("gathered", blockSize, null, 0, 0));
                long[] cli = ref.blockChecksums(d.group(), d.request());
                assertArrayEquals(cli, adapter, fast + " over Jlama's cache vs the CLI's reader (" + ref + ") of its dump");
                // A consumer's view from a later block: the same values from there on.
                long first = cli.length / 2;
                assertArrayEquals(Arrays.copyOfRange(cli, (int) first, cli.length),
                        segs.plan(n, first, blockSize).blockChecksums(fast), "from block " + first);
            }
        }
    }

    @Test
    void oneChangedValueInJlamasCacheChangesItsBlockOnly() {
        int n = 40;
        JlamaInstance j = jlama.get(Model.POSITION_PAGES);
        try (var kv = j.newSession(); KvChecksum k = KvChecksums.fastest()) {
            j.prefill(kv, prompt(SEED, n), 0);
            JlamaKv view = JlamaKv.of(j.model(), kv, 16, 48);
            KvSegments.Plan plan = view.segments().plan(n, 0, 16);
            long[] before = plan.blockChecksums(k);
            // Layer 2's V at position 20 (block 1), head 3's first value, through Jlama's tensor API.
            var t = kv.getValTensorForPosition(2, 20);
            t.set(t.get(0, 3 * TinyLlama.HEAD_DIM) + 1.0f, 0, 3 * TinyLlama.HEAD_DIM);
            long[] after = plan.blockChecksums(k);
            assertEquals(before[0], after[0]);
            assertNotEquals(before[1], after[1]);
            assertEquals(before[2], after[2]);
            // Positions past the request (later decode writes) are not read.
            view.row(2, true, 45).set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 123f);
            assertArrayEquals(after, plan.blockChecksums(k));
        }
    }

    @Test
    void aStepOfSessionsIsOneCallGivingEachSessionsValues() {
        // Three sessions of one position per Jlama page (hundreds of segments) checksummed as one engine step: one
        // backend call, each session's values exactly those of its own call.
        JlamaInstance j = jlama.get(Model.POSITION_PAGES);
        int[] lengths = {100, 37, 256};
        List<AutoCloseable> open = new ArrayList<>();
        try (KvChecksum fast = KvChecksums.fastest()) {
            Counting counting = new Counting(fast.backend());
            KvChecksum counted = KvChecksum.of(counting);
            List<JlamaKv> views = new ArrayList<>();
            long[] tokens = new long[lengths.length];
            for (int s = 0; s < lengths.length; s++) {
                var kv = j.newSession();
                open.add(kv);
                j.prefill(kv, prompt(SEED + 7 * s, lengths[s]), 0);
                views.add(JlamaKv.of(j.model(), kv, 16, lengths[s]));
                tokens[s] = lengths[s];
            }
            for (ChecksumSpec spec : List.of(ChecksumSpec.STANDARD, ChecksumSpec.of(io.kvchecksum.ChecksumMode.MIXED))) {
                int before = counting.runs;
                List<long[]> step = JlamaKv.blockChecksums(counted, views, tokens, 16, spec);
                assertEquals(before + 1, counting.runs, "one backend call for the step");
                for (int s = 0; s < lengths.length; s++) {
                    assertArrayEquals(views.get(s).segments().plan(lengths[s], 0, 16, spec).blockChecksums(fast), step.get(s),
                            "session " + s + " " + spec);
                }
            }
            // A producer's payload of one session: one call too, over its hundreds of segments.
            int before = counting.runs;
            new PdChecks(counted, 16, TinyLlama.Shape.POSITION_PAGES.layers(), "F32",
                    new io.kvchecksum.engine.worker.PayloadSender(io.kvchecksum.engine.verdict.ChecksumMetrics.NONE))
                    .producerPayload("r", views.get(2), lengths[2]);
            assertEquals(before + 1, counting.runs, "one backend call for a producer's payload");
        } finally {
            for (AutoCloseable c : open) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }

    /** A backend that counts its runs. */
    private static final class Counting implements io.kvchecksum.spi.Backend {
        private final io.kvchecksum.spi.Backend inner;
        int runs;

        Counting(io.kvchecksum.spi.Backend inner) {
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
        public io.kvchecksum.spi.BackendLimits limits() {
            return inner.limits();
        }

        @Override
        public io.kvchecksum.PendingChecksums run(io.kvchecksum.CompiledPlan plan, io.kvchecksum.CompiledPlan.Output output,
                java.util.OptionalLong stream) {
            runs++;
            return inner.run(plan, output, stream);
        }

        @Override
        public long pageDigest(io.kvchecksum.PageDigestPlan plan) {
            return inner.pageDigest(plan);
        }

        @Override
        public void close() {
        }
    }

    @Test
    void copyMovesRowsAcrossPagesOfDifferentSizes() {
        // Rows 180..199 cross the source's page boundary at 186 and land at 5..24 of another session: every row of
        // layers 0 (first Jlama layer page) and 11 (second) must land at its position.
        JlamaInstance a = jlama.get(Model.LAYER_PAGES);
        try (var kv = a.newSession(); var other = a.newSession()) {
            a.prefill(kv, prompt(SEED + 1, 200), 0);
            JlamaKv from = JlamaKv.of(a.model(), kv, 16, 200);
            JlamaKv to = JlamaKv.of(a.model(), other, 16, 400);
            JlamaKv.copy(from, 180, to, 5, 20);   // crosses the source's page boundary at 186
            for (int p = 0; p < 20; p++) {
                for (int l : new int[] {0, 11}) {
                    assertEquals(-1, from.row(l, false, 180 + p).mismatch(to.row(l, false, 5 + p)), "K row " + p);
                    assertEquals(-1, from.row(l, true, 180 + p).mismatch(to.row(l, true, 5 + p)), "V row " + p);
                }
            }
        }
    }
}
