package io.kvchecksum.cli.dump;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * NumPy {@code .npz}: a zip of {@code .npy} members. Read from the central directory with its zip64 records (numpy
 * writes every member with zip64 extras). Stored members are parsed in place in the file mapping; deflated members
 * ({@code savez_compressed}) are inflated into a temporary file that is mapped and deleted at once, so even a
 * compressed multi-GB dump never lands in the heap.
 */
final class Npz {
    private static final int EOCD = 0x06054b50;
    private static final int ZIP64_LOCATOR = 0x07064b50;
    private static final int ZIP64_EOCD = 0x06064b50;
    private static final int CEN = 0x02014b50;
    private static final int LOC = 0x04034b50;
    private static final long U32 = 0xFFFFFFFFL;

    /**
     * The largest inflate-to-stored ratio accepted for a member over {@link #RATIO_FREE} bytes. KV data compresses
     * little (bf16 activations about 1.1:1; a cache's unused, zeroed pages more); a zip bomb inflates about 1000:1.
     */
    static final long MAX_RATIO = 100;

    /** Members up to this size are inflated whatever their ratio. */
    static final long RATIO_FREE = 64L << 20;

    private Npz() {
    }

    static Map<String, Tensor> read(Path path, MemorySegment m, Arena arena) {
        String where = path.toString();
        long size = m.byteSize();
        long eocd = -1;
        for (long p = size - 22; p >= Math.max(0, size - 22 - 65535); p--) {
            if (i32(m, p) == EOCD) {
                eocd = p;
                break;
            }
        }
        if (eocd < 0) {
            throw new InvalidInputException(where + ": not a valid .npz: no zip end-of-central-directory record"
                    + " (file truncated?)");
        }
        long entries = u16(m, eocd + 10);
        long cdSize = u32(m, eocd + 12);
        long cdOffset = u32(m, eocd + 16);
        if (entries == 0xFFFF || cdSize == U32 || cdOffset == U32) {
            long loc = eocd - 20;
            if (loc < 0 || i32(m, loc) != ZIP64_LOCATOR) {
                throw new InvalidInputException(where + ": corrupt zip: zip64 sizes without a zip64 locator");
            }
            long z = i64(m, loc + 8);
            if (z < 0 || z > size - 56 || i32(m, z) != ZIP64_EOCD) {
                throw new InvalidInputException(where + ": corrupt zip: zip64 end record offset " + z + " is invalid");
            }
            entries = i64(m, z + 32);
            cdSize = i64(m, z + 40);
            cdOffset = i64(m, z + 48);
        }
        if (cdOffset < 0 || cdSize < 0 || cdOffset > size || cdSize > size - cdOffset || entries < 0
                || entries > cdSize / 46) {
            throw new InvalidInputException(where + ": corrupt zip: central directory (" + entries + " entries, "
                    + cdSize + " bytes at " + cdOffset + ") does not fit in the file of " + size + " bytes");
        }
        Map<String, Tensor> out = new TreeMap<>();
        long inflated = 0;
        long p = cdOffset;
        long cdEnd = cdOffset + cdSize;
        for (long e = 0; e < entries; e++) {
            if (p + 46 > cdEnd || i32(m, p) != CEN) {
                throw new InvalidInputException(where + ": corrupt zip: central directory entry " + e + " is malformed");
            }
            int flags = u16(m, p + 8);
            int method = u16(m, p + 10);
            long csize = u32(m, p + 20);
            long usize = u32(m, p + 24);
            int nameLen = u16(m, p + 28);
            int extraLen = u16(m, p + 30);
            int commentLen = u16(m, p + 32);
            long local = u32(m, p + 42);
            if (p + 46 + nameLen + extraLen + commentLen > cdEnd) {
                throw new InvalidInputException(where + ": corrupt zip: central directory entry " + e + " runs past its end");
            }
            String member = new String(m.asSlice(p + 46, nameLen).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
            // zip64 extra: the fields whose 32-bit slot holds 0xFFFFFFFF follow in this order
            long x = p + 46 + nameLen;
            long xEnd = x + extraLen;
            while (x + 4 <= xEnd) {
                int id = u16(m, x);
                int len = u16(m, x + 2);
                if (x + 4 + len > xEnd) {
                    break;
                }
                if (id == 1) {
                    long q = x + 4;
                    if (usize == U32 && q + 8 <= x + 4 + len) {
                        usize = i64(m, q);
                        q += 8;
                    }
                    if (csize == U32 && q + 8 <= x + 4 + len) {
                        csize = i64(m, q);
                        q += 8;
                    }
                    if (local == U32 && q + 8 <= x + 4 + len) {
                        local = i64(m, q);
                    }
                }
                x += 4 + len;
            }
            p += 46 + nameLen + extraLen + commentLen;
            if (!member.endsWith(".npy")) {
                continue;
            }
            String name = member.substring(0, member.length() - 4);
            String mwhere = where + ": member " + member;
            if ((flags & 1) != 0) {
                throw new InvalidInputException(mwhere + " is encrypted");
            }
            if (local < 0 || csize < 0 || usize < 0 || local > size - 30 || i32(m, local) != LOC) {
                throw new InvalidInputException(mwhere + ": local header at " + local + " is missing (file truncated?)");
            }
            long data = local + 30 + u16(m, local + 26) + u16(m, local + 28);
            if (data > size || csize > size - data) {
                throw new InvalidInputException(mwhere + ": file truncated: " + csize + " bytes of data at " + data
                        + " run past the end of the file (" + size + " bytes)");
            }
            MemorySegment raw = m.asSlice(data, csize);
            if (method == 0) {
                if (csize != usize) {
                    throw new InvalidInputException(mwhere + ": stored member has compressed size " + csize
                            + " but size " + usize);
                }
                out.put(name, Npy.parse(name, raw, where + ": " + member, data));
            } else if (method == 8) {
                if (usize > RATIO_FREE && usize / Math.max(1, csize) >= MAX_RATIO) {
                    throw new InvalidInputException(mwhere + " declares " + usize + " bytes from " + csize + " compressed ("
                            + usize / Math.max(1, csize) + ":1, the limit is " + MAX_RATIO + ":1 above " + RATIO_FREE
                            + " bytes): refused as a likely zip bomb; save the dump with numpy.savez (uncompressed)");
                }
                inflated += usize;
                long room = tempSpace();
                if (inflated > room) {
                    throw new InvalidInputException(mwhere + ": inflating the members needs " + inflated
                            + " bytes in the temporary directory, which has " + room + " free");
                }
                out.put(name, Npy.parse(name, inflate(raw, usize, mwhere, arena), where + ": " + member, -1));
            } else {
                throw new InvalidInputException(mwhere + ": unsupported zip compression method " + method
                        + " (numpy writes stored or deflated members)");
            }
        }
        return out;
    }

    /** Free bytes in the directory temporary files go to, less 1 GiB to leave the machine room. */
    private static long tempSpace() {
        try {
            Path dir = Path.of(System.getProperty("java.io.tmpdir"));
            return Math.max(0, Files.getFileStore(dir).getUsableSpace() - (1L << 30));
        } catch (IOException | RuntimeException e) {
            return Long.MAX_VALUE; // unknown: the declared size still bounds each member
        }
    }

    private static MemorySegment inflate(MemorySegment raw, long usize, String where, Arena arena) {
        Path tmp = null;
        Inflater inf = new Inflater(true);
        try {
            tmp = Files.createTempFile("kvchecksum-npz-", ".npy");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.allocate(1 << 20);
                long written = 0;
                long fed = 0;
                while (!inf.finished()) {
                    if (inf.needsInput() && fed < raw.byteSize()) {
                        // a ByteBuffer holds at most 2 GiB: feed the mapping in slices
                        long n = Math.min(64L << 20, raw.byteSize() - fed);
                        inf.setInput(raw.asSlice(fed, n).asByteBuffer());
                        fed += n;
                        continue;
                    }
                    buf.clear();
                    int n = inf.inflate(buf);
                    if (n == 0 && ((inf.needsInput() && fed >= raw.byteSize()) || inf.needsDictionary())) {
                        throw new InvalidInputException(where + ": deflated data ends early (file truncated?)");
                    }
                    written += n;
                    if (written > usize) {
                        throw new InvalidInputException(where + ": inflates past its declared size of " + usize + " bytes");
                    }
                    buf.flip();
                    while (buf.hasRemaining()) {
                        ch.write(buf);
                    }
                }
                if (written != usize) {
                    throw new InvalidInputException(where + ": inflates to " + written + " bytes, not its declared " + usize);
                }
                return usize == 0 ? MemorySegment.NULL.reinterpret(0) : ch.map(FileChannel.MapMode.READ_ONLY, 0, usize, arena);
            }
        } catch (DataFormatException e) {
            throw new InvalidInputException(where + ": corrupt deflated data: " + e.getMessage());
        } catch (IOException e) {
            throw new InvalidInputException(where + ": cannot inflate into a temporary file: " + e.getMessage(), e);
        } finally {
            inf.end();
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp); // the mapping stays valid after the name is gone
                } catch (IOException ignored) {
                    tmp.toFile().deleteOnExit();
                }
            }
        }
    }

    private static int i32(MemorySegment m, long p) {
        if (p < 0 || p + 4 > m.byteSize()) {
            return 0;
        }
        return m.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), p);
    }

    private static long u32(MemorySegment m, long p) {
        return Integer.toUnsignedLong(i32(m, p));
    }

    private static int u16(MemorySegment m, long p) {
        if (p < 0 || p + 2 > m.byteSize()) {
            return 0;
        }
        return Short.toUnsignedInt(m.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), p));
    }

    private static long i64(MemorySegment m, long p) {
        if (p < 0 || p + 8 > m.byteSize()) {
            return -1;
        }
        return m.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), p);
    }
}
