package io.kvchecksum.bench;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The read bound's native reader: the C library's {@code memcmp(p, p, n)} through the FFM API. A byte-wise compare of
 * a range with itself loads every byte with the library's hand-written vector loop (glibc picks an AVX2 or EVEX one
 * for the CPU) and returns 0; it is the fastest native reader that needs no library of our own.
 *
 * <p>A C library that short-cut {@code p == q} would read nothing; that is checked once at start-up (reading 32 times
 * the bytes must take several times as long), and such a reader is unavailable, never trusted.
 */
final class NativeRead {
    /** {@code null} when the reader runs here, else why not. */
    static final String UNAVAILABLE;
    private static final MethodHandle MEMCMP;

    static {
        MethodHandle h = null;
        String why;
        try {
            Linker linker = Linker.nativeLinker();
            h = linker.defaultLookup().find("memcmp").map(a -> linker.downcallHandle(a,
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG),
                    // a read of at most a few MiB per call: no need to let the GC run during it
                    Linker.Option.critical(false))).orElse(null);
            why = h == null ? "the C library has no memcmp" : readsEveryByte(h);
        } catch (RuntimeException | LinkageError e) {
            why = "no native access (" + e.getClass().getSimpleName() + ": " + e.getMessage()
                    + "); run with --enable-native-access=ALL-UNNAMED";
        }
        MEMCMP = why == null ? h : null;
        UNAVAILABLE = why;
    }

    private NativeRead() {
    }

    static long readPart(MemorySegment s, long offset, long length) {
        MemorySegment p = s.asSlice(offset, length);
        try {
            return (int) MEMCMP.invokeExact(p, p, length);
        } catch (Throwable t) {
            throw new IllegalStateException("native read failed", t);
        }
    }

    /** {@code null} when 32 times the bytes take at least 4 times as long (best of several), else why not trusted. */
    private static String readsEveryByte(MethodHandle memcmp) {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            long big = 4L << 20;
            MemorySegment s = arena.allocate(big, 64);
            long small = big / 32;
            double tSmall = best(memcmp, s.asSlice(0, small));
            double tBig = best(memcmp, s);
            if (tBig < 4 * tSmall) {
                return "memcmp(p, p, n) does not read every byte here (" + big + " bytes in " + (long) tBig + " ns, "
                        + small + " in " + (long) tSmall + " ns)";
            }
            return null;
        } catch (Throwable t) {
            return "memcmp failed: " + t;
        }
    }

    private static double best(MethodHandle memcmp, MemorySegment s) throws Throwable {
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 20; i++) {
            long t = System.nanoTime();
            int r = (int) memcmp.invokeExact(s, s, s.byteSize());
            long d = System.nanoTime() - t;
            if (r != 0) {
                throw new IllegalStateException("memcmp(p, p, n) returned " + r);
            }
            best = Math.min(best, d);
        }
        return best;
    }
}
