package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumCounters;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.PolicyTest;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.MalformedPayloadException;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * The reproductions of issue 11, each against the seed's rule: first copy wins and verify once, no leak when a
 * backend fails, a version-1 tag on the final form, warn once per reason, the producer's warning, the carrier check,
 * the counters, and the worker's stream-ordered submit.
 */
class SeedRulesTest {
    private static final long SEED = 0x11_0011L;

    static final ChecksumPayload PRODUCER = ChecksumPayload.of(2, 160, List.of(
            new GroupChecksums(0, 77, 16, 0, new long[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10})));

    /** The consumer's values with {@code block}'s value changed (decode wrote into it). */
    static ChecksumPayload consumerWith(int block) {
        long[] v = PRODUCER.groups().get(0).values();
        if (block >= 0) {
            v[block] += 12345;
        }
        return ChecksumPayload.of(1, 160, List.of(new GroupChecksums(0, 77, 16, 0, v)));
    }

    @Test
    void aDuplicateCopyAfterTheVerdictNeverArmsTheLoadAgain() {
        PendingLoads p = new PendingLoads();
        String wire = PayloadCodec.encodeBase64(PRODUCER);
        p.expect("r", wire);
        assertEquals(Status.MATCH, p.verify("r", consumerWith(-1)).orElseThrow().status());
        // A second producer rank's copy arrives late; then decode writes into block 9 and the request is resumed.
        p.expect("r", wire);
        assertFalse(p.offer("r", wire));
        assertFalse(p.isPending("r"));
        assertEquals(Optional.empty(), p.verify("r", consumerWith(9)), "a resumed request is not compared again");
        // Once the request ends, its id may be used afresh.
        assertFalse(p.forget("r"));
        p.expect("r", wire);
        assertEquals(Status.MISMATCH, p.verify("r", consumerWith(9)).orElseThrow().status());
    }

