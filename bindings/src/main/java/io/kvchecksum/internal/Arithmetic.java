package io.kvchecksum.internal;

import io.kvchecksum.Definition;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.Rechunked;
import io.kvchecksum.SliceSums;

/** The two small host-side operations, identical for every backend that does not run them on a device. */
public final class Arithmetic {
    private Arithmetic() {
    }

    /** {@code c_b = sum_i m(layer_i, head_i) * s[i][b]} modulo 2^64. */
    public static long[] combine(SliceSums sums) {
        int nb = sums.numBlocks();
        long[] out = new long[nb];
        long[] v = sums.values();
        for (int i = 0; i < sums.numSlices(); i++) {
            long m = Definition.factor(sums.layers()[i], sums.heads()[i]);
            int row = i * nb;
            for (int b = 0; b < nb; b++) {
                out[b] += m * v[row + b];
            }
        }
        return out;
    }

    /** Sums of {@code factor} consecutive blocks; see {@link io.kvchecksum.KvChecksum#rechunk}. */
    public static Rechunked rechunk(long[] values, long firstBlock, int factor) {
        checkRechunk(values, firstBlock, factor);
        long firstChunk = Math.ceilDiv(firstBlock, (long) factor);
        int skip = (int) Math.min(values.length, firstChunk * factor - firstBlock);
        int n = (int) Math.ceilDiv(values.length - skip, (long) factor);
        long[] out = new long[n];
        for (int i = skip; i < values.length; i++) {
            out[(i - skip) / factor] += values[i];
        }
        return new Rechunked(firstChunk, factor, out);
    }

    /** The argument checks of {@link #rechunk}, for backends that run it elsewhere. */
    public static void checkRechunk(long[] values, long firstBlock, int factor) {
        if (values == null) {
            throw new InvalidLayoutException("rechunk: values is null");
        }
        if (factor <= 0) {
            throw new InvalidLayoutException("rechunk: factor must be positive, got " + factor);
        }
        if (firstBlock < 0) {
            throw new InvalidLayoutException("rechunk: firstBlock must be non-negative, got " + firstBlock);
        }
    }
}
