package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.Decision;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.Verifier;
import io.kvchecksum.engine.worker.Cluster.Config;
import io.kvchecksum.engine.worker.Cluster.Engine;
import io.kvchecksum.engine.worker.Cluster.Layout;
import io.kvchecksum.engine.worker.Cluster.Model;
import io.kvchecksum.engine.worker.Cluster.Prompt;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The end-to-end cases of the vLLM series, with real caches, real copies and real checksums on both sides. Every
 * verifying case has a twin with one flipped bit in the consumer's cache that must be a MISMATCH at the right block,
 * so disabling or weakening the comparison fails these tests.
 */
class EndToEndTest {
    private static final long SEED = 0x5EED_0005L;
    private static KvChecksum cpu;

    @BeforeAll
    static void backend() {
        cpu = KvChecksums.cpu();
        System.out.println("EndToEndTest seed " + SEED + ", backend " + cpu.description());
    }

    @AfterAll
    static void close() {
        cpu.close();
    }

    /** Flips a bit of the consumer cell of {@code layer}, the first head of the worker holding it, at {@code token}. */
    record Corruption(int layer, long token, int rank) {
    }

    /** One producer-to-consumer transfer. */
    static final class Run {
        Model model = Model.gqa(4, SEED);
        Config producer = Config.of(1, 1, 16);
        Config consumer = Config.of(1, 1, 16);
        long numTokens = 150;
        Long consumerTokens;
        long localPrefix;
        Map<Integer, String> producerSkips = Map.of();
        Map<Integer, String> consumerSkips = Map.of();
        Corruption corruption;
        Integer window;
        /** Positions before the window's blocks hold the null block on both sides (vLLM frees them). */
        boolean nullOutsideWindow;
        ChecksumMode producerMode = ChecksumMode.STANDARD;
        ChecksumMode consumerMode = ChecksumMode.STANDARD;
        KvChecksum backend = cpu;

        ChecksumPayload producerPayload;
        ChecksumPayload consumerPayload;
        String wire;

        Run model(Model m) {
            model = m;
            return this;
        }

        Run sides(Config p, Config c) {
            producer = p;
            consumer = c;
            return this;
        }

        Run corrupt(Corruption c) {
            corruption = c;
            return this;
        }

        /** Runs prefill, producer checksums, transfer, consumer checksums; returns the consumer's verdict. */
        LoadVerdict run() {
            long nA = consumerTokens == null ? numTokens : consumerTokens;
            Random rnd = new Random(SEED);
            try (Arena arena = Arena.ofConfined()) {
                Prompt prompt = new Prompt(model, numTokens, SEED + 1);
                Engine p = new Engine(model, producer, numTokens, rnd, arena);
                p.fill(prompt, 0, numTokens);
                Engine c = new Engine(model, consumer, nA, rnd, arena);
                if (nullOutsideWindow) {
                    // Each side frees what lies before its own window's blocks; the null block's page then holds junk.
                    p.nullBlocksBefore(Math.ceilDiv(numTokens, (long) producer.blockSize()) - Math.ceilDiv(window, producer.blockSize()) - 1);
                    p.fill(prompt, 0, numTokens);
                    c.nullBlocksBefore(Math.ceilDiv(nA, (long) consumer.blockSize()) - Math.ceilDiv(window, consumer.blockSize()) - 1);
                }
                c.fillLocal(0, localPrefix, rnd);
                c.loadFrom(p, localPrefix, Math.min(nA, numTokens));
                // Tokens past the producer's (a consumer that holds more) are the consumer's own.
                c.fillLocal(numTokens, nA, rnd);
                if (corruption != null) {
                    int stage = c.stageOf(corruption.layer());
                    int group = corruption.layer() < 4 ? 0 : 1;
                    Cluster.WorkerCache wc = c.caches[stage][corruption.rank()][group];
                    c.corrupt(stage, corruption.rank(), group, corruption.layer(), wc.firstHead(), corruption.token(), 3);
                }

                List<BlockSelection> ps = p.select(Side.PRODUCER, 0, numTokens, window);
                Aggregator.Result pr = Aggregator.producer(producer.tp(), producer.pp(), numTokens, ps,
                        p.records(backend, Side.PRODUCER, numTokens, ps, producerSkips, producerMode));
                producerPayload = assertInstanceOf(Aggregator.Complete.class, pr).payload();
                // The workers' parts must add up to the whole model's checksums, computed independently.
                for (GroupChecksums g : producerPayload.groups()) {
                    assertArrayEquals(prompt.referenceChecksums(g.groupId(), g.start(), producer.blockSize(), arena, producerMode),
                            g.values(),
                            "producer group " + g.groupId() + " vs the reference backend on the unsharded model");
                }
                wire = PayloadCodec.encodeBase64(producerPayload);

                List<BlockSelection> cs = c.select(Side.CONSUMER, localPrefix, nA, window);
                Aggregator.Result cr = Aggregator.consumer(consumer.tp(), consumer.pp(), nA, cs,
                        c.records(backend, Side.CONSUMER, nA, cs, consumerSkips, consumerMode));
                consumerPayload = assertInstanceOf(Aggregator.Complete.class, cr).payload();
                LoadVerdict v = Verifier.verify(wire, consumerPayload);
                System.out.println("  P" + producer + " -> C" + consumer + (corruption != null ? " " + corruption : "") + ": " + v);
                return v;
            }
        }
    }