    @Test
    void theFirstWellFormedCopyWins() {
        String good = PayloadCodec.encodeBase64(PRODUCER);
        String garbage = Base64.getEncoder().encodeToString(new byte[] {(byte) 0x93, 2, 1, 1});
        long[] other = PRODUCER.groups().get(0).values();
        other[3]++;
        String otherGood = PayloadCodec.encodeBase64(ChecksumPayload.of(2, 160, List.of(new GroupChecksums(0, 77, 16, 0, other))));

        ChecksumCounters counters = new ChecksumCounters();
        PendingLoads p = new PendingLoads(counters);
        assertTrue(p.start("r"));
        assertFalse(p.start("r"), "already pending");
        assertFalse(p.offer("r", (String) null));
        assertTrue(p.offer("r", good));
        assertFalse(p.offer("r", garbage), "a garbage copy after a good one is ignored");
        assertFalse(p.offer("r", otherGood), "a later good copy is ignored too: the first one wins");
        assertEquals(Status.MATCH, p.verify("r", consumerWith(-1)).orElseThrow().status());
        assertEquals(0, counters.malformedPayloads(), "copies after the first good one are not even decoded");

        // Garbage first, then a good copy: the good one is used.
        p.start("s");
        assertFalse(p.offer("s", garbage));
        assertTrue(p.offer("s", PayloadCodec.encode(PRODUCER)));
        assertEquals(Status.MATCH, p.verify("s", consumerWith(-1)).orElseThrow().status());
        assertEquals(1, counters.malformedPayloads());

        // Only garbage: malformed, with the first copy's error. Nothing at all: missing.
        p.start("t");
        p.offer("t", garbage);
        p.offer("t", new byte[] {1});
        LoadVerdict v = p.verify("t", consumerWith(-1)).orElseThrow();
        assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, v.reason());
        assertTrue(v.detail().startsWith("payload: version 2 has 4 elements"), v.detail());
        assertEquals(3, counters.malformedPayloads());
        p.start("u");
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, p.verify("u", consumerWith(-1)).orElseThrow().reason());

        // A copy for a load never started is held for its start (PendingLoadsTest), and such a load gets no verdict.
        assertTrue(p.offer("never", good));
        assertFalse(p.offer("never", PayloadCodec.encode(PRODUCER)), "the first good early copy is kept");
        assertEquals(Optional.empty(), p.verify("never", consumerWith(-1)));
        assertEquals(0, p.size());
    }

    @Test
    void incompleteRecordsEndTheLoadToo() {
        PendingLoads p = new PendingLoads();
        p.expect("r", PayloadCodec.encodeBase64(PRODUCER));
        Aggregator.Incomplete missing = new Aggregator.Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "1 of 2");
        LoadVerdict v = p.verify("r", missing).orElseThrow();
        assertEquals(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, v.reason());
        // After a resume, decode wrote into block 9: no second comparison, so no false mismatch.
        assertEquals(Optional.empty(), p.verify("r", new Aggregator.Complete(consumerWith(9), Map.of())));
        assertEquals(Optional.empty(), p.verify("x", missing));
        p.expect("c", PayloadCodec.encodeBase64(PRODUCER));
        assertEquals(Status.MISMATCH, p.verify("c", new Aggregator.Complete(consumerWith(2), Map.of())).orElseThrow().status());
    }

    /** Counts what a backend hands out and closes; fails the n-th submit or get. */
    static class FlakyBackend implements Backend {
        final Backend real = KvChecksums.reference().backend();
        int submitted;
        int closed;
        int failSubmitAt = -1;
        int failGetAt = -1;
        int gets;
        long lastStream = -1;

        /** {@return the front an engine holds over this backend} */
        KvChecksum front() {
            return KvChecksum.of(this);
        }

        @Override
        public String name() {
            return "flaky";
        }

        @Override
        public String description() {
            return "flaky reference";
        }

        @Override
        public BackendLimits limits() {
            return real.limits();
        }

        @Override
        public long pageDigest(PageDigestPlan plan) {
            return real.pageDigest(plan);
        }

        @Override
        public void close() {
        }

        @Override
        public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
            lastStream = stream.orElse(-1);
            if (submitted == failSubmitAt) {
                throw new IllegalStateException("device lost at submit " + submitted);
            }
            submitted++;
            long[] v;
            try (PendingChecksums p = real.run(plan, output, stream)) {
                v = p.get();
            }
            return new PendingChecksums() {
                boolean done;

                @Override
                public long[] get() {
                    if (gets++ == failGetAt) {
                        throw new IllegalStateException("device lost at get");
                    }
                    return v.clone();
                }

                @Override
                public boolean isDone() {
                    return true;
                }

                @Override
                public void close() {
                    if (!done) {
                        done = true;
                        closed++;
                    }
                }
            };
        }
    }

    /** A worker with three parts of one group (three caches), over 40 tokens of 16-token blocks. */
    static List<WorkerChecksummer.WorkerGroup> threeParts(Arena arena, Random rnd) {
        List<WorkerChecksummer.ReplicaPart> parts = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            MemorySegment k = arena.allocate(48L * 2 * 16, 8);
            MemorySegment v = arena.allocate(48L * 2 * 16, 8);
            byte[] b = new byte[(int) k.byteSize()];
            rnd.nextBytes(b);
            MemorySegment.copy(MemorySegment.ofArray(b), 0, k, 0, b.length);
            rnd.nextBytes(b);
            MemorySegment.copy(MemorySegment.ofArray(b), 0, v, 0, b.length);
            KvCacheGroup g = KvLayouts.flat(new int[] {i}, 0, KvMemory.host(k), KvMemory.host(v), 48, 2, 8, 2);
            parts.add(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, g));
        }
        return List.of(new WorkerChecksummer.WorkerGroup(0, 5, parts));
    }

    @Test
    void aFailingSubmitOrGetReleasesEverythingAlreadyEnqueued() {
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined()) {
            List<WorkerChecksummer.WorkerGroup> layout = threeParts(arena, rnd);
            List<BlockSelection> sel = List.of(BlockSelection.producer(0, new int[] {0, 1, 2}, -1, 40, 16, null));

            FlakyBackend b = new FlakyBackend();
            b.failSubmitAt = 2;
            WorkerChecksummer w = WorkerChecksummer.builder(b.front()).groups(layout).build();
            assertThrows(IllegalStateException.class, () -> w.submit(Side.PRODUCER, 40, sel, 7));
            assertEquals("submitted 2, closed 2", "submitted " + b.submitted + ", closed " + b.closed);

            FlakyBackend g = new FlakyBackend();
            g.failGetAt = 1;
            WorkerChecksummer w2 = WorkerChecksummer.builder(g.front()).groups(layout).build();
            WorkerChecksummer.PendingRecord p = w2.submit(Side.PRODUCER, 40, sel, 7);
            assertThrows(IllegalStateException.class, p::record);
            assertEquals("submitted 3, closed 3", "submitted " + g.submitted + ", closed " + g.closed);
            assertThrows(IllegalStateException.class, p::record, "a failed record is not retried on released handles");

            // Closing a pending record that was never read releases its handles.
            FlakyBackend c = new FlakyBackend();
            WorkerChecksummer w3 = WorkerChecksummer.builder(c.front()).groups(layout).build();
            w3.submit(Side.PRODUCER, 40, sel, 7).close();
            assertEquals("submitted 3, closed 3", "submitted " + c.submitted + ", closed " + c.closed);
        }
    }

    @Test
    void theWorkerSubmitsOnTheEnginesStreamAndPollsWithoutWaiting() {
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined()) {
            List<WorkerChecksummer.WorkerGroup> layout = threeParts(arena, rnd);
            List<BlockSelection> sel = List.of(BlockSelection.producer(0, new int[] {0, 1, 2}, -1, 40, 16, null),
                    BlockSelection.producer(1, new int[] {0, 1, 2}, -1, 40, 16, null));
            FlakyBackend b = new FlakyBackend();
            ChecksumCounters counters = new ChecksumCounters();
            WorkerChecksummer w = WorkerChecksummer.builder(b.front()).tpRank(1).groups(layout).skipped(Map.of(1, "Mamba state")).metrics(counters).build();
            WorkerChecksummer.PendingRecord p = w.submit(Side.PRODUCER, 40, sel, 0xABCL);
            assertEquals(0xABCL, b.lastStream, "the backend gets the engine's stream");
            assertTrue(p.isDone());
            WorkerRecord r = p.poll().orElseThrow();
            assertSame(r, p.record());
            assertEquals(Map.of(1, "Mamba state"), r.skippedGroups());
            long[] expected = new long[3];
            for (WorkerChecksummer.ReplicaPart part : layout.get(0).parts()) {
                long[] v = KvChecksums.reference().blockChecksums(part.cache(), KvLayouts.flatRequest(40, 0, 16));
                for (int i = 0; i < 3; i++) {
                    expected[i] += v[i];
                }
            }
            assertArrayEquals(expected, r.groups().get(0).columns().get(ReplicaKey.NONE));
            assertEquals(5, r.groups().get(0).fingerprint());
            assertEquals(3, b.closed, "every handle is released once read");
            assertTrue(counters.checksumNanos() > 0);
            p.close();
        }
    }

    static byte[] pack(Object item) throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            write(p, item);
            return p.toByteArray();
        }
    }

    private static void write(MessageBufferPacker p, Object o) throws IOException {
        if (o instanceof Object[] a) {
            p.packArrayHeader(a.length);
            for (Object x : a) {
                write(p, x);
            }
        } else if (o instanceof byte[] b) {
            p.packBinaryHeader(b.length);
            p.writePayload(b);
        } else {
            p.packLong(((Number) o).longValue());
        }
    }

    @Test
    void aVersionOneTagOnTheFinalFormIsReadAsTheFinalForm() throws IOException {
        byte[] values = new byte[16];
        values[0] = 7;
        values[8] = 9;
        byte[] taggedOne = pack(new Object[] {1, 2, 20, new Object[] {new Object[] {0, 77, 16, 0, values}}});
        ChecksumPayload p = PayloadCodec.decode(taggedOne);
        assertEquals(ChecksumPayload.of(2, 20, List.of(new GroupChecksums(0, 77, 16, 0, new long[] {7, 9}))), p);
        // Version 2 with the same fields is the same payload, and stays byte-identical through decode and encode.
        byte[] v2 = pack(new Object[] {2, 2, 20, new Object[] {new Object[] {0, 77, 16, 0, values}}});
        assertEquals(p, PayloadCodec.decode(v2));
        assertArrayEquals(v2, PayloadCodec.encode(PayloadCodec.decode(v2)));
        // The earlier revision's version 1 still reads as version 1.
        byte[] v1 = pack(new Object[] {1, 20, new Object[] {new Object[] {0, 77, 0, values}}});
        assertEquals(1, PayloadCodec.decode(v1).version());
        assertArrayEquals(v1, PayloadCodec.encode(PayloadCodec.decode(v1)));
        // Only exactly that shape: a version-1 tag with four elements but four-field groups is rejected, and no other
        // tag is dispatched by shape.
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(
                pack(new Object[] {1, 2, 20, new Object[] {new Object[] {0, 77, 0, values}}})));
        assertTrue(e.getMessage().startsWith("groups[0]: a group has 5 elements in a version-1-tagged payload"), e.getMessage());
        e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(
                pack(new Object[] {4, 2, 20, new Object[] {new Object[] {0, 77, 16, 0, values}}})));
        assertTrue(e.getMessage().startsWith("version: unknown payload version 4"), e.getMessage());
        e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(
                pack(new Object[] {3, 2, 20, new Object[] {new Object[] {0, 77, 16, 0, values}}})));
        assertEquals("payload: version 3 has 6 elements, got 4", e.getMessage());
        e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(
                pack(new Object[] {2, 20, new Object[] {new Object[] {0, 77, 0, values}}})));
        assertEquals("payload: version 2 has 4 elements, got 3", e.getMessage());
    }

    @Test
    void failClosedWarnsOncePerReasonAndCounts() {
        PolicyTest.Recording log = new PolicyTest.Recording();
        ChecksumCounters counters = new ChecksumCounters();
        FailurePolicy p = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, counters, log);
        LoadVerdict mismatch = LoadVerdict.of(List.of(new GroupVerdict(0, Status.MISMATCH, new long[] {3, 4}, null, "3, 4"),
                new GroupVerdict(1, Status.MISMATCH, new long[] {1}, null, "1")));
        for (int i = 0; i < 4; i++) {
            assertEquals(Action.RECOMPUTE, p.decide("u" + i, PolicyTest.MISSING).action());
            assertEquals(Action.RECOMPUTE, p.decide("m" + i, mismatch).action());
            assertEquals(Action.USE_LOAD, p.decide("ok" + i, PolicyTest.MATCH).action());
        }
        assertEquals(1, log.count("WARNING"), log.lines.toString());
        assertEquals(4, log.count("ERROR"));
        assertEquals(4, counters.verifiedLoads());
        assertEquals(4, counters.mismatchedLoads());
        assertEquals(12, counters.mismatchedBlocks());
        assertEquals(4, counters.unverifiedLoads(UnverifiedReason.MISSING_PAYLOAD));
        assertEquals(0, counters.unverifiedLoads(UnverifiedReason.MALFORMED_PAYLOAD));
        // A second reason warns once more; a load with two reasons counts both.
        LoadVerdict two = LoadVerdict.of(List.of(new GroupVerdict(0, Status.UNVERIFIED, null, UnverifiedReason.ONE_SIDE_ONLY, "a"),
                new GroupVerdict(1, Status.UNVERIFIED, null, UnverifiedReason.FINGERPRINT_DIFFERS, "b")));
        p.decide("t", two);
        p.decide("t2", two);
        assertEquals(3, log.count("WARNING"));
        assertEquals(2, counters.unverifiedLoads(UnverifiedReason.ONE_SIDE_ONLY));
        assertEquals(2, counters.unverifiedLoads(UnverifiedReason.FINGERPRINT_DIFFERS));
        assertTrue(log.lines.stream().anyMatch(l -> l.startsWith("WARNING") && l.contains("failing the load, then RECOMPUTE")));
    }

    @Test
    void theProducerWarnsOncePerReasonWhenItSendsNoChecksums() {
        PolicyTest.Recording log = new PolicyTest.Recording();
        ChecksumCounters counters = new ChecksumCounters();
        PayloadSender s = new PayloadSender(counters, log);
        Aggregator.Incomplete missing = new Aggregator.Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "3 of 4");
        assertEquals(Optional.empty(), s.base64("a", missing));
        assertEquals(Optional.empty(), s.bytes("b", missing));
        assertEquals(1, log.count("WARNING"));
        assertTrue(log.lines.get(0).contains("request a") && log.lines.get(0).contains("3 of 4"), log.lines.toString());
        assertEquals(1, log.count("DEBUG"));
        assertEquals(2, counters.withheldPayloads(UnverifiedReason.NOT_EVERY_WORKER_REPORTED));
        assertEquals(Optional.empty(), s.base64("c", new Aggregator.Incomplete(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, "x")));
        assertEquals(2, log.count("WARNING"));
        Aggregator.Complete c = new Aggregator.Complete(PRODUCER, Map.of());
        assertEquals(PRODUCER, PayloadCodec.decodeBase64(s.base64("d", c).orElseThrow()));
        assertArrayEquals(PayloadCodec.encode(PRODUCER), s.bytes("e", c).orElseThrow());
        assertEquals(2, log.count("WARNING"));
    }

    @Test
    void aConnectorWithoutACarrierFailsStartupClosedAndDisablesChecksumsOpen() {
        PolicyTest.Recording log = new PolicyTest.Recording();
        FailurePolicy closed = FailurePolicy.failClosed(FailurePolicy.OnFailure.FAIL_REQUEST, ChecksumMetrics.NONE, log);
        assertTrue(closed.checkCarrier("NixlPull", true));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> closed.checkCarrier("Offload", false));
        assertTrue(e.getMessage().contains("connector Offload cannot carry them"), e.getMessage());
        FailurePolicy open = FailurePolicy.failOpen(ChecksumMetrics.NONE, log);
        assertTrue(open.checkCarrier("NixlPull", true));
        assertEquals(0, log.count("WARNING"));
        assertFalse(open.checkCarrier("Offload", false));
        assertEquals(1, log.count("WARNING"));
        assertTrue(closed.isFailClosed());
        assertFalse(open.isFailClosed());
    }

    @Test
    void pendingLoadsReportWhatTheyHold() {
        PendingLoads p = new PendingLoads();
        assertFalse(p.isPending("r"));
        assertEquals(0, p.size());
        assertTrue(p.start("r"));
        assertTrue(p.isPending("r"));
        assertEquals(1, p.size());
        assertTrue(p.start("s"));
        assertEquals(2, p.size());
        assertTrue(p.forget("s"));
        assertFalse(p.forget("s"));
        assertFalse(p.offer("r", "   "), "blank text is no copy");
        assertTrue(p.offer("r", PayloadCodec.encodeBase64(PRODUCER)));
        p.verify("r", consumerWith(-1));
        assertFalse(p.start("r"), "verified: not started again until forgotten");
        assertEquals(0, p.size());
        assertThrows(NullPointerException.class, () -> p.start(null));
        assertThrows(NullPointerException.class, () -> p.verify("r", (ChecksumPayload) null));
        assertThrows(NullPointerException.class, () -> new PendingLoads(null));
    }

    @Test
    void aPendingRecordThatIsNotDoneIsNotPolled() {
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined()) {
            List<WorkerChecksummer.WorkerGroup> layout = threeParts(arena, rnd);
            List<BlockSelection> sel = List.of(BlockSelection.producer(0, new int[] {0, 1, 2}, -1, 40, 16, null));
            boolean[] done = {false};
            int[] closes = {0};
            FlakyBackend slow = new FlakyBackend() {
                @Override
                public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
                    PendingChecksums real = super.run(plan, output, stream);
                    return new PendingChecksums() {
                        @Override
                        public long[] get() {
                            return real.get();
                        }

                        @Override
                        public boolean isDone() {
                            return done[0];
                        }

                        @Override
                        public void close() {
                            closes[0]++;
                            if (closes[0] == 2) {
                                throw new IllegalStateException("event destroy failed");
                            }
                        }
                    };
                }
            };
            WorkerChecksummer w = WorkerChecksummer.builder(slow.front()).groups(layout).build();
            WorkerChecksummer.PendingRecord p = w.submit(Side.PRODUCER, 40, sel, 1);
            assertFalse(p.isDone());
            assertEquals(Optional.empty(), p.poll());
            done[0] = true;
            assertTrue(p.isDone());
            // Closing unread handles reports a failing close, after closing the others.
            RuntimeException e = assertThrows(RuntimeException.class, p::close);
            assertEquals(1, e.getSuppressed().length);
            assertEquals(3, closes[0], "every handle was closed");
            assertThrows(IllegalStateException.class, p::isDone, "closed before its record was taken");
            p.close();
            assertEquals(3, closes[0], "close is idempotent");
            assertThrows(IllegalArgumentException.class, () -> w.submit(Side.PRODUCER, 41, sel, 1));
            assertThrows(IllegalArgumentException.class, () -> WorkerChecksummer.builder(slow.front()).tpRank(-1).groups(layout).build());
            assertThrows(IllegalArgumentException.class, () -> WorkerChecksummer.builder(slow.front()).ppStage(-1).groups(layout).build());
            assertThrows(IllegalArgumentException.class, () -> WorkerChecksummer.builder(slow.front()).groups(List.of(layout.get(0), layout.get(0))).build());
            // A group this stage holds no layer of: fingerprint 0 and no columns; skipped groups reported even unscheduled.
            ChecksumCounters counters = new ChecksumCounters();
            WorkerRecord r = WorkerChecksummer.builder(new FlakyBackend().front()).ppStage(1).groups(List.of()).skipped(Map.of(9, "Mamba")).metrics(counters).build()
                    .compute(Side.CONSUMER, 40, sel);
            assertEquals(List.of(new PartialGroup(0, 0, new BlockRange(16, 0, 3), Map.of())), r.groups());
            assertEquals(Map.of(9, "Mamba"), r.skippedGroups());
            assertTrue(counters.checksumNanos() > 0 && counters.checksumNanos() < 60_000_000_000L, "" + counters.checksumNanos());
            // An excluded group is not computed.
            BlockSelection excluded = BlockSelection.producer(0, new int[] {1, 0, 2}, 0, 40, 16, null);
            assertEquals(List.of(), WorkerChecksummer.builder(new FlakyBackend().front()).groups(layout).build()
                    .compute(Side.PRODUCER, 41, List.of(excluded)).groups());
        }
    }

    @Test
    void eachVerdictIsLoggedWithItsDetailAtDebugLevel() {
        PolicyTest.Recording log = new PolicyTest.Recording();
        FailurePolicy p = FailurePolicy.failOpen(ChecksumMetrics.NONE, log);
        p.decide("m1", PolicyTest.MATCH);
        p.decide("u1", PolicyTest.MISSING);
        p.decide("u2", PolicyTest.MISSING);
        assertTrue(log.lines.contains("DEBUG KV checksums of request m1 match: [group 0: MATCH: ok]"), log.lines.toString());
        assertTrue(log.lines.contains("DEBUG KV load of request u2 unverified (fail-open: the load is used): UNVERIFIED "
                + "(MISSING_PAYLOAD): none"), log.lines.toString());
        assertTrue(log.lines.contains("WARNING KV load of request u1 unverified (MISSING_PAYLOAD; fail-open: the load is used). "
                + "Further MISSING_PAYLOAD loads are logged at debug level."), log.lines.toString());
        p.decide("x", PolicyTest.MISMATCH);
        assertTrue(log.lines.contains("ERROR KV checksum mismatch for request x (fail-open: the load is used): group 0: MISMATCH "
                + "blocks [3]: block 3"), log.lines.toString());

        PolicyTest.Recording slog = new PolicyTest.Recording();
        PayloadSender s = new PayloadSender(ChecksumMetrics.NONE, slog);
        Aggregator.Incomplete i = new Aggregator.Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "3 of 4");
        s.base64("a", i);
        s.base64("b", i);
        assertEquals(List.of("WARNING sending no KV checksums for request a (NOT_EVERY_WORKER_REPORTED: 3 of 4); its consumer "
                + "will report the load unverified. Further NOT_EVERY_WORKER_REPORTED cases are logged at debug level.",
                "DEBUG sending no KV checksums for request b (NOT_EVERY_WORKER_REPORTED: 3 of 4)"), slog.lines);
        assertThrows(NullPointerException.class, () -> s.base64(null, i));
        assertThrows(NullPointerException.class, () -> s.base64("c", null));
    }
}
