package io.kvchecksum.bench;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The probe's window bound reads exactly the probe's windows, on one thread and over the pool. No timing. */
class ProbeWindowBoundTest {
    private static final long SEED = 0x9B0B;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Test
    void readsEveryWindowOnceOnVllmFlashAndSglangPages() {
        System.out.println("ProbeWindowBoundTest seed = " + SEED + ", vector " + ProbeWindowBound.vector());
        Random rnd = new Random(SEED);
        // 150 pages of 16 and 700 of 1 x 64 parts: 19200 and 89600 windows, over the size from which it spreads
        // chunks over the pool; 3 pages: on the calling thread. Each request ends inside its last page where pages
        // hold several tokens.
        for (int[] c : new int[][] {{16, 150}, {1, 700}, {16, 3}, {1, 3}}) {
            int pageSize = c[0];
            int pages = c[1];
            try (Arena arena = Arena.ofShared()) {
                KvLayouts.PagedShape shape = new KvLayouts.PagedShape(pages, pageSize, 8, 64, 2);
                List<KvMemory> ks = new ArrayList<>();
                List<KvMemory> vs = new ArrayList<>();
                for (int l = 0; l < 4; l++) {
                    for (List<KvMemory> into : List.of(ks, vs)) {
                        MemorySegment m = arena.allocate((long) pages * pageSize * 8 * 64 * 2 * (pageSize == 16 ? 2 : 1), 64);
                        for (long o = 0; o < m.byteSize(); o += 8) {
                            m.set(ValueLayout.JAVA_LONG, o, rnd.nextLong());
                        }
                        into.add(KvMemory.host(m));
                    }
                }
                int[] layers = {0, 1, 2, 3};
                KvCacheGroup g = pageSize == 16 ? KvLayouts.vllmFlash(shape, 0, layers, ks)
                        : KvLayouts.sglang(shape, 0, layers, ks, vs);
                List<Integer> t = new ArrayList<>(IntStream.range(0, pages).boxed().toList());
                Collections.shuffle(t, rnd);
                long tokens = (long) pages * pageSize - (pageSize == 16 ? 5 : 0);
                SlicePlan plan = SlicePlan.of(g, RequestBlocks.of(t.stream().mapToInt(Integer::intValue).toArray(),
                        tokens, 16));
                ProbeWindowBound b = ProbeWindowBound.of(plan);
                long want = expected(plan);
                assertEquals(want, b.read(), "page size " + pageSize + ", " + pages + " pages");
                assertEquals(want, b.readOnCaller(), "page size " + pageSize + ", " + pages + " pages, one thread");
                assertEquals(2L * 2 * 4 * 8 * plan.numPages(), b.windows());
            }
        }
    }

    /** The definition: every word of each part's head window (page's first token) and tail window (its last). */
    private static long expected(SlicePlan plan) {
        long sum = 0;
        for (int i = 0; i < plan.numPages(); i++) {
            long last = Math.min(plan.pageSize(), plan.request().numTokens() - (long) i * plan.pageSize()) - 1;
            for (SlicePlan.Slice s : plan.slices()) {
                for (SlicePlan.Part p : new SlicePlan.Part[] {s.k(), s.v()}) {
                    MemorySegment m = ((KvMemory.Host) p.memory()).segment();
                    long head = p.cellOffset(plan.page(i), 0);
                    long tail = p.cellOffset(plan.page(i), last) + p.pieces() * 8L - 64;
                    for (int w = 0; w < 8; w++) {
                        sum += m.get(WORD, head + 8L * w) + m.get(WORD, tail + 8L * w);
                    }
                }
            }
        }
        return sum;
    }
}
