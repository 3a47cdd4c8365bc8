package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

/**
 * Segmented KV is refused when the worker is configured, not request by request: a random sweep of segmented layouts
 * (the seed, 400 layouts, a consumer load after every local prefix) in which no load of a layout accepted at
 * configuration is BACKEND_FAILED or LAYOUT_REFUSED, every one of them matches, and every refused layout names why.
 */
class SegmentedLayoutSweepTest {
    private static final long SEED = Long.getLong("kvsegments.sweep.seed", 0xb65e6L);
    private static final int LAYOUTS = 400;
    private static final int GROUP = 0;
    private static final long FINGERPRINT = Fingerprints.ofGroup(List.of(Fingerprints.ofLayer("model.layers.0.attn",
            "FullAttentionSpec", "torch.float32")));
    /** One layer, one head, K 8 + V 8 bytes per cell. */
    private static final int CELL = 16;

    /** Position {@code t}'s cell: the same bytes on both sides, whatever the layout. */
    private static long word(long layoutSeed, long t, int half) {
        long z = layoutSeed + (2 * t + half + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 31)) * 0xBF58476D1CE4E5B9L;
        return z ^ (z >>> 29);
    }

    /** Positions {@code [start, start + pages * page)} in one allocation of pages of {@code page} positions. */
    private static KvCacheGroup allocation(Arena arena, long layoutSeed, long start, int page, long pages) {
        MemorySegment m = arena.allocate(pages * page * CELL, 8);
        for (long t = 0; t < pages * page; t++) {
            m.set(ValueLayout.JAVA_LONG, t * CELL, word(layoutSeed, start + t, 0));
            m.set(ValueLayout.JAVA_LONG, t * CELL + 8, word(layoutSeed, start + t, 1));
        }
        KvRegion k = new KvRegion(KvMemory.host(m), 0, (long) page * CELL, CELL, CELL, 8);
        KvRegion v = new KvRegion(KvMemory.host(m), 8, (long) page * CELL, CELL, CELL, 8);
        return KvCacheGroup.of(page, pages, List.of(CacheLayer.of(0, 0, 1, k, v)));
    }

    /** Block ids {@code 0 .. blocks-1}: a segmented cache addresses by position; the producer's pages of 1 by id. */
    private static int[] table(long numTokens, int blockSize) {
        return IntStream.range(0, (int) Math.ceilDiv(numTokens, (long) blockSize)).toArray();
    }

    private static int gcd(int a, int b) {
        return b == 0 ? a : gcd(b, a % b);
    }

    /** Whether {@code kv.plan} refuses the load of tokens {@code [f * blockSize, n)}. */
    private static boolean refuses(KvSegments kv, long n, long f, int blockSize) {
        try {
            kv.plan(n, f, blockSize);
            return false;
        } catch (InvalidLayoutException e) {
            assertTrue(e.getMessage().contains("not a page boundary"), e.getMessage());
            return true;
        }
    }

    @Test
    void noLayoutAcceptedAtConfigurationFailsARequest() {
        System.out.println("SegmentedLayoutSweepTest seed 0x" + Long.toHexString(SEED) + " (-Dkvsegments.sweep.seed=...), "
                + LAYOUTS + " layouts, every local prefix");
        Random rnd = new Random(SEED);
        int refusedLayouts = 0;
        int lateLayouts = 0;
        int loads = 0;
        int lateLoads = 0;
        int acceptedLoads = 0;
        Map<UnverifiedReason, Integer> reasons = new EnumMap<>(UnverifiedReason.class);
        try (KvChecksum cpu = KvChecksums.cpu()) {
            SingleWorker worker = SingleWorker.builder(cpu).build();
            for (int c = 0; c < LAYOUTS; c++) {
                try (Arena arena = Arena.ofConfined()) {
                    long layoutSeed = rnd.nextLong();
                    int blockSize = 1 + rnd.nextInt(24);
                    // Half the layouts as Jlama's: segments of one length L in pages dividing gcd(L, block size).
                    // The others: segments of 1 .. 32 positions, each in pages of a random divisor of its length (as
                    // an engine that sizes its pages by bytes might have them), so some block boundaries fall inside
                    // pages.
                    boolean jlama = rnd.nextBoolean();
                    int jlamaLength = 1 + rnd.nextInt(32);
                    int cap = jlama ? jlamaLength * (1 + rnd.nextInt(Math.max(1, 120 / jlamaLength))) : 1 + rnd.nextInt(120);
                    List<KvCacheGroup> segments = new ArrayList<>();
                    StringBuilder label = new StringBuilder(jlama ? "(Jlama-like) " : "");
                    for (int at = 0; at < cap; ) {
                        int len = jlama ? jlamaLength : Math.min(cap - at, 1 + rnd.nextInt(32));
                        int pageOf = jlama ? gcd(len, blockSize) : len;
                        int[] divisors = IntStream.rangeClosed(1, pageOf).filter(p -> pageOf % p == 0).toArray();
                        int page = divisors[rnd.nextInt(divisors.length)];
                        segments.add(allocation(arena, layoutSeed, at, page, len / page));
                        label.append(at).append('+').append(len).append("/p").append(page).append(' ');
                        at += len;
                    }
                    KvSegments consumerKv = KvSegments.of(segments);
                    long n = 1 + rnd.nextInt(cap);
                    long blocks = Math.ceilDiv(n, (long) blockSize);
                    String what = "layout " + c + ": B" + blockSize + " N" + n + " segments " + label;

                    // Without the check: which of this request's loads the plan would refuse (the issue's
                    // BACKEND_FAILED), and whether any load of any request the segments can hold would be.
                    int late = 0;
                    for (long f = 0; f < blocks; f++) {
                        late += refuses(consumerKv, n, f, blockSize) ? 1 : 0;
                    }
                    lateLoads += late;
                    boolean anyLate = false;
                    for (long f = 0; f < Math.ceilDiv((long) cap, blockSize); f++) {
                        anyLate |= refuses(consumerKv, cap, f, blockSize);
                    }
                    lateLayouts += late > 0 ? 1 : 0;

                    // Configuration: the consumer's worker, built once for the layout and its block size.
                    var layout = List.of(SingleWorker.group(GROUP, FINGERPRINT, consumerKv));
                    String refused = WorkerChecksummer.builder(cpu).groups(layout).blockSize(GROUP, blockSize).build()
                            .skippedGroups().get(GROUP);
                    assertEquals(anyLate, refused != null, what + ": refused at configuration exactly when some load"
                            + " could not be read (" + refused + ")");
                    if (refused != null) {
                        refusedLayouts++;
                        assertTrue(refused.contains("segmented KV in blocks of " + blockSize + " tokens")
                                && refused.contains("not a page boundary"), what + ": " + refused);
                    }

                    // The producer: one allocation of pages of 1 position, same bytes.
                    var producerLayout = List.of(SingleWorker.group(GROUP, FINGERPRINT,
                            allocation(arena, layoutSeed, 0, 1, blocks * blockSize)));
                    var ps = List.of(BlockSelection.producer(GROUP, table(n, blockSize), BlockSelection.NO_NULL_BLOCK, n,
                            blockSize, null));
                    String payload = worker.producerBase64("r", producerLayout, ps).orElseThrow();
                    for (long f = 0; f < blocks; f++) {
                        PendingLoads pending = new PendingLoads();
                        pending.expect("r", payload);
                        var cs = List.of(BlockSelection.consumer(GROUP, table(n, blockSize), BlockSelection.NO_NULL_BLOCK,
                                f * blockSize, n, blockSize, null));
                        LoadVerdict v = worker.verify(pending, "r", layout, cs).orElseThrow();
                        loads++;
                        v.reasons().forEach(r -> reasons.merge(r, 1, Integer::sum));
                        assertTrue(!v.reasons().contains(UnverifiedReason.BACKEND_FAILED)
                                && !v.reasons().contains(UnverifiedReason.LAYOUT_REFUSED), what + " prefix " + f + ": " + v);
                        if (refused == null) {
                            acceptedLoads++;
                            assertEquals(Status.MATCH, v.status(), what + " prefix " + f + ": " + v);
                        } else {
                            // Skipped on the consumer with the reason: the producer's group is one side's only.
                            assertEquals(UnverifiedReason.ONE_SIDE_ONLY, v.group(GROUP).reason(), what + ": " + v);
                        }
                    }
                }
            }
        }
        System.out.printf("SegmentedLayoutSweepTest: %d of %d layouts refused at configuration (without the check, %d"
                + " layouts fail %d of %d consumer loads at the request); %d loads of accepted layouts, all MATCH, 0"
                + " BACKEND_FAILED, 0 LAYOUT_REFUSED; reasons over all loads %s%n", refusedLayouts, LAYOUTS, lateLayouts,
                lateLoads, loads, acceptedLoads, reasons);
        assertTrue(lateLayouts <= refusedLayouts, "every layout whose request failed late is refused at configuration");
        assertTrue(refusedLayouts > 0 && acceptedLoads > LAYOUTS, "the sweep covers both kinds: " + refusedLayouts
                + " layouts refused, " + acceptedLoads + " loads of accepted ones");
        assertNull(reasons.get(UnverifiedReason.BACKEND_FAILED));
    }

    @Test
    void aRefusalLeftForTheRequestIsLayoutRefusedNotABackendFailure() {
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            // 0..7 in pages of 4, 8..15 in pages of 2: every 4-token block boundary is a page boundary.
            KvSegments kv = KvSegments.of(List.of(allocation(arena, 1, 0, 4, 2), allocation(arena, 1, 8, 2, 4)));
            assertNull(kv.blockBoundaryProblem(4));
            var layout = List.of(SingleWorker.group(GROUP, FINGERPRINT, kv));
            SingleWorker worker = SingleWorker.builder(cpu).build();

            // 20 tokens: the segments hold 16. Refused before anything is read, on both sides.
            var ps = List.of(BlockSelection.producer(GROUP, table(20, 4), BlockSelection.NO_NULL_BLOCK, 20, 4, null));
            var producer = assertInstanceOf(Aggregator.Incomplete.class, worker.producer(layout, ps));
            assertEquals(UnverifiedReason.LAYOUT_REFUSED, producer.reason());
            assertTrue(producer.detail().contains("TP rank 0 PP stage 0 refused the request's layout: tokens 0..19 requested"),
                    producer.detail());
            var cs = List.of(BlockSelection.consumer(GROUP, table(20, 4), BlockSelection.NO_NULL_BLOCK, 8, 20, 4, null));
            var consumer = assertInstanceOf(Aggregator.Incomplete.class, worker.consumer(layout, cs));
            assertEquals(UnverifiedReason.LAYOUT_REFUSED, consumer.reason());
            assertEquals(UnverifiedReason.LAYOUT_REFUSED, consumer.verdict().reason());

            // A worker configured for blocks of 4 selected in blocks of 8: the layout was checked for another size.
            WorkerChecksummer w = WorkerChecksummer.builder(cpu).groups(layout).blockSize(GROUP, 4).build();
            var sel8 = List.of(BlockSelection.producer(GROUP, table(16, 8), BlockSelection.NO_NULL_BLOCK, 16, 8, null));
            WorkerRecord r = w.tryCompute(Side.PRODUCER, 16, sel8);
            assertTrue(r.isFailed() && r.isLayoutRefused(), r.toString());
            assertTrue(r.backendFailure().contains("selected in blocks of 8 tokens; its segmented KV was checked for blocks of 4"),
                    r.backendFailure());
            assertThrows(InvalidLayoutException.class, () -> w.compute(Side.PRODUCER, 16, sel8), "compute throws it");
            // A real backend failure stays BACKEND_FAILED.
            WorkerRecord failed = WorkerRecord.failed(0, 0, 16, new IllegalStateException("device lost"));
            assertTrue(failed.isFailed() && !failed.isLayoutRefused());
            assertEquals(UnverifiedReason.BACKEND_FAILED, ((Aggregator.Incomplete) Aggregator.producer(1, 1, 16, sel8,
                    List.of(failed))).reason());

            // Segmented KV without its block size cannot be configured at all.
            var e = assertThrows(IllegalArgumentException.class, () -> WorkerChecksummer.builder(cpu).groups(layout).build());
            assertTrue(e.getMessage().contains("declare its block size"), e.getMessage());
            // And at configuration, blocks of 3 would start loads at 3, 6 (inside pages of 4) and 9, 12 (pages of 8).
            String why = WorkerChecksummer.builder(cpu).groups(layout).blockSize(GROUP, 3).build().skippedGroups().get(GROUP);
            assertTrue(why.contains("segment 0 (positions 0..7, pages of 4) holds block boundary 3 (block 1 of 3 tokens)"), why);
        }
    }
}