    static void assertMatch(LoadVerdict v) {
        assertEquals(Status.MATCH, v.status(), v.toString());
        for (GroupVerdict g : v.groups()) {
            assertEquals(Status.MATCH, g.status(), g.toString());
        }
    }

    static void assertMismatch(LoadVerdict v, int group, long... blocks) {
        assertEquals(Status.MISMATCH, v.status(), v.toString());
        GroupVerdict g = v.group(group);
        assertNotNull(g, v.toString());
        assertEquals(Status.MISMATCH, g.status(), g.toString());
        assertArrayEquals(blocks, g.mismatchedBlocks(), g.toString());
    }

    @ParameterizedTest(name = "producer TP{0} PP{1} -> consumer TP{2} PP{3}")
    @CsvSource({"1,1,1,1", "2,1,1,1", "1,1,2,1", "1,2,1,1", "1,1,2,2"})
    void tpPpPairsVerifyAndCatchACorruptedByte(int ptp, int ppp, int ctp, int cpp) {
        Config p = Config.of(ptp, ppp, 16).layout(Layout.FLASH);
        // The consumer uses another layout and splits each block into two kernel pages.
        Config c = Config.of(ctp, cpp, 16).layout(Layout.HND).pageSize(8);
        Run clean = new Run().sides(p, c);
        assertMatch(clean.run());
        assertEquals(2, clean.consumerPayload.groups().size());

        // Token 70 is in block 4; the corrupted worker is the last TP rank of the stage holding layer 3.
        assertMismatch(new Run().sides(p, c).corrupt(new Corruption(3, 70, ctp - 1)).run(), 0, 4);
        // A corruption in the second group is reported there, the first group still matches.
        LoadVerdict v = new Run().sides(p, c).corrupt(new Corruption(5, 149, 0)).run();
        assertMismatch(v, 1, 9);
        assertEquals(Status.MATCH, v.group(0).status());
    }

