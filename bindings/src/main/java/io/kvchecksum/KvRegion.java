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
 */
public record KvRegion(KvMemory memory, long offset, long pageStride, long tokenStride, long headStride, int cellBytes) {

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

    /** The number of whole 8-byte pieces in one cell of this region ({@code cellBytes / 8}, rounded down). */
    public int pieces() {
        return cellBytes / 8;
    }

    /** The byte offset of a cell within {@link #memory()}; the caller has validated the indices. */
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
