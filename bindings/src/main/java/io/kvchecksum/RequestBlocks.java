package io.kvchecksum;

import java.util.Arrays;

/**
 * Which of a request's tokens to checksum, and where they sit in the paged cache.
 *
 * <p>The request's checksum blocks have {@code blockSize} tokens; block {@code b} covers request positions
 * {@code [b*blockSize, min((b+1)*blockSize, numTokens))}, so slots past {@code numTokens} in the last block are never
 * read. Blocks {@code firstBlock .. ceil(numTokens/blockSize)-1} are checksummed, one value each.
 *
 * <p>{@code pageTable[i]} is the physical page holding request positions
 * {@code [start + i*pageSize, start + (i+1)*pageSize)} where {@code start = firstBlock*blockSize}: position
 * {@code t} is in page {@code pageTable[(t-start)/pageSize]}, slot {@code (t-start)%pageSize}. The table therefore
 * starts at the first checksummed block, not at the request's first token; entries past the last needed one are
 * ignored. The array is copied.
 *
 * <p>The table is checked against a group's pages once, when a {@link SlicePlan} is built from both.
 *
 * @param pageTable physical page ids, one per page of the checksummed range
 * @param numTokens the request's token count ({@code num_computed_tokens} on a producer)
 * @param firstBlock the first block position to checksum (a consumer's first loaded block)
 * @param blockSize tokens per checksum block
 */
public record RequestBlocks(int[] pageTable, long numTokens, long firstBlock, int blockSize) {

    /**
     * Validates the numbers and copies {@code pageTable}; page ids are checked against a group by
     * {@link SlicePlan#of(KvCacheGroup, RequestBlocks)}.
     *
     * @throws InvalidLayoutException when {@code pageTable} is null, {@code blockSize} is not positive,
     *     {@code numTokens} or {@code firstBlock} is negative, or {@code firstBlock*blockSize} overflows or lies past
     *     {@code numTokens}
     */
    public RequestBlocks {
        if (pageTable == null) {
            throw new InvalidLayoutException("pageTable is null");
        }
        pageTable = pageTable.clone();
        if (blockSize <= 0) {
            throw new InvalidLayoutException("blockSize must be positive, got " + blockSize);
        }
        if (numTokens < 0) {
            throw new InvalidLayoutException("numTokens must be non-negative, got " + numTokens);
        }
        if (firstBlock < 0) {
            throw new InvalidLayoutException("firstBlock must be non-negative, got " + firstBlock);
        }
        long start;
        try {
            start = Math.multiplyExact(firstBlock, (long) blockSize);
        } catch (ArithmeticException e) {
            throw new InvalidLayoutException("firstBlock " + firstBlock + " x blockSize " + blockSize + " overflows a long");
        }
        if (start > numTokens) {
            throw new InvalidLayoutException("firstBlock " + firstBlock + " starts at token " + start
                    + ", past numTokens " + numTokens);
        }
    }

    /**
     * {@return the blocks of a request from its first token}
     *
     * @param pageTable physical page ids from the request's first token; copied
     * @param numTokens the request's token count, non-negative
     * @param blockSize tokens per checksum block, positive
     * @throws InvalidLayoutException as the constructor does
     */
    public static RequestBlocks of(int[] pageTable, long numTokens, int blockSize) {
        return new RequestBlocks(pageTable, numTokens, 0, blockSize);
    }

    /** {@return the blocks from {@code firstBlock} on, with a table that starts at that block} */
    public static RequestBlocks of(int[] pageTable, long numTokens, long firstBlock, int blockSize) {
        return new RequestBlocks(pageTable, numTokens, firstBlock, blockSize);
    }

    /** {@return the first request position checksummed: {@code firstBlock * blockSize}} */
    public long startToken() {
        return firstBlock * blockSize;
    }

    /** {@return the number of block checksums: {@code ceil(numTokens/blockSize) - firstBlock}} */
    public int numBlocks() {
        long n = Math.ceilDiv(numTokens, (long) blockSize) - firstBlock;
        if (n > Integer.MAX_VALUE) {
            throw new InvalidLayoutException("request has " + n + " blocks, more than an array can hold");
        }
        return (int) n;
    }

    /**
     * {@return the first request position of block position {@code b}}
     *
     * @param b a block position ({@code 0} is the request's first block)
     */
    public long blockStart(long b) {
        return b * blockSize;
    }

    /**
     * {@return one past the last request position of block position {@code b}, clipped at {@code numTokens}}
     *
     * @param b a block position ({@code 0} is the request's first block)
     */
    public long blockEnd(long b) {
        return Math.min((b + 1) * blockSize, numTokens);
    }

    /**
     * {@return how many pages of size {@code pageSize} the checksummed range touches}
     *
     * @param pageSize tokens per physical page of the group, positive
     */
    public long pagesNeeded(int pageSize) {
        return Math.ceilDiv(numTokens - startToken(), (long) pageSize);
    }

    /** {@return the page table, copied} */
    @Override
    public int[] pageTable() {
        return pageTable.clone();
    }

    /** {@return the number of entries of the page table} */
    public int tableLength() {
        return pageTable.length;
    }

    /**
     * {@return the table entry {@code i} without copying the table}
     *
     * @param i an index into the table, {@code 0 <= i < tableLength()}
     * @throws ArrayIndexOutOfBoundsException when {@code i} is outside the table
     */
    public int page(int i) {
        return pageTable[i];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RequestBlocks r && Arrays.equals(pageTable, r.pageTable) && numTokens == r.numTokens
                && firstBlock == r.firstBlock && blockSize == r.blockSize;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(pageTable) * 31 + Long.hashCode(numTokens * 31 + firstBlock) + blockSize;
    }

    @Override
    public String toString() {
        return "RequestBlocks[pages=" + pageTable.length + ", numTokens=" + numTokens + ", firstBlock=" + firstBlock
                + ", blockSize=" + blockSize + "]";
    }
}
