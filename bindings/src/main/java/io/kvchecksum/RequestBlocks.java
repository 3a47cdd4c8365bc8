package io.kvchecksum;

import java.util.Arrays;

/**
 * Which of a request's tokens to checksum, and where they sit in the paged cache.
 *
 * <p>The request's checksum blocks have {@code blockSize} tokens; block {@code b} covers request positions
 * {@code [b*blockSize, min((b+1)*blockSize, numTokens))}, so slots past {@code numTokens} in the last block are never
 * read. Blocks {@code firstBlock .. ceil(numTokens/blockSize)-1} are checksummed, one value each.
 *
 * <p>{@code blockTable[i]} is the physical page holding request positions
 * {@code [start + i*pageSize, start + (i+1)*pageSize)} where {@code start = firstBlock*blockSize}: position
 * {@code t} is in page {@code blockTable[(t-start)/pageSize]}, slot {@code (t-start)%pageSize}. The table therefore
 * starts at the first checksummed block, not at the request's first token; entries past the last needed one are
 * ignored. The array is copied.
 *
 * @param blockTable physical page ids, one per page of the checksummed range
 * @param numTokens the request's token count ({@code num_computed_tokens} on a producer)
 * @param firstBlock the first block position to checksum (a consumer's first loaded block)
 * @param blockSize tokens per checksum block
 */
public record RequestBlocks(int[] blockTable, long numTokens, long firstBlock, int blockSize) {

    public RequestBlocks {
        if (blockTable == null) {
            throw new InvalidLayoutException("blockTable is null");
        }
        blockTable = blockTable.clone();
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

    /** The blocks of a request from its first token. */
    public static RequestBlocks of(int[] blockTable, long numTokens, int blockSize) {
        return new RequestBlocks(blockTable, numTokens, 0, blockSize);
    }

    /** The blocks from {@code firstBlock} on, with a table that starts at that block. */
    public static RequestBlocks of(int[] blockTable, long numTokens, long firstBlock, int blockSize) {
        return new RequestBlocks(blockTable, numTokens, firstBlock, blockSize);
    }

    /** The first request position checksummed: {@code firstBlock * blockSize}. */
    public long startToken() {
        return firstBlock * blockSize;
    }

    /** The number of block checksums: {@code ceil(numTokens/blockSize) - firstBlock}. */
    public int numBlocks() {
        long n = Math.ceilDiv(numTokens, (long) blockSize) - firstBlock;
        if (n > Integer.MAX_VALUE) {
            throw new InvalidLayoutException("request has " + n + " blocks, more than an array can hold");
        }
        return (int) n;
    }

    /** The first request position of block position {@code b}. */
    public long blockStart(long b) {
        return b * blockSize;
    }

    /** One past the last request position of block position {@code b}, clipped at {@code numTokens}. */
    public long blockEnd(long b) {
        return Math.min((b + 1) * blockSize, numTokens);
    }

    /** How many pages of size {@code pageSize} the checksummed range touches. */
    public long pagesNeeded(int pageSize) {
        return Math.ceilDiv(numTokens - startToken(), (long) pageSize);
    }

    /**
     * Checks the table against a cache group: enough entries for the range, and every used page id within
     * {@code 0 .. numPages-1}.
     *
     * @throws InvalidLayoutException naming the first bad entry
     */
    public void validateAgainst(KvCacheGroup group) {
        long needed = pagesNeeded(group.pageSize());
        if (blockTable.length < needed) {
            throw new InvalidLayoutException("blockTable has " + blockTable.length + " entries but tokens "
                    + startToken() + ".." + (numTokens - 1) + " need " + needed + " pages of " + group.pageSize() + " slots");
        }
        for (int i = 0; i < needed; i++) {
            int page = blockTable[i];
            if (page < 0 || page >= group.numPages()) {
                throw new InvalidLayoutException("blockTable[" + i + "] = " + page + " is out of range: the cache has "
                        + group.numPages() + " pages (valid ids 0.." + (group.numPages() - 1) + ")");
            }
        }
    }

    /** The block table, copied. */
    @Override
    public int[] blockTable() {
        return blockTable.clone();
    }

    /** The table entry {@code i} without copying the table. */
    public int page(int i) {
        return blockTable[i];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RequestBlocks r && Arrays.equals(blockTable, r.blockTable) && numTokens == r.numTokens
                && firstBlock == r.firstBlock && blockSize == r.blockSize;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(blockTable) * 31 + Long.hashCode(numTokens * 31 + firstBlock) + blockSize;
    }

    @Override
    public String toString() {
        return "RequestBlocks[pages=" + blockTable.length + ", numTokens=" + numTokens + ", firstBlock=" + firstBlock
                + ", blockSize=" + blockSize + "]";
    }
}
