package io.kvchecksum.engine.worker;

import io.kvchecksum.RequestBlocks;

import java.util.Arrays;
import java.util.Collection;
import java.util.Objects;

/**
 * Which blocks of one group a side checksums for a request, and where they are: the rules of the scheduler that
 * builds the work for its workers.
 *
 * <ul>
 *   <li>Producer: the blocks holding tokens {@code [0, num_computed_tokens)}. Consumer: the blocks the load writes,
 *       tokens {@code [num_local_computed_tokens, num_computed_tokens)}.</li>
 *   <li>A sliding-window group keeps only its last {@code cdiv(window, blockSize) + 1} blocks, the clip transfer
 *       engines apply to what they move.</li>
 *   <li>Leading null blocks (already out of the window) are dropped; a null block after a non-null one leaves the
 *       group out entirely on this side ({@link #excludedReason()}), which the other side then sees as a group
 *       checksummed by one side only, or by neither.</li>
 *   <li>A page id other than the null block's that appears at two positions of the request's table (within the
 *       window for a sliding-window group) is a block-table bug, refused with an {@link IllegalArgumentException}
 *       naming the id and both positions before any kernel runs: two blocks in one page would checksum the same
 *       bytes twice, and the same bug on both sides would even match.</li>
 * </ul>
 * A connector that carries checksums must load exactly these blocks.
 *
 * @param groupId the group
 * @param blockSize tokens per block
 * @param numTokens the request's token count on this side
 * @param firstBlock the first selected block position
 * @param blockIds the engine's block ids of positions {@code firstBlock ..} (one per block), copied
 * @param excludedReason why the group is left out on this side, or {@code null} when it is selected
 */
public record BlockSelection(int groupId, int blockSize, long numTokens, long firstBlock, int[] blockIds, String excludedReason) {

    /**
     * The {@code nullBlockId} of an engine that has no null block (Jlama, engines without sliding windows): no page id
     * is negative, so no block is ever taken for a null one.
     */
    public static final int NO_NULL_BLOCK = -1;

    /**
     * Copies {@code blockIds}; the rules are applied by {@link #producer} and {@link #consumer}, not here.
     *
     * @throws NullPointerException when {@code blockIds} is null
     */
    public BlockSelection {
        blockIds = blockIds.clone();
    }

    /**
     * {@return the producer's blocks: tokens {@code [0, numComputedTokens)}}
     *
     * @param blockTable the request's block ids from position 0, one per block of {@code blockSize} tokens
     * @param nullBlockId the id the engine uses for a block that holds nothing (vLLM's null block is 0)
     * @param slidingWindow the group's window in tokens, or {@code null} for full attention
     * @param groupId the group's id in the engine's KV cache config
     * @param numComputedTokens the request's computed tokens after prefill, non-negative
     * @param blockSize tokens per block, positive
     * @throws IllegalArgumentException when a number is out of range, the table is shorter than the request's blocks,
     *     the window is not positive, or a page id other than {@code nullBlockId} appears twice among the request's
     *     blocks (within the window)
     * @throws NullPointerException when {@code blockTable} is null
     */
    public static BlockSelection producer(int groupId, int[] blockTable, int nullBlockId, long numComputedTokens,
            int blockSize, Integer slidingWindow) {
        return select(groupId, blockTable, nullBlockId, 0, numComputedTokens, blockSize, slidingWindow);
    }

    /**
     * {@return the consumer's blocks: those the load writes, tokens
     * {@code [numLocalComputedTokens, numComputedTokens)}} {@code numLocalComputedTokens} (the local prefix hit) must
     * be a whole number of blocks.
     *
     * @param groupId the group's id in the engine's KV cache config
     * @param blockTable the request's block ids from position 0, one per block of {@code blockSize} tokens
     * @param nullBlockId the id the engine uses for a block that holds nothing, or {@link #NO_NULL_BLOCK}
     * @param numLocalComputedTokens the tokens the consumer already holds (its prefix-cache hit), whole blocks
     * @param numComputedTokens the request's computed tokens once the load has landed
     * @param blockSize tokens per block, positive
     * @param slidingWindow the group's window in tokens, or {@code null} for full attention
     * @throws IllegalArgumentException when the local prefix is not whole blocks, a number is out of range, the table
     *     is shorter than the request's blocks, the window is not positive, or a page id other than
     *     {@code nullBlockId} appears twice among the request's blocks (within the window; the local prefix's blocks
     *     included)
     * @throws NullPointerException when {@code blockTable} is null
     */
    public static BlockSelection consumer(int groupId, int[] blockTable, int nullBlockId, long numLocalComputedTokens,
            long numComputedTokens, int blockSize, Integer slidingWindow) {
        if (numLocalComputedTokens % blockSize != 0) {
            throw new IllegalArgumentException("a local prefix of " + numLocalComputedTokens + " tokens is not whole blocks of "
                    + blockSize);
        }
        return select(groupId, blockTable, nullBlockId, numLocalComputedTokens / blockSize, numComputedTokens, blockSize,
                slidingWindow);
    }

