package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** {@link Verifier} rule by rule on small synthetic payloads, with the exact details an operator reads. */
class VerifierRulesTest {

    static ChecksumPayload p(long n, GroupChecksums... g) {
        return ChecksumPayload.of(1, n, List.of(g));
    }

    static GroupChecksums g(int bs, long start, long... v) {
        return new GroupChecksums(0, 9, bs, start, v);
    }

    @Test
    void theTextEntryPointsNeverThrowForWhatTheProducerSent() {
        ChecksumPayload c = p(32, g(16, 0, 1, 2));
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, Verifier.verify((String) null, c).reason());
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, Verifier.verify("  ", c).reason());
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, Verifier.verify((byte[]) null, c).reason());
        assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, Verifier.verify("@@", c).reason());
        assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, Verifier.verify(new byte[] {(byte) 0xc0}, c).reason());
        assertEquals(Status.MATCH, Verifier.verify(PayloadCodec.encodeBase64(c), c).status());
        assertEquals(Status.MATCH, Verifier.verify(PayloadCodec.encode(c), c).status());
        assertEquals("the producer sent no checksums", Verifier.verify((byte[]) null, c).detail());
    }

    @Test
    void detailsNameWhatWasComparedAndWhatWasNot() {
        // Same block size, every block compared.
        GroupVerdict v = Verifier.compare(p(40, g(16, 0, 1, 2, 3)), p(40, g(16, 0, 1, 2, 3))).group(0);
        assertEquals("3 positions compared, block size 16", v.detail());
        assertEquals(0, v.notComparedBlocks().length);
        // Producer blocks 16, consumer 32: chunks of 32; consumer block 1 holds tokens 32..39.
        v = Verifier.compare(p(40, g(16, 0, 1, 2, 3)), p(40, g(32, 0, 3, 3))).group(0);
        assertEquals("2 positions compared, chunks of 32 tokens (producer blocks 16, consumer blocks 32)", v.detail());
        // A window the producer clipped further: consumer blocks 1 and 2 (tokens 16..47) vs producer block 2 only.
        v = Verifier.compare(p(40, g(16, 2, 3)), p(40, g(16, 1, 2, 3))).group(0);
        assertEquals(Status.MATCH, v.status());
        assertEquals("1 positions compared, block size 16; not compared: consumer blocks [1] (the producer sent no checksum for them)",
                v.detail());
        // The consumer holds one token less: its last block is not compared.
        v = Verifier.compare(p(40, g(16, 0, 1, 2, 3)), p(39, g(16, 0, 1, 2, 4))).group(0);
        assertEquals(Status.MATCH, v.status());
        assertEquals("2 positions compared, block size 16; not compared: consumer blocks [2] (39 tokens on the consumer, 40 on the producer)",
                v.detail());
        assertArrayEquals(new long[] {2}, v.notComparedBlocks());
        // Nothing in common.
        v = Verifier.compare(p(40, g(16, 2, 3)), p(40, g(16, 0, 1, 2, 4))).group(0);
        assertEquals(Status.MISMATCH, v.status(), "block 2 is common and differs");
        v = Verifier.compare(p(64, g(16, 2, 3, 3)), p(40, g(16, 0, 1, 2, 3))).group(0);
        assertEquals(UnverifiedReason.NO_COMMON_POSITION, v.reason());
        assertEquals("no position checksummed whole by both sides; not compared: consumer blocks [0, 1] (the producer sent no "
                + "checksum for them); not compared: consumer blocks [2] (40 tokens on the consumer, 64 on the producer)", v.detail());
        assertArrayEquals(new long[] {0, 1, 2}, v.notComparedBlocks());
        // A consumer past the producer's end: block 2 holds 16 tokens to the producer's 8, block 3 the producer never had.
        v = Verifier.compare(p(40, g(16, 0, 1, 2, 3)), p(56, g(16, 0, 1, 2, 3, 4))).group(0);
        assertEquals("2 positions compared, block size 16; not compared: consumer blocks [3] (the producer sent no checksum for "
                + "them); not compared: consumer blocks [2] (56 tokens on the consumer, 40 on the producer)", v.detail());
        v = Verifier.compare(p(40, g(16, 0, 1, 2, 3)), p(40, g(16, 3))).group(0);
        assertEquals("the load wrote no block of this group", v.detail());
        // A mismatch says where, and what was left out.
        v = Verifier.compare(p(40, g(16, 1, 2, 3)), p(40, g(16, 0, 1, 5, 3))).group(0);
        assertEquals("blocks [1] differ (block size 16); not compared: consumer blocks [0] (the producer sent no checksum for them)",
                v.detail());
        assertArrayEquals(new long[] {1}, v.mismatchedBlocks());
        assertArrayEquals(new long[] {0}, v.notComparedBlocks());
        // Unaligned: consumer block 3 (16 tokens) starts inside producer block 1 (32 tokens).
        v = Verifier.compare(p(96, g(32, 0, 1, 2, 3)), p(96, g(16, 3, 1, 1, 1))).group(0);
        assertEquals(UnverifiedReason.UNALIGNED_CHUNK, v.reason());
        assertEquals("the first loaded block 3 (size 16) starts inside producer block 1 (size 32)", v.detail());
        v = Verifier.compare(p(40, g(16, 0, 1, 2, 3)), p(40, g(24, 0, 1, 2))).group(0);
        assertEquals("block sizes 16 (producer) and 24 (consumer) are not multiples of each other", v.detail());
        v = Verifier.compare(p(40, g(16, 0, 1, 2, 3)), p(40, new GroupChecksums(0, -2, 16, 0, new long[] {1, 2, 3}))).group(0);
        assertEquals("fingerprint 9 (producer) vs 18446744073709551614 (consumer): other layers or dtypes", v.detail());
    }

    @Test
    void chunksNeedEveryBlockOnBothSides() {
        // Producer blocks of 8 from block 1: chunk 0 (of 16) lacks block 0, so only chunk 1 is compared.
        GroupVerdict v = Verifier.compare(p(32, g(8, 1, 2, 3, 4)), p(32, g(16, 0, 99, 7))).group(0);
        assertEquals(Status.MATCH, v.status(), v.toString());
        assertArrayEquals(new long[] {0}, v.notComparedBlocks());
        // The same with a wrong sum in chunk 1 is a mismatch at consumer block 1.
        v = Verifier.compare(p(32, g(8, 1, 2, 3, 4)), p(32, g(16, 0, 99, 8))).group(0);
        assertArrayEquals(new long[] {1}, v.mismatchedBlocks());
        // A last chunk holding fewer blocks than the factor (40 tokens: blocks of 8 are 0..4, chunk 2 is block 4).
        v = Verifier.compare(p(40, g(8, 0, 1, 2, 3, 4, 5)), p(40, g(16, 0, 3, 7, 5))).group(0);
        assertEquals(Status.MATCH, v.status(), v.toString());
        assertEquals("3 positions compared, chunks of 16 tokens (producer blocks 8, consumer blocks 16)", v.detail());
        assertEquals(0, Verifier.tokensIn(3, 16, 40));
        assertEquals(8, Verifier.tokensIn(2, 16, 40));
        assertEquals(16, Verifier.tokensIn(1, 16, 40));
        assertEquals(16, Verifier.tokensIn(1, 16, 32));
        assertEquals(0, Verifier.tokensIn(2, 16, 32));
    }

    @Test
    void replicaChecksAreNamedInTheDetail() {
        GroupChecksums prod = g(16, 0, 1, 2);
        GroupVerdict v = Verifier.compare(p(32, prod), p(32, prod, prod)).group(0);
        assertEquals("2 positions compared, block size 16, each of 2 replica checks", v.detail());
        v = Verifier.compare(p(32, prod), p(32, prod, g(16, 0, 1, 3), g(16, 0, 5, 2))).group(0);
        assertEquals("check 1: blocks [1] differ (block size 16); check 2: blocks [0] differ (block size 16)", v.detail());
        assertArrayEquals(new long[] {0, 1}, v.mismatchedBlocks());
        v = Verifier.compare(p(32, prod), p(32, prod, new GroupChecksums(0, 8, 16, 0, new long[] {1, 2}))).group(0);
        assertEquals(UnverifiedReason.FINGERPRINT_DIFFERS, v.reason());
        assertTrue(v.detail().startsWith("check 1 of 2 replica checks: fingerprint 9 (producer) vs 8"), v.detail());
        v = Verifier.compare(p(32, prod), p(32, new GroupChecksums(0, 8, 16, 0, new long[] {1, 2}))).group(0);
        assertTrue(v.detail().startsWith("fingerprint 9"), v.detail());
        // A version-1 payload is never compared.
        LoadVerdict old = Verifier.compare(new ChecksumPayload(1, null, 32, List.of()), p(32, prod));
        assertEquals(UnverifiedReason.UNSUPPORTED_PAYLOAD_VERSION, old.reason());
        assertEquals(UnverifiedReason.UNSUPPORTED_PAYLOAD_VERSION,
                Verifier.compare(p(32, prod), new ChecksumPayload(1, null, 32, List.of())).reason());
        assertEquals("checksummed by the consumer only: the producer skipped or does not have it",
                Verifier.compare(p(32), p(32, prod)).group(0).detail());
        assertEquals("checksummed by the producer only: the consumer skipped it", Verifier.compare(p(32, prod), p(32)).group(0).detail());
        assertEquals("the producer's payload lists the group 2 times", Verifier.compare(p(32, prod, prod), p(32, prod)).group(0).detail());
    }
}
