package io.kvchecksum;

import java.util.Locale;

/**
 * What each 8-byte piece contributes before weighting (see {@code docs/definition.md} and {@code docs/detection.md}).
 * The mode travels in the {@link SlicePlan}; producer and consumer must use the same one, so it is carried in the
 * payload beside the checksums, never folded into the fingerprint.
 */
public enum ChecksumMode {
    /** The seed's definition: the piece itself, {@code s = sum x_j (2j+1)}. The default, bit-compatible everywhere. */
    STANDARD,
    /**
     * Each piece passes through the bijective mixer {@link Definition#feistel3} first: {@code s = sum MIX(x_j) (2j+1)}.
     * No blind spot in the detection campaign (the standard mode misses every even number of bit-63 flips in a block);
     * the sum stays additive over pieces, so every law (layout, TP/PP, rechunking) holds unchanged.
     */
    MIXED;

    /** {@return the name on the command line and in the payload: {@code standard} or {@code mixed}} */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * {@return the mode named {@code name} ({@code standard} or {@code mixed}, any case)}
     *
     * @param name the mode's wire name, in any case (not trimmed); an unknown name or {@code null} is refused
     * @throws IllegalArgumentException naming the accepted values
     */
    public static ChecksumMode of(String name) {
        for (ChecksumMode m : values()) {
            if (m.wireName().equalsIgnoreCase(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown checksum mode '" + name + "': expected standard or mixed");
    }
}