    private static BlockSelection select(int groupId, int[] table, int nullId, long first, long numTokens, int blockSize,
            Integer window) {
        Objects.requireNonNull(table, "blockTable");
        if (blockSize <= 0 || numTokens < 0 || first < 0) {
            throw new IllegalArgumentException("block size " + blockSize + ", " + numTokens + " tokens, first block " + first);
        }
        long blocks = Math.ceilDiv(numTokens, (long) blockSize);
        if (first > blocks) {
            throw new IllegalArgumentException("first block " + first + " is past the request's " + blocks + " blocks");
        }
        if (table.length < blocks) {
            throw new IllegalArgumentException("the block table has " + table.length + " entries for " + blocks + " blocks");
        }
        long live = 0;
        if (window != null) {
            if (window <= 0) {
                throw new IllegalArgumentException("sliding window must be positive, got " + window);
            }
            live = Math.max(0, blocks - (Math.ceilDiv((long) window, blockSize) + 1));
            first = Math.max(first, live);
        }
        requireDistinctPages(groupId, table, (int) live, (int) blocks, nullId);
        while (first < blocks && table[(int) first] == nullId) {
            first++;
        }
        for (long b = first; b < blocks; b++) {
            if (table[(int) b] == nullId) {
                return new BlockSelection(groupId, blockSize, numTokens, first, new int[0],
                        "a null block at position " + b + " after a non-null one");
            }
        }
        int[] ids = Arrays.copyOfRange(table, (int) first, (int) blocks);
        return new BlockSelection(groupId, blockSize, numTokens, first, ids, null);
    }

    /**
     * Throws when a page id other than {@code nullId} appears twice in {@code table[from, to)}: two positions of one
     * request in one page, which a kernel would read (and a load write) as if they were different memory, so the same
     * bug on both sides would even match. An open-addressing set sized to the range, so O(range) per request whatever
     * the ids. Positions before {@code from} (out of a sliding window) are never read, so their ids are not checked.
     */
    static void requireDistinctPages(int groupId, int[] table, int from, int to, int nullId) {
        int n = to - from;
        if (n < 2) {
            return;
        }
        // Each slot holds (position + 1) << 32 | id, 0 when empty: the first position of each id seen.
        long[] slots = new long[Integer.highestOneBit(Math.max(2, n - 1)) << 2];
        int mask = slots.length - 1;
        int shift = Integer.numberOfLeadingZeros(mask);   // Fibonacci hashing: the product's top bits
        for (int i = from; i < to; i++) {
            int id = table[i];
            if (id == nullId) {
                continue;
            }
            int h = (id * 0x9E3779B9) >>> shift;
            while (true) {
                long slot = slots[h & mask];
                if (slot == 0) {
                    slots[h & mask] = ((long) (i + 1) << 32) | (id & 0xFFFFFFFFL);
                    break;
                }
                if ((int) slot == id) {
                    throw new IllegalArgumentException("group " + groupId + ": page id " + id + " appears at block positions "
                            + ((slot >>> 32) - 1) + " and " + i + " of one request's block table; a page other than the"
                            + " null page (" + nullId + ") holds one block of a request");
                }
                h++;
            }
        }
    }

    /** Throws when a selection (excluded or not) is for another token count than the request's {@code numTokens}. */
    static void requireTokens(Collection<BlockSelection> selection, long numTokens) {
        selection.stream().filter(s -> s.numTokens() != numTokens).findFirst().ifPresent(s -> {
            throw new IllegalArgumentException("group " + s.groupId() + " was selected for " + s.numTokens()
                    + " tokens, the request has " + numTokens);
        });
    }

    /** {@return true when the group is left out on this side} */
    public boolean isExcluded() {
        return excludedReason != null;
    }

    /** {@return the selected positions; throws for an excluded group} */
    public BlockRange range() {
        if (isExcluded()) {
            throw new IllegalStateException("group " + groupId + " is excluded: " + excludedReason);
        }
        return new BlockRange(blockSize, firstBlock, firstBlock + blockIds.length);
    }

    /** {@return the block ids, copied} */
    @Override
    public int[] blockIds() {
        return blockIds.clone();
    }

    /**
     * {@return the request for a backend, for a cache whose pages are {@code pageSize} tokens: the block size itself,
     * or a divisor of it when each block is split into {@code blockSize/pageSize} kernel pages, block id {@code i}
     * holding pages {@code i*k .. i*k+k-1}}
     *
     * @param pageSize tokens per page of the backend's cache, positive and dividing {@code blockSize}
     * @throws IllegalStateException when the group is excluded
     * @throws IllegalArgumentException when {@code pageSize} does not divide the block size
     */
    public RequestBlocks request(int pageSize) {
        range();
        if (pageSize <= 0 || blockSize % pageSize != 0) {
            throw new IllegalArgumentException("page size " + pageSize + " does not divide block size " + blockSize);
        }
        int k = blockSize / pageSize;
        int[] pages = new int[Math.multiplyExact(blockIds.length, k)];
        for (int i = 0; i < blockIds.length; i++) {
            for (int j = 0; j < k; j++) {
                pages[i * k + j] = Math.addExact(Math.multiplyExact(blockIds[i], k), j);
            }
        }
        return RequestBlocks.of(pages, numTokens, firstBlock, blockSize);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BlockSelection s && groupId == s.groupId && blockSize == s.blockSize && numTokens == s.numTokens
                && firstBlock == s.firstBlock && Arrays.equals(blockIds, s.blockIds) && Objects.equals(excludedReason, s.excludedReason);
    }

    @Override
    public int hashCode() {
        return Objects.hash(groupId, blockSize, numTokens, firstBlock, excludedReason, Arrays.hashCode(blockIds));
    }

    @Override
    public String toString() {
        return "BlockSelection[group " + groupId + ", " + (isExcluded() ? "excluded: " + excludedReason
                : "blocks " + firstBlock + ".." + (firstBlock + blockIds.length) + " of " + blockSize + " tokens") + "]";
    }
}
