package io.kvchecksum.engine.wire;

import java.util.Arrays;
import java.util.Objects;

/**
 * One KV cache group's block checksums for one request, summed over every worker.
 *
 * <p>{@code values[i]} is the checksum of block position {@code start + i}; block position {@code b} covers request
 * tokens {@code [b*blockSize, min((b+1)*blockSize, numTokens))}. In a version-2 payload the values run to the
 * request's last block: {@code start + values.length == ceil(numTokens / blockSize)}. The array is copied in and out.
 *
 * @param groupId the KV cache group's id, non-negative
 * @param fingerprint the group's fingerprint ({@link io.kvchecksum.engine.worker.Fingerprints#ofGroup}), an unsigned
 *     64-bit value
 * @param blockSize tokens per block; {@code null} only in version-1 payloads, which did not carry it
 * @param start the block position of {@code values[0]}, non-negative
 * @param values unsigned 64-bit block checksums
 */
public record GroupChecksums(int groupId, long fingerprint, Integer blockSize, long start, long[] values) {

    /**
     * Validates the numbers and copies {@code values}; the range is checked against the request's token count by
     * {@link ChecksumPayload}.
     *
     * @throws IllegalArgumentException when {@code groupId} or {@code start} is negative or {@code blockSize} is not
     *     positive
     * @throws NullPointerException when {@code values} is null
     */
    public GroupChecksums {
        if (groupId < 0) {
            throw new IllegalArgumentException("groupId must be non-negative, got " + groupId);
        }
        if (blockSize != null && blockSize <= 0) {
            throw new IllegalArgumentException("blockSize must be positive, got " + blockSize);
        }
        if (start < 0) {
            throw new IllegalArgumentException("start must be non-negative, got " + start);
        }
        values = Objects.requireNonNull(values, "values").clone();
    }

    /** {@return the block checksums, copied} */
    @Override
    public long[] values() {
        return values.clone();
    }

    /** {@return the number of block checksums} */
    public int numBlocks() {
        return values.length;
    }

    /**
     * {@return the checksum of block position {@code start + i}, without copying}
     *
     * @param i an index into the values, {@code 0 <= i < numBlocks()}
     */
    public long value(int i) {
        return values[i];
    }

    /** {@return one past the last block position: {@code start + values.length}} */
    public long end() {
        return start + values.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GroupChecksums g && groupId == g.groupId && fingerprint == g.fingerprint
                && Objects.equals(blockSize, g.blockSize) && start == g.start && Arrays.equals(values, g.values);
    }

    @Override
    public int hashCode() {
        return Objects.hash(groupId, fingerprint, blockSize, start, Arrays.hashCode(values));
    }

    @Override
    public String toString() {
        return "GroupChecksums[groupId=" + groupId + ", fingerprint=" + Long.toUnsignedString(fingerprint)
                + ", blockSize=" + blockSize + ", start=" + start + ", blocks=" + values.length + "]";
    }
}
