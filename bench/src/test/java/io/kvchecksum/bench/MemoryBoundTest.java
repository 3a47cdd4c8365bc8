package io.kvchecksum.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The read bound's readers read every word; the cache sizes come from /sys as Linux writes them. No timing. */
class MemoryBoundTest {
    private static final long SEED = 13;

    private static List<MemorySegment> segments(Arena arena, long... sizes) {
        SplittableRandom rnd = new SplittableRandom(SEED);
        List<MemorySegment> out = new ArrayList<>();
        for (long n : sizes) {
            MemorySegment s = arena.allocate(n, 8);
            for (long i = 0; i < n / 8; i++) {
                s.setAtIndex(ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            out.add(s);
        }
        return out;
    }

    /** Bounds over {@code segs} with the vector loops of Intel and of AMD, whichever CPU runs the test. */
    private static List<MemoryBound> bothLoops(List<MemorySegment> segs, int threads) {
        List<MemoryBound.Range> ranges = segs.stream().map(m -> new MemoryBound.Range(m, 0, m.byteSize())).toList();
        return List.of(new MemoryBound(threads, ranges, true), new MemoryBound(threads, ranges, false));
    }

    @Test
    void everyReaderReadsEveryWordOnOneAndSeveralThreads() {
        try (Arena arena = Arena.ofShared()) {
            // odd sizes: tails shorter than a vector step and than an unrolled scalar step
            List<MemorySegment> segs = segments(arena, 3L << 20, 8, 1000 * 8 + 8, (2L << 20) + 24);
            long expected = 0;
            for (MemorySegment s : segs) {
                for (long o = 0; o < s.byteSize(); o += 8) {
                    expected += s.get(ValueLayout.JAVA_LONG, o);
                }
            }
            for (int threads : new int[] {1, 2, 3}) {
                for (MemoryBound b : bothLoops(segs, threads)) {
                    assertEquals(threads > 1, b.parallel());
                    assertEquals(expected, b.readScalar());
                    assertEquals(expected, b.read(MemoryBound.Reader.SCALAR), threads + " threads");
                    assertEquals(expected, b.read(MemoryBound.Reader.VECTOR), threads + " threads");
                    if (MemoryBound.Reader.VECTOR256.unavailable() == null) {
                        assertEquals(expected, b.read(MemoryBound.Reader.VECTOR256), threads + " threads, 256-bit");
                    }
                    if (MemoryBound.Reader.NATIVE.unavailable() == null) {
                        assertEquals(0, b.read(MemoryBound.Reader.NATIVE));
                    }
                    b.close();
                }
            }
        }
    }

    @Test
    void vectorReadersReadPartsOfUnequalLengthsInStreamsWholly() {
        // the vector loops read two or four streams of a task's words in lockstep (with the loops of Intel and of AMD,
        // whichever CPU runs this): counts that are not a multiple of four,
        // groups of unequal lengths (a stream's cut inside a part, the longer part's rest in the next group), parts
        // shorter than a step, streams a word longer than the others, and a long part after short ones
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> segs = segments(arena, 4096, 520, 264, 8, (64L << 10) + 8, 1024, 1 << 20);
            long expected = 0;
            for (MemorySegment s : segs) {
                for (long o = 0; o < s.byteSize(); o += 8) {
                    expected += s.get(ValueLayout.JAVA_LONG, o);
                }
            }
            for (int n = 1; n <= segs.size(); n++) {
                for (MemoryBound b : bothLoops(segs.subList(0, n), 1)) {
                    long want = b.readScalar();
                    assertEquals(want, b.read(MemoryBound.Reader.VECTOR), n + " parts");
                    if (MemoryBound.Reader.VECTOR256.unavailable() == null) {
                        assertEquals(want, b.read(MemoryBound.Reader.VECTOR256), n + " parts, 256-bit");
                    }
                }
            }
            for (MemoryBound b : bothLoops(segs, 1)) {
                assertEquals(expected, b.read(MemoryBound.Reader.VECTOR));
                if (MemoryBound.Reader.VECTOR256.unavailable() == null) {
                    assertEquals(expected, b.read(MemoryBound.Reader.VECTOR256));
                }
            }
            // many parts: groups of four neighbours, an emptied place taken by the next part, the rest as streams
            List<MemorySegment> many = segments(arena, 18432, 18432, 18432, 18432, 18432, 18440, 64, 18432, 4096, 8,
                    18432, 65536, 18432, 24, 18432);
            for (int n = 1; n <= many.size(); n++) {
                for (int threads : new int[] {1, 2}) {
                    for (MemoryBound b : bothLoops(many.subList(0, n), threads)) {
                        long want = b.readScalar();
                        assertEquals(want, b.read(MemoryBound.Reader.VECTOR), n + " parts");
                        if (MemoryBound.Reader.VECTOR256.unavailable() == null) {
                            assertEquals(want, b.read(MemoryBound.Reader.VECTOR256), n + " parts, 256-bit");
                        }
                        b.close();
                    }
                }
            }
        }
    }

    @Test
    void shortPartsAreReadOneAtATimeWholly() {
        // SGLang's pages: parts under 8 KiB on average take the one-part-at-a-time loop; odd word counts leave tails, one
        // part a byte tail, and on two threads (over 4 MiB) the tasks cut parts in the middle
        try (Arena arena = Arena.ofShared()) {
            long[] sizes = new long[2200];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = i % 97 == 5 ? 2048 + 8 * (i % 7 + 1) : 2048;
            }
            sizes[3] = 2048 + 5;   // a byte tail under a word: read by no reader, and by none past the part's end
            List<MemorySegment> pages = segments(arena, sizes);
            for (int threads : new int[] {1, 2}) {
                for (int n : new int[] {1, 2, 3, 7, 100, pages.size()}) {
                    for (MemoryBound b : bothLoops(pages.subList(0, n), threads)) {
                        long want = b.readScalar();
                        assertEquals(want, b.read(MemoryBound.Reader.VECTOR), n + " pages, " + threads + " threads");
                        if (MemoryBound.Reader.VECTOR256.unavailable() == null) {
                            assertEquals(want, b.read(MemoryBound.Reader.VECTOR256), n + " pages, 256-bit");
                        }
                        b.close();
                    }
                }
            }
        }
    }

