package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import org.junit.jupiter.api.Test;
import org.msgpack.core.MessagePacker;
import org.msgpack.value.Value;

import java.io.IOException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mechanism every known version-3 section goes through, with a section defined only for this test. */
class PayloadSectionsTest {

    /** A test section: one unsigned integer. */
    record Echo(long value) implements PayloadSection {
        static final String NAME = "test-echo";

        @Override
        public String name() {
            return NAME;
        }

        @Override
        public void pack(MessagePacker p) throws IOException {
            p.packLong(value);
        }

        static PayloadSection decode(Value v) {
            if (!v.isIntegerValue() || !v.asIntegerValue().isInLongRange() || v.asIntegerValue().toLong() < 0) {
                throw new MalformedPayloadException("sections.test-echo: expected a non-negative integer, got " + v);
            }
            return new Echo(v.asIntegerValue().toLong());
        }

        static SectionVerdict compare(PayloadSection producer, PayloadSection consumer) {
            if (producer == null || consumer == null) {
                return SectionVerdict.unverified(NAME, UnverifiedReason.ONE_SIDE_ONLY, "one side only");
            }
            return producer.equals(consumer) ? SectionVerdict.match(NAME, "") : SectionVerdict.mismatch(NAME, producer + " vs " + consumer);
        }
    }

    private static final Map<String, PayloadSections.Known> KNOWN =
            Map.of(Echo.NAME, new PayloadSections.Known(Echo.NAME, Echo::decode, Echo::compare));

    private static ChecksumPayload base() {
        return ChecksumPayload.of(2, 20, List.of(new GroupChecksums(3, -1L, 16, 1, new long[] {0x0102030405060708L})));
    }

    @Test
    void aSectionMakesVersionThreeAndRoundTrips() {
        ChecksumPayload p = base().withSection(new Echo(7));
        assertEquals(3, p.version());
        assertEquals("standard", p.mode());
        byte[] bytes = PayloadCodec.encode(p);
        // The version-2 example of docs/wire-format.md, as version 3 with the map {"test-echo": 7}.
        assertEquals("96030214a87374616e64617264919503cfffffffffffffffff1001c4080807060504030201"
                + "81a9746573742d6563686f07", HexFormat.of().formatHex(bytes));
        assertEquals(p, PayloadCodec.decode(bytes, KNOWN));
        // A reader that does not know the section skips it and keeps the rest.
        ChecksumPayload skipped = PayloadCodec.decode(bytes);
        assertTrue(skipped.sections().isEmpty());
        assertEquals(p.groups(), skipped.groups());
    }

    @Test
    void aMalformedKnownSectionNamesItsField() {
        // {"test-echo": "x"}: well-formed msgpack, wrong type for the section.
        byte[] bytes = PayloadCodec.encode(base().withSection(new Echo(7)));
        bytes[bytes.length - 1] = (byte) 0xa0; // an empty str instead of 7
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(bytes, KNOWN));
        assertTrue(e.getMessage().startsWith("sections.test-echo"), e.getMessage());
        assertTrue(PayloadCodec.decode(bytes).sections().isEmpty(), "a reader without the section still decodes it");
    }

    @Test
    void sectionVerdictsJoinTheLoadVerdict() {
        ChecksumPayload p = base().withSection(new Echo(7));
        List<SectionVerdict> same = Verifier.compareSections(p, base().withSection(new Echo(7)), KNOWN);
        assertEquals(List.of(SectionVerdict.match(Echo.NAME, "")), same);
        List<SectionVerdict> differ = Verifier.compareSections(p, base().withSection(new Echo(8)), KNOWN);
        assertEquals(Status.MISMATCH, differ.get(0).status());
        List<SectionVerdict> oneSide = Verifier.compareSections(p, base(), KNOWN);
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, oneSide.get(0).reason());

        LoadVerdict groupsMatch = Verifier.compare(base(), base());
        assertEquals(Status.MATCH, groupsMatch.status());
        assertEquals(Status.MISMATCH, groupsMatch.withSections(differ).status());
        LoadVerdict unverifiedSection = groupsMatch.withSections(oneSide);
        assertEquals(Status.MATCH, unverifiedSection.status(), "an optional section's UNVERIFIED leaves the groups' status");
        assertEquals(oneSide.get(0), unverifiedSection.section(Echo.NAME));
        assertNull(groupsMatch.section(Echo.NAME));
        LoadVerdict notCompared = LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "none");
        assertEquals(Status.MISMATCH, notCompared.withSections(differ).status());
        assertNull(notCompared.withSections(differ).reason());
    }

    @Test
    void sectionsNeedVersionThree() {
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(2, 2, 20, base().groups(), "standard",
                Map.of(Echo.NAME, new Echo(1))));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(3, 2, 20, base().groups(), "standard",
                Map.of("other", new Echo(1))));
    }
}
