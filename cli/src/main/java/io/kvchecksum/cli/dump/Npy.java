package io.kvchecksum.cli.dump;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The NumPy {@code .npy} format (versions 1 to 3): magic, header length, a Python dict literal, then the data. */
final class Npy {
    private static final Pattern DESCR = Pattern.compile("'descr'\\s*:\\s*'([^']*)'");
    private static final Pattern FORTRAN = Pattern.compile("'fortran_order'\\s*:\\s*(True|False)");
    private static final Pattern SHAPE = Pattern.compile("'shape'\\s*:\\s*\\(([^)]*)\\)");

    private Npy() {
    }

    /**
     * Parses one {@code .npy} held in {@code m}.
     *
     * @param fileOffset where {@code m} starts in its file, or -1 when {@code m} is inflated data
     */
    static Tensor parse(String name, MemorySegment m, String source, long fileOffset) {
        String where = source + (source.endsWith(name + ".npy") ? "" : ": " + name);
        long size = m.byteSize();
        if (size < 10 || m.get(ValueLayout.JAVA_BYTE, 0) != (byte) 0x93) {
            throw new InvalidInputException(where + ": not a .npy file (too short or no \\x93NUMPY magic)");
        }
        int major = m.get(ValueLayout.JAVA_BYTE, 6);
        long hlen;
        long hstart;
        if (major == 1) {
            hlen = Short.toUnsignedLong(m.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 8));
            hstart = 10;
        } else if (major == 2 || major == 3) {
            if (size < 12) {
                throw new InvalidInputException(where + ": .npy file truncated in its header");
            }
            hlen = Integer.toUnsignedLong(m.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 8));
            hstart = 12;
        } else {
            throw new InvalidInputException(where + ": unsupported .npy version " + major);
        }
        if (hstart + hlen > size) {
            throw new InvalidInputException(where + ": .npy header length " + hlen + " runs past the end of the file ("
                    + size + " bytes): truncated");
        }
        String header = new String(m.asSlice(hstart, hlen).toArray(ValueLayout.JAVA_BYTE),
                major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        Matcher d = DESCR.matcher(header);
        Matcher f = FORTRAN.matcher(header);
        Matcher s = SHAPE.matcher(header);
        if (!d.find()) {
            throw new InvalidInputException(where + ": unsupported dtype (structured or missing 'descr' in the .npy header)");
        }
        if (!f.find() || !s.find()) {
            throw new InvalidInputException(where + ": malformed .npy header: " + header.strip());
        }
        DType dtype = DType.numpy(d.group(1), where);
        long[] shape;
        try {
            shape = Arrays.stream(s.group(1).split(",")).filter(x -> !x.isBlank())
                    .mapToLong(x -> Long.parseLong(x.strip().replace("L", ""))).toArray();
        } catch (NumberFormatException e) {
            throw new InvalidInputException(where + ": malformed shape (" + s.group(1) + ") in the .npy header");
        }
        if (f.group(1).equals("True") && shape.length > 1) {
            throw new InvalidInputException(where + ": Fortran-order array; save a C-contiguous tensor"
                    + " (numpy.ascontiguousarray)");
        }
        long need = Tensor.byteSize(shape, dtype, where);
        long dataStart = hstart + hlen;
        if (size - dataStart < need) {
            throw new InvalidInputException(where + ": .npy data truncated: shape " + Arrays.toString(shape)
                    + " of " + dtype + " needs " + need + " bytes but the file holds " + (size - dataStart));
        }
        return new Tensor(name, dtype, shape, m.asSlice(dataStart, need), source,
                fileOffset < 0 ? -1 : fileOffset + dataStart);
    }
}