    /**
     * The mode is the engine's configuration: both sides mixed verify and catch a corrupted byte; sides in different
     * modes are UNVERIFIED with MODE_DIFFERS, never a mismatch, even over a corrupted byte; the mixed payload travels
     * as version 3, the standard one as version 2.
     */
    @Test
    void checksumModesMatchMixedAndDifferingModesAreUnverified() {
        Config p = Config.of(2, 1, 16).layout(Layout.FLASH);
        Config c = Config.of(1, 2, 16).layout(Layout.HND).pageSize(8);
        Run mixed = new Run().sides(p, c);
        mixed.producerMode = ChecksumMode.MIXED;
        mixed.consumerMode = ChecksumMode.MIXED;
        mixed.backend = mixedBackend();
        assertMatch(mixed.run());
        assertEquals(3, mixed.producerPayload.version());
        assertEquals("mixed", mixed.producerPayload.mode());
        assertEquals("mixed", PayloadCodec.decodeBase64(mixed.wire).mode());
        // Another mode's values really differ: the mixer is applied, not ignored.
        Run standard = new Run().sides(p, c);
        assertMatch(standard.run());
        assertEquals(2, standard.producerPayload.version());
        assertFalse(Arrays.equals(standard.producerPayload.groups().get(0).values(),
                mixed.producerPayload.groups().get(0).values()));

        Run corrupted = new Run().sides(p, c).corrupt(new Corruption(5, 77, 0));
        corrupted.producerMode = ChecksumMode.MIXED;
        corrupted.consumerMode = ChecksumMode.MIXED;
        corrupted.backend = mixedBackend();
        assertMismatch(corrupted.run(), 1, 4);

        for (ChecksumMode[] pair : new ChecksumMode[][] {{ChecksumMode.MIXED, ChecksumMode.STANDARD},
                {ChecksumMode.STANDARD, ChecksumMode.MIXED}}) {
            for (Corruption bad : Arrays.asList(null, new Corruption(5, 77, 0))) {
                Run r = new Run().sides(p, c);
                r.corruption = bad;
                r.producerMode = pair[0];
                r.consumerMode = pair[1];
                r.backend = mixedBackend();
                LoadVerdict v = r.run();
                assertEquals(Status.UNVERIFIED, v.status(), v.toString());
                assertEquals(UnverifiedReason.MODE_DIFFERS, v.reason(), v.toString());
                assertTrue(v.detail().contains(pair[0].wireName()) && v.detail().contains(pair[1].wireName()), v.detail());
            }
        }
    }

    /** A backend implementing the mixed mode. */
    private static KvChecksum mixedBackend() {
        return cpu;
    }

    @Test
    void everyLayoutGivesTheSameProducerPayload() {
        ChecksumPayload first = null;
        for (Layout l : Layout.values()) {
            Run r = new Run().sides(Config.of(2, 1, 16).layout(l), Config.of(1, 1, 16).layout(Layout.SGLANG));
            assertMatch(r.run());
            if (first == null) {
                first = r.producerPayload;
            }
            assertEquals(first, r.producerPayload, "layout " + l);
        }
    }

    @ParameterizedTest(name = "{0} producer TP{1} -> consumer TP{2}")
    @CsvSource({"mla,1,4", "mla,4,1", "gqa,1,4", "gqa,4,1"})
    void replicasVerifyAndEveryCopyIsChecked(String kind, int ptp, int ctp) {
        Model m = kind.equals("mla") ? Model.mla(SEED) : Model.gqa(2, SEED);
        Config p = Config.of(ptp, 1, 16);
        Config c = Config.of(ctp, 1, 16).pageSize(4);
        Run clean = new Run().model(m).sides(p, c);
        assertMatch(clean.run());
        int checks = ctp == 1 ? 1 : kind.equals("mla") ? 4 : 2;
        assertEquals(checks, clean.consumerPayload.groups().stream().filter(g -> g.groupId() == 0).count(),
                "one consumer check per replica");
        // Corrupt a copy other than 0 where there is one: another intact copy must not hide it.
        int rank = ctp == 1 ? 0 : 1;
        assertMismatch(new Run().model(m).sides(p, c).corrupt(new Corruption(2, 33, rank)).run(), 0, 2);
        if (ctp == 4) {
            // The last copy, too.
            assertMismatch(new Run().model(m).sides(p, c).corrupt(new Corruption(0, 0, 3)).run(), 0, 0);
        }
    }

    @ParameterizedTest(name = "producer blocks {0}, consumer blocks {1}")
    @CsvSource({"16,32", "32,16"})
    void differentBlockSizesVerifyByChunks(int pb, int cb) {
        Config p = Config.of(1, 1, pb);
        Config c = Config.of(2, 1, cb);
        assertMatch(new Run().sides(p, c).run());
        // Token 70 is in 32-token chunk 2: consumer block 2 (32) or consumer blocks 4 and 5 (16).
        long[] expected = cb == 32 ? new long[] {2} : new long[] {4, 5};
        assertMismatch(new Run().sides(p, c).corrupt(new Corruption(1, 70, 0)).run(), 0, expected);
    }

