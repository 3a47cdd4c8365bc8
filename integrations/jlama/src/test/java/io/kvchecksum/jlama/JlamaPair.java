package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.worker.PayloadSender;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The P/D tests' shared fixture: a tiny Llama written with the test's printed seed ({@link TinyLlama.Shape#POSITION_PAGES},
 * a page per position and layer), loaded as a producer and a consumer instance, and the fastest checksum backend.
 * Registered as a static extension field, it opens them before the class's tests and closes them (and deletes the model
 * files) after.
 */
final class JlamaPair implements BeforeAllCallback, AfterAllCallback {
    /** The block size of every P/D test's checksums. */
    static final int B = 16;

    private final String test;
    private final long seed;
    private Path models;
    private JlamaInstance producer;
    private JlamaInstance consumer;
    private KvChecksum backend;

    /**
     * @param test the test's name, printed with its seed
     * @param seed the model's weights and every prompt derive from it
     */
    JlamaPair(String test, long seed) {
        this.test = test;
        this.seed = seed;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws IOException {
        System.out.println(test + " seed " + seed);
        models = Files.createTempDirectory(test);
        Path dir = TinyLlama.write(models.resolve("tiny"), seed, TinyLlama.Shape.POSITION_PAGES);
        producer = JlamaInstance.load("prefill", dir);
        consumer = JlamaInstance.load("decode", dir);
        backend = KvChecksums.fastest();
    }

    @Override
    public void afterAll(ExtensionContext context) throws IOException {
        if (backend != null) {
            backend.close();
        }
        if (producer != null) {
            producer.close();
        }
        if (consumer != null) {
            consumer.close();
        }
        try (Stream<Path> files = Files.walk(models)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }

    JlamaInstance producer() {
        return producer;
    }

    JlamaInstance consumer() {
        return consumer;
    }

    KvChecksum backend() {
        return backend;
    }

    /**
     * Serves {@code n} tokens with {@code prefixBlocks} blocks already local and no fault: a MATCH, the load used, the
     * single instance's tokens, nothing left pending.
     *
     * @param after what the consumer decoded after, for the message
     */
    void decodesTheSingleInstanceTokens(Disaggregated pd, int n, int prefixBlocks, String after) {
        var o = pd.serve("r" + n, JlamaKvTest.prompt(seed + n, n), prefixBlocks, 12, KvTransfer.Fault.NONE,
                new SplittableRandom(seed));
        assertEquals(Status.MATCH, o.verdict().status(), o.verdict().toString());
        assertEquals(Action.USE_LOAD, o.action());
        assertArrayEquals(o.singleInstance(), o.tokens(), "consumer after " + after + " vs one instance");
        assertEquals(0, pd.pendingExpectations());
    }

    /**
     * Sessions in Jlama pages of 186 positions ({@link TinyLlama.Shape#LAYER_PAGES}, pages that split the layers):
     * 400 tokens fill pages 0..185, 186..371 and 372..; blocks 11 (176..191) and 23 (368..383) straddle two pages, and
     * 13 local blocks start the consumer's load at 208, inside the second page. Each verifies and decodes the single
     * instance's tokens; each fault is a MISMATCH at exactly the faulted blocks and recompute yields the same tokens.
     *
     * @param verifyInCopy where the consumer verifies (see {@link Disaggregated})
     * @param faults the transport faults injected, one request each
     */
    void layerPagesVerifyAndDecodeTheSameTokens(boolean verifyInCopy, KvTransfer.Fault... faults) {
        Path dir = TinyLlama.write(models.resolve("layer-pages"), seed, TinyLlama.Shape.LAYER_PAGES);
        try (JlamaInstance p = JlamaInstance.load("prefill-lp", dir); JlamaInstance d = JlamaInstance.load("decode-lp", dir);
                Disaggregated pd = new Disaggregated(p, d, backend, B, FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE),
                        new PayloadSender(ChecksumMetrics.NONE), JlamaKvTest.prompt(seed - 1, 500), verifyInCopy)) {
            for (int[] shape : new int[][] {{400, 0}, {400, 13}, {190, 11}}) {
                int n = shape[0];
                var o = pd.serve("lp" + n, JlamaKvTest.prompt(seed + 7 * n, n), shape[1], 10, KvTransfer.Fault.NONE,
                        new SplittableRandom(seed));
                assertEquals(Status.MATCH, o.verdict().status(), o.verdict().toString());
                assertArrayEquals(o.singleInstance(), o.tokens(), n + " tokens, " + shape[1] + " local blocks");
            }
            SplittableRandom rnd = new SplittableRandom(seed + 99);
            for (KvTransfer.Fault fault : faults) {
                var o = pd.serve("lpf", JlamaKvTest.prompt(seed + 3, 400), 2, 8, fault, rnd);
                assertEquals(Status.MISMATCH, o.verdict().status(), fault + ": " + o.verdict());
                assertArrayEquals(o.faultedBlocks(), o.verdict().group(PdChecks.GROUP).mismatchedBlocks(),
                        fault + ": mismatched blocks");
                assertArrayEquals(o.singleInstance(), o.tokens(), fault + ": recomputed tokens");
            }
            assertEquals(0, pd.pendingExpectations());
        }
    }
}
