package io.kvchecksum.engine.worker;

import io.kvchecksum.engine.verdict.ChecksumCounters;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.StateDigestsSection;
import io.kvchecksum.engine.wire.WirePayload;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PendingLoads}' rules for the copies it is offered: sections beside the checksums, copies before
 * {@code start} (buffered, bounded in count and time), copies of an ended load, and copies that list a group twice.
 */
class PendingLoadsTest {
    private static final long[] VALUES = {11, 22, 33};
    private static final ChecksumPayload CHECKSUMS = ChecksumPayload.of(1, 40, List.of(new GroupChecksums(0, 77, 16, 0, VALUES)));
    private static final StateDigestsSection STATE = new StateDigestsSection("standard", Map.of("l0.ssm", 5L));
    private static final ChecksumPayload PRODUCER = CHECKSUMS.withSection(STATE);

    /** The consumer: the same blocks, its own state digest ({@code ssm}). */
    private static ChecksumPayload consumer(long ssm) {
        return CHECKSUMS.withSection(new StateDigestsSection("standard", Map.of("l0.ssm", ssm)));
    }

    /** A producer's payload listing group 0 {@code times} times. */
    private static ChecksumPayload repeating(int times) {
        return ChecksumPayload.of(1, 40, java.util.Collections.nCopies(times, new GroupChecksums(0, 77, 16, 0, VALUES)));
    }

    private static final class Clock {
        final AtomicLong now = new AtomicLong(1_000);

        void advance(Duration d) {
            now.addAndGet(d.toNanos());
        }
    }

