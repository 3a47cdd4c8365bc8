package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageProbe;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.PageProbeSection;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.StateDigestsSection;
import io.kvchecksum.engine.wire.Verifier;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * Workers' auxiliary parts aggregated into a side's sections ({@link Aggregator}): the probe of replicated heads as the
 * block checksums are (copy 0 on the producer, one check per copy on the consumer), the state digests merged; and the
 * pure-state model, whose load is verified by its state digests alone ({@link LoadVerdict#withSections},
 * {@link SingleWorker} without a group).
 */
class AuxiliarySectionsTest {
    private static final long SEED = 0xA0C5_2026L;

    private static PageProbe.Probes probes(long... heads) {
        return new PageProbe.Probes(16, 64, 0, 16L * heads.length, heads, heads.clone());
    }

    private static WorkerRecord rec(int rank, Map<ReplicaKey, PageProbe.Probes> probes, List<StateDigestsSection.Entry> state) {
        return new WorkerRecord(rank, 0, 48, List.of(), Map.of(), null, ChecksumMode.STANDARD, state, probes);
    }

    private static ChecksumPayload payload(Aggregator.Result r) {
        return assertInstanceOf(Aggregator.Complete.class, r, r.toString()).payload();
    }

    /**
     * Issue 26: one KV head at TP2 (or MLA at TP2), byte-identical copies. Adding every copy made the producer's probe
     * twice a TP1 consumer's ("3 of 3 pages differ" on identical caches); copy 0 alone is the TP1 value.
     */
    @Test
    void theProbeOfReplicatedHeadsIsCopyZeroOnTheProducerAndOneCheckPerCopyOnTheConsumer() {
        PageProbe.Probes same = probes(11, 12, 13);
        List<WorkerRecord> tp2 = List.of(rec(0, Map.of(new ReplicaKey(2, 0), same), null),
                rec(1, Map.of(new ReplicaKey(2, 1), same), null));
        ChecksumPayload built = payload(Aggregator.producer(2, 1, 48, List.of(), tp2));
        ChecksumPayload producer = PayloadCodec.decode(PayloadCodec.encode(built), PayloadCodec.encodeSections(built));
        PageProbeSection sent = (PageProbeSection) producer.section(PageProbeSection.NAME);
        assertEquals(PageProbeSection.of(same), sent);
        ChecksumPayload tp1 = payload(Aggregator.consumer(1, 1, 48, List.of(), List.of(rec(0, Map.of(ReplicaKey.NONE, same), null))));
        assertEquals(Status.MATCH, Verifier.compare(producer, tp1).section(PageProbeSection.NAME).status());

        // The consumer at TP2: one check per copy, each against the producer's probe.
        ChecksumPayload consumer = payload(Aggregator.consumer(2, 1, 48, List.of(), tp2));
        PageProbeSection mine = (PageProbeSection) consumer.section(PageProbeSection.NAME);
        assertEquals(2, mine.numChecks());
        assertEquals(Status.MATCH, Verifier.compare(producer, consumer).section(PageProbeSection.NAME).status());
        // Copy 1 of page 2 not written: a mismatch naming the page and the copy.
        List<WorkerRecord> stale = List.of(tp2.get(0), rec(1, Map.of(new ReplicaKey(2, 1), probes(11, 12, 99)), null));
        SectionVerdict v = Verifier.compare(producer, payload(Aggregator.consumer(2, 1, 48, List.of(), stale)))
                .section(PageProbeSection.NAME);
        assertEquals(Status.MISMATCH, v.status(), v.toString());
        assertEquals("1 of 3 pages x 2 copy checks differ: page 2 (token 32) head+tail in copy check 1", v.detail());
        assertEquals(List.of(new PageProbeSection.PageDifference(2, 32, true, true, 1)),
                PageProbeSection.differences(producer.section(PageProbeSection.NAME), payload(Aggregator.consumer(2, 1, 48,
                        List.of(), stale)).section(PageProbeSection.NAME)));

        // Split heads next to replicated ones: the split parts are in every check.
        PageProbe.Probes split0 = probes(1, 2, 3);
        PageProbe.Probes split1 = probes(4, 5, 6);
        ChecksumPayload mixed = payload(Aggregator.consumer(2, 1, 48, List.of(), List.of(
                rec(0, Map.of(ReplicaKey.NONE, split0, new ReplicaKey(2, 0), same), null),
                rec(1, Map.of(ReplicaKey.NONE, split1, new ReplicaKey(2, 1), same), null))));
        PageProbeSection m = (PageProbeSection) mixed.section(PageProbeSection.NAME);
        PageProbeSection expected = PageProbeSection.of(PageProbe.Probes.sum(List.of(split0, split1, same)));
        assertEquals(List.of(expected.head(), expected.head()).stream().map(Arrays::toString).toList(),
                Arrays.stream(m.heads()).map(Arrays::toString).toList());
    }

    @Test
    void partsThatCannotBeCombinedAreIncomplete() {
        PageProbe.Probes a = probes(1, 2);
        Aggregator.Incomplete some = assertInstanceOf(Aggregator.Incomplete.class, Aggregator.producer(2, 1, 48, List.of(),
                List.of(rec(0, Map.of(ReplicaKey.NONE, a), null), rec(1, null, null))));
        assertEquals(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, some.reason());
        assertEquals("1 of 2 workers sent page probes", some.detail());
        Aggregator.Incomplete pages = assertInstanceOf(Aggregator.Incomplete.class, Aggregator.producer(2, 1, 48, List.of(),
                List.of(rec(0, Map.of(ReplicaKey.NONE, a), null), rec(1, Map.of(ReplicaKey.NONE, probes(1, 2, 3)), null))));
        assertTrue(pages.detail().startsWith("workers probed other pages"), pages.detail());
        StateDigestsSection.Entry e = new StateDigestsSection.Entry("l0.ssm", 0, 2, 0, 0, 1, 64, 5);
        Aggregator.Incomplete twice = assertInstanceOf(Aggregator.Incomplete.class, Aggregator.consumer(2, 1, 48, List.of(),
                List.of(rec(0, null, List.of(e)), rec(1, null, List.of(e)))));
        assertEquals(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, twice.reason());
        assertEquals("TP rank 1 PP stage 0 sent state buffer l0.ssm shard 0/2 copy 0, which another worker sent too",
                twice.detail());
        assertEquals("1 of 2 workers sent state digests", assertInstanceOf(Aggregator.Incomplete.class,
                Aggregator.consumer(2, 1, 48, List.of(), List.of(rec(0, null, List.of(e)), rec(1, null, null)))).detail());
        // A record's entries carry its own stage.
        assertThrows(IllegalArgumentException.class, () -> new WorkerRecord(0, 1, 48, List.of(), Map.of(), null,
                ChecksumMode.STANDARD, List.of(e), null));
    }

    @Test
    void theProducerSendsCopyZeroOfReplicatedStateRows() {
        StateDigestsSection.Entry c0 = new StateDigestsSection.Entry("l0.conv", 0, 1, 0, 0, 2, 40, 7);
        StateDigestsSection.Entry c1 = new StateDigestsSection.Entry("l0.conv", 0, 1, 0, 1, 2, 40, 7);
        List<WorkerRecord> r = List.of(rec(0, null, List.of(c0)), rec(1, null, List.of(c1)));
        assertEquals(new StateDigestsSection("standard", List.of(c0)),
                payload(Aggregator.producer(2, 1, 48, List.of(), r)).section(StateDigestsSection.NAME));
        assertEquals(new StateDigestsSection("standard", List.of(c1, c0)), payload(Aggregator.consumer(2, 1, 48, List.of(),
                List.of(r.get(1), r.get(0)))).section(StateDigestsSection.NAME));
    }

    /** Issue 26: a pure-state model (no KV group) is MATCH on identical rows and MISMATCH naming a corrupted one. */
    @Test
    void aPureStateModelIsVerifiedByItsStateDigests() {
        System.out.println("AuxiliarySectionsTest seed " + SEED);
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            MemorySegment prod = arena.allocate(512);
            MemorySegment cons = arena.allocate(512);
            for (long i = 0; i < 512; i++) {
                prod.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            MemorySegment.copy(prod, 0, cons, 0, 512);
            List<StateShard> p = List.of(StateShard.whole(new StateRow("l0.ssm", KvMemory.host(prod), 0, 256)),
                    StateShard.whole(new StateRow("l0.conv", KvMemory.host(prod), 256, 40)));
            List<StateShard> c = List.of(StateShard.whole(new StateRow("l0.ssm", KvMemory.host(cons), 0, 256)),
                    StateShard.whole(new StateRow("l0.conv", KvMemory.host(cons), 256, 40)));
            SingleWorker w = SingleWorker.builder(cpu).stateDigests(true).pageProbe(0, 64).build();
            ChecksumPayload produced = payload(w.producer(List.of(), List.of(), 30, p));
            String sent = PayloadCodec.encodeBase64(produced);
            String sections = PayloadCodec.encodeSectionsBase64(produced);
            LoadVerdict ok = Verifier.verify(sent, sections, payload(w.consumer(List.of(), List.of(), 30, c)));
            assertEquals(Status.MATCH, ok.status(), ok.toString());
            assertNull(ok.reason());
            assertTrue(ok.groups().isEmpty());
            assertNull(ok.section(PageProbeSection.NAME), "no group, no probe");

            cons.set(ValueLayout.JAVA_BYTE, 270, (byte) ~cons.get(ValueLayout.JAVA_BYTE, 270));
            LoadVerdict bad = Verifier.verify(sent, sections, payload(w.consumer(List.of(), List.of(), 30, c)));
            assertEquals(Status.MISMATCH, bad.status(), bad.toString());
            assertEquals("state-digests MISMATCH: state buffers differ: l0.conv shard 0/1", bad.detail());

            // Without state digests on the consumer there is nothing to compare: unchanged from before.
            SingleWorker plain = SingleWorker.builder(cpu).build();
            LoadVerdict none = Verifier.verify(sent, sections, payload(plain.consumer(List.of(), List.of(), 30, c)));
            assertEquals(Status.UNVERIFIED, none.status(), none.toString());
            assertEquals(UnverifiedReason.NOTHING_TO_COMPARE, none.reason());
        }
    }

    /** The rule itself: only a load with no group to compare takes its status from its sections. */
    @Test
    void withSectionsDecidesOnlyWhenNoGroupWasCompared() {
        SectionVerdict match = SectionVerdict.match("state-digests", "2 state digests");
        SectionVerdict unverified = SectionVerdict.unverified("state-digests", UnverifiedReason.LAYOUT_DIFFERS, "l0.ssm");
        LoadVerdict nothing = LoadVerdict.of(List.of());
        assertEquals(Status.MATCH, nothing.withSections(List.of(match)).status());
        assertEquals("", nothing.withSections(List.of(match)).detail());
        assertEquals(Status.MATCH, nothing.withSections(List.of(match, unverified)).status());
        LoadVerdict still = nothing.withSections(List.of(unverified));
        assertEquals(Status.UNVERIFIED, still.status());
        assertEquals(UnverifiedReason.NOTHING_TO_COMPARE, still.reason());
        // A load whose groups were unverified stays unverified: a section never stands in for a KV group.
        LoadVerdict oneSide = LoadVerdict.of(List.of(GroupVerdict.unverified(0, UnverifiedReason.ONE_SIDE_ONLY, "x")));
        assertEquals(Status.UNVERIFIED, oneSide.withSections(List.of(match)).status());
        // Another load-level reason (no payload) is not "nothing to compare".
        assertEquals(Status.UNVERIFIED, LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "")
                .withSections(List.of(match)).status());
    }
}
