package io.kvchecksum;

/**
 * What is asked of a checksum, as one value carried from the caller to the compiled plan: the {@link ChecksumMode}
 * (what each piece contributes before weighting) and the {@link CellPadding} (what to do with cells that are not
 * whole 8-byte pieces). What comes next (a new cell treatment, a new output) is a new component here, not a new
 * parameter on every method.
 *
 * @param mode the checksum mode, not null
 * @param padding what to do with cells that are not whole pieces, not null
 */
public record ChecksumSpec(ChecksumMode mode, CellPadding padding) {
    /** The definition: the standard mode, cells of whole pieces only. */
    public static final ChecksumSpec STANDARD = new ChecksumSpec(ChecksumMode.STANDARD, CellPadding.NONE);

    /**
     * Validates the components.
     *
     * @throws InvalidLayoutException when a component is null
     */
    public ChecksumSpec {
        if (mode == null || padding == null) {
            throw new InvalidLayoutException("a checksum spec needs a mode and a padding, got " + mode + " and " + padding);
        }
    }

    /**
     * {@return the spec of {@code mode} without padding}
     *
     * @param mode the checksum mode, not null
     * @throws InvalidLayoutException when {@code mode} is null
     */
    public static ChecksumSpec of(ChecksumMode mode) {
        return new ChecksumSpec(mode, CellPadding.NONE);
    }

    /**
     * {@return this spec in another mode}
     *
     * @param m the mode, not null
     * @throws InvalidLayoutException when {@code m} is null
     */
    public ChecksumSpec withMode(ChecksumMode m) {
        return new ChecksumSpec(m, padding);
    }

    /**
     * {@return this spec with another padding}
     *
     * @param p the padding, not null
     * @throws InvalidLayoutException when {@code p} is null
     */
    public ChecksumSpec withPadding(CellPadding p) {
        return new ChecksumSpec(mode, p);
    }
}