    @Test
    void theSectionsTravelBesideTheChecksumsInBothForms() {
        WirePayload w = WirePayload.of(PRODUCER);
        PendingLoads p = new PendingLoads();
        p.expect("text", w.checksumsBase64(), w.sectionsBase64());
        LoadVerdict v = p.verify("text", consumer(5)).orElseThrow();
        assertEquals(Status.MATCH, v.status());
        assertEquals(Status.MATCH, v.section(StateDigestsSection.NAME).status(), v.toString());
        p.expect("bytes", w.checksums(), w.sections());
        LoadVerdict bad = p.verify("bytes", consumer(6)).orElseThrow();
        assertEquals(Status.MISMATCH, bad.status(), "a state row that differs, carried as the second byte string");
        // The one-argument forms carry no sections: the section is on one side only, the groups still match.
        p.expect("old", w.checksumsBase64());
        LoadVerdict one = p.verify("old", consumer(6)).orElseThrow();
        assertEquals(Status.MATCH, one.status());
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, one.section(StateDigestsSection.NAME).reason());
        // Blank sections are none; sections without checksums are a malformed copy.
        p.expect("blank", w.checksumsBase64(), " ");
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, p.verify("blank", consumer(5)).orElseThrow().section(StateDigestsSection.NAME).reason());
        ChecksumCounters counters = new ChecksumCounters();
        PendingLoads q = new PendingLoads(counters);
        q.expect("alone", null, w.sectionsBase64());
        LoadVerdict alone = q.verify("alone", consumer(5)).orElseThrow();
        assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, alone.reason());
        assertTrue(alone.detail().contains("sections arrived without the checksums"), alone.detail());
        assertEquals(1, counters.malformedPayloads());
        q.expect("none", (String) null, null);
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, q.verify("none", consumer(5)).orElseThrow().reason());
    }

    @Test
    void aCopyWhoseSectionsAreMalformedIsRefusedAndALaterGoodCopyWins() {
        WirePayload w = WirePayload.of(PRODUCER);
        byte[] badSections = w.sections();
        badSections[0] = (byte) 0x93; // a 3-element array: not [1, {...}]
        ChecksumCounters counters = new ChecksumCounters();
        PendingLoads p = new PendingLoads(counters);
        p.start("r");
        assertFalse(p.offer("r", w.checksums(), badSections));
        assertTrue(p.offer("r", w.checksums(), w.sections()));
        assertEquals(Status.MATCH, p.verify("r", consumer(5)).orElseThrow().status());
        assertEquals(1, counters.malformedPayloads());
    }

    @Test
    void aCopyThatRepeatsAGroupIsRefusedAtOfferAndALaterGoodCopyWins() {
        ChecksumCounters counters = new ChecksumCounters();
        PendingLoads p = new PendingLoads(counters);
        p.start("r");
        assertFalse(p.offer("r", PayloadCodec.encodeBase64(repeating(2))), "refused, not kept");
        assertEquals(1, counters.malformedPayloads());
        assertTrue(p.offer("r", PayloadCodec.encodeBase64(CHECKSUMS)), "the later good copy wins");
        assertEquals(Status.MATCH, p.verify("r", CHECKSUMS).orElseThrow().status());
        // Only repeating copies: malformed, naming the group and the count of the first refusal.
        p.start("s");
        p.offer("s", PayloadCodec.encode(repeating(3)));
        p.offer("s", PayloadCodec.encode(repeating(2)));
        LoadVerdict v = p.verify("s", CHECKSUMS).orElseThrow();
        assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, v.reason());
        assertEquals("groups: the producer's payload lists group 0 3 times (each group once)", v.detail());
        assertEquals(3, counters.malformedPayloads());
        // Before start, likewise: the refusal is not buffered as the load's copy; the good one is.
        assertFalse(p.offer("t", PayloadCodec.encode(repeating(2))));
        assertTrue(p.offer("t", PayloadCodec.encode(CHECKSUMS)));
        p.start("t");
        assertEquals(Status.MATCH, p.verify("t", CHECKSUMS).orElseThrow().status());
    }

    @Test
    void aCopyBeforeStartIsKeptForTheLoad() {
        Clock clock = new Clock();
        ChecksumCounters counters = new ChecksumCounters();
        PendingLoads p = new PendingLoads(counters, 4, Duration.ofSeconds(30), clock.now::get);
        WirePayload w = WirePayload.of(PRODUCER);
        assertTrue(p.offer("r", w.checksums(), w.sections()), "held for the load's start");
        assertFalse(p.isPending("r"));
        assertEquals(0, p.size());
        assertEquals(Optional.empty(), p.verify("r", consumer(5)), "not started: no verdict");
        assertFalse(p.offer("r", PayloadCodec.encodeBase64(repeating(2))), "a good early copy is kept; later ones not even decoded");
        assertEquals(0, counters.malformedPayloads());
        clock.advance(Duration.ofSeconds(30));
        assertTrue(p.start("r"));
        LoadVerdict v = p.verify("r", consumer(5)).orElseThrow();
        assertEquals(Status.MATCH, v.status());
        assertEquals(Status.MATCH, v.section(StateDigestsSection.NAME).status());
        // An early refusal is the detail, unless a good copy comes, before or after the start.
        assertFalse(p.offer("s", "not base64!"));
        assertEquals(1, counters.malformedPayloads());
        p.start("s");
        assertTrue(p.offer("s", w.checksumsBase64(), w.sectionsBase64()));
        assertEquals(Status.MATCH, p.verify("s", consumer(5)).orElseThrow().status());
        assertFalse(p.offer("u", "not base64!"));
        p.start("u");
        LoadVerdict u = p.verify("u", consumer(5)).orElseThrow();
        assertEquals(UnverifiedReason.MALFORMED_PAYLOAD, u.reason());
        assertTrue(u.detail().startsWith("payload: not base64"), u.detail());
    }

    @Test
    void anEarlyCopyExpiresAfterItsTimeToLive() {
        Clock clock = new Clock();
        PendingLoads p = new PendingLoads(new ChecksumCounters(), 4, Duration.ofSeconds(30), clock.now::get);
        assertTrue(p.offer("r", PayloadCodec.encode(CHECKSUMS)));
        clock.advance(Duration.ofSeconds(30).plusNanos(1));
        assertTrue(p.start("r"));
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, p.verify("r", CHECKSUMS).orElseThrow().reason(),
                "expired: never a mismatch, never a match");
    }

    @Test
    void theEarlyBufferIsBoundedAndDropsTheOldest() {
        Clock clock = new Clock();
        PendingLoads p = new PendingLoads(new ChecksumCounters(), 2, Duration.ofSeconds(30), clock.now::get);
        for (String id : List.of("a", "b", "c")) {
            assertTrue(p.offer(id, PayloadCodec.encode(CHECKSUMS)));
            clock.advance(Duration.ofMillis(1));
        }
        for (String id : List.of("a", "b", "c")) {
            p.start(id);
        }
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, p.verify("a", CHECKSUMS).orElseThrow().reason(), "the oldest went");
        assertEquals(Status.MATCH, p.verify("b", CHECKSUMS).orElseThrow().status());
        assertEquals(Status.MATCH, p.verify("c", CHECKSUMS).orElseThrow().status());
        // A bound of 0 keeps nothing: a copy before start is dropped, as it always was.
        PendingLoads none = new PendingLoads(new ChecksumCounters(), 0, Duration.ofSeconds(30), clock.now::get);
        assertFalse(none.offer("r", PayloadCodec.encode(CHECKSUMS)));
        none.start("r");
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, none.verify("r", CHECKSUMS).orElseThrow().reason());
    }

    @Test
    void aLateCopyOfAnEndedLoadIsNotTakenForTheNextLoadOfItsId() {
        Clock clock = new Clock();
        PendingLoads p = new PendingLoads(new ChecksumCounters(), 4, Duration.ofSeconds(30), clock.now::get);
        long[] other = VALUES.clone();
        other[1]++;
        String stale = PayloadCodec.encodeBase64(ChecksumPayload.of(1, 40, List.of(new GroupChecksums(0, 77, 16, 0, other))));
        p.expect("r", PayloadCodec.encodeBase64(CHECKSUMS));
        assertEquals(Status.MATCH, p.verify("r", CHECKSUMS).orElseThrow().status());
        p.forget("r");
        // Another producer rank's copy of the ended load arrives late: it must not become the next load's copy.
        assertFalse(p.offer("r", stale));
        assertTrue(p.start("r"));
        assertEquals(UnverifiedReason.MISSING_PAYLOAD, p.verify("r", CHECKSUMS).orElseThrow().reason(),
                "unverified, never a false mismatch");
        // Past the time-to-live the mark is gone: an early copy for the id is held again.
        p.forget("r");
        clock.advance(Duration.ofSeconds(31));
        assertTrue(p.offer("r", PayloadCodec.encodeBase64(CHECKSUMS)));
        p.start("r");
        assertEquals(Status.MATCH, p.verify("r", CHECKSUMS).orElseThrow().status());
        // Forgetting a request that never had a load leaves no mark.
        assertFalse(p.forget("never"));
        assertTrue(p.offer("never", PayloadCodec.encodeBase64(CHECKSUMS)));
    }

    @Test
    void theBoundsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> new PendingLoads(new ChecksumCounters(), -1, Duration.ZERO, System::nanoTime));
        assertThrows(IllegalArgumentException.class, () -> new PendingLoads(new ChecksumCounters(), 1, Duration.ofSeconds(-1),
                System::nanoTime));
        assertThrows(NullPointerException.class, () -> new PendingLoads(new ChecksumCounters(), 1, null, System::nanoTime));
        assertEquals(1024, PendingLoads.DEFAULT_MAX_EARLY);
        assertEquals(Duration.ofSeconds(60), PendingLoads.DEFAULT_EARLY_TTL);
        assertNull(WirePayload.of(CHECKSUMS).sections());
    }
}
