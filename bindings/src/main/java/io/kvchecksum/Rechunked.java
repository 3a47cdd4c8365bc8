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
