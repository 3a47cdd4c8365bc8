package io.kvchecksum.cli.dump;

import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipFile;
import org.apache.commons.io.input.BoundedInputStream;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;

/**
 * NumPy {@code .npz}: a zip of {@code .npy} members, its central directory (zip64 included: numpy writes every member
 * with zip64 extras) read by commons-compress. Stored members are parsed in place in the file mapping; deflated members
 * ({@code savez_compressed}) are inflated into a temporary file that is mapped and deleted at once, so even a
 * compressed multi-GB dump never lands in the heap.
 */
final class Npz {
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
        Map<String, Tensor> out = new TreeMap<>();
        long inflated = 0;
        try (ZipFile zip = open(path, where)) {
            for (ZipArchiveEntry e : Collections.list(zip.getEntries())) {
                String member = e.getName();
                if (!member.endsWith(".npy")) {
                    continue;
                }
                String name = member.substring(0, member.length() - 4);
                String mwhere = where + ": member " + member;
                if (e.getGeneralPurposeBit().usesEncryption()) {
                    throw new InvalidInputException(mwhere + " is encrypted");
                }
                long csize = e.getCompressedSize();
                long usize = e.getSize();
                long data = e.getDataOffset();
                if (data < 0 || csize < 0 || usize < 0 || data > size || csize > size - data) {
                    throw new InvalidInputException(mwhere + ": file truncated: " + csize + " bytes of data at " + data
                            + " run past the end of the file (" + size + " bytes)");
                }
                if (e.getMethod() == ZipEntry.STORED) {
                    if (csize != usize) {
                        throw new InvalidInputException(mwhere + ": stored member has compressed size " + csize
                                + " but size " + usize);
                    }
                    out.put(name, Npy.parse(name, m.asSlice(data, csize), where + ": " + member, data));
                } else if (e.getMethod() == ZipEntry.DEFLATED) {
                    if (usize > RATIO_FREE && usize / Math.max(1, csize) >= MAX_RATIO) {
                        throw new InvalidInputException(mwhere + " declares " + usize + " bytes from " + csize
                                + " compressed (" + usize / Math.max(1, csize) + ":1, the limit is " + MAX_RATIO + ":1 above "
                                + RATIO_FREE + " bytes): refused as a likely zip bomb; save the dump with numpy.savez"
                                + " (uncompressed)");
                    }
                    inflated += usize;
                    long room = tempSpace();
                    if (inflated > room) {
                        throw new InvalidInputException(mwhere + ": inflating the members needs " + inflated
                                + " bytes in the temporary directory, which has " + room + " free");
                    }
                    out.put(name, Npy.parse(name, inflate(zip, e, usize, mwhere, arena), where + ": " + member, -1));
                } else {
                    throw new InvalidInputException(mwhere + ": unsupported zip compression method " + e.getMethod()
                            + " (numpy writes stored or deflated members)");
                }
            }
        } catch (IOException e) {
            throw new InvalidInputException(where + ": corrupt zip: " + e.getMessage(), e);
        }
        return out;
    }

    /** The zip with its central directory read; a directory the zip reader refuses, in any way, is an input error. */
    private static ZipFile open(Path path, String where) {
        try {
            return ZipFile.builder().setPath(path).get();
        } catch (IOException | RuntimeException e) {
            Throwable why = e;
            while (why.getCause() != null) {
                why = why.getCause(); // the reader's own words, not its "Error reading Zip content from" wrapper
            }
            throw new InvalidInputException(where + ": not a valid .npz (file truncated?): " + why.getMessage(), e);
        }
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

    /** The member inflated into a temporary file, mapped; at most {@code usize} bytes are written. */
    private static MemorySegment inflate(ZipFile zip, ZipArchiveEntry e, long usize, String where, Arena arena) {
        Path tmp = null;
        try {
            tmp = Files.createTempFile("kvchecksum-npz-", ".npy");
            long written;
            try (InputStream in = BoundedInputStream.builder().setInputStream(zip.getInputStream(e)).setMaxCount(usize + 1)
                    .get()) {
                written = Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            } catch (ZipException | EOFException x) {
                throw new InvalidInputException(where + ": corrupt deflated data: " + x.getMessage(), x);
            }
            if (written > usize) {
                throw new InvalidInputException(where + ": inflates past its declared size of " + usize + " bytes");
            }
            if (written != usize) {
                throw new InvalidInputException(where + ": inflates to " + written + " bytes, not its declared " + usize);
            }
            try (FileChannel ch = FileChannel.open(tmp)) {
                return usize == 0 ? MemorySegment.NULL.reinterpret(0) : ch.map(FileChannel.MapMode.READ_ONLY, 0, usize, arena);
            }
        } catch (IOException x) {
            throw new InvalidInputException(where + ": cannot inflate into a temporary file: " + x.getMessage(), x);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp); // the mapping stays valid after the name is gone
                } catch (IOException ignored) {
                    tmp.toFile().deleteOnExit();
                }
            }
        }
    }
}
