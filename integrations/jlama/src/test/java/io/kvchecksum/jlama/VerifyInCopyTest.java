package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.worker.PayloadSender;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
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

    @RegisterExtension
    static final JlamaPair PAIR = new JlamaPair("VerifyInCopyTest", SEED);

    static Disaggregated pair(FailurePolicy policy, boolean verifyInCopy) {
        return new Disaggregated(PAIR.producer(), PAIR.consumer(), PAIR.backend(), JlamaPair.B, policy,
                new PayloadSender(ChecksumMetrics.NONE), JlamaKvTest.prompt(SEED - 1, 300), verifyInCopy);
    }

    @ParameterizedTest(name = "{0} tokens, {1} local blocks")
    @CsvSource({"1,0", "16,0", "17,0", "100,0", "250,0", "17,1", "100,3", "250,15"})
    void aVerifiedCopyDecodesTheSingleInstanceTokens(int n, int prefixBlocks) {
        try (Disaggregated pd = pair(FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST), true)) {
            PAIR.decodesTheSingleInstanceTokens(pd, n, prefixBlocks, "the verifying copy");
        }
    }

    @ParameterizedTest
    @EnumSource(value = KvTransfer.Fault.class, names = {"BIT_FLIP", "STALE_PAGE", "SWAPPED_PAGES", "PAGE_NEVER_WRITTEN",
            "LATE_TAIL_WRITE"})
    void everyTransportFaultIsDetectedInTheCopyAsAfterIt(KvTransfer.Fault fault) {
        FailurePolicy policy = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE);
        try (Disaggregated copying = pair(policy, true); Disaggregated after = pair(policy, false)) {
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
        try (Disaggregated pd = pair(FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE), true)) {
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
        try (Disaggregated pd = pair(FailurePolicy.failOpen(), true)) {
            var o = pd.serve("open", JlamaKvTest.prompt(SEED + 9, 96), 0, 16, KvTransfer.Fault.STALE_PAGE,
                    new SplittableRandom(SEED));
            assertEquals(Status.MISMATCH, o.verdict().status());
            assertEquals(Action.USE_LOAD, o.action());
            assertFalse(o.identicalTokens(), "tokens from a stale page: " + Arrays.toString(o.tokens()));
        }
    }

    @Test
    void pagesThatSplitLayersAndEndInsideBlocksAreCopiedAndVerified() {
        PAIR.layerPagesVerifyAndDecodeTheSameTokens(true, KvTransfer.Fault.BIT_FLIP, KvTransfer.Fault.SWAPPED_PAGES,
                KvTransfer.Fault.STALE_PAGE);
    }
}
