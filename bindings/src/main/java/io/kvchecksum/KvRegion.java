package io.kvchecksum;

import java.util.Objects;

/**
 * One kind of bytes (K or V) of one layer: where cell {@code (page, tokenInPage, head)} starts.
 *
 * <p>The cell of physical page {@code p}, slot {@code o} within the page and local head {@code h} occupies
 * {@code cellBytes} bytes starting at {@code offset + p*pageStride + o*tokenStride + h*headStride} of
 * {@code memory}. All values are in bytes and must be non-negative; {@code cellBytes} must be positive. The checksum
 * reads the cell (K bytes then V bytes) as 8-byte little-endian pieces: K and V need not be whole pieces each (a
 * piece may straddle them), but their total must be, which {@link SlicePlan#of} checks unless the plan pads cells
 * ({@link CellPadding#ZEROS}). Every layout in the field (head-major or token-major,
 * K and V split or interleaved, kernel-block splits) is some choice of these four numbers; no data is copied.
 *
 * @param memory where the bytes live; not null
 * @param offset byte offset of cell {@code (0, 0, 0)} from the memory's first byte, non-negative
 * @param pageStride bytes between the same cell of consecutive pages, non-negative
 * @param tokenStride bytes between consecutive slots of a page, non-negative
 * @param headStride bytes between consecutive local heads, non-negative
 * @param cellBytes bytes of one (token, head) cell, a positive multiple of 8
 */
public record KvRegion(KvMemory memory, long offset, long pageStride, long tokenStride, long headStride, int cellBytes) {

    /**
     * Validates the numbers; whether the pages fit the memory is checked by {@link KvCacheGroup}, which knows how many
     * pages, slots and heads there are.
     *
     * @throws InvalidLayoutException when an offset or stride is negative or {@code cellBytes} is not a positive
     *     multiple of 8
     * @throws NullPointerException when {@code memory} is null
     */
    public KvRegion {
        Objects.requireNonNull(memory, "memory");
        requireNonNegative("offset", offset);
        requireNonNegative("pageStride", pageStride);
        requireNonNegative("tokenStride", tokenStride);
        requireNonNegative("headStride", headStride);
        if (cellBytes <= 0) {
            throw new InvalidLayoutException("cellBytes must be positive, got " + cellBytes);
        }
    }

    /** {@return the number of whole 8-byte pieces in one cell of this region ({@code cellBytes / 8}, rounded down)} */
    public int pieces() {
        return cellBytes / 8;
    }

    /**
     * {@return the byte offset of a cell within {@link #memory()}; the caller has validated the indices}
     *
     * @param page the physical page id
     * @param tokenInPage the slot within the page
     * @param head the local head number
     */
    public long cellOffset(long page, long tokenInPage, long head) {
        return offset + page * pageStride + tokenInPage * tokenStride + head * headStride;
    }

    /**
     * The first byte past the furthest cell reachable with pages below {@code numPages}, slots below
     * {@code pageSize} and heads below {@code numHeads}, or throws if that overflows a long.
     */
    long extent(long numPages, long pageSize, long numHeads, String what) {
        try {
            long far = Math.addExact(offset, Math.multiplyExact(numPages - 1, pageStride));
            far = Math.addExact(far, Math.multiplyExact(pageSize - 1, tokenStride));
            far = Math.addExact(far, Math.multiplyExact(numHeads - 1, headStride));
            return Math.addExact(far, cellBytes);
        } catch (ArithmeticException e) {
            throw new InvalidLayoutException(what + ": region extent overflows a 64-bit byte offset");
        }
    }

    private static void requireNonNegative(String name, long value) {
        if (value < 0) {
            throw new InvalidLayoutException(name + " must be non-negative, got " + value);
        }
    }
}
