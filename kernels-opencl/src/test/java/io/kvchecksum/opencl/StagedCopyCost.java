package io.kvchecksum.opencl;

import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.golden.CopySuite;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Not a test: OpenCL's staged (in-place) verifying copy, {@code copy_staged}, against the same copy out of place
 * ({@code copy_pieces}) on the opencl backend's default device (PoCL's CPU device here), in one JVM, interleaved: per
 * round one out-of-place copy (vLLM flash NHD pages into HND pages of another buffer, the same block ids) and one
 * in-place copy (NHD read as HND in the same buffer), in host memory, after 2 s of warm-up; medians and best of the
 * rounds in GB/s of KV moved, and the ratio of the medians. The out-of-place copy is the control when two builds of
 * {@code copy_staged} are compared in interleaved processes. Shape: Llama-3-8B-like, {@code layers} x 8 KV heads x
 * 256-byte cells, pages of 16, {@code pages} pages (a power of two) in a scattered table, every value checked against
 * the reference backend once. Run from the repository after
 * {@code mvn -o -q -pl kernels-opencl -am test-compile -Dkvchecksum.skipCuda=true -Dexec.skip=true}:
 * {@code java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -cp
 * kernels-opencl/target/classes:kernels-opencl/target/test-classes:bindings/target/classes:$(cat cp.txt)
 * io.kvchecksum.opencl.StagedCopyCost SECONDS LAYERS PAGES} (cp.txt from {@code mvn -o -q -pl kernels-opencl
 * dependency:build-classpath -Dmdep.outputFile=cp.txt}).
 */
public final class StagedCopyCost {
    private static final int HEADS = 8;
    private static final int CELL = 256;
    private static final int PAGE = 16;

    private StagedCopyCost() {
    }

    /**
     * Runs the comparison.
     *
     * @param args seconds, layers, pages
     */
    public static void main(String[] args) {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        int layers = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int pages = args.length > 2 ? Integer.parseInt(args[2]) : 64;
        long bytes = 2L * layers * pages * PAGE * HEADS * CELL;
        int[] table = new int[pages];
        for (int i = 0; i < pages; i++) {
            table[i] = (int) ((i * 2654435761L + 7) % pages);
        }
        if (Arrays.stream(table).distinct().count() != pages) {
            throw new IllegalArgumentException("pages must be a power of two");
        }
        RequestBlocks q = RequestBlocks.of(table, (long) pages * PAGE, PAGE);
        KvChecksum cl = KvChecksums.byName("opencl");
        KvChecksum reference = KvChecksums.reference();
        try (Arena arena = Arena.ofShared()) {
            java.lang.foreign.MemorySegment seed = arena.allocate(bytes, 64);
            java.util.Random rnd = new java.util.Random(29);
            for (long i = 0; i < bytes / 8; i++) {
                seed.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            KvMemory a = KvMemory.host(arena.allocate(bytes, 64).copyFrom(seed));
            KvMemory b = KvMemory.host(arena.allocate(bytes, 64));
            KvMemory c = KvMemory.host(arena.allocate(bytes, 64).copyFrom(seed));
            CopyPlan apart = cl.compileCopy(group(a, layers, pages, false), q, group(b, layers, pages, true), q,
                    ChecksumSpec.STANDARD);
            CopyPlan inPlace = cl.compileCopy(group(c, layers, pages, false), q, group(c, layers, pages, true), q,
                    ChecksumSpec.STANDARD);
            if (apart.overlaps() || !inPlace.staged()) {
                throw new IllegalStateException("shapes");
            }
            long[] expected = reference.copyAndChecksum(reference.compileCopy(group(a, layers, pages, false), q,
                    group(b, layers, pages, true), q, ChecksumSpec.STANDARD));
            if (!Arrays.equals(expected, cl.copyAndChecksum(apart)) || !Arrays.equals(expected, cl.copyAndChecksum(inPlace))) {
                throw new IllegalStateException("values differ from the reference backend's");
            }
            long warm = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < warm) {
                cl.copyAndChecksum(apart);
                cl.copyAndChecksum(inPlace);
            }
            List<Long> ta = new ArrayList<>();
            List<Long> tb = new ArrayList<>();
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            while (System.nanoTime() < end) {
                long t0 = System.nanoTime();
                cl.copyAndChecksum(apart);
                long t1 = System.nanoTime();
                cl.copyAndChecksum(inPlace);
                long t2 = System.nanoTime();
                ta.add(t1 - t0);
                tb.add(t2 - t1);
            }
            System.out.printf("opencl %d layers x %d heads x %d B, %d pages of %d (%.1f MiB), %d rounds: out of place median"
                            + " %.2f GB/s (best %.2f), in place (staged) median %.2f GB/s (best %.2f), in place / out of"
                            + " place %.2f (medians)%n", layers, HEADS, CELL, pages, PAGE, bytes / 1048576.0, ta.size(),
                    bytes / (double) median(ta), bytes / (double) best(ta), bytes / (double) median(tb),
                    bytes / (double) best(tb), (double) median(ta) / median(tb));
        }
    }

    private static KvCacheGroup group(KvMemory m, int layers, int pages, boolean hnd) {
        return CopySuite.flashOrHnd(m, layers, HEADS, CELL, PAGE, pages, hnd);
    }

    private static long median(List<Long> v) {
        long[] s = v.stream().mapToLong(Long::longValue).sorted().toArray();
        return s[s.length / 2];
    }

    private static long best(List<Long> v) {
        return v.stream().mapToLong(Long::longValue).min().orElseThrow();
    }
}
