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

    /**
     * {@return the odd factor {@code m = 2*(layer*H + head) + 1} of a (layer, global head) slice}
     *
     * @param layer the layer number, non-negative
     * @param head the global KV head number, in {@code [0, MAX_KV_HEADS_PER_LAYER)}
     */
    public static long factor(int layer, int head) {
        return 2L * ((long) layer * MAX_KV_HEADS_PER_LAYER + head) + 1;
    }

    /**
     * {@return the odd weight {@code 2j + 1} of piece index {@code j}, modulo 2^64}
     *
     * @param pieceIndex the index {@code j} of the 8-byte piece within its slice, counted from the request's first
     *     token
     */
    public static long weight(long pieceIndex) {
        return 2 * pieceIndex + 1;
    }

    /**
     * {@return the value a piece contributes before weighting in the standard mode: the piece itself} The one
     * replaceable step: {@link #pieceValue(long, ChecksumMode)} gives the mixed mode's.
     *
     * @param piece the 8-byte piece read as a little-endian 64-bit word
     */
    public static long pieceValue(long piece) {
        return piece;
    }

    /**
     * {@return the value a piece contributes before weighting in {@code mode}: {@code x}, or
     * {@link #feistel3}{@code (x)}}
     *
     * @param piece the 8-byte piece read as a little-endian 64-bit word
     * @param mode the checksum mode; not null
     */
    public static long pieceValue(long piece, ChecksumMode mode) {
        return mode == ChecksumMode.MIXED ? feistel3(piece) : piece;
    }

    /**
     * {@return {@code x} through the mixed mode's mixer, exactly as {@code docs/detection.md} defines it: three Feistel
     * rounds on the two 32-bit halves, each a 32 x 32 -> 64-bit multiply by an odd constant, a fold of the product's
     * halves and an xor into the other half} A bijection of the 64-bit values (each round is its own inverse); no
     * 64-bit multiply, so it vectorizes on AVX2 ({@code vpmuludq}) and is one {@code mul.wide.u32} per round on GPUs.
     *
     * @param x the 64-bit value (a piece, as a little-endian word); every value is valid
     */
    public static long feistel3(long x) {
        long p = (x & 0xFFFFFFFFL) * 0x9E3779B9L;
        x ^= (p ^ (p >>> 32)) << 32;
        p = (x >>> 32) * 0x85EBCA6BL;
        x ^= (p ^ (p >>> 32)) & 0xFFFFFFFFL;
        p = (x & 0xFFFFFFFFL) * 0xC2B2AE35L;
        x ^= (p ^ (p >>> 32)) << 32;
        return x;
    }
}
