package io.kvchecksum.cli.dump;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The tensors of one dump, memory-mapped: a safetensors file, an {@code .npz}, one {@code .npy}, or a directory of
 * {@code .npy} files (each named after its tensor, e.g. {@code layers.0.k.npy}).
 *
 * <p>Every size read from a file is checked against the file's length before it is used, so a malformed or hostile
 * dump produces an {@link InvalidInputException} naming the problem, never a read past the mapping or an allocation
 * larger than the file. The mappings live until {@link #close()}; they are shared, so backend threads may read them.
 *
 * @param path the dump's path as given
 * @param format {@code safetensors}, {@code npz}, {@code npy} or {@code npy directory}
 * @param arena the arena of the mappings (and of the files npz members were inflated into)
 * @param tensors the tensors by name, sorted by name
 */
public record DumpFile(Path path, String format, Arena arena, Map<String, Tensor> tensors) implements AutoCloseable {
    /** The largest safetensors JSON header read (the format's own reader refuses more than 100 MB). */
    static final long MAX_HEADER = 100L << 20;

    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Takes the tensors as an unmodifiable view. */
    public DumpFile {
        tensors = Collections.unmodifiableMap(tensors);
    }

    /** Opens a dump, choosing the format from its first bytes (or directory-ness), not from its name. */
    public static DumpFile open(Path path) {
        Arena arena = Arena.ofShared();
        try {
            DumpFile d = openIn(path, arena);
            if (d.tensors.isEmpty()) {
                throw new InvalidInputException(path + ": the dump holds no tensors");
            }
            return d;
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static DumpFile openIn(Path path, Arena arena) {
        if (Files.isDirectory(path)) {
            Map<String, Tensor> ts = new TreeMap<>();
            List<Path> files;
            try (Stream<Path> s = Files.list(path)) {
                files = s.filter(p -> p.getFileName().toString().endsWith(".npy")).sorted().toList();
            } catch (IOException e) {
                throw unreadable(path, e);
            }
            if (files.isEmpty()) {
                throw new InvalidInputException(path + ": directory holds no .npy files");
            }
            for (Path f : files) {
                String n = f.getFileName().toString();
                MemorySegment m = map(f, arena);
                ts.put(n.substring(0, n.length() - 4), Npy.parse(n.substring(0, n.length() - 4), m, f.toString(), 0));
            }
            return new DumpFile(path, "npy directory", arena, ts);
        }
        MemorySegment m = map(path, arena);
        if (startsWith(m, new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'})) {
            String n = path.getFileName().toString();
            String name = n.endsWith(".npy") ? n.substring(0, n.length() - 4) : n;
            return new DumpFile(path, "npy", arena, new TreeMap<>(Map.of(name, Npy.parse(name, m, path.toString(), 0))));
        }
        if (startsWith(m, new byte[] {'P', 'K'})) {
            return new DumpFile(path, "npz", arena, Npz.read(path, m, arena));
        }
        String name = path.getFileName() == null ? "" : path.getFileName().toString();
        if (name.endsWith(".npy")) {
            throw new InvalidInputException(path + ": not a .npy file: it does not start with the \\x93NUMPY magic");
        }
        if (name.endsWith(".npz")) {
            throw new InvalidInputException(path + ": not an .npz file: it does not start with a zip header (PK)");
        }
        return new DumpFile(path, "safetensors", arena, safetensors(path, m));
    }

    private static Map<String, Tensor> safetensors(Path path, MemorySegment m) {
        long size = m.byteSize();
        if (size < 8) {
            throw new InvalidInputException(path + ": not a safetensors, .npy or .npz file (" + size + " bytes)");
        }
        long n = m.get(LE_LONG, 0);
        if (n < 2 || n > size - 8 || n > MAX_HEADER) {
            throw new InvalidInputException(path + ": safetensors header length " + Long.toUnsignedString(n)
                    + " does not fit in the file of " + size + " bytes (truncated, or not a safetensors file)");
        }
        byte[] text = m.asSlice(8, n).toArray(ValueLayout.JAVA_BYTE);
        JsonNode header;
        try {
            header = HeaderJson.read(text);
        } catch (JsonProcessingException e) {
            String why = e.getOriginalMessage().lines().findFirst().orElse("");
            int cut = why.indexOf(" (");
            throw new InvalidInputException(path + ": safetensors header is not valid JSON: "
                    + (cut > 0 ? why.substring(0, cut) : why)
                    + (e.getLocation() == null ? "" : " at column " + e.getLocation().getColumnNr()));
        } catch (IOException e) {
            // invalid UTF-8, from the parser's decoder
            throw new InvalidInputException(path + ": safetensors header is not valid UTF-8 JSON: " + e.getMessage());
        }
        if (header == null || !header.isObject()) {
            throw new InvalidInputException(path + ": safetensors header is not a JSON object");
        }
        long dataStart = 8 + n;
        long dataSize = size - dataStart;
        Map<String, Tensor> ts = new TreeMap<>();
        TreeMap<Long, Tensor> byBegin = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = header.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String name = e.getKey();
            if (name.equals("__metadata__")) {
                continue;
            }
            String where = path + ": tensor " + name;
            JsonNode t = e.getValue();
            JsonNode dt = t.get("dtype");
            JsonNode shapeNode = t.get("shape");
            JsonNode offs = t.get("data_offsets");
            if (dt == null || !dt.isTextual() || shapeNode == null || !shapeNode.isArray() || offs == null
                    || !offs.isArray() || offs.size() != 2) {
                throw new InvalidInputException(where + ": header entry needs dtype, shape and data_offsets [begin, end]");
            }
            DType dtype = DType.safetensors(dt.asText());
            if (dtype == null) {
                throw new InvalidInputException(where + ": unknown dtype " + dt.asText() + " (supported: "
                        + DType.supported() + ")");
            }
            long[] shape = new long[shapeNode.size()];
            for (int i = 0; i < shape.length; i++) {
                JsonNode d = shapeNode.get(i);
                if (!d.canConvertToLong() || !d.isIntegralNumber() || d.asLong() < 0) {
                    throw new InvalidInputException(where + ": shape " + shapeNode + " is not a list of non-negative integers");
                }
                shape[i] = d.asLong();
            }
            if (!offs.get(0).isIntegralNumber() || !offs.get(1).isIntegralNumber() || !offs.get(0).canConvertToLong()
                    || !offs.get(1).canConvertToLong()) {
                throw new InvalidInputException(where + ": data_offsets " + offs + " are not integers");
            }
            long begin = offs.get(0).asLong();
            long end = offs.get(1).asLong();
            long need = Tensor.byteSize(shape, dtype, where);
            if (begin < 0 || end < begin || end - begin != need) {
                throw new InvalidInputException(where + ": data_offsets " + offs + " span " + (end - begin)
                        + " bytes but shape " + shapeNode + " of " + dtype + " needs " + need);
            }
            if (end > dataSize) {
                throw new InvalidInputException(where + ": file truncated: the tensor needs data bytes " + begin + ".." + end
                        + " but the file holds " + dataSize + " bytes of data");
            }
            Tensor tensor = new Tensor(name, dtype, shape, m.asSlice(dataStart + begin, need), path.toString(), dataStart + begin);
            if (need > 0) {
                // tensors may not share bytes (the format forbids it): V aliasing K would compare a cache with itself
                Map.Entry<Long, Tensor> before = byBegin.floorEntry(begin);
                Map.Entry<Long, Tensor> after = byBegin.ceilingEntry(begin);
                Tensor other = before != null && before.getKey() + before.getValue().data().byteSize() > begin
                        ? before.getValue() : after != null && after.getKey() < end ? after.getValue() : null;
                if (other != null) {
                    throw new InvalidInputException(where + ": data_offsets " + offs + " overlap those of tensor "
                            + other.name() + " (" + (other.fileOffset() - dataStart) + ".."
                            + (other.fileOffset() - dataStart + other.data().byteSize()) + ")");
                }
                byBegin.put(begin, tensor);
            }
            ts.put(name, tensor);
        }
        return ts;
    }

    /**
     * Checks that {@code path} is a regular file (after links) without opening it: opening a FIFO with no writer
     * blocks forever, and a device such as {@code /dev/zero} never ends.
     *
     * @return its size in bytes
     * @throws InvalidInputException when it is missing, unreadable, a directory, FIFO, socket or device
     */
    public static long requireRegularFile(Path path) {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (IOException e) {
            throw unreadable(path, e);
        }
        if (a.isDirectory()) {
            throw new InvalidInputException(path + " is a directory, not a file");
        }
        if (!a.isRegularFile()) {
            throw new InvalidInputException(path + " is not a regular file (a FIFO, socket or device): give a file");
        }
        return a.size();
    }

    static MemorySegment map(Path path, Arena arena) {
        requireRegularFile(path);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size == 0) {
                return MemorySegment.NULL.reinterpret(0);
            }
            MemorySegment early = PREFETCHED.remove(path.toAbsolutePath().normalize());
            if (early != null && early.byteSize() == size) {
                return early;
            }
            return ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
        } catch (IOException e) {
            throw unreadable(path, e);
        }
    }

    /** Files from this size on are worth {@link #prefetch}ing. */
    static final long PREFETCH_BYTES = 64L << 20;

    /** Mappings made by {@link #prefetch}, by absolute path, until a dump opens them. */
    private static final java.util.concurrent.ConcurrentHashMap<Path, MemorySegment> PREFETCHED =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Starts reading the regular files of {@code paths} of at least {@value #PREFETCH_BYTES} bytes on a background
     * thread, before the command line is even parsed: each is mapped, and its pages are touched ({@link #touch}), so
     * that the page tables are filled while the JVM is still starting, on another
     * core; {@link #open} then uses that mapping. A one-shot {@code sum} of a 2 GiB dump otherwise takes its page
     * faults after start-up. Anything that goes wrong here (a path that is no file, a file cut short while it is read)
     * is left for {@link #open} to report: this only ever costs or saves time. The mappings live until the JVM ends.
     *
     * @param paths the command's arguments; those that are not large regular files are ignored
     */
    public static void prefetch(List<String> paths) {
        for (String p : paths) {
            try {
                Path path = Path.of(p).toAbsolutePath().normalize();
                if (!Files.isRegularFile(path) || Files.size(path) < PREFETCH_BYTES || PREFETCHED.containsKey(path)) {
                    continue;
                }
                MemorySegment m;
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
                    m = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), Arena.ofAuto());
                }
                PREFETCHED.put(path, m);
                Thread.ofPlatform().daemon().name("kvchecksum-prefetch").start(() -> {
                    try {
                        touch(m);
                    } catch (Throwable t) {
                        // a file that shrank (SIGBUS) or anything else: open() reads it again and says what is wrong
                    }
                });
            } catch (IOException | RuntimeException e) {
                // not a readable file: open() reports it, if it is a dump at all
            }
        }
    }

    /** Bytes apart that {@link #touch} reads: the kernel maps a faulting page's cached neighbours with it. */
    static final int TOUCH_STRIDE = 64 << 10;

    /**
     * Reads one byte of every {@value #TOUCH_STRIDE} bytes of {@code m}, so that its page-cache pages get mapped: on a
     * page fault Linux maps the cached pages around the one faulted (fault-around, 64 KiB by default), so one read per
     * 64 KiB maps them all, where {@link MemorySegment#load()} reads a byte of every 4 KiB page, first interpreted and
     * then through a compilation of its own (measured: CPU time of the prefetch thread, a 2 GiB dump). Pages left
     * unmapped (a smaller fault-around, a file not in the page cache) are simply faulted in by whoever reads them
     * first. Through a ByteBuffer, whose reads cost less than a first VarHandle access in a fresh JVM.
     */
    static void touch(MemorySegment m) {
        long size = m.byteSize();
        for (long base = 0; base < size; base += 1L << 30) {
            java.nio.ByteBuffer b = m.asSlice(base, Math.min(1L << 30, size - base)).asByteBuffer();
            for (int i = 0; i < b.capacity(); i += TOUCH_STRIDE) {
                b.get(i);
            }
        }
    }

    static InvalidInputException unreadable(Path path, IOException e) {
        String why = e instanceof NoSuchFileException ? "no such file"
                + (path.toString().startsWith("@") ? " (a dump is named without '@')" : "")
                : e instanceof AccessDeniedException ? "permission denied" : e.getMessage();
        return new InvalidInputException("cannot read " + path + ": " + why, e);
    }

    private static boolean startsWith(MemorySegment m, byte[] magic) {
        return m.byteSize() >= magic.length && m.asSlice(0, magic.length).mismatch(MemorySegment.ofArray(magic)) < 0;
    }

    /** The tensor of that name, or {@code null}. */
    public Tensor get(String name) {
        return tensors.get(name);
    }

    /** Unmaps the file; tensors must not be used afterwards. */
    @Override
    public void close() {
        arena.close();
    }
}
