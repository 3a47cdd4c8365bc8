package io.kvchecksum;

/**
 * The checksum's constants and the two per-term formulas, as plain arithmetic modulo 2^64 (Java's wrapping
 * {@code long} {@code +} and {@code *}).
 *
 * <p>Slice sum of one (layer, head) over a set of tokens: {@code s = sum_j x_j * (2j + 1)}, where {@code x_j} is
 * the little-endian 8-byte piece {@code p} of the cell of the token at request position {@code t} and
 * {@code j = t*P + p}. Block checksum: {@code c = sum m * s} over the group's layers and heads with
 * {@code m = 2*(layer*H + head) + 1}. See {@code docs/definition.md}.
 */
public final class Definition {
    /** H: a fixed bound on the KV heads of any layer, so a factor never depends on a model's head count. */
    public static final int MAX_KV_HEADS_PER_LAYER = 1 << 16;

    private Definition() {
    }

    /** The odd factor {@code m = 2*(layer*H + head) + 1} of a (layer, global head) slice. */
    public static long factor(int layer, int head) {
        return 2L * ((long) layer * MAX_KV_HEADS_PER_LAYER + head) + 1;
    }

    /** The odd weight {@code 2j + 1} of piece index {@code j}, modulo 2^64. */
    public static long weight(long pieceIndex) {
        return 2 * pieceIndex + 1;
    }

    /**
     * The value a piece contributes before weighting. Identity today; kept as the one replaceable step so an
     * opt-in bijective mixer can later remove the bit-63 weakness without touching any law (they only need the
     * sum to be additive over pieces).
     */
    public static long pieceValue(long piece) {
        return piece;
    }
}
