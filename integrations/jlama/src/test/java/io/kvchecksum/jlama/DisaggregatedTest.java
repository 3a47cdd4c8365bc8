package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.spi.Backend;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The proof that the integration is real: tokens decoded after a verified transfer equal one instance's; a fault is a
 * MISMATCH at exactly the faulted blocks, and fail-closed recompute still yields the same tokens. Sessions span many
 * Jlama pages: the model is {@link TinyLlama.Shape#POSITION_PAGES} (a page per position and layer), and one test runs
 * {@link TinyLlama.Shape#LAYER_PAGES} (pages of 186 positions that split the layers).
 */
class DisaggregatedTest {
    static final long SEED = 7_2026_11_29L;

    @RegisterExtension
    static final JlamaPair PAIR = new JlamaPair("DisaggregatedTest", SEED);

    static Disaggregated pair(FailurePolicy policy) {
        return new Disaggregated(PAIR.producer(), PAIR.consumer(), PAIR.backend(), JlamaPair.B, policy,
                JlamaKvTest.prompt(SEED - 1, 300));
    }

    @ParameterizedTest(name = "{0} tokens, {1} local blocks")
    @CsvSource({"1,0", "5,0", "16,0", "17,0", "33,0", "64,0", "100,0", "250,0", "17,1", "100,3", "250,15"})
    void verifiedTransferDecodesTheSingleInstanceTokens(int n, int prefixBlocks) {
        try (Disaggregated pd = pair(FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST))) {
            PAIR.decodesTheSingleInstanceTokens(pd, n, prefixBlocks, "transfer");
        }
    }

    @ParameterizedTest
    @EnumSource(value = KvTransfer.Fault.class, names = {"BIT_FLIP", "STALE_PAGE", "SWAPPED_PAGES", "PAGE_NEVER_WRITTEN",
            "LATE_TAIL_WRITE"})
    void kvFaultIsAMismatchAtTheFaultedBlocksAndRecomputeYieldsTheSameTokens(KvTransfer.Fault fault) {
        SplittableRandom rnd = new SplittableRandom(SEED + fault.ordinal());
        try (Disaggregated pd = pair(FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE))) {
            for (int[] shape : new int[][] {{37, 0}, {100, 2}, {128, 1}}) {
                int n = shape[0];
                var o = pd.serve("f" + n, JlamaKvTest.prompt(SEED + 31 * n, n), shape[1], 10, fault, rnd);
                assertEquals(fault, o.fault());
                assertEquals(Status.MISMATCH, o.verdict().status(), o.verdict().toString());
                GroupVerdict g = o.verdict().group(0);
                assertNotNull(g);
                assertArrayEquals(o.faultedBlocks(), g.mismatchedBlocks(), fault + ": mismatched blocks");
                assertEquals(Action.RECOMPUTE, o.action());
                assertArrayEquals(o.singleInstance(), o.tokens(), "recomputed tokens vs one instance");
            }
            assertEquals(0, pd.pendingExpectations());
        }
    }

    @ParameterizedTest
    @CsvSource({"DROPPED_PAYLOAD,MISSING_PAYLOAD", "MALFORMED_PAYLOAD,MALFORMED_PAYLOAD"})
    void payloadFaultIsUnverifiedAndRecomputed(KvTransfer.Fault fault, UnverifiedReason reason) {
        try (Disaggregated pd = pair(FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE))) {
            var o = pd.serve("p", JlamaKvTest.prompt(SEED + 5, 70), 1, 10, fault, new SplittableRandom(SEED));
            assertEquals(Status.UNVERIFIED, o.verdict().status());
            assertEquals(reason, o.verdict().reason(), o.verdict().toString());
            assertEquals(Action.RECOMPUTE, o.action());
            assertArrayEquals(o.singleInstance(), o.tokens());
        }
    }

    @Test
    void aFailingBackendIsAnUnverifiedLoadNotAnExceptionInTheStep() {
        // The front over a proxy backend, so that the test follows the SPI whatever methods it gains or loses.
        KvChecksum broken = KvChecksum.of((Backend) java.lang.reflect.Proxy.newProxyInstance(Backend.class.getClassLoader(),
                new Class<?>[] {Backend.class}, (proxy, m, args) -> switch (m.getName()) {
                    case "name", "description", "toString" -> "broken";
                    case "close" -> null;
                    case "hashCode" -> 0;
                    case "equals" -> proxy == args[0];
                    default -> throw new IllegalStateException("device lost");
                }));
        try (Disaggregated pd = new Disaggregated(PAIR.producer(), PAIR.consumer(), broken, JlamaPair.B,
                FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE), JlamaKvTest.prompt(SEED - 1, 300))) {
            var o = pd.serve("b", JlamaKvTest.prompt(SEED + 3, 50), 0, 8, KvTransfer.Fault.NONE, new SplittableRandom(SEED));
            assertEquals(Status.UNVERIFIED, o.verdict().status());
            assertEquals(UnverifiedReason.BACKEND_FAILED, o.verdict().reason(), o.verdict().toString());
            assertTrue(o.verdict().detail().contains("device lost"), o.verdict().detail());
            assertEquals(Action.RECOMPUTE, o.action());
            assertArrayEquals(o.singleInstance(), o.tokens());
            assertEquals(0, pd.pendingExpectations());
        }
    }

    @Test
    void failOpenUsesACorruptedLoadAndItsTokensDiffer() {
        // Shows the faults matter to the model: without the checksum, the decode would silently go wrong.
        try (Disaggregated pd = pair(FailurePolicy.failOpen())) {
            var o = pd.serve("open", JlamaKvTest.prompt(SEED + 9, 96), 0, 16, KvTransfer.Fault.STALE_PAGE,
                    new SplittableRandom(SEED));
            assertEquals(Status.MISMATCH, o.verdict().status());
            assertEquals(Action.USE_LOAD, o.action());
            assertFalse(o.identicalTokens(), "tokens from a stale page: " + Arrays.toString(o.tokens()));
            assertTrue(o.checksummedBytes() > 0);
        }
    }

    @Test
    void sessionsInPagesThatSplitLayersAndEndInsideBlocksVerifyAndDecodeTheSameTokens() {
        PAIR.layerPagesVerifyAndDecodeTheSameTokens(false, KvTransfer.Fault.BIT_FLIP, KvTransfer.Fault.SWAPPED_PAGES,
                KvTransfer.Fault.LATE_TAIL_WRITE);
    }
}
