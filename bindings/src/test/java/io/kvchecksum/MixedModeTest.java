package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mixer against the examples of {@code docs/detection.md} (written by the NumPy generator), and the mode's plumbing. */
class MixedModeTest {
    private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** {x, MIX(x)}: the table of docs/detection.md, also {@code mixer_examples} in vectors-mixed/mixed.json. */
    static final long[][] EXAMPLES = {
        {0x0000000000000000L, 0x0000000000000000L},
        {0x0000000000000001L, 0x37645a4693ca5611L},
        {0x0000000000000002L, 0x7f419ad71794310eL},
        {0x0000000080000000L, 0xc995acf5f1c9aca3L},
        {0x0000000100000000L, 0xb4118a5f85ebca6bL},
        {0x8000000000000000L, 0x13ca12aec2f5e535L},
        {0xffffffffffffffffL, 0xffffffffffffffffL},
        {0x0123456789abcdefL, 0x8fc5f0ce73862482L},
        {0xfedcba9876543210L, 0xfb8a3087e25e24b7L},
        {0x8000000080000000L, 0xb311f5ad34f3c1d5L},
        {0x3ff0000000000000L, 0x3944e2ba382293deL},
        {0xbf80bf80bf80bf80L, 0x2e57e5adf2f2ca2cL},
    };

    @Test
    void feistel3MatchesTheDocumentedExamples() {
        for (long[] e : EXAMPLES) {
            assertEquals(e[1], Definition.feistel3(e[0]), "MIX(0x" + Long.toHexString(e[0]) + ")");
            assertEquals(e[1], Definition.pieceValue(e[0], ChecksumMode.MIXED));
            assertEquals(e[0], Definition.pieceValue(e[0], ChecksumMode.STANDARD));
        }
    }

    @Test
    void feistel3IsABijectionItsRoundsReversedInvertIt() {
        java.util.Random rnd = new java.util.Random(15);  // fixed seed
        for (int i = 0; i < 100_000; i++) {
            long x = rnd.nextLong();
            assertEquals(x, inverse(Definition.feistel3(x)), "seed 15, trial " + i);
        }
    }

    /** The three rounds in reverse order (each round is its own inverse), written out independently of the mixer. */
    private static long inverse(long y) {
        long lo = y & 0xFFFFFFFFL;
        long hi = y >>> 32;
        long p = lo * 0xC2B2AE35L;
        hi ^= (p ^ (p >>> 32)) & 0xFFFFFFFFL;
        p = hi * 0x85EBCA6BL;
        lo ^= (p ^ (p >>> 32)) & 0xFFFFFFFFL;
        p = lo * 0x9E3779B9L;
        hi ^= (p ^ (p >>> 32)) & 0xFFFFFFFFL;
        return hi << 32 | lo;
    }

    @Test
    void modeNames() {
        assertEquals(ChecksumMode.MIXED, ChecksumMode.of("mixed"));
        assertEquals(ChecksumMode.STANDARD, ChecksumMode.of("STANDARD"));
        assertEquals("mixed", ChecksumMode.MIXED.wireName());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ChecksumMode.of("fmix64"));
        assertTrue(e.getMessage().contains("'fmix64'") && e.getMessage().contains("standard or mixed"), e.getMessage());
    }

    /** One slice, one 2-token block of 2 pieces: the sum worked out by hand from the documented MIX values. */
    @Test
    void referenceBackendMixesEachPieceBeforeWeighting() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(32, 64);
            long[] x = {1, 2, 0x8000000000000000L, 0xffffffffffffffffL};
            for (int i = 0; i < 4; i++) {
                seg.set(PIECE, 8L * i, x[i]);
            }
            KvCacheGroup g = KvCacheGroup.of(2, 1, List.of(CacheLayer.kOnly(0, 0, 1, new KvRegion(KvMemory.host(seg), 0, 32, 16, 0, 16))));
            RequestBlocks r = RequestBlocks.of(new int[] {0}, 2, 0, 2);
            SlicePlan standard = SlicePlan.of(g, r);
            SlicePlan mixed = SlicePlan.of(g, r, ChecksumMode.MIXED);
            assertEquals(ChecksumMode.STANDARD, standard.mode());
            assertEquals(ChecksumMode.MIXED, mixed.mode());
            assertSame(mixed, mixed.withMode(ChecksumMode.MIXED));
            long s = 0x37645a4693ca5611L + 0x7f419ad71794310eL * 3 + 0x13ca12aec2f5e535L * 5 + 0xffffffffffffffffL * 7;
            KvChecksum ref = KvChecksums.reference();
            assertArrayEquals(new long[] {s}, ref.sliceSums(mixed).values());
            assertArrayEquals(new long[] {s}, ref.blockChecksums(mixed)); // factor of layer 0, head 0 is 1
            assertArrayEquals(new long[] {1 + 2 * 3 + 0x8000000000000000L * 5 - 7}, ref.blockChecksums(standard));
            assertArrayEquals(new long[] {s}, ref.blockChecksums(standard.withMode(ChecksumMode.MIXED)));
        }
    }

    @Test
    void aNullModeIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            KvCacheGroup g = KvCacheGroup.of(2, 1, List.of(CacheLayer.kOnly(0, 0, 1,
                    new KvRegion(KvMemory.host(arena.allocate(32, 64)), 0, 32, 16, 0, 16))));
            assertThrows(InvalidLayoutException.class, () -> SlicePlan.of(g, RequestBlocks.of(new int[] {0}, 2, 0, 2), (ChecksumMode) null));
        }
    }
}
