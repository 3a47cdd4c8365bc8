package io.kvchecksum.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.RequestBlocks;

import org.junit.jupiter.api.Test;

class BlockSelectionTest {

    @Test
    void producerTakesEveryBlockOfTheComputedTokens() {
        BlockSelection s = BlockSelection.producer(0, new int[] {5, 6, 7, 8, 9}, 0, 40, 16, null);
        assertEquals(new BlockRange(16, 0, 3), s.range());
        assertArrayEquals(new int[] {5, 6, 7}, s.blockIds());
    }

    @Test
    void consumerTakesTheBlocksTheLoadWrites() {
        BlockSelection s = BlockSelection.consumer(0, new int[] {5, 6, 7, 8}, 0, 32, 50, 16, null);
        assertEquals(new BlockRange(16, 2, 4), s.range());
        assertArrayEquals(new int[] {7, 8}, s.blockIds());
        assertThrows(IllegalArgumentException.class, () -> BlockSelection.consumer(0, new int[] {5, 6, 7, 8}, 0, 20, 50, 16, null));
    }

    @Test
    void leadingNullBlocksAreDroppedANullAfterDataExcludesTheGroup() {
        BlockSelection s = BlockSelection.producer(1, new int[] {0, 0, 4, 3}, 0, 64, 16, null);
        assertEquals(new BlockRange(16, 2, 4), s.range());
        BlockSelection x = BlockSelection.producer(1, new int[] {2, 0, 4, 3}, 0, 64, 16, null);
        assertTrue(x.isExcluded(), x.toString());
        assertThrows(IllegalStateException.class, x::range);
        BlockSelection all = BlockSelection.producer(1, new int[] {0, 0}, 0, 32, 16, null);
        assertEquals(new BlockRange(16, 2, 2), all.range());
    }

    @Test
    void slidingWindowKeepsTheLastCdivWindowPlusOneBlocks() {
        int[] table = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        // 160 tokens, window 40 -> cdiv(40, 16) + 1 = 4 blocks: positions 6..9.
        BlockSelection s = BlockSelection.producer(0, table, 0, 160, 16, 40);
        assertEquals(new BlockRange(16, 6, 10), s.range());
        // Out-of-window blocks freed to the null block are fine too.
        int[] freed = {0, 0, 0, 0, 0, 0, 7, 8, 9, 10};
        assertEquals(s.range(), BlockSelection.producer(0, freed, 0, 160, 16, 40).range());
        // The consumer's first loaded block wins when it is later.
        assertEquals(new BlockRange(16, 8, 10), BlockSelection.consumer(0, table, 0, 128, 160, 16, 40).range());
    }

    @Test
    void kernelPagesSplitEachBlock() {
        BlockSelection s = BlockSelection.consumer(0, new int[] {5, 6, 7}, 0, 16, 40, 16, null);
        RequestBlocks r = s.request(4);
        assertArrayEquals(new int[] {24, 25, 26, 27, 28, 29, 30, 31}, r.pageTable());
        assertEquals(1, r.firstBlock());
        assertEquals(16, r.blockSize());
        assertThrows(IllegalArgumentException.class, () -> s.request(5));
    }
}
