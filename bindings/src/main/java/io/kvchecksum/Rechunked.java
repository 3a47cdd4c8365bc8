package io.kvchecksum;

import java.util.Arrays;

/**
 * Block checksums summed into chunks of {@code factor} blocks: chunk {@code q} of the larger size holds blocks
 * {@code q*factor .. q*factor+factor-1} of the smaller one.
 *
 * @param firstChunk the chunk position of {@code values[0]}: the first chunk the input covers whole
 * @param factor smaller blocks per chunk
 * @param values one checksum per chunk
 */
public record Rechunked(long firstChunk, int factor, long[] values) {

    /**
     * Block-size rechunking, the third of the checksum's three operations: sums consecutive checksums of blocks of
     * size {@code B} into checksums of size {@code factor*B}, exact because piece indices count from the request's
     * first token. Pure: the one implementation every backend and the engine use.
     *
     * <p>{@code values[i]} is the checksum of block {@code firstBlock + i}, and the input must run to the request's
     * last block. Chunks that the input does not cover whole are left out: the result starts at chunk
     * {@code ceil(firstBlock/factor)}; the last chunk, which ends with the request, is whole even if it holds fewer
     * than {@code factor} blocks.
     *
     * @param values the block checksums of blocks {@code firstBlock ..} up to the request's last block
     * @param firstBlock the block position of {@code values[0]}, non-negative
     * @param factor smaller blocks per chunk, positive (the larger block size over the smaller)
     * @return the chunks the input covers whole, from chunk {@code ceil(firstBlock/factor)}
     * @throws InvalidLayoutException when {@code values} is null, {@code factor} is not positive or
     *     {@code firstBlock} is negative
     */
    public static Rechunked of(long[] values, long firstBlock, int factor) {
        if (values == null) {
            throw new InvalidLayoutException("rechunk: values is null");
        }
        if (factor <= 0) {
            throw new InvalidLayoutException("rechunk: factor must be positive, got " + factor);
        }
        if (firstBlock < 0) {
            throw new InvalidLayoutException("rechunk: firstBlock must be non-negative, got " + firstBlock);
        }
        long firstChunk = Math.ceilDiv(firstBlock, (long) factor);
        int skip = (int) Math.min(values.length, firstChunk * factor - firstBlock);
        int n = (int) Math.ceilDiv(values.length - skip, (long) factor);
        long[] out = new long[n];
        for (int i = skip; i < values.length; i++) {
            out[(i - skip) / factor] += values[i];
        }
        return new Rechunked(firstChunk, factor, out);
    }

    /** {@return the number of chunks} */
    public int numChunks() {
        return values.length;
    }

    /**
     * {@return whether chunk position {@code chunk} is among the values (covered whole by the input)}
     *
     * @param chunk a chunk position (in units of the larger block size)
     */
    public boolean covers(long chunk) {
        return chunk >= firstChunk && chunk - firstChunk < values.length;
    }

    /**
     * {@return the checksum of chunk position {@code chunk}; see {@link #covers}}
     *
     * @param chunk a chunk position for which {@link #covers} is true
     * @throws IndexOutOfBoundsException when the chunk is not covered
     */
    public long valueAt(long chunk) {
        if (!covers(chunk)) {
            throw new IndexOutOfBoundsException("chunk " + chunk + " is not in " + this);
        }
        return values[(int) (chunk - firstChunk)];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Rechunked r && firstChunk == r.firstChunk && factor == r.factor && Arrays.equals(values, r.values);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(values) * 31 + Long.hashCode(firstChunk);
    }

    @Override
    public String toString() {
        return "Rechunked[firstChunk=" + firstChunk + ", factor=" + factor + ", values=" + values.length + "]";
    }
}