    @Test
    void unalignedPrefixHitIsUnverifiedAlignedOneVerifies() {
        Run unaligned = new Run().sides(Config.of(1, 1, 32), Config.of(1, 1, 16));
        unaligned.localPrefix = 16;
        LoadVerdict v = unaligned.run();
        assertEquals(Status.UNVERIFIED, v.status(), v.toString());
        assertEquals(UnverifiedReason.UNALIGNED_CHUNK, v.group(0).reason());

        // A prefix hit on a producer block boundary compares only the loaded blocks; the local prefix holds other
        // bytes than the producer's and must not be compared.
        Run aligned = new Run().sides(Config.of(1, 1, 32), Config.of(1, 1, 16));
        aligned.localPrefix = 32;
        assertMatch(aligned.run());
        assertEquals(2, aligned.consumerPayload.groups().get(0).start());
        Run alignedBad = new Run().sides(Config.of(1, 1, 32), Config.of(1, 1, 16)).corrupt(new Corruption(0, 40, 0));
        alignedBad.localPrefix = 32;
        assertMismatch(alignedBad.run(), 0, 2, 3);

        // Same block sizes: a prefix hit of one block compares the rest.
        Run same = new Run();
        same.localPrefix = 16;
        assertMatch(same.run());
    }

    @Test
    void consumerWithOneTokenLessLeavesOnlyItsLastBlockOut() {
        Run r = new Run();
        r.numTokens = 160;
        r.consumerTokens = 159L;
        LoadVerdict v = r.run();
        assertMatch(v);
        assertArrayEquals(new long[] {9}, v.group(0).notComparedBlocks(), v.group(0).toString());
        assertTrue(v.group(0).detail().contains("not compared"), v.group(0).detail());
        Run bad = new Run().corrupt(new Corruption(0, 100, 0));
        bad.numTokens = 160;
        bad.consumerTokens = 159L;
        assertMismatch(bad.run(), 0, 6);
    }

    /**
     * Seed 003: only positions both sides checksummed are compared. A sliding window of 32 tokens, block size 16,
     * producer at 161 tokens (blocks 8..10) and consumer at 160 (its last token recomputed: blocks 7..9): blocks 8
     * and 9 are compared and match; block 7 is reported as not compared, not UNVERIFIED (which fail-closed would
     * turn into a failed request whenever N-1 is a multiple of the block size).
     */
    @Test
    void slidingWindowAtAnotherTokenCountComparesTheCommonBlocks() {
        Run r = new Run();
        r.numTokens = 161;
        r.consumerTokens = 160L;
        r.window = 32;
        LoadVerdict v = r.run();
        assertMatch(v);
        assertEquals(8, r.producerPayload.groups().get(0).start());
        assertEquals(7, r.consumerPayload.groups().get(0).start());
        assertArrayEquals(new long[] {7}, v.group(0).notComparedBlocks(), v.group(0).toString());
        assertTrue(v.group(0).detail().startsWith("2 positions compared"), v.group(0).detail());
        assertEquals(Action.USE_LOAD, FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST).decide("r", v).action());

