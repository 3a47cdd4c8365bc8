package io.kvchecksum.cli.dump;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link DumpFile#prefetch}: a dump opened after it reads the mapping the prefetch made (same bytes, same addresses),
 * a dump opened without it maps anew, and arguments that are no large files are ignored without a word.
 */
class PrefetchTest {
    /** A gathered safetensors dump of one layer, {@code tokens x 8 x 128} bf16 K and V, sparse: the KV is zeros but its last byte. */
    private static Path dump(Path dir, String name, int tokens) throws IOException {
        long per = (long) tokens * 8 * 128 * 2;
        String h = "{\"layers.0.k\":{\"dtype\":\"BF16\",\"shape\":[" + tokens + ",8,128],\"data_offsets\":[0," + per + "]},"
                + "\"layers.0.v\":{\"dtype\":\"BF16\",\"shape\":[" + tokens + ",8,128],\"data_offsets\":[" + per + ","
                + 2 * per + "]}}";
        h += " ".repeat((8 - h.length() % 8) % 8);
        Path p = dir.resolve(name);
        try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
            f.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length()).array());
            f.write(h.getBytes(StandardCharsets.US_ASCII));
            f.setLength(8 + h.length() + 2 * per);
            f.seek(8 + h.length() + 2 * per - 1);
            f.write(0x5A);
        }
        return p;
    }

    @Test
    void aDumpOpenedAfterThePrefetchReadsItsMapping(@TempDir Path dir) throws IOException {
        Path big = dump(dir, "big.safetensors", (int) (DumpFile.PREFETCH_BYTES / (2 * 8 * 128 * 2)) + 16);
        DumpFile.prefetch(List.of("sum", "--block-size", "16", big.toString(), dir.resolve("missing").toString(),
                dir.toString(), "@" + big));
        try (DumpFile first = DumpFile.open(big); DumpFile second = DumpFile.open(big)) {
            Tensor a = first.tensors().get("layers.0.v");
            Tensor b = second.tensors().get("layers.0.v");
            assertEquals(0x5A, a.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, a.data().byteSize() - 1));
            assertEquals(-1, a.data().mismatch(b.data()), "the same bytes either way");
            // the first open took the prefetched mapping, the second mapped the file itself
            assertNotEquals(a.data().address(), b.data().address());
        }
    }

    @Test
    void touchReadsEveryStrideAndStopsAtTheEnd() {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            for (long size : List.of(0L, 1L, (long) DumpFile.TOUCH_STRIDE - 1, (long) DumpFile.TOUCH_STRIDE,
                    DumpFile.TOUCH_STRIDE + 1L, 5L * DumpFile.TOUCH_STRIDE + 3)) {
                DumpFile.touch(arena.allocate(Math.max(1, size)).asSlice(0, size));
            }
        }
    }

    @Test
    void smallFilesAreLeftToOpen(@TempDir Path dir) throws IOException {
        Path small = dump(dir, "small.safetensors", 16);
        DumpFile.prefetch(List.of(small.toString()));
        try (DumpFile d = DumpFile.open(small)) {
            assertTrue(d.tensors().containsKey("layers.0.k"));
        }
    }
}
