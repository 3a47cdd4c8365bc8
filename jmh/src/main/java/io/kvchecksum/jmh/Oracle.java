package io.kvchecksum.jmh;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;

import java.util.Arrays;

/**
 * The expected results for a fixture, and the checks every benchmark runs before timing: a backend that gives a
 * different answer fails the benchmark instead of producing a number.
 *
 * <p>Up to {@link #REFERENCE_BYTES} the expected values come from the reference backend. Beyond, the reference would
 * take minutes, so they come from the CPU backend on one thread, which is first checked against the reference on the
 * request's first {@link #PREFIX_TOKENS} tokens (same pages, same bytes). The single-threaded CPU backend splits no
 * work, so the multi-threaded split, the part that differs with size, is still checked against an independent path.
 *
 * @param source where the expected values came from, for messages
 * @param blocks expected block checksums of the whole request
 * @param slices expected slice sums of the whole request
 */
public record Oracle(String source, long[] blocks, SliceSums slices) {
    /**
     * The largest request whose expected values the reference backend computes, and the largest it is benchmarked on
     * ({@link ChecksumBench}): it reads one piece at a time, tens of MB/s.
     */
    public static final long REFERENCE_BYTES = 16L << 20;
    /** The prefix on which the one-thread CPU oracle is checked against the reference. */
    public static final long PREFIX_TOKENS = 64;
    /** Consecutive 16-token blocks summed by the rechunk benchmark: a consumer with 64-token blocks. */
    public static final int RECHUNK_FACTOR = 4;

    /** Computes the expected values of the fixture's whole request. */
    public static Oracle of(KvFixture f) {
        KvChecksum reference = KvChecksums.reference();
        RequestBlocks r = f.request();
        if (f.kvBytes() <= REFERENCE_BYTES) {
            SliceSums s = reference.sliceSums(f.group(), r);
            return new Oracle("reference", s.combine(), s);
        }
        KvChecksum one = KvChecksums.cpu(1);
        RequestBlocks p = f.prefix(PREFIX_TOKENS);
        expectEqual("cpu (1 thread) slice sums on the first " + p.numTokens() + " tokens",
                reference.sliceSums(f.group(), p).values(), one.sliceSums(f.group(), p).values());
        expectEqual("cpu (1 thread) block checksums on the first " + p.numTokens() + " tokens",
                reference.blockChecksums(f.group(), p), one.blockChecksums(f.group(), p));
        SliceSums s = one.sliceSums(f.group(), r);
        long[] b = one.blockChecksums(f.group(), r);
        expectEqual("cpu (1 thread): combine(sliceSums) against blockChecksums", b, s.combine());
        return new Oracle("cpu (1 thread), checked against reference on " + p.numTokens() + " tokens", b, s);
    }

    /** Checks the backend's operations on a prepared plan (what the benchmarks time) against the expected values. */
    public void verifyPlan(KvChecksum backend, SlicePlan plan) {
        expectEqual(backend.description() + ": blockChecksums(plan)", blocks, backend.blockChecksums(plan));
        expectEqual(backend.description() + ": sliceSums(plan)", slices.values(), backend.sliceSums(plan).values());
    }

    /**
     * Runs every operation of {@code backend} once on the fixture and throws if any result differs from the
     * expected one; for an asynchronous backend, {@code submit} too.
     */
    public void verify(KvChecksum backend, KvFixture f) {
        String who = backend.description() + " on " + f.shape().id() + ", " + f.tokens() + " tokens (expected values from "
                + source + ")";
        RequestBlocks r = f.request();
        expectEqual(who + ": blockChecksums", blocks, backend.blockChecksums(f.group(), r));
        SliceSums s = backend.sliceSums(f.group(), r);
        if (!Arrays.equals(s.layers(), slices.layers()) || !Arrays.equals(s.heads(), slices.heads())
                || s.firstBlock() != slices.firstBlock() || s.numBlocks() != slices.numBlocks()) {
            throw new IllegalStateException(who + ": sliceSums has another shape: " + s + " expected " + slices);
        }
        expectEqual(who + ": sliceSums", slices.values(), s.values());
        expectEqual(who + ": combine of its slice sums", blocks, s.combine());
        try (PendingChecksums p = backend.submit(f.group(), r)) {
            expectEqual(who + ": submit", blocks, p.get());
        }
    }

    /**
     * Checks the mixed mode's block checksums {@code m} of the fixture's whole request, computed by {@code cpu}, before
     * anything is timed: they differ from the standard ones, and agree with the literal reference backend on the first
     * {@link #REFERENCE_BYTES}' worth of blocks at most (it reads at tens of MB/s).
     */
    public static void verifyMixed(KvChecksum cpu, KvFixture fx, SlicePlan standard, long[] m) {
        if (Arrays.equals(m, cpu.blockChecksums(standard))) {
            throw new IllegalStateException("mixed and standard checksums agree: the mixer did not run");
        }
        long perBlock = Math.max(1, fx.group().bytesPerToken() * ModelShape.BLOCK_SIZE);
        long tokens = Math.min(m.length, Math.max(1, REFERENCE_BYTES / perBlock)) * ModelShape.BLOCK_SIZE;
        try (KvChecksum ref = KvChecksums.reference()) {
            long[] expected = ref.blockChecksums(SlicePlan.of(fx.group(), fx.prefix(tokens), ChecksumMode.MIXED));
            expectEqual("cpu mixed mode differs from the reference backend", expected,
                    Arrays.copyOf(m, expected.length));
        }
    }

    /** Throws naming the first differing index, with both values as unsigned numbers. */
    public static void expectEqual(String what, long[] expected, long[] actual) {
        if (expected.length != actual.length) {
            throw new IllegalStateException(what + ": " + actual.length + " values, expected " + expected.length);
        }
        int i = Arrays.mismatch(expected, actual);
        if (i >= 0) {
            throw new IllegalStateException(what + ": value " + i + " is " + Long.toUnsignedString(actual[i])
                    + ", expected " + Long.toUnsignedString(expected[i]) + " (seed " + KvFixture.SEED + ")");
        }
    }
}