        // The common blocks are really compared: a flipped bit in block 9 (token 150) or block 8 (token 128).
        Run bad = new Run().corrupt(new Corruption(2, 150, 0));
        bad.numTokens = 161;
        bad.consumerTokens = 160L;
        bad.window = 32;
        assertMismatch(bad.run(), 0, 9);
        Run bad8 = new Run().corrupt(new Corruption(5, 128, 0));
        bad8.numTokens = 161;
        bad8.consumerTokens = 160L;
        bad8.window = 32;
        assertMismatch(bad8.run(), 1, 8);
    }

    /** A consumer holding more tokens than the producer checksummed: the producer's blocks are compared. */
    @Test
    void consumerHoldingMoreTokensComparesWhatTheProducerCovered() {
        Run r = new Run();
        r.numTokens = 150;
        r.consumerTokens = 170L;
        LoadVerdict v = r.run();
        assertMatch(v);
        assertArrayEquals(new long[] {9, 10}, v.group(0).notComparedBlocks(), v.group(0).toString());
        Run bad = new Run().corrupt(new Corruption(0, 20, 0));
        bad.numTokens = 150;
        bad.consumerTokens = 170L;
        assertMismatch(bad.run(), 0, 1);
    }

    /**
     * Leading null blocks (freed out of the window) are left out on both sides; the window's blocks are compared,
     * with both sides holding junk in the null block's page.
     */
    @Test
    void nullBlocksOutsideTheWindowAreLeftOut() {
        Run r = new Run().sides(Config.of(2, 1, 16), Config.of(1, 1, 16).layout(Layout.NHD));
        r.window = 40;
        r.nullOutsideWindow = true;
        LoadVerdict v = r.run();
        assertMatch(v);
        assertEquals(6, r.consumerPayload.groups().get(0).start());
        assertEquals(0, v.group(0).notComparedBlocks().length);
        Run bad = new Run().sides(Config.of(2, 1, 16), Config.of(1, 1, 16).layout(Layout.NHD)).corrupt(new Corruption(3, 149, 0));
        bad.window = 40;
        bad.nullOutsideWindow = true;
        assertMismatch(bad.run(), 0, 9);
    }

    @Test
    void groupSkippedOnOneSideIsUnverifiedOnBothSidesIgnored() {
        Map<Integer, String> skip = Map.of(1, "no per-token KV (Mamba state)");
        Run consumerOnly = new Run();
        consumerOnly.consumerSkips = skip;
        LoadVerdict v = consumerOnly.run();
        assertEquals(Status.UNVERIFIED, v.status(), v.toString());
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, v.group(1).reason());
        assertEquals(Status.MATCH, v.group(0).status());

        Run producerOnly = new Run();
        producerOnly.producerSkips = skip;
        v = producerOnly.run();
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, v.group(1).reason(), v.toString());
        assertEquals(1, producerOnly.producerPayload.groups().size());

        Run both = new Run();
        both.producerSkips = skip;
        both.consumerSkips = skip;
        v = both.run();
        assertMatch(v);
        assertEquals(1, v.groups().size());
        assertNull(v.group(1));

        Run bothBad = new Run().corrupt(new Corruption(2, 5, 0));
        bothBad.producerSkips = skip;
        bothBad.consumerSkips = skip;
        assertMismatch(bothBad.run(), 0, 0);
    }

    @Test
    void aWorkerMissingOrReportingOtherBlocksIsNeverAMatch() {
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined()) {
            Model m = Model.gqa(4, SEED);
            Prompt prompt = new Prompt(m, 150, SEED + 1);
            Engine p = new Engine(m, Config.of(2, 2, 16), 150, rnd, arena);
            p.fill(prompt, 0, 150);
            List<BlockSelection> sel = p.select(Side.PRODUCER, 0, 150);
            List<WorkerRecord> records = p.records(cpu, Side.PRODUCER, 150, sel, Map.of());
            Aggregator.Result missing = Aggregator.producer(2, 2, 150, sel, records.subList(0, 3));
            assertEquals(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, assertInstanceOf(Aggregator.Incomplete.class, missing).reason());

            // A stale record for fewer tokens (a preempted and re-prefilled request) from one worker.
            List<BlockSelection> stale = p.select(Side.PRODUCER, 0, 140);
            WorkerRecord old = p.records(cpu, Side.PRODUCER, 140, stale, Map.of()).get(3);
            List<WorkerRecord> mixed = new java.util.ArrayList<>(records.subList(0, 3));
            mixed.add(old);
            Aggregator.Result r = Aggregator.producer(2, 2, 150, sel, mixed);
            assertEquals(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, assertInstanceOf(Aggregator.Incomplete.class, r).reason());
        }
    }

    /**
     * Consumer records that cannot be trusted end the load unverified, never matched: a worker that checksummed other
     * blocks, TP ranks whose fingerprints disagree, and a duplicate report. The clean records of the same load match,
     * so a disabled comparison fails here.
     */
    @Test
    void consumerRecordsThatCannotBeTrustedAreNeverAMatch() {
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined()) {
            Model m = Model.gqa(4, SEED);
            Prompt prompt = new Prompt(m, 150, SEED + 1);
            Engine p = new Engine(m, Config.of(1, 1, 16), 150, rnd, arena);
            p.fill(prompt, 0, 150);
            List<BlockSelection> ps = p.select(Side.PRODUCER, 0, 150);
            String wire = PayloadCodec.encodeBase64(assertInstanceOf(Aggregator.Complete.class,
                    Aggregator.producer(1, 1, 150, ps, p.records(cpu, Side.PRODUCER, 150, ps, Map.of()))).payload());
            Engine c = new Engine(m, Config.of(2, 1, 16), 150, rnd, arena);
            c.loadFrom(p, 0, 150);
            List<BlockSelection> cs = c.select(Side.CONSUMER, 0, 150);
            List<WorkerRecord> good = c.records(cpu, Side.CONSUMER, 150, cs, Map.of());

            FailurePolicy policy = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE);
            java.util.function.Function<List<WorkerRecord>, LoadVerdict> verdict = records -> {
                PendingLoads pending = new PendingLoads();
                pending.expect("r", wire);
                return pending.verify("r", Aggregator.consumer(2, 1, 150, cs, records)).orElseThrow();
            };
            assertMatch(verdict.apply(good));

            // Rank 1 checksummed the load from block 1 (another selection than the scheduler's).
            WorkerRecord other = c.records(cpu, Side.CONSUMER, 150, c.select(Side.CONSUMER, 16, 150), Map.of()).get(1);
            LoadVerdict v = verdict.apply(List.of(good.get(0), other));
            assertEquals(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, v.reason(), v.toString());
            assertEquals(Action.RECOMPUTE, policy.decide("r", v).action());

            // Rank 1 holds other layers (its fingerprint differs from rank 0's).
            WorkerRecord g1 = good.get(1);
            List<PartialGroup> groups = new java.util.ArrayList<>();
            for (PartialGroup pg : g1.groups()) {
                groups.add(new PartialGroup(pg.groupId(), pg.fingerprint() + (pg.groupId() == 0 ? 1 : 0), pg.range(), pg.columns()));
            }
            v = verdict.apply(List.of(good.get(0), new WorkerRecord(1, 0, 150, groups, Map.of())));
            assertEquals(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, v.reason(), v.toString());
            assertTrue(v.detail().contains("fingerprints differ"), v.detail());

            // A duplicate report: rank 0 twice.
            v = verdict.apply(List.of(good.get(0), good.get(0), good.get(1)));
            assertEquals(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, v.reason(), v.toString());
            assertTrue(v.detail().contains("reported twice"), v.detail());
            v = verdict.apply(List.of(good.get(0), good.get(0)));
            assertEquals(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, v.reason(), v.toString());
        }
    }

    enum Failure { NONE, CORRUPTED, MISSING, MALFORMED }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"NONE", "CORRUPTED", "MISSING", "MALFORMED"})
    void eachFailureUnderEachPolicy(String kind) {
        Failure f = Failure.valueOf(kind);
        Run r = new Run().sides(Config.of(2, 1, 16), Config.of(1, 2, 16));
        if (f == Failure.CORRUPTED) {
            r.corrupt(new Corruption(1, 17, 0));
        }
        r.run();
        String carried = switch (f) {
            case NONE, CORRUPTED -> r.wire;
            case MISSING -> null;
            case MALFORMED -> {
                byte[] b = Base64.getDecoder().decode(r.wire);
                yield Base64.getEncoder().encodeToString(Arrays.copyOf(b, b.length - 5));
            }
        };
        Status status = f == Failure.NONE ? Status.MATCH : f == Failure.CORRUPTED ? Status.MISMATCH : Status.UNVERIFIED;
        FailurePolicy[] policies = {FailurePolicy.failOpen(), FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST),
                FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE)};
        Action[] bad = {Action.USE_LOAD, Action.FAIL_REQUEST, Action.RECOMPUTE};
        for (int i = 0; i < policies.length; i++) {
            PendingLoads pending = new PendingLoads();
            pending.expect("req-1", carried);
            LoadVerdict v = pending.verify("req-1", r.consumerPayload).orElseThrow();
            assertEquals(status, v.status(), v.toString());
            if (f == Failure.MISSING) {
                assertEquals(UnverifiedReason.MISSING_PAYLOAD, v.reason());
            }
            if (f == Failure.MALFORMED) {
                assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, v.reason());
            }
            if (f == Failure.CORRUPTED) {
                assertArrayEquals(new long[] {1}, v.group(0).mismatchedBlocks());
            }
            Decision d = policies[i].decide("req-1", v);
            assertEquals(f == Failure.NONE ? Action.USE_LOAD : bad[i], d.action(), "policy " + i + ": " + v);
            // Verify once: a resumed request is not compared again.
            assertTrue(pending.verify("req-1", r.consumerPayload).isEmpty());
        }
    }
}
