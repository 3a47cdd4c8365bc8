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

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The mechanism every known section goes through, with a section defined only for this test: the sections value
 * beside the checksums, the earlier inline form, and the rules between them.
 */
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

    /** The version-2 example of docs/wire-format.md: [2, 2, 20, [[3, 2^64-1, 16, 1, bin(8)]]]. */
    private static final String V2 = "94020214919503cfffffffffffffffff1001c4080807060504030201";
    /** The same groups as an earlier release's version 3, standard mode, before its sections map. */
    private static final String V3_HEAD = "96030214a87374616e64617264919503cfffffffffffffffff1001c4080807060504030201";
    /** {"test-echo": 7} */
    private static final String ECHO_MAP = "81a9746573742d6563686f07";

    private static byte[] hex(String h) {
        return HexFormat.of().parseHex(h);
    }

    @Test
    void aSectionKeepsTheVersionAndTravelsBesideTheChecksums() {
        ChecksumPayload p = base().withSection(new Echo(7));
        assertEquals(2, p.version());
        assertEquals("standard", p.mode());
        // The checksums are byte for byte the payload without the section: seed 003's version 2.
        assertEquals(V2, HexFormat.of().formatHex(PayloadCodec.encode(p)));
        assertEquals(V2, HexFormat.of().formatHex(PayloadCodec.encode(base())));
        // The section is [1, {"test-echo": 7}], its own value.
        assertEquals("92" + "01" + ECHO_MAP, HexFormat.of().formatHex(PayloadCodec.encodeSections(p)));
        assertNull(PayloadCodec.encodeSections(base()));
        assertNull(PayloadCodec.encodeSectionsBase64(base()));
        assertEquals(p, PayloadCodec.decode(PayloadCodec.encode(p), PayloadCodec.encodeSections(p), KNOWN));
        assertEquals(p, PayloadCodec.decodeBase64(PayloadCodec.encodeBase64(p), PayloadCodec.encodeSectionsBase64(p)).withSection(
                new Echo(7)), "the production registry skips the test section; the rest is the same");
        // A reader that does not know the section skips it and keeps the rest.
        ChecksumPayload skipped = PayloadCodec.decode(PayloadCodec.encode(p), PayloadCodec.encodeSections(p));
        assertTrue(skipped.sections().isEmpty());
        assertEquals(base(), skipped);
        // The checksums alone are the payload without its sections.
        assertEquals(base(), PayloadCodec.decode(PayloadCodec.encode(p), null, KNOWN));
    }

    @Test
    void aMixedModePayloadKeepsAnEmptyInlineMapAndTheSameSectionsValue() {
        ChecksumPayload mixed = ChecksumPayload.of(io.kvchecksum.ChecksumMode.MIXED, 2, 20, base().groups());
        ChecksumPayload p = mixed.withSection(new Echo(7));
        assertEquals(3, p.version());
        assertArrayEquals(PayloadCodec.encode(mixed), PayloadCodec.encode(p));
        assertEquals("80", HexFormat.of().formatHex(PayloadCodec.encode(p)).substring(PayloadCodec.encode(p).length * 2 - 2));
        assertEquals("92" + "01" + ECHO_MAP, HexFormat.of().formatHex(PayloadCodec.encodeSections(p)));
        assertEquals(p, PayloadCodec.decode(PayloadCodec.encode(p), PayloadCodec.encodeSections(p), KNOWN));
    }

    @Test
    void anEarlierReleasesInlineSectionsStillDecode() {
        // Rolling upgrade: a producer of an earlier release wrote version 3 with the section inline.
        ChecksumPayload old = PayloadCodec.decode(hex(V3_HEAD + ECHO_MAP), KNOWN);
        assertEquals(3, old.version());
        assertEquals(new Echo(7), old.section(Echo.NAME));
        // Written again: the checksums with an empty inline map, the section beside them.
        assertEquals(V3_HEAD + "80", HexFormat.of().formatHex(PayloadCodec.encode(old)));
        assertEquals("9201" + ECHO_MAP, HexFormat.of().formatHex(PayloadCodec.encodeSections(old)));
        assertEquals(old, PayloadCodec.decode(PayloadCodec.encode(old), PayloadCodec.encodeSections(old), KNOWN));
        // Inline sections and separate ones of other names join.
        Map<String, PayloadSections.Known> two = Map.of(Echo.NAME, KNOWN.get(Echo.NAME), "test-other",
                new PayloadSections.Known("test-other", v -> new Other(), (a, b) -> null));
        ChecksumPayload both = PayloadCodec.decode(hex(V3_HEAD + ECHO_MAP), hex("9201" + "81aa746573742d6f74686572c0"), two);
        assertEquals(java.util.Set.of(Echo.NAME, "test-other"), both.sections().keySet());
        // The same section in both places is malformed, naming it, whether the reader knows it or not.
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class,
                () -> PayloadCodec.decode(hex(V3_HEAD + ECHO_MAP), hex("9201" + ECHO_MAP), KNOWN));
        assertEquals("sections.test-echo: both inline in the version-3 payload and in the separate sections value", e.getMessage());
        e = assertThrows(MalformedPayloadException.class,
                () -> PayloadCodec.decode(hex(V3_HEAD + ECHO_MAP), hex("9201" + ECHO_MAP)));
        assertTrue(e.getMessage().startsWith("sections.test-echo: both inline"), e.getMessage());
    }

    /** A second test section, of no value. */
    record Other() implements PayloadSection {
        @Override
        public String name() {
            return "test-other";
        }

        @Override
        public void pack(MessagePacker p) throws IOException {
            p.packNil();
        }
    }

    @Test
    void aMalformedSectionsValueNamesWhatIsWrong() {
        byte[] v2 = hex(V2);
        String[][] bad = {
            {"", "sections_value: truncated"},
            {"c0", "sections_value: expected array, got nil"},
            {"91" + "01", "sections_value: an array of 1 elements; expected 2"},
            {"93" + "01" + ECHO_MAP + "c0", "sections_value: an array of 3 elements; expected 2"},
            {"92" + "02" + ECHO_MAP, "sections_value.version: unknown sections version 2 (this reader knows 1)"},
            {"92" + "ff" + ECHO_MAP, "sections_value.version: -1 is outside"},
            {"92" + "a131" + ECHO_MAP, "sections_value.version: expected integer, got string"},
            {"92" + "01" + "c0", "sections: expected map, got nil"},
            {"92" + "01" + "82" + "a178" + "c0" + "a178" + "c0", "sections: 'x' appears twice"},
            {"92" + "01" + "81" + "01" + "c0", "sections[0].name: expected string, got integer"},
            {"92" + "01" + "81" + "a178" + "dd7fffffff", "sections.x: claims 2147483647 elements"},
            {"92" + "01" + "81" + "a178" + "91".repeat(40) + "c0", "sections.x: nested deeper than 32 levels"},
            {"92" + "01" + ECHO_MAP + "c0", "sections_value: 1 trailing bytes after the sections value"},
            {"92" + "01" + "81" + "a9746573742d6563686f" + "a0", "sections.test-echo: expected a non-negative integer"},
            {"92" + "01" + "81" + "a178" + "cf" + "ff", "sections.x: not valid msgpack"},
        };
        for (String[] b : bad) {
            MalformedPayloadException e = assertThrows(MalformedPayloadException.class,
                    () -> PayloadCodec.decode(v2, hex(b[0]), KNOWN), b[0]);
            assertTrue(e.getMessage().startsWith(b[1]), b[0] + ": " + e.getMessage());
        }
        // An empty map is well-formed: no sections.
        assertEquals(base(), PayloadCodec.decode(v2, hex("9201" + "80"), KNOWN));
        // Version 1 has no sections; text that is not base64 is named.
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class,
                () -> PayloadCodec.decode(hex("93011090"), hex("9201" + ECHO_MAP), KNOWN));
        assertTrue(e.getMessage().startsWith("sections_value: a version-1 payload has no sections"), e.getMessage());
        e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decodeBase64(PayloadCodec.encodeBase64(base()), "!!"));
        assertTrue(e.getMessage().startsWith("sections_value: not base64"), e.getMessage());
        e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decodeBase64(PayloadCodec.encodeBase64(base()), ""));
        assertTrue(e.getMessage().startsWith("sections_value: truncated"), e.getMessage());
        e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(null, hex("9201" + ECHO_MAP)));
        assertTrue(e.getMessage().startsWith("payload: no bytes"), e.getMessage());
    }

    @Test
    void theWirePayloadCarriesBothPartsUnderTheirKeys() {
        ChecksumPayload p = base().withSection(new Echo(7));
        WirePayload w = WirePayload.of(p);
        assertEquals(List.of("kv_checksums", "kv_checksum_sections"), List.copyOf(w.params().keySet()));
        assertEquals(PayloadCodec.encodeBase64(p), w.params().get(PayloadCodec.CHECKSUMS_KEY));
        assertEquals(PayloadCodec.encodeSectionsBase64(p), w.params().get(PayloadCodec.SECTIONS_KEY));
        assertEquals(WirePayload.of(p), new WirePayload(PayloadCodec.encode(p), PayloadCodec.encodeSections(p)));
        WirePayload none = WirePayload.of(base());
        assertNull(none.sections());
        assertNull(none.sectionsBase64());
        assertEquals(List.of("kv_checksums"), List.copyOf(none.params().keySet()));
        assertEquals(base(), none.decode());
        byte[] out = w.checksums();
        out[0] = 0;
        assertEquals(V2, HexFormat.of().formatHex(w.checksums()), "the bytes are copied out");
    }

    @Test
    void aMalformedKnownSectionNamesItsField() {
        // {"test-echo": ""}: well-formed msgpack, wrong type for the section.
        ChecksumPayload p = base().withSection(new Echo(7));
        byte[] bytes = PayloadCodec.encodeSections(p);
        bytes[bytes.length - 1] = (byte) 0xa0; // an empty str instead of 7
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class,
                () -> PayloadCodec.decode(PayloadCodec.encode(p), bytes, KNOWN));
        assertTrue(e.getMessage().startsWith("sections.test-echo"), e.getMessage());
        assertTrue(PayloadCodec.decode(PayloadCodec.encode(p), bytes).sections().isEmpty(),
                "a reader without the section still decodes it");
        // The earlier inline form likewise.
        byte[] inline = HexFormat.of().parseHex(V3_HEAD + "81a9746573742d6563686fa0");
        assertTrue(assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(inline, KNOWN)).getMessage()
                .startsWith("sections.test-echo"));
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
    void sectionsNeedVersionTwoOrThreeAndTheirOwnName() {
        assertEquals(2, new ChecksumPayload(2, 2, 20, base().groups(), "standard", Map.of(Echo.NAME, new Echo(1))).version());
        IllegalArgumentException v1 = assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(1, null, 20,
                List.of(), "standard", Map.of(Echo.NAME, new Echo(1))));
        assertEquals("a version-1 payload cannot carry sections", v1.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(1, null, 20, List.of()).withSection(new Echo(1)));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(3, 2, 20, base().groups(), "standard",
                Map.of("other", new Echo(1))));
    }
}
