package io.kvchecksum;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** In-place copies for the tests of the plan's staging and of the cpu backend's stage: layouts, and the check. */
public final class InPlaceCopies {
    private InPlaceCopies() {
    }

    /** Builds the source ({@code source} true) or the destination group of a copy over one memory. */
    public interface Layout {
        /**
         * {@return the group of one side over {@code m}}
         *
         * @param m the memory both sides share
         * @param source whether the source's group is wanted
         */
        KvCacheGroup group(KvMemory m, boolean source);
    }

    /**
     * vLLM flash ({@code [2][pages][16][heads][cell]} per layer, layers one after another) read as FlashInfer HND
     * ({@code [2][pages][heads][16][cell]}) on the same memory, as vLLM's in-place rearrangement does.
     *
     * @param layers the layers
     * @param heads the heads per layer
     * @param cell the bytes of one head's K (or V) of one token
     * @param pages the pages per layer
     */
    public static Layout nhdReadAsHnd(int layers, int heads, int cell, int pages) {
        return (m, source) -> flashOrHnd(m, layers, heads, cell, 16, pages, !source);
    }

    /**
     * vLLM flash ({@code [2][pages][pageSize][heads][cell]} per layer, the layers one after another in {@code m}) or,
     * with {@code hnd}, FlashInfer HND ({@code [2][pages][heads][pageSize][cell]}) over the same bytes. (The backend
     * modules' tests take the same layout from {@code CopySuite.flashOrHnd} in the golden module, which depends on this
     * one.)
     *
     * @param m the memory
     * @param layers the layers
     * @param heads the heads per layer
     * @param cell the bytes of one head's K (or V) of one position
     * @param pageSize the positions per page
     * @param pages the pages per layer
     * @param hnd whether the HND side is wanted (else flash)
     * @return the group
     */
    public static KvCacheGroup flashOrHnd(KvMemory m, int layers, int heads, int cell, int pageSize, int pages,
            boolean hnd) {
        long page = (long) pageSize * heads * cell;
        List<CacheLayer> ls = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            long k = l * 2 * pages * page;
            long v = k + pages * page;
            ls.add(hnd ? CacheLayer.of(l, 0, heads, new KvRegion(m, k, page, cell, (long) pageSize * cell, cell),
                    new KvRegion(m, v, page, cell, (long) pageSize * cell, cell))
                    : CacheLayer.of(l, 0, heads, new KvRegion(m, k, page, (long) heads * cell, cell, cell),
                    new KvRegion(m, v, page, (long) heads * cell, cell, cell)));
        }
        return KvCacheGroup.of(pageSize, pages, ls);
    }

    /** {@return block ids {@code (i * 37 + 5) mod pages}: a permutation wherever 37 is prime to {@code pages}} @param pages the pages */
    public static int[] shuffledBlocks(int pages) {
        int[] table = new int[pages];
        for (int i = 0; i < pages; i++) {
            table[i] = (i * 37 + 5) % pages;
        }
        return table;
    }

    /**
     * Runs the copy in place on {@code backend} over a buffer of {@code bytes} random bytes, and out of place on the
     * reference over clones; asserts that the plan is staged, and that both values and final bytes are equal.
     *
     * @param backend the backend copying in place
     * @param bytes the buffer's bytes
     * @param layout both sides' groups over one memory
     * @param sq the source's request
     * @param dq the destination's request
     * @param seed the buffer's random bytes' seed
     * @param beforeCopy runs right before the in-place copy
     * @return the in-place plan
     */
    public static CopyPlan sameAsOutOfPlace(KvChecksum backend, long bytes, Layout layout, RequestBlocks sq,
            RequestBlocks dq, long seed, Runnable beforeCopy) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(bytes, 64);
            Random rnd = new Random(seed);
            for (long i = 0; i < bytes / 8; i++) {
                buf.setAtIndex(ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            MemorySegment src = arena.allocate(bytes, 64).copyFrom(buf);
            MemorySegment dst = arena.allocate(bytes, 64).copyFrom(buf);
            KvChecksum reference = KvChecksums.reference();
            CopyPlan apart = reference.compileCopy(layout.group(KvMemory.host(src), true), sq,
                    layout.group(KvMemory.host(dst), false), dq, ChecksumSpec.STANDARD);
            assertFalse(apart.overlaps());
            long[] expected = reference.copyAndChecksum(apart);

            KvMemory m = KvMemory.host(buf);
            CopyPlan plan = backend.compileCopy(layout.group(m, true), sq, layout.group(m, false), dq, ChecksumSpec.STANDARD);
            assertTrue(plan.overlaps() && plan.staged(), plan.toString());
            beforeCopy.run();
            assertArrayEquals(expected, backend.copyAndChecksum(plan), backend.name() + ": values");
            assertTrue(buf.mismatch(dst) < 0, backend.name() + ": bytes differ at " + buf.mismatch(dst));
            return plan;
        }
    }
}
