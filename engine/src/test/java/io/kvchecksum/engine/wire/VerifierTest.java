package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.Rechunked;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * The comparison rules on synthetic checksums. Multiples of block sizes are built with the reference backend's
 * {@link KvChecksum#rechunk}, independent of the verifier's own chunk sums.
 */
class VerifierTest {
    private static final long SEED = 4242L;

    static ChecksumPayload payload(long n, GroupChecksums... g) {
        return ChecksumPayload.of(1, n, List.of(g));
    }

    static GroupChecksums slice(long[] all, int bs, long start) {
        return new GroupChecksums(0, 9, bs, start, Arrays.copyOfRange(all, (int) start, all.length));
    }

    static long[] random(int n, Random rnd) {
        long[] v = new long[n];
        for (int i = 0; i < n; i++) {
            v[i] = rnd.nextLong();
        }
        return v;
    }

    @Test
    void multiplesCompareChunkSumsAndEveryRemainderIsHandled() {
        Random rnd = new Random(SEED);
        try (KvChecksum ref = KvChecksums.reference()) {
            for (int trial = 0; trial < 300; trial++) {
                int small = 1 << rnd.nextInt(5);
                int factor = 1 << rnd.nextInt(4);
                int large = small * factor;
                long n = 1 + rnd.nextInt(400);
                long[] fine = random((int) Math.ceilDiv(n, small), rnd);
                Rechunked coarse = Rechunked.of(fine, 0, factor);
                long consumerStartChunk = rnd.nextLong(Math.ceilDiv(n, large));
                boolean producerSmall = rnd.nextBoolean();
                GroupChecksums producer = producerSmall ? slice(fine, small, 0) : slice(coarse.values(), large, 0);
                GroupChecksums consumer = producerSmall ? slice(coarse.values(), large, consumerStartChunk)
                        : slice(fine, small, consumerStartChunk * factor);
                String at = "seed " + SEED + " trial " + trial;
                LoadVerdict v = Verifier.compare(payload(n, producer), payload(n, consumer));
                assertEquals(Status.MATCH, v.status(), at + ": " + v);

                // One consumer block changed: exactly its chunk's consumer blocks are reported.
                long[] cv = consumer.values();
                int hit = rnd.nextInt(cv.length);
                cv[hit] += 1L << rnd.nextInt(64);
                GroupChecksums bad = new GroupChecksums(0, 9, consumer.blockSize(), consumer.start(), cv);
                v = Verifier.compare(payload(n, producer), payload(n, bad));
                assertEquals(Status.MISMATCH, v.status(), at + ": " + v);
                long b = consumer.start() + hit;
                long[] expected;
                if (producerSmall) {
                    expected = new long[] {b};
                } else {
                    long chunk = b / factor;
                    long hi = Math.min(chunk * factor + factor, Math.ceilDiv(n, small));
                    expected = java.util.stream.LongStream.range(chunk * factor, hi).toArray();
                }
                assertArrayEquals(expected, v.group(0).mismatchedBlocks(), at);
            }
        }
    }

    @Test
    void unverifiedReasons() {
        Random rnd = new Random(SEED);
        long[] v16 = random(10, rnd); // 150 tokens of 16
        GroupChecksums p = slice(v16, 16, 0);
        ChecksumPayload prod = payload(150, p);

        assertEquals(UnverifiedReason.FINGERPRINT_DIFFERS, Verifier.compare(prod,
                payload(150, new GroupChecksums(0, 8, 16, 0, v16))).group(0).reason());
        assertEquals(UnverifiedReason.BLOCK_SIZES_NOT_MULTIPLES, Verifier.compare(prod,
                payload(150, new GroupChecksums(0, 9, 24, 0, new long[7]))).group(0).reason());
        assertEquals(UnverifiedReason.UNALIGNED_CHUNK, Verifier.compare(payload(150, new GroupChecksums(0, 9, 32, 0, new long[5])),
                payload(150, slice(v16, 16, 3))).group(0).reason());
        // A consumer that wrote no block of the group (a full prefix hit): nothing loaded, not "no position in common".
        assertEquals(UnverifiedReason.NOTHING_LOADED, Verifier.compare(prod,
                payload(150, new GroupChecksums(0, 9, 16, 10, new long[0]))).group(0).reason());
        assertEquals(UnverifiedReason.NO_COMMON_POSITION, Verifier.compare(payload(150, slice(v16, 16, 8)),
                payload(120, new GroupChecksums(0, 9, 16, 0, Arrays.copyOf(v16, 8)))).group(0).reason());
        // The producer dropped leading blocks the consumer loaded: the common positions are compared, the others
        // listed as not compared.
        GroupVerdict window = Verifier.compare(payload(150, slice(v16, 16, 4)), payload(150, slice(v16, 16, 2))).group(0);
        assertEquals(Status.MATCH, window.status(), window.toString());
        assertArrayEquals(new long[] {2, 3}, window.notComparedBlocks());
        // The consumer holds more tokens than the producer computed: its block 9 holds 16 tokens to the producer's 6,
        // block 10 the producer never saw; blocks 0..8 are compared.
        long[] more = Arrays.copyOf(v16, 11);
        GroupVerdict longer = Verifier.compare(prod, payload(170, new GroupChecksums(0, 9, 16, 0, more))).group(0);
        assertEquals(Status.MATCH, longer.status(), longer.toString());
        assertArrayEquals(new long[] {9, 10}, longer.notComparedBlocks());
        // One side only, and a group twice in the producer's payload.
        LoadVerdict v = Verifier.compare(prod, payload(150, p, new GroupChecksums(1, 9, 16, 0, v16)));
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, v.group(1).reason());
        assertEquals(Status.MATCH, v.group(0).status());
        assertEquals(Status.UNVERIFIED, v.status());
        assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, Verifier.compare(payload(150, p, p), payload(150, p)).group(0).reason());
        // Nothing on either side.
        assertEquals(UnverifiedReason.NOTHING_TO_COMPARE, Verifier.compare(payload(150), payload(150)).reason());
        // A mismatch wins over an unverified group.
        long[] bad = v16.clone();
        bad[0]++;
        v = Verifier.compare(prod, payload(150, new GroupChecksums(0, 9, 16, 0, bad), new GroupChecksums(1, 9, 16, 0, v16)));
        assertEquals(Status.MISMATCH, v.status());
    }

    @Test
    void everyReplicaCheckMustMatch() {
        Random rnd = new Random(SEED);
        long[] v = random(10, rnd);
        GroupChecksums p = slice(v, 16, 0);
        List<GroupChecksums> checks = new ArrayList<>(List.of(p, p, p, p));
        assertEquals(Status.MATCH, Verifier.compare(payload(150, p), payload(150, checks.toArray(GroupChecksums[]::new))).status());
        long[] bad = v.clone();
        bad[7] ^= 1;
        checks.set(2, new GroupChecksums(0, 9, 16, 0, bad));
        LoadVerdict verdict = Verifier.compare(payload(150, p), payload(150, checks.toArray(GroupChecksums[]::new)));
        assertEquals(Status.MISMATCH, verdict.status());
        assertArrayEquals(new long[] {7}, verdict.group(0).mismatchedBlocks());
    }
}
