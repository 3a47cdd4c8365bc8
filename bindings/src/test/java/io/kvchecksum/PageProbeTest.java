package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The probe's two paths (direct host reads; windows digested by a backend, what device memory takes) against the
 * definition written out with {@link StateDigests#reference} per window, on random layouts (fixed seed).
 */
class PageProbeTest {
    private static final long SEED = 0x9A6E;

    @Test
    void bothPathsAgreeWithTheDefinitionOnRandomLayouts() {
        System.out.println("PageProbeTest seed = " + SEED);
        Random rnd = new Random(SEED);
        for (int trial = 0; trial < 40; trial++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCaches.Case c = RandomCaches.random(arena, rnd, 1, 90);
                SlicePlan plan = SlicePlan.of(c.group(), c.request());
                int probe = 8 * (1 + rnd.nextInt(12));
                PageProbe.Probes direct = PageProbe.compute(KvChecksums.cpu(), plan, probe);
                assertEquals(expected(plan, probe), direct, "seed " + SEED + " trial " + trial);
                for (KvChecksum k : List.of(KvChecksums.reference(), KvChecksums.cpu())) {
                    assertEquals(direct, PageProbe.throughBackend(k, plan, probe), k.name() + " trial " + trial);
                }
            }
        }
    }

    @Test
    void theParallelPathAgreesWithTheDefinitionOnLargeRequests() {
        // Over the size from which the host path spreads pages over the pool (a shared arena), vLLM flash pages of 16
        // tokens and SGLang pages of one, shuffled tables and a request ending inside its last page.
        Random rnd = new Random(SEED + 1);
        for (int pageSize : new int[] {16, 1}) {
            try (Arena arena = Arena.ofShared()) {
                int pages = pageSize == 16 ? 150 : 700;   // 19200 and 89600 windows: over the parallel size
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
                int[] table = new int[pages];
                for (int i = 0; i < pages; i++) {
                    table[i] = i;
                }
                for (int i = pages - 1; i > 0; i--) {
                    int j = rnd.nextInt(i + 1);
                    int t = table[i];
                    table[i] = table[j];
                    table[j] = t;
                }
                SlicePlan plan = SlicePlan.of(g, RequestBlocks.of(table, (long) pages * pageSize - (pageSize == 16 ? 5 : 0), 16));
                for (int probe : new int[] {64, 24, 256}) {
                    PageProbe.Probes want = expected(plan, probe);
                    assertEquals(want, PageProbe.compute(KvChecksums.cpu(), plan, probe),
                            "seed " + (SEED + 1) + " page size " + pageSize + " probe " + probe);
                    for (boolean touch : new boolean[] {false, true}) {   // this CPU's choice and the other
                        assertEquals(want, PageProbe.onHost(plan, probe, touch),
                                "seed " + (SEED + 1) + " page size " + pageSize + " probe " + probe + " touch " + touch);
                    }
                }
            }
        }
    }

    private static PageProbe.Probes expected(SlicePlan plan, int probe) {
        RequestBlocks r = plan.request();
        int ps = plan.pageSize();
        int pages = (int) Math.ceilDiv(r.numTokens() - r.startToken(), (long) ps);
        long[] head = new long[pages];
        long[] tail = new long[pages];
        for (int i = 0; i < pages; i++) {
            long first = r.startToken() + (long) i * ps;
            long last = Math.min(first + ps, r.numTokens()) - 1;
            for (CacheLayer l : plan.group().layers()) {
                for (int h = 0; h < l.numHeads(); h++) {
                    for (int kind = 0; kind < 2; kind++) {
                        KvRegion reg = kind == 0 ? l.k() : l.v();
                        if (reg == null) {
                            continue;
                        }
                        int n = Math.min(probe, reg.cellBytes());
                        long w = 2 * (2 * ((long) l.layer() * 65536 + l.firstHead() + h) + kind) + 1;
                        long hs = reg.cellOffset(plan.pageOf(first), plan.slotOf(first), h);
                        long ts = reg.cellOffset(plan.pageOf(last), plan.slotOf(last), h) + reg.cellBytes() - n;
                        head[i] += w * StateDigests.reference(new StateRow("h", reg.memory(), hs, n), ChecksumMode.STANDARD);
                        tail[i] += w * StateDigests.reference(new StateRow("t", reg.memory(), ts, n), ChecksumMode.STANDARD);
                    }
                }
            }
        }
        return new PageProbe.Probes(ps, probe, r.startToken(), r.numTokens(), head, tail);
    }
}