    @Test
    void measureReportsTheFastestReaderAndEveryTime() {
        try (Arena arena = Arena.ofShared(); MemoryBound b = new MemoryBound(segments(arena, 1L << 16), 1)) {
            // a fake timer: the native reader "takes" 1 ns, the others 5 and 9, so the fastest is known in advance
            MemoryBound.Measurement m = b.measure(work -> {
                long v = work.getAsLong();
                return v == 0 ? 1 : v == b.readScalar() ? 5 : 9;
            });
            List<MemoryBound.Reader> readers = MemoryBound.readers();
            assertEquals(readers.size(), m.nanosByReader().size());
            assertEquals(readers.contains(MemoryBound.Reader.NATIVE) ? MemoryBound.Reader.NATIVE : MemoryBound.Reader.VECTOR,
                    m.reader());
            assertEquals(1L << 16, m.bytes());
        }
    }

    @Test
    void aChecksumFasterThanTheBoundIsNotAResult() {
        assertTrue(MemoryBound.plausible(0.97, 0));
        assertTrue(MemoryBound.plausible(1.0, 0));
        assertFalse(MemoryBound.plausible(1.2, 0.05));
        assertTrue(MemoryBound.plausible(1.04, 0.05));
    }

    @Test
    void theNativeReaderIsAvailableOrSaysWhy() {
        String why = MemoryBound.Reader.NATIVE.unavailable();
        // surefire runs with --enable-native-access; glibc's memcmp reads what it compares
        assertNull(why, why);
        assertNull(MemoryBound.Reader.SCALAR.unavailable());
    }

    @Test
    void cacheSizesAreReadAsLinuxWritesThem(@TempDir Path dir) throws IOException {
        write(dir.resolve("index0"), "1", "Data", "32K");
        write(dir.resolve("index1"), "1", "Instruction", "32K");
        write(dir.resolve("index2"), "2", "Unified", "1024K");
        write(dir.resolve("index3"), "3", "Unified", "32768K");
        Caches c = Caches.read(dir);
        assertEquals(1L << 20, c.l2());
        assertEquals(32L << 20, c.llc());
        assertEquals("/sys", c.source());
        assertEquals(512L << 10, c.bytesOf("L2"));
        assertEquals(16L << 20, c.bytesOf("llc"));
        assertEquals(128L << 20, c.bytesOf("4xLLC"));
        assertEquals(-1, c.bytesOf("256MiB"));
        assertEquals(3L << 30, Caches.parseSize("3G"));
    }

    @Test
    void missingCacheInformationIsAssumedAndSaysSo(@TempDir Path dir) {
        Caches c = Caches.read(dir.resolve("absent"));
        assertTrue(c.source().startsWith("assumed"), c.source());
        assertTrue(c.llc() > c.l2());
    }

    @Test
    void anUnknownReaderIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> MemoryBound.Reader.of("avx9"));
        assertEquals(MemoryBound.Reader.NATIVE, MemoryBound.Reader.of("native"));
    }

    private static void write(Path index, String level, String type, String size) throws IOException {
        Files.createDirectories(index);
        Files.writeString(index.resolve("level"), level + "\n");
        Files.writeString(index.resolve("type"), type + "\n");
        Files.writeString(index.resolve("size"), size + "\n");
    }
}
