package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CacheLayer;
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
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The consumer path's verifying copy (issue 29): a consumer worker that moves received KV into its pages with
 * {@link WorkerChecksummer#copyAndCompute} gives exactly the record {@link WorkerChecksummer#compute} gives on its pages
 * after the copy, for producer/consumer TP pairings (a TP re-shard: two producer ranks' head ranges copied into one
 * consumer's pages, and one producer's heads split over consumer ranks) and layouts (NHD pages of 16 into HND pages
 * of 8, segmented pages as Jlama's); healthy loads MATCH, and a corrupted received byte, two received pages swapped and
 * a wrong head range are each a MISMATCH naming exactly the blocks they touched. Reference and cpu backends; fixed,
 * printed seed.
 */
class VerifyingCopyTest {
    private static final long SEED = 0x2026_0029L;
    private static final int LAYERS = 2;
    private static final int HEADS = 8;
    private static final int CELL = 16;   // K and V bytes per cell: two 8-byte pieces each
    private static final int B = 16;
    private static final long N = 150;    // the last block is partial
    private static final int LOCAL_BLOCKS = 2;   // the consumer's prefix hit: the load writes blocks 2..9
    private static final int GROUP = 0;
    private static final long FINGERPRINT = 0x5EED;
    private static KvChecksum reference;
    private static KvChecksum cpu;

    @BeforeAll
    static void backends() {
        reference = KvChecksums.reference();
        cpu = KvChecksums.cpu();
        System.out.println("VerifyingCopyTest seed " + SEED);
    }

    @AfterAll
    static void close() {
        reference.close();
        cpu.close();
    }

    static KvChecksum backend(String name) {
        return name.equals("cpu") ? cpu : reference;
    }

    // ---- caches ----

    /** One rank's cache of a group: heads {@code [firstHead, firstHead + numHeads)} of every layer, in one memory. */
    record Cache(KvCacheGroup group, MemorySegment memory) {
    }

    static Cache cache(Arena arena, int firstHead, int numHeads, int pageSize, int numPages, boolean hnd) {
        long perRegion = (long) numPages * pageSize * numHeads * CELL;
        MemorySegment mem = arena.allocate(perRegion * 2 * LAYERS, 8);
        List<CacheLayer> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            long page = (long) pageSize * numHeads * CELL;
            long token = hnd ? CELL : (long) numHeads * CELL;
            long head = hnd ? (long) pageSize * CELL : CELL;
            KvRegion k = new KvRegion(KvMemory.host(mem), 2L * l * perRegion, page, token, head, CELL);
            KvRegion v = new KvRegion(KvMemory.host(mem), (2L * l + 1) * perRegion, page, token, head, CELL);
            layers.add(CacheLayer.of(l, firstHead, numHeads, k, v));
        }
        return new Cache(KvCacheGroup.of(pageSize, numPages, layers), mem);
    }

    static void fill(MemorySegment m, Random rnd) {
        for (long i = 0; i < m.byteSize(); i += 8) {
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
    }

    /** Where position {@code t} lies: a table from position {@code start}, pages of {@code pageSize}. */
    record Where(int[] table, long start, int pageSize) {
        long page(long t) {
            return table[(int) ((t - start) / pageSize)];
        }

        long slot(long t) {
            return (t - start) % pageSize;
        }
    }

    /** The test's own transport: copies positions {@code [from, to)} of every slice both groups hold, cell by cell. */
    static void copyCells(KvCacheGroup src, Where sw, KvCacheGroup dst, Where dw, long from, long to) {
        for (CacheLayer d : dst.layers()) {
            for (CacheLayer s : src.layers()) {
                if (s.layer() != d.layer()) {
                    continue;
                }
                for (int h = Math.max(s.firstHead(), d.firstHead()); h < Math.min(s.firstHead() + s.numHeads(),
                        d.firstHead() + d.numHeads()); h++) {
                    for (long t = from; t < to; t++) {
                        for (boolean value : new boolean[] {false, true}) {
                            KvRegion sr = value ? s.v() : s.k();
                            KvRegion dr = value ? d.v() : d.k();
                            MemorySegment.copy(((KvMemory.Host) sr.memory()).segment(),
                                    sr.cellOffset(sw.page(t), sw.slot(t), h - s.firstHead()),
                                    ((KvMemory.Host) dr.memory()).segment(),
                                    dr.cellOffset(dw.page(t), dw.slot(t), h - d.firstHead()), CELL);
                        }
                    }
                }
            }
        }
    }

    static int[] distinctPages(Random rnd, int count, int numPages) {
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < numPages; i++) {
            ids.add(i);
        }
        java.util.Collections.shuffle(ids, rnd);
        return ids.subList(0, count).stream().mapToInt(Integer::intValue).toArray();
    }

    static WorkerChecksummer worker(KvChecksum backend, int rank, KvCacheGroup cache) {
        return WorkerChecksummer.builder(backend).tpRank(rank)
                .groups(List.of(new WorkerChecksummer.WorkerGroup(GROUP, FINGERPRINT,
                        List.of(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, cache))))).build();
    }

    // ---- one disaggregated request ----

    /**
     * A request's producer (TP {@code ptp}, heads split evenly, NHD pages of 16 at random ids) and consumer (TP
     * {@code ctp}, its own layout and random page ids): the producer's payload expected, the received KV staged as
     * the producer ranks' pages landed (same layout, same page ids, separate memory), the consumer's pages zero.
     */
    static final class Request {
        final Arena arena = Arena.ofConfined();
        final int ptp;
        final int ctp;
        final List<Cache> producer = new ArrayList<>();
        final int[] producerTable;
        final List<Cache> staging = new ArrayList<>();
        final List<Cache> consumer = new ArrayList<>();
        final List<Cache> independent = new ArrayList<>();
        final int[] consumerBlocks;
        final int consumerPageSize;
        final BlockSelection selection;
        final PendingLoads pending = new PendingLoads();
        final String payload;

        Request(KvChecksum backend, int ptp, int ctp, int consumerPageSize, boolean consumerHnd, long seed) {
            this.ptp = ptp;
            this.ctp = ctp;
            this.consumerPageSize = consumerPageSize;
            Random rnd = new Random(seed);
            int blocks = (int) Math.ceilDiv(N, (long) B);
            int pages = blocks + 5;
            producerTable = distinctPages(rnd, blocks, pages);
            List<WorkerRecord> records = new ArrayList<>();
            BlockSelection psel = BlockSelection.producer(GROUP, producerTable, BlockSelection.NO_NULL_BLOCK, N, B, null);
            for (int r = 0; r < ptp; r++) {
                Cache c = cache(arena, r * HEADS / ptp, HEADS / ptp, B, pages, false);
                fill(c.memory(), rnd);
                producer.add(c);
                records.add(worker(backend, r, c.group()).compute(Side.PRODUCER, N, List.of(psel)));
                Cache s = cache(arena, r * HEADS / ptp, HEADS / ptp, B, pages, false);
                s.memory().copyFrom(c.memory());
                staging.add(s);
            }
            payload = new PayloadSender(io.kvchecksum.engine.verdict.ChecksumMetrics.NONE)
                    .base64("req", Aggregator.producer(ptp, 1, N, List.of(psel), records)).orElseThrow();
            pending.expect("req", payload);
            int perBlock = B / consumerPageSize;
            int cpages = (blocks + 3) * perBlock;
            consumerBlocks = distinctPages(rnd, blocks, blocks + 3);
            for (int r = 0; r < ctp; r++) {
                consumer.add(cache(arena, r * HEADS / ctp, HEADS / ctp, consumerPageSize, cpages, consumerHnd));
                independent.add(cache(arena, r * HEADS / ctp, HEADS / ctp, consumerPageSize, cpages, consumerHnd));
            }
            selection = BlockSelection.consumer(GROUP, consumerBlocks, BlockSelection.NO_NULL_BLOCK, (long) LOCAL_BLOCKS * B,
                    N, B, null);
        }

        long start() {
            return (long) LOCAL_BLOCKS * B;
        }

        /** The staged KV as the consumer receives it: each producer rank's pages, its table from the load's start. */
        List<ReceivedKv> received() {
            int[] from = Arrays.copyOfRange(producerTable, LOCAL_BLOCKS, producerTable.length);
            return staging.stream().map(s -> new ReceivedKv(GROUP, s.group(), from)).toList();
        }

        Where consumerWhere() {
            return new Where(selection.request(consumerPageSize).pageTable(), start(), consumerPageSize);
        }

        /** Each consumer rank's record by the verifying copy, checked against the after-copy records. */
        List<WorkerRecord> copyRecords(KvChecksum backend, List<ReceivedKv> received) {
            List<WorkerRecord> out = new ArrayList<>();
            for (int r = 0; r < ctp; r++) {
                WorkerChecksummer w = worker(backend, r, consumer.get(r).group());
                WorkerRecord copied = w.copyAndCompute(N, List.of(selection), received);
                assertFalse(copied.isFailed(), copied.backendFailure());
                // The existing consumer path over the same pages after the copy: the same record, exactly.
                assertEquals(w.compute(Side.CONSUMER, N, List.of(selection)), copied, "rank " + r + ": after-copy record");
                // An independent copy (the test's, cell by cell) into other pages: the same bytes, the same record.
                Cache ind = independent.get(r);
                for (ReceivedKv kv : received) {
                    copyCells(kv.cache(), new Where(kv.pageTable(), start(), kv.cache().pageSize()), ind.group(),
                            consumerWhere(), start(), N);
                }
                assertEquals(-1, consumer.get(r).memory().mismatch(ind.memory()), "rank " + r + ": destination bytes");
                // The stream-ordered form (a CPU backend copies at once, the record is done): the same record.
                try (WorkerChecksummer.PendingRecord p = w.tryCopyAndSubmit(N, List.of(selection), received, List.of(), 0)) {
                    assertTrue(p.isDone());
                    assertEquals(copied, p.record(), "rank " + r + ": tryCopyAndSubmit");
                }
                assertEquals(worker(backend, r, ind.group()).compute(Side.CONSUMER, N, List.of(selection)), copied,
                        "rank " + r + ": record of an independent copy");
                out.add(copied);
            }
            return out;
        }

        LoadVerdict verdict(List<WorkerRecord> records) {
            return pending.verify("req", Aggregator.consumer(ctp, 1, N, List.of(selection), records)).orElseThrow();
        }

        /** The block of position {@code t}, in the request's numbering. */
        static long block(long t) {
            return t / B;
        }
    }

    static Stream<Arguments> pairings() {
        List<Arguments> out = new ArrayList<>();
        for (String b : new String[] {"reference", "cpu"}) {
            for (int[] tp : new int[][] {{1, 1}, {2, 1}, {1, 2}, {2, 4}, {4, 2}}) {
                out.add(Arguments.of(b, tp[0], tp[1], 16, false));
                out.add(Arguments.of(b, tp[0], tp[1], 8, true));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}: producer TP {1} -> consumer TP {2}, consumer pages of {3}, HND {4}")
    @MethodSource("pairings")
    void aHealthyCopyMatchesAndIsTheAfterCopyRecord(String backendName, int ptp, int ctp, int pageSize, boolean hnd) {
        KvChecksum backend = backend(backendName);
        Request q = new Request(backend, ptp, ctp, pageSize, hnd, SEED + 31L * ptp + 7L * ctp + pageSize);
        try (q.arena) {
            LoadVerdict v = q.verdict(q.copyRecords(backend, q.received()));
            assertEquals(Status.MATCH, v.status(), v.toString());
        }
    }

    enum Fault {
        CORRUPTED_BYTE, SWAPPED_PAGES, WRONG_HEAD_RANGE
    }

    static Stream<Arguments> faults() {
        List<Arguments> out = new ArrayList<>();
        for (String b : new String[] {"reference", "cpu"}) {
            for (Fault f : Fault.values()) {
                out.add(Arguments.of(b, f, 2, 1));   // the re-shard: two producer ranks into one consumer's pages
                out.add(Arguments.of(b, f, 1, 2));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}: {1}, producer TP {2} -> consumer TP {3}")
    @MethodSource("faults")
    void aFaultIsAMismatchAtExactlyTheBlocksItTouched(String backendName, Fault fault, int ptp, int ctp) {
        KvChecksum backend = backend(backendName);
        Request q = new Request(backend, ptp, ctp, 8, true, SEED + fault.ordinal());
        try (q.arena) {
            List<ReceivedKv> received = new ArrayList<>(q.received());
            long[] expected;
            switch (fault) {
                case CORRUPTED_BYTE -> {
                    // One byte of position 77's V cell, last staged rank, its last head of layer 1.
                    Cache s = q.staging.get(ptp - 1);
                    CacheLayer l = s.group().layers().get(1);
                    long t = 77;
                    long at = l.v().cellOffset(q.producerTable[(int) (t / B)], t % B, l.numHeads() - 1) + 5;
                    s.memory().set(ValueLayout.JAVA_BYTE, at, (byte) (s.memory().get(ValueLayout.JAVA_BYTE, at) ^ 0x04));
                    expected = new long[] {Request.block(t)};
                }
                case SWAPPED_PAGES -> {
                    // Every rank's table has entries 1 and 4 swapped: each page is written where the other belongs.
                    for (int i = 0; i < received.size(); i++) {
                        int[] t = received.get(i).pageTable();
                        int x = t[1];
                        t[1] = t[4];
                        t[4] = x;
                        received.set(i, new ReceivedKv(GROUP, received.get(i).cache(), t));
                    }
                    expected = new long[] {LOCAL_BLOCKS + 1, LOCAL_BLOCKS + 4};
                }
                case WRONG_HEAD_RANGE -> {
                    received.clear();
                    if (ptp == 1) {
                        // The staged heads described one head too high: heads 1..8 where 0..7 landed.
                        received.add(new ReceivedKv(GROUP, shifted(q.staging.get(0).group(), 1), q.received().get(0).pageTable()));
                    } else {
                        // The producer ranks' head ranges exchanged: rank 1's heads copied into rank 0's places.
                        List<ReceivedKv> right = q.received();
                        for (int r = 0; r < ptp; r++) {
                            received.add(new ReceivedKv(GROUP, moved(right.get(r).cache(), HEADS / ptp * (ptp - 1 - r)),
                                    right.get(r).pageTable()));
                        }
                    }
                    expected = LongStream.range(LOCAL_BLOCKS, Math.ceilDiv(N, (long) B)).toArray();
                }
                default -> throw new AssertionError(fault);
            }
            LoadVerdict v = q.verdict(q.copyRecords(backend, received));
            assertEquals(Status.MISMATCH, v.status(), v.toString());
            assertArrayEquals(expected, v.group(GROUP).mismatchedBlocks(), fault + ": mismatched blocks");
        }
    }

    /** {@code g} with every layer's head numbers raised by {@code by}: the same memory described as other heads. */
    static KvCacheGroup shifted(KvCacheGroup g, int by) {
        return new KvCacheGroup(g.layers().stream().map(l -> new CacheLayer(l.layer(), l.firstHead() + by, l.numHeads(),
                l.k(), l.v())).toList(), g.pageSize(), g.numPages());
    }

    /** {@code g} described as starting at head {@code firstHead}. */
    static KvCacheGroup moved(KvCacheGroup g, int firstHead) {
        return shifted(g, firstHead - g.layers().get(0).firstHead());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backendNames")
    void segmentedPagesAreCopiedSegmentBySegmentAndTheirRecordsAddUp(String backendName) {
        KvChecksum backend = backend(backendName);
        Request q = new Request(backend, 1, 1, 16, false, SEED + 5);
        try (q.arena) {
            // Jlama-like pages: segments of 24 positions, pages of 8, so blocks 2, 4, 5, 7 and 8 straddle two segments;
            // the staging buffer holds the load's positions in order, in pages of 8.
            int segments = (int) Math.ceilDiv(N, 24L);
            List<Cache> segs = new ArrayList<>();
            for (int i = 0; i < segments; i++) {
                segs.add(cache(q.arena, 0, HEADS, 8, 3, false));
            }
            KvSegments kv = KvSegments.of(segs.stream().map(Cache::group).toList());
            Cache staging = cache(q.arena, 0, HEADS, 8, (int) Math.ceilDiv(N - q.start(), 8L), true);
            copyCells(q.producer.get(0).group(), new Where(q.producerTable, 0, B), staging.group(),
                    new Where(java.util.stream.IntStream.range(0, (int) staging.group().numPages()).toArray(), q.start(), 8),
                    q.start(), N);
            WorkerChecksummer w = WorkerChecksummer.builder(backend).blockSize(GROUP, B).groups(List.of(
                    new WorkerChecksummer.WorkerGroup(GROUP, FINGERPRINT,
                            List.of(WorkerChecksummer.ReplicaPart.segmented(ReplicaKey.NONE, kv))))).build();
            List<ReceivedKv> received = List.of(ReceivedKv.inPageOrder(GROUP, staging.group()));
            WorkerRecord copied = w.copyAndCompute(N, List.of(q.selection), received);
            assertEquals(w.compute(Side.CONSUMER, N, List.of(q.selection)), copied, "after-copy record");
            assertEquals(Status.MATCH, q.verdict(List.of(copied)).status());

            // A corrupted staged byte at position 71 (segment 2, block 4, which straddles segments 1 and 2).
            long t = 71;
            long at = staging.group().layers().get(0).k().cellOffset((t - q.start()) / 8, (t - q.start()) % 8, 3);
            staging.memory().set(ValueLayout.JAVA_BYTE, at, (byte) (staging.memory().get(ValueLayout.JAVA_BYTE, at) ^ 1));
            q.pending.expect("req2", q.payload);
            WorkerRecord bad = w.copyAndCompute(N, List.of(q.selection), received);
            assertEquals(w.compute(Side.CONSUMER, N, List.of(q.selection)), bad, "after-copy record of the bad copy");
            LoadVerdict v = q.pending.verify("req2", Aggregator.consumer(1, 1, N, List.of(q.selection), List.of(bad)))
                    .orElseThrow();
            assertEquals(Status.MISMATCH, v.status(), v.toString());
            assertArrayEquals(new long[] {4}, v.group(GROUP).mismatchedBlocks());
        }
    }

    static Stream<String> backendNames() {
        return Stream.of("reference", "cpu");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backendNames")
    void headsNoReceivedKvHoldsAreCheckedInPlaceSoAMissingRankIsAMismatch(String backendName) {
        KvChecksum backend = backend(backendName);
        Request q = new Request(backend, 2, 1, 16, false, SEED + 9);
        try (q.arena) {
            // Only producer rank 0's heads arrived: heads 4..7 stay as they were (zeros) and are checked as they are.
            List<ReceivedKv> onlyRank0 = List.of(q.received().get(0));
            WorkerChecksummer w = worker(backend, 0, q.consumer.get(0).group());
            WorkerRecord copied = w.copyAndCompute(N, List.of(q.selection), onlyRank0);
            assertEquals(w.compute(Side.CONSUMER, N, List.of(q.selection)), copied);
            LoadVerdict v = q.verdict(List.of(copied));
            assertEquals(Status.MISMATCH, v.status());
            assertArrayEquals(LongStream.range(LOCAL_BLOCKS, Math.ceilDiv(N, (long) B)).toArray(),
                    v.group(GROUP).mismatchedBlocks());
        }
    }

    /** The cpu backend, with its limits and its copy replaced. */
    static KvChecksum cpuWith(io.kvchecksum.spi.BackendLimits limits, RuntimeException copyFails) {
        io.kvchecksum.spi.Backend inner = cpu.backend();
        return KvChecksum.of((io.kvchecksum.spi.Backend) java.lang.reflect.Proxy.newProxyInstance(
                io.kvchecksum.spi.Backend.class.getClassLoader(), new Class<?>[] {io.kvchecksum.spi.Backend.class},
                (proxy, m, args) -> {
                    if (m.getName().equals("limits")) {
                        return limits;
                    }
                    if (m.getName().equals("runCopy") && copyFails != null) {
                        throw copyFails;
                    }
                    if (m.getName().equals("close")) {
                        return null;
                    }
                    try {
                        return m.invoke(inner, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                }));
    }

    @Test
    void aBackendThatDoesNotCopyRefusesTheLayoutAndAFailingCopyIsABackendFailure() {
        Request q = new Request(cpu, 1, 1, 16, false, SEED + 13);
        try (q.arena) {
            KvChecksum noCopy = cpuWith(io.kvchecksum.spi.BackendLimits.HOST_ONLY, null);
            WorkerRecord r = worker(noCopy, 0, q.consumer.get(0).group()).tryCopyAndCompute(N, List.of(q.selection),
                    q.received());
            assertTrue(r.isLayoutRefused(), r.toString());
            assertTrue(r.backendFailure().contains("does not implement the verifying copy"), r.backendFailure());
            assertEquals(UnverifiedReason.LAYOUT_REFUSED, q.verdict(List.of(r)).reason());

            q.pending.expect("req2", q.payload);
            KvChecksum lost = cpuWith(cpu.backend().limits(), new IllegalStateException("device lost"));
            WorkerRecord f = worker(lost, 0, q.consumer.get(0).group()).tryCopyAndCompute(N, List.of(q.selection),
                    q.received());
            assertTrue(f.isFailed() && !f.isLayoutRefused(), f.toString());
            LoadVerdict v = q.pending.verify("req2", Aggregator.consumer(1, 1, N, List.of(q.selection), List.of(f)))
                    .orElseThrow();
            assertEquals(UnverifiedReason.BACKEND_FAILED, v.reason(), v.toString());
            assertTrue(v.detail().contains("device lost"), v.detail());
        }
    }

    @Test
    void aSliceReceivedTwiceIsARefusedLayoutAndAGroupNotCopiedIsACallerBug() {
        Request q = new Request(cpu, 1, 1, 16, false, SEED + 11);
        try (q.arena) {
            WorkerChecksummer w = worker(cpu, 0, q.consumer.get(0).group());
            List<ReceivedKv> twice = List.of(q.received().get(0), q.received().get(0));
            WorkerRecord r = w.tryCopyAndCompute(N, List.of(q.selection), twice);
            assertTrue(r.isLayoutRefused(), r.toString());
            assertTrue(r.backendFailure().contains("layer 0 head 0 is in received KV 0 and 1"), r.backendFailure());
            LoadVerdict v = q.verdict(List.of(r));
            assertEquals(UnverifiedReason.LAYOUT_REFUSED, v.reason(), v.toString());

            List<ReceivedKv> other = List.of(new ReceivedKv(7, q.staging.get(0).group(), new int[] {0}));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> w.tryCopyAndCompute(N, List.of(q.selection), other));
            assertTrue(e.getMessage().contains("group 7 would not be copied: it is not scheduled"), e.getMessage());
        }
    }
}
