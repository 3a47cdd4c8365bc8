package io.kvchecksum.cli.dump;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * An element type of a dumped tensor. Only the element size matters to the checksum (bytes are bytes); the name is
 * kept for messages, and {@link #integer()} says whether a block table may use it.
 *
 * @param name the safetensors name (BF16, F16, F32, F8_E4M3, ...)
 * @param size bytes per element
 * @param integer whether the values are integers a block table can hold
 * @param signed whether an integer type is signed
 */
public record DType(String name, int size, boolean integer, boolean signed) {

    /** The safetensors dtypes this reader accepts, in the order every "unknown dtype" message lists them. */
    public static final Map<String, DType> SAFETENSORS = Collections.unmodifiableMap(Stream.of(
            new DType("BF16", 2, false, false), new DType("F16", 2, false, false), new DType("F32", 4, false, false),
            new DType("F64", 8, false, false), new DType("F8_E4M3", 1, false, false), new DType("F8_E5M2", 1, false, false),
            new DType("BOOL", 1, false, false), new DType("U8", 1, true, false), new DType("I8", 1, true, true),
            new DType("U16", 2, true, false), new DType("I16", 2, true, true), new DType("U32", 4, true, false),
            new DType("I32", 4, true, true), new DType("U64", 8, true, false), new DType("I64", 8, true, true))
            .collect(LinkedHashMap<String, DType>::new, (m, d) -> m.put(d.name(), d), Map::putAll));

    /** The safetensors dtype of that name, or {@code null}. */
    public static DType safetensors(String name) {
        return SAFETENSORS.get(name);
    }

    /** The names accepted, for messages. */
    public static String supported() {
        return String.join(", ", SAFETENSORS.keySet());
    }

    /**
     * The dtype of a NumPy {@code descr} such as {@code <f2}, {@code |u1}, {@code <i8}, {@code <V2}.
     *
     * @throws InvalidInputException for big-endian data (its bytes are not the engine's bytes) or a type with no
     *     fixed raw size (objects, strings)
     */
    public static DType numpy(String descr, String where) {
        if (descr.length() < 3) {
            throw new InvalidInputException(where + ": unsupported dtype '" + descr + "'");
        }
        char order = descr.charAt(0);
        char kind = descr.charAt(1);
        int size;
        try {
            size = Integer.parseInt(descr.substring(2));
        } catch (NumberFormatException ex) {
            throw new InvalidInputException(where + ": unsupported dtype '" + descr + "' (no fixed element size)");
        }
        if (order == '>' && size > 1) {
            throw new InvalidInputException(where + ": dtype '" + descr + "' is big-endian; save the tensor as the engine"
                    + " holds it (little-endian)");
        }
        if (order != '<' && order != '|' && order != '=' && order != '>') {
            throw new InvalidInputException(where + ": unsupported dtype '" + descr + "'");
        }
        // raw void items: how ml_dtypes' bfloat16 and fp8 arrays come out of NumPy
        String name = kind == 'b' ? "BOOL" : kind == 'V' ? "V" + size : Character.toUpperCase(kind) + "" + 8L * size;
        if (kind == 'V' && (size == 1 || size == 2 || size == 4 || size == 8)) {
            return new DType(name, size, false, false);
        }
        DType known = "fiub".indexOf(kind) >= 0 ? SAFETENSORS.get(name) : null;
        if (known == null || known.size() != size) {
            throw new InvalidInputException(where + ": unsupported dtype '" + descr + "' (supported: little-endian"
                    + " float, int, uint, bool and raw items of 1, 2, 4 or 8 bytes)");
        }
        return known;
    }

    @Override
    public String toString() {
        return name;
    }

    // equals and hashCode written out, as the record's own would be: those are bootstrapped through method handles on
    // first use, which a one-shot command paid for at start-up (classes spun at run time, interpreted)
    /** {@return whether {@code o} is a dtype with the same name, size, integer-ness and signedness} */
    @Override
    public boolean equals(Object o) {
        return o instanceof DType d && name.equals(d.name) && size == d.size && integer == d.integer && signed == d.signed;
    }

    /** {@return a hash of the four components} */
    @Override
    public int hashCode() {
        return ((name.hashCode() * 31 + size) * 31 + Boolean.hashCode(integer)) * 31 + Boolean.hashCode(signed);
    }
}
