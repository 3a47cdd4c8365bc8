package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.worker.PayloadSender;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 29 on Jlama: the transport writes into a staging buffer ({@link StagedLoad}) and the consumer verifies inside
 * the copy that moves the pages into its session. Tokens decoded after a verified copy equal one instance's; every
 * fault the transport injects (bit flip, stale page, swapped pages, a page never written, a late tail write) is a
 * MISMATCH at exactly the faulted blocks, the same verdict the after-copy path gives for the same transfer; payload
 * faults stay UNVERIFIED. Sessions span many Jlama pages ({@link TinyLlama.Shape#POSITION_PAGES}, and one test
 * {@link TinyLlama.Shape#LAYER_PAGES}), so the copy goes segment by segment.
 */
class VerifyInCopyTest {
    static final long SEED = 7_2026_12_07L;
    static final int B = 16;
    static JlamaInstance producer;
    static JlamaInstance consumer;
    static KvChecksum backend;

    @TempDir
    static Path models;

    @BeforeAll
    static void start() {
        System.out.println("VerifyInCopyTest seed " + SEED);
        Path dir = TinyLlama.write(models.resolve("tiny"), SEED, TinyLlama.Shape.POSITION_PAGES);
        producer = JlamaInstance.load("prefill", dir);
        consumer = JlamaInstance.load("decode", dir);
        backend = KvChecksums.fastest();
    }

    @AfterAll
    static void stop() {
        backend.close();
        producer.close();
        consumer.close();
    }

    static Disaggregated pair(JlamaInstance p, JlamaInstance d, FailurePolicy policy, boolean verifyInCopy) {
        return new Disaggregated(p, d, backend, B, policy, new PayloadSender(ChecksumMetrics.NONE),
                JlamaKvTest.prompt(SEED - 1, 300), verifyInCopy);
    }

    @ParameterizedTest(name = "{0} tokens, {1} local blocks")
    @CsvSource({"1,0", "16,0", "17,0", "100,0", "250,0", "17,1", "100,3", "250,15"})
    void aVerifiedCopyDecodesTheSingleInstanceTokens(int n, int prefixBlocks) {
        try (Disaggregated pd = pair(producer, consumer, FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST), true)) {
            var o = pd.serve("r" + n, JlamaKvTest.prompt(SEED + n, n), prefixBlocks, 12, KvTransfer.Fault.NONE,
                    new SplittableRandom(SEED));
            assertEquals(Status.MATCH, o.verdict().status(), o.verdict().toString());
            assertEquals(Action.USE_LOAD, o.action());
            assertArrayEquals(o.singleInstance(), o.tokens(), "consumer after the verifying copy vs one instance");
            assertEquals(0, pd.pendingExpectations());
        }
    }

    @ParameterizedTest
    @EnumSource(value = KvTransfer.Fault.class, names = {"BIT_FLIP", "STALE_PAGE", "SWAPPED_PAGES", "PAGE_NEVER_WRITTEN",
            "LATE_TAIL_WRITE"})
    void everyTransportFaultIsDetectedInTheCopyAsAfterIt(KvTransfer.Fault fault) {
        FailurePolicy policy = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE);
        try (Disaggregated copying = pair(producer, consumer, policy, true);
                Disaggregated after = pair(producer, consumer, policy, false)) {
            for (int[] shape : new int[][] {{37, 0}, {100, 2}, {128, 1}}) {
                int n = shape[0];
                int[] prompt = JlamaKvTest.prompt(SEED + 31 * n, n);
                long draw = SEED + 1000L * fault.ordinal() + n;
                var o = copying.serve("f" + n, prompt, shape[1], 10, fault, new SplittableRandom(draw));
                assertEquals(fault, o.fault());
                assertEquals(Status.MISMATCH, o.verdict().status(), o.verdict().toString());
                assertArrayEquals(o.faultedBlocks(), o.verdict().group(PdChecks.GROUP).mismatchedBlocks(),
                        fault + ": mismatched blocks");
                assertEquals(Action.RECOMPUTE, o.action());
                assertArrayEquals(o.singleInstance(), o.tokens(), "recomputed tokens vs one instance");
                // The same transfer (same draw) verified after the copy: the same verdict, at the same blocks.
                var a = after.serve("a" + n, prompt, shape[1], 10, fault, new SplittableRandom(draw));
                assertArrayEquals(a.faultedBlocks(), o.faultedBlocks(), fault + ": the same fault was drawn");
                assertEquals(a.verdict().status(), o.verdict().status());
                assertArrayEquals(a.verdict().group(PdChecks.GROUP).mismatchedBlocks(),
                        o.verdict().group(PdChecks.GROUP).mismatchedBlocks(), fault + ": after-copy verdict's blocks");
            }
            assertEquals(0, copying.pendingExpectations());
        }
    }

    @ParameterizedTest
    @CsvSource({"DROPPED_PAYLOAD,MISSING_PAYLOAD", "MALFORMED_PAYLOAD,MALFORMED_PAYLOAD"})
    void aPayloadFaultIsUnverifiedAndRecomputed(KvTransfer.Fault fault, UnverifiedReason reason) {
        try (Disaggregated pd = pair(producer, consumer, FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE), true)) {
            var o = pd.serve("p", JlamaKvTest.prompt(SEED + 5, 70), 1, 10, fault, new SplittableRandom(SEED));
            assertEquals(Status.UNVERIFIED, o.verdict().status());
            assertEquals(reason, o.verdict().reason(), o.verdict().toString());
            assertEquals(Action.RECOMPUTE, o.action());
            assertArrayEquals(o.singleInstance(), o.tokens());
        }
    }

    @Test
    void failOpenUsesTheCorruptedCopyAndItsTokensDiffer() {
        // The copy carries the transport's fault into the session: used anyway, the decode goes wrong.
        try (Disaggregated pd = pair(producer, consumer, FailurePolicy.failOpen(), true)) {
            var o = pd.serve("open", JlamaKvTest.prompt(SEED + 9, 96), 0, 16, KvTransfer.Fault.STALE_PAGE,
                    new SplittableRandom(SEED));
            assertEquals(Status.MISMATCH, o.verdict().status());
            assertEquals(Action.USE_LOAD, o.action());
            assertFalse(o.identicalTokens(), "tokens from a stale page: " + Arrays.toString(o.tokens()));
        }
    }

    @Test
    void pagesThatSplitLayersAndEndInsideBlocksAreCopiedAndVerified() {
        Path dir = TinyLlama.write(models.resolve("layer-pages"), SEED, TinyLlama.Shape.LAYER_PAGES);
        try (JlamaInstance p = JlamaInstance.load("prefill-lp", dir); JlamaInstance d = JlamaInstance.load("decode-lp", dir);
                Disaggregated pd = new Disaggregated(p, d, backend, B, FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE),
                        new PayloadSender(ChecksumMetrics.NONE), JlamaKvTest.prompt(SEED - 1, 500), true)) {
            // Jlama pages of 186 positions: blocks 11 and 23 straddle two pages; 13 local blocks start the load at 208.
            for (int[] shape : new int[][] {{400, 0}, {400, 13}, {190, 11}}) {
                int n = shape[0];
                var o = pd.serve("lp" + n, JlamaKvTest.prompt(SEED + 7 * n, n), shape[1], 10, KvTransfer.Fault.NONE,
                        new SplittableRandom(SEED));
                assertEquals(Status.MATCH, o.verdict().status(), o.verdict().toString());
                assertArrayEquals(o.singleInstance(), o.tokens(), n + " tokens, " + shape[1] + " local blocks");
            }
            SplittableRandom rnd = new SplittableRandom(SEED + 99);
            for (KvTransfer.Fault fault : new KvTransfer.Fault[] {KvTransfer.Fault.BIT_FLIP, KvTransfer.Fault.SWAPPED_PAGES,
                    KvTransfer.Fault.STALE_PAGE}) {
                var o = pd.serve("lpf", JlamaKvTest.prompt(SEED + 3, 400), 2, 8, fault, rnd);
                assertEquals(Status.MISMATCH, o.verdict().status(), fault + ": " + o.verdict());
                assertArrayEquals(o.faultedBlocks(), o.verdict().group(0).mismatchedBlocks(), fault + ": mismatched blocks");
                assertArrayEquals(o.singleInstance(), o.tokens(), fault + ": recomputed tokens");
            }
            assertEquals(0, pd.pendingExpectations());
        }
    }
}
