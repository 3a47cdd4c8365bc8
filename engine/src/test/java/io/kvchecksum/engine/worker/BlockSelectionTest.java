package io.kvchecksum.engine.worker;

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

    @Test
    void boundariesAndIdentity() {
        assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, new int[3], 0, 40, 0, null));
        assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, new int[3], 0, -1, 16, null));
        assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, new int[2], 0, 40, 16, null));
        assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, new int[3], 0, 40, 16, 0));
        assertThrows(IllegalArgumentException.class, () -> BlockSelection.consumer(0, new int[3], 0, 64, 40, 16, null));
        assertThrows(NullPointerException.class, () -> BlockSelection.producer(0, null, 0, 40, 16, null));
        // Exactly enough table entries, a load of nothing at the request's end, an empty request.
        assertEquals(new BlockRange(16, 0, 3), BlockSelection.producer(0, new int[] {1, 2, 3}, 0, 40, 16, null).range());
        assertEquals(new BlockRange(16, 3, 3), BlockSelection.consumer(0, new int[] {1, 2, 3}, 0, 48, 48, 16, null).range());
        assertEquals(new BlockRange(16, 0, 0), BlockSelection.producer(0, new int[0], 0, 0, 16, null).range());
        // A window that covers every block keeps them all.
        assertEquals(new BlockRange(16, 0, 3), BlockSelection.producer(0, new int[] {1, 2, 3}, 0, 40, 16, 32).range());

        BlockSelection a = BlockSelection.producer(2, new int[] {5, 6, 7}, 0, 40, 16, null);
        int[] ids = {5, 6, 7};
        BlockSelection b = new BlockSelection(2, 16, 40, 0, ids, null);
        ids[0] = 99;
        assertEquals(a, b, "ids are copied in");
        assertEquals(a.hashCode(), b.hashCode());
        a.blockIds()[0] = 99;
        assertArrayEquals(new int[] {5, 6, 7}, a.blockIds(), "and out");
        assertTrue(!a.equals(new BlockSelection(3, 16, 40, 0, new int[] {5, 6, 7}, null)));
        assertTrue(!a.equals(new BlockSelection(2, 8, 40, 0, new int[] {5, 6, 7}, null)));
        assertTrue(!a.equals(new BlockSelection(2, 16, 41, 0, new int[] {5, 6, 7}, null)));
        assertTrue(!a.equals(new BlockSelection(2, 16, 40, 1, new int[] {5, 6, 7}, null)));
        assertTrue(!a.equals(new BlockSelection(2, 16, 40, 0, new int[] {5, 6, 8}, null)));
        assertTrue(!a.equals(new BlockSelection(2, 16, 40, 0, new int[] {5, 6, 7}, "x")));
        assertTrue(!a.equals("x"));
        assertTrue(a.hashCode() != new BlockSelection(2, 16, 40, 0, new int[] {5, 6, 8}, null).hashCode());
        assertEquals("BlockSelection[group 2, blocks 0..3 of 16 tokens]", a.toString());
        BlockSelection x = BlockSelection.producer(1, new int[] {4, 0, 6}, 0, 40, 16, null);
        assertEquals("BlockSelection[group 1, excluded: a null block at position 1 after a non-null one]", x.toString());
        assertTrue(x.isExcluded());
        assertThrows(IllegalStateException.class, x::range);
        assertThrows(IllegalArgumentException.class, () -> a.request(0));
        assertThrows(IllegalArgumentException.class, () -> a.request(5));
        assertEquals(3, a.request(8).numBlocks());
    }

    @Test
    void aPageRepeatedInOneRequestsTableIsRefusedNamingTheIdAndBothPositions() {
        // The table: page 3 twice (null page 0). Accepted, and with the same table on both sides it matched.
        var e = assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, new int[] {3, 3, 5}, 0, 48, 16, null));
        assertTrue(e.getMessage().contains("page id 3 appears at block positions 0 and 1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> BlockSelection.consumer(2, new int[] {3, 3, 5}, 0, 0, 48, 16, null));
        assertTrue(e.getMessage().startsWith("group 2: page id 3"), e.getMessage());
        // A loaded block in a page of the local prefix: the load would overwrite the prefix.
        e = assertThrows(IllegalArgumentException.class, () -> BlockSelection.consumer(0, new int[] {4, 7, 4}, 0, 16, 48, 16, null));
        assertTrue(e.getMessage().contains("page id 4 appears at block positions 0 and 2"), e.getMessage());
        // Without a null page (Jlama), page 0 is a page like any other.
        e = assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, new int[] {0, 1, 0}, BlockSelection.NO_NULL_BLOCK,
                48, 16, null));
        assertTrue(e.getMessage().contains("page id 0 appears at block positions 0 and 2"), e.getMessage());

        // The null page may repeat; entries past the request's blocks and positions out of the window are never read.
        assertEquals(new BlockRange(16, 2, 4), BlockSelection.producer(0, new int[] {0, 0, 4, 3}, 0, 64, 16, null).range());
        assertEquals(new BlockRange(16, 0, 3), BlockSelection.producer(0, new int[] {1, 2, 3, 1, 1}, 0, 48, 16, null).range());
        // 96 tokens, window 40: cdiv(40, 16) + 1 = 4 blocks, positions 2..5; page 9 at 0 and 5 is not a repeat in it.
        assertEquals(new BlockRange(16, 2, 6), BlockSelection.producer(0, new int[] {9, 9, 1, 2, 3, 9}, 0, 96, 16, 40).range());
        e = assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, new int[] {5, 5, 9, 1, 9, 3}, 0, 96, 16, 40));
        assertTrue(e.getMessage().contains("page id 9 appears at block positions 2 and 4"), e.getMessage());
    }

    @Test
    void repeatsAreFoundInLongTablesOfAnyIds() {
        long seed = 0xB10C_7AB1EL;
        System.out.println("BlockSelectionTest seed " + seed);
        java.util.Random rnd = new java.util.Random(seed);
        for (int c = 0; c < 200; c++) {
            int n = 2 + rnd.nextInt(c < 100 ? 40 : 20_000);
            // Distinct ids spread over the whole int range (negative ones included), as an engine's may be.
            int[] table = rnd.ints().filter(x -> x != 0).distinct().limit(n).toArray();
            long tokens = (long) n * 16;
            assertEquals(n, BlockSelection.producer(0, table, 0, tokens, 16, null).range().length(), "case " + c);
            int a = rnd.nextInt(n);
            int b = rnd.nextInt(n - 1);
            b = b >= a ? b + 1 : b;
            table[b] = table[a];
            int id = table[a];
            var e = assertThrows(IllegalArgumentException.class, () -> BlockSelection.producer(0, table, 0, tokens, 16, null),
                    "case " + c);
            assertTrue(e.getMessage().contains("page id " + id + " appears at block positions " + Math.min(a, b) + " and "
                    + Math.max(a, b)), "case " + c + ": " + e.getMessage());
        }
    }
}
