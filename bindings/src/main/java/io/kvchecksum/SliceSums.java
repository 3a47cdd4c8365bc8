package io.kvchecksum;

import java.util.Arrays;

/**
 * Per-slice weighted sums: for each (layer, global head) slice of a group and each block position, the value
 * {@code s = sum_j x_j * (2j+1) mod 2^64} over that slice's tokens in the block.
 *
 * <p>{@code values} is slice-major: the sum of slice {@code i} for block {@code firstBlock + b} is
 * {@code values[i*numBlocks + b]}. Slices are ordered as the group's layers, then local heads.
 *
 * @param layers the layer number of each slice
 * @param heads the global head number of each slice
 * @param firstBlock the block position of column 0
 * @param numBlocks columns per slice
 * @param values {@code layers.length * numBlocks} sums
 */
public record SliceSums(int[] layers, int[] heads, long firstBlock, int numBlocks, long[] values) {

    /**
     * Checks the shapes agree; the arrays are kept, not copied.
     *
     * @throws InvalidLayoutException when {@code layers} and {@code heads} differ in length, {@code numBlocks} is
     *     negative or {@code values.length != layers.length * numBlocks}
     * @throws NullPointerException when an array is null
     */
    public SliceSums {
        if (layers.length != heads.length) {
            throw new InvalidLayoutException("slice sums: " + layers.length + " layer numbers but " + heads.length + " head numbers");
        }
        if (numBlocks < 0 || (long) layers.length * numBlocks != values.length) {
            throw new InvalidLayoutException("slice sums: " + values.length + " values for " + layers.length + " slices x "
                    + numBlocks + " blocks");
        }
    }

    /**
     * {@return the slice sum of slice {@code slice} at column {@code block}}
     *
     * @param slice the slice's row, {@code 0 <= slice < layers.length}
     * @param block the column, {@code 0 <= block < numBlocks} (block position {@code firstBlock + block})
     */
    public long get(int slice, int block) {
        return values[slice * numBlocks + block];
    }

    /**
     * {@return the per-layer/head combination, the second of the checksum's three operations:
     * {@code c_b = sum over slices i of m(layer_i, head_i) * s[i][b]} modulo 2^64} Equals the backend's fused
     * {@link KvChecksum#blockChecksums} of the same group and request. Pure: the one implementation every backend and
     * the engine use.
     */
    public long[] combine() {
        long[] out = new long[numBlocks];
        for (int i = 0; i < layers.length; i++) {
            long m = Definition.factor(layers[i], heads[i]);
            int row = i * numBlocks;
            for (int b = 0; b < numBlocks; b++) {
                out[b] += m * values[row + b];
            }
        }
        return out;
    }

    /** {@return the number of slices} */
    public int numSlices() {
        return layers.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SliceSums s && Arrays.equals(layers, s.layers) && Arrays.equals(heads, s.heads)
                && firstBlock == s.firstBlock && numBlocks == s.numBlocks && Arrays.equals(values, s.values);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(values);
    }

    @Override
    public String toString() {
        return "SliceSums[slices=" + layers.length + ", firstBlock=" + firstBlock + ", numBlocks=" + numBlocks + "]";
    }
}
