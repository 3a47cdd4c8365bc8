package io.kvchecksum;

/**
 * What a {@link SlicePlan} does with cells whose bytes (K then V) are not a whole number of 8-byte pieces, e.g. an fp8
 * indexer cache of 128 bytes plus a 4-byte scale (132 bytes). The plan carries it, like the {@link ChecksumMode}.
 *
 * <p>Only such cells are affected: for a cell of whole pieces both values give the same checksum. Cells whose K and V
 * are not whole pieces each but add up to whole pieces (K of 4 bytes, V of 4 bytes: one piece straddles them) are
 * part of the definition and need no padding.
 */
public enum CellPadding {
    /**
     * The definition (the default): a cell that is not whole 8-byte pieces makes its plan fail with
     * {@link InvalidLayoutException} naming the layer, before anything is read. Engines skip such a group with that
     * reason (the seeds' engines do the same).
     */
    NONE,
    /**
     * The opt-in extension ({@code docs/definition.md}, "Extension: padded cells"): each cell is zero-padded at its end
     * to whole pieces, {@code P = ceil(cellBytes / 8)}, and pieces are indexed {@code j = t*P + p} as for any other
     * cell. Its checksums are their own definition: a peer that does not pad skips the group instead (so the
     * comparison is unverified on that group, never a mismatch). Both sides must agree to use it.
     */
    ZEROS
}
