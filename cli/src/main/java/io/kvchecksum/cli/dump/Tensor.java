package io.kvchecksum.cli.dump;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * One tensor of a dump: its name, dtype, shape and bytes, which are a slice of the mapped file (or of a temporary
 * file an npz member was inflated into), never a heap copy.
 *
 * @param name the tensor's name in the dump ({@code layers.3.k}, {@code block_table}, ...)
 * @param dtype the element type
 * @param shape the shape, row-major (C order)
 * @param data exactly {@code numel * dtype.size} bytes
 * @param source where the bytes are, for messages: the dump path, plus the npz member
 * @param fileOffset the byte offset of {@code data} in {@code source}'s file, or -1 when it was inflated
 */
public record Tensor(String name, DType dtype, long[] shape, MemorySegment data, String source, long fileOffset) {

    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The number of elements, or throws if the shape overflows. */
    public static long numel(long[] shape, String where) {
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new InvalidInputException(where + ": negative dimension in shape " + Arrays.toString(shape));
            }
            try {
                n = Math.multiplyExact(n, d);
            } catch (ArithmeticException e) {
                throw new InvalidInputException(where + ": shape " + Arrays.toString(shape) + " overflows a 64-bit size");
            }
        }
        return n;
    }

    /** The bytes of {@code shape} elements of {@code dtype}, or throws if that overflows. */
    public static long byteSize(long[] shape, DType dtype, String where) {
        try {
            return Math.multiplyExact(numel(shape, where), dtype.size());
        } catch (ArithmeticException e) {
            throw new InvalidInputException(where + ": shape x dtype overflows a 64-bit size");
        }
    }

    /** The number of elements. */
    public long numel() {
        return numel(shape, name);
    }

    /** The shape as text, e.g. {@code [2, 10, 16, 2, 64]}. */
    public String shapeText() {
        return Arrays.toString(shape);
    }

    /** Element {@code i} of an integer tensor as a signed long (unsigned types must fit in 63 bits). */
    public long integerAt(long i) {
        long off = i * dtype.size();
        long raw = switch (dtype.size()) {
            case 1 -> data.get(ValueLayout.JAVA_BYTE, off);
            case 2 -> data.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), off);
            case 4 -> data.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), off);
            default -> data.get(LE_LONG, off);
        };
        if (dtype.signed()) {
            return raw;
        }
        // unsigned 64-bit values past 2^63: past any table index, callers range-check
        return dtype.size() < 8 ? raw & ((1L << 8 * dtype.size()) - 1) : raw < 0 ? Long.MAX_VALUE : raw;
    }

    /** Element {@code i} of an integer tensor as the user wrote it: unsigned 64-bit values in full. */
    public String integerText(long i) {
        if (!dtype.signed() && dtype.size() == 8) {
            return Long.toUnsignedString(data.get(LE_LONG, i * 8));
        }
        return Long.toString(integerAt(i));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Tensor t && name.equals(t.name) && source.equals(t.source);
    }

    @Override
    public int hashCode() {
        return name.hashCode();
    }

    @Override
    public String toString() {
        return name + " " + dtype + " " + shapeText();
    }
}
