package io.kvchecksum.engine.worker;

/**
 * The block positions {@code [start, end)} of one group that a side checksums for a request, with the block size.
 *
 * @param blockSize tokens per block, positive
 * @param start the first block position
 * @param end one past the last block position; {@code end >= start}
 */
public record BlockRange(int blockSize, long start, long end) {

    /**
     * Validates the range.
     *
     * @throws IllegalArgumentException when {@code blockSize} is not positive, {@code start} is negative or
     *     {@code end < start}
     */
    public BlockRange {
        if (blockSize <= 0 || start < 0 || end < start) {
            throw new IllegalArgumentException("bad block range: block size " + blockSize + ", blocks " + start + ".." + end);
        }
    }

    /** {@return the number of blocks} */
    public long length() {
        return end - start;
    }

    @Override
    public String toString() {
        return "blocks [" + start + ", " + end + ") of " + blockSize + " tokens";
    }
}
