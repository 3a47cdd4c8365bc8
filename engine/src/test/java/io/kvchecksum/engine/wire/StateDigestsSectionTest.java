package io.kvchecksum.engine.wire;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.auxiliary.AuxiliaryChecks;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.worker.Aggregator;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The "state-digests" section: computed per state buffer, carried, compared by buffer name. */
class StateDigestsSectionTest {
    private static final long SEED = 0x57A7E5L;

    private static ChecksumPayload base() {
        return ChecksumPayload.of(1, 20, List.of(new GroupChecksums(0, 7, 16, 0, new long[] {1, 2})));
    }

    @Test
    void aChangedStateRowIsAMismatchNamingItsBuffer() {
        System.out.println("StateDigestsSectionTest seed = " + SEED);
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            MemorySegment prod = arena.allocate(4096);
            for (long i = 0; i < prod.byteSize(); i++) {
                prod.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            MemorySegment cons = arena.allocate(4096);
            MemorySegment.copy(prod, 0, cons, 0, 4096);
            // A request's rows: a conv state of 1000 bytes and an ssm state of 2053 (a tail of 5 bytes).
            List<StateRow> p = List.of(new StateRow("l0.conv", KvMemory.host(prod), 16, 1000),
                    new StateRow("l0.ssm", KvMemory.host(prod), 1024, 2053));
            List<StateRow> c = List.of(new StateRow("l0.conv", KvMemory.host(cons), 16, 1000),
                    new StateRow("l0.ssm", KvMemory.host(cons), 1024, 2053));
            for (ChecksumMode mode : ChecksumMode.values()) {
                StateDigestsSection sent = StateDigestsSection.compute(cpu, p, mode);
                ChecksumPayload expected = PayloadCodec.decode(PayloadCodec.encode(base().withSection(sent)),
                        PayloadCodec.encodeSections(base().withSection(sent)));
                assertEquals(sent, expected.section(StateDigestsSection.NAME));
                LoadVerdict same = Verifier.compare(expected, base().withSection(StateDigestsSection.compute(cpu, c, mode)));
                assertEquals(Status.MATCH, same.status(), same.toString());
                assertEquals(Status.MATCH, same.section(StateDigestsSection.NAME).status());

                cons.set(ValueLayout.JAVA_BYTE, 1024 + 2052, (byte) ~cons.get(ValueLayout.JAVA_BYTE, 1024 + 2052));
                StateDigestsSection seen = StateDigestsSection.compute(cpu, c, mode);
                LoadVerdict v = Verifier.compare(expected, base().withSection(seen));
                assertEquals(Status.MISMATCH, v.status(), mode + ": " + v);
                assertTrue(v.section(StateDigestsSection.NAME).detail().contains("l0.ssm"), v.toString());
                assertEquals(List.of("l0.ssm shard 0/1"), StateDigestsSection.differingBuffers(sent, seen));
                MemorySegment.copy(prod, 0, cons, 0, 4096);
            }
        }
    }

    @Test
    void oneSideOnlyOtherModesAndBuffersOnOneSideAreUnverified() {
        StateDigestsSection a = new StateDigestsSection("standard", Map.of("conv", 1L));
        LoadVerdict lacking = Verifier.compare(base().withSection(a), base());
        assertEquals(Status.MATCH, lacking.status(), "an optional section leaves the groups' status");
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, lacking.section(StateDigestsSection.NAME).reason());
        assertEquals(UnverifiedReason.MODE_DIFFERS, Verifier.compare(base().withSection(a),
                base().withSection(new StateDigestsSection("mixed", Map.of("conv", 2L)))).section(StateDigestsSection.NAME).reason());
        Map<String, Long> more = new LinkedHashMap<>();
        more.put("conv", 1L);
        more.put("ssm", 5L);
        SectionVerdict extra = Verifier.compare(base().withSection(a), base().withSection(new StateDigestsSection("standard", more)))
                .section(StateDigestsSection.NAME);
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, extra.reason());
        assertTrue(extra.detail().contains("ssm (consumer)"), extra.detail());
        assertThrows(IllegalArgumentException.class, () -> StateDigestsSection.merge(List.of(a, a)));
        assertEquals(new StateDigestsSection("standard", more),
                StateDigestsSection.merge(List.of(a, new StateDigestsSection("standard", Map.of("ssm", 5L)))));
    }

    @Test
    void theWireFormAndAMalformedSection() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("conv", 1L);
        d.put("ssm", -1L);
        ChecksumPayload p = ChecksumPayload.of(2, 20, List.of()).withSection(new StateDigestsSection("standard", d));
        // {"state-digests": ["standard", [["conv", 1], ["ssm", 2^64-1]]]}
        String section = "ad" + "73746174652d64696765737473" + "92" + "a8" + "7374616e64617264" + "92" + "92" + "a4"
                + "636f6e76" + "01" + "92" + "a3" + "73736d" + "cf" + "ffffffffffffffff";
        // The checksums are the plain version-2 bytes; the section travels in the sections value [1, {...}].
        assertEquals("94020214" + "90", HexFormat.of().formatHex(PayloadCodec.encode(p)));
        assertEquals("92" + "01" + "81" + section, HexFormat.of().formatHex(PayloadCodec.encodeSections(p)));
        byte[] checksums = PayloadCodec.encode(p);
        byte[] dup = HexFormat.of().parseHex(("9201" + "81" + section).replace("a373736d", "a3636f6e"));
        // "ssm" -> "con": still distinct; now make it "conv" twice by editing the length and bytes.
        byte[] twice = HexFormat.of().parseHex("9201" + "81" + "ad" + "73746174652d64696765737473"
                + "92" + "a8" + "7374616e64617264" + "92" + "92a4636f6e7601" + "92a4636f6e7602");
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(checksums, twice));
        assertEquals("sections.state-digests.digests[1].name: 'conv shard 0/1' appears twice", e.getMessage());
        assertEquals(List.of(StateDigestsSection.Entry.unsharded("conv", 1L), StateDigestsSection.Entry.unsharded("con", -1L)),
                ((StateDigestsSection) PayloadCodec.decode(checksums, dup).section(StateDigestsSection.NAME)).entries());
        // An earlier release's version 3 with the section inline still decodes to it.
        ChecksumPayload inline = PayloadCodec.decode(HexFormat.of().parseHex("96030214a87374616e64617264" + "90" + "81" + section));
        assertEquals(p.section(StateDigestsSection.NAME), inline.section(StateDigestsSection.NAME));
    }

    private static StateDigestsSection.Entry entry(String name, int shard, int shards, int copy, int copies, long length,
            long digest) {
        return new StateDigestsSection.Entry(name, shard, shards, 0, copy, copies, length, digest);
    }

    private static SectionVerdict compare(List<StateDigestsSection.Entry> producer, List<StateDigestsSection.Entry> consumer) {
        // Through the bytes, so the entries' wire form is what is compared.
        ChecksumPayload withSection = base().withSection(new StateDigestsSection("standard", producer));
        ChecksumPayload sent = PayloadCodec.decode(PayloadCodec.encode(withSection), PayloadCodec.encodeSections(withSection));
        LoadVerdict v = Verifier.compare(sent, base().withSection(new StateDigestsSection("standard", consumer)));
        return v.section(StateDigestsSection.NAME);
    }

    /** Issue 26: a TP2 producer's two shards of l0.ssm against a TP1 consumer's one row of the same bytes. */
    @Test
    void otherShardsAreALayoutDifferenceNeverAMismatch() {
        SectionVerdict v = compare(List.of(entry("l0.ssm", 0, 2, 0, 1, 64, 11), entry("l0.ssm", 1, 2, 0, 1, 64, 12)),
                List.of(entry("l0.ssm", 0, 1, 0, 1, 128, 99)));
        assertEquals(Status.UNVERIFIED, v.status(), v.toString());
        assertEquals(UnverifiedReason.LAYOUT_DIFFERS, v.reason());
        assertTrue(v.detail().contains("l0.ssm in 2 shards (producer) and 1 shards (consumer)"), v.detail());
        // The load keeps its groups' status: the KV group matched.
        LoadVerdict load = Verifier.compare(base().withSection(new StateDigestsSection("standard",
                List.of(entry("l0.ssm", 0, 2, 0, 1, 64, 11), entry("l0.ssm", 1, 2, 0, 1, 64, 12)))),
                base().withSection(new StateDigestsSection("standard", List.of(entry("l0.ssm", 0, 1, 0, 1, 128, 99)))));
        assertEquals(Status.MATCH, load.status(), load.toString());
    }

    /** Issue 26: a 64-byte row against a 128-byte row of the same name is not corruption. */
    @Test
    void aLengthDifferenceIsUnverifiedNeverAMismatch() {
        SectionVerdict v = compare(List.of(entry("l0.ssm", 0, 1, 0, 1, 64, 5)), List.of(entry("l0.ssm", 0, 1, 0, 1, 128, 6)));
        assertEquals(UnverifiedReason.LAYOUT_DIFFERS, v.reason(), v.toString());
        assertTrue(v.detail().contains("length differs: 64 bytes (producer), 128 (consumer)"), v.detail());
        // Same length, same digest: a match; one digest off: a mismatch naming the shard.
        assertEquals(Status.MATCH, compare(List.of(entry("l0.ssm", 1, 2, 0, 1, 64, 5)),
                List.of(entry("l0.ssm", 1, 2, 0, 1, 64, 5))).status());
        SectionVerdict bad = compare(List.of(entry("l0.ssm", 1, 2, 0, 1, 64, 5), entry("l0.ssm", 0, 2, 0, 1, 64, 7)),
                List.of(entry("l0.ssm", 0, 2, 0, 1, 64, 7), entry("l0.ssm", 1, 2, 0, 1, 64, 6)));
        assertEquals(Status.MISMATCH, bad.status(), bad.toString());
        assertEquals("state buffers differ: l0.ssm shard 1/2", bad.detail());
    }

    /** Replicated rows: the producer sends copy 0, the consumer checks each of its copies against it. */
    @Test
    void eachConsumerCopyIsCheckedAgainstTheProducersCopyZero() {
        List<StateDigestsSection.Entry> producer = List.of(entry("l0.conv", 0, 1, 0, 2, 32, 3));
        assertEquals(Status.MATCH, compare(producer, List.of(entry("l0.conv", 0, 1, 0, 2, 32, 3),
                entry("l0.conv", 0, 1, 1, 2, 32, 3))).status());
        SectionVerdict v = compare(producer, List.of(entry("l0.conv", 0, 1, 0, 2, 32, 3), entry("l0.conv", 0, 1, 1, 2, 32, 4)));
        assertEquals(Status.MISMATCH, v.status(), v.toString());
        assertEquals("state buffers differ: l0.conv shard 0/1 copy 1/2", v.detail());
        // A producer with 4 copies and a consumer with 1 compare alike: the copy count is not the layout.
        assertEquals(Status.MATCH, compare(List.of(entry("l0.conv", 0, 1, 0, 4, 32, 3)),
                List.of(entry("l0.conv", 0, 1, 0, 1, 32, 3))).status());
    }

    /** Rolling upgrades: an old producer's [name, digest] entries are shard 0 of 1, copy 0 of 1, length not compared. */
    @Test
    void oldTwoElementEntriesStillDecodeAndCompare() {
        List<StateDigestsSection.Entry> old = List.of(StateDigestsSection.Entry.unsharded("ssm", 9));
        assertEquals(Status.MATCH, compare(old, List.of(entry("ssm", 0, 1, 0, 1, 4096, 9))).status());
        assertEquals(Status.MISMATCH, compare(old, List.of(entry("ssm", 0, 1, 0, 1, 4096, 8))).status());
        // The new form: [name, digest, shard, shards, stage, copy, copies, length].
        ChecksumPayload p = ChecksumPayload.of(2, 20, List.of()).withSection(new StateDigestsSection("standard",
                List.of(new StateDigestsSection.Entry("ssm", 1, 2, 1, 0, 1, 64, 7))));
        String section = "ad" + "73746174652d64696765737473" + "92" + "a8" + "7374616e64617264" + "91"
                + "98" + "a3" + "73736d" + "07" + "01" + "02" + "01" + "00" + "01" + "40";
        assertEquals("9201" + "81" + section, HexFormat.of().formatHex(PayloadCodec.encodeSections(p)));
        byte[] checksums = PayloadCodec.encode(p);
        assertEquals(p, PayloadCodec.decode(checksums, PayloadCodec.encodeSections(p)));
        // Malformed: a shard outside its count, a 3-element entry, the same copy twice.
        byte[] bad = HexFormat.of().parseHex(("9201" + "81" + section).replace("0701020100", "0702020100"));
        assertEquals("sections.state-digests.digests[0].shard: 2 is outside 0..1",
                assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(checksums, bad)).getMessage());
        byte[] three = HexFormat.of().parseHex("9201" + "81" + "ad" + "73746174652d64696765737473"
                + "92" + "a8" + "7374616e64617264" + "91" + "93a373736d0701");
        assertEquals("sections.state-digests.digests[0]: 3 elements, expected 2 or 8",
                assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(checksums, three)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> new StateDigestsSection("standard",
                List.of(entry("a", 0, 1, 0, 1, 1, 1), entry("a", 0, 1, 0, 1, 2, 2))));
        assertThrows(IllegalArgumentException.class, () -> new StateDigestsSection.Entry("a", 0, 2, 0, 0, 1, -1, 0));
    }

    @Test
    void auxiliaryChecksAttachToACompleteResultOnly() {
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            List<StateRow> rows = List.of(new StateRow("ssm", KvMemory.host(arena.allocate(40)), 0, 40));
            AuxiliaryChecks aux = new AuxiliaryChecks(true, 0);
            List<PayloadSection> mine = aux.compute(cpu, ChecksumMode.STANDARD, rows, null);
            assertEquals(List.of(new StateDigestsSection("standard", List.of(entry("ssm", 0, 1, 0, 1, 40, 0)))), mine);
            Aggregator.Result done = AuxiliaryChecks.attach(new Aggregator.Complete(base(), Map.of()), mine);
            assertEquals(mine.get(0), ((Aggregator.Complete) done).payload().section(StateDigestsSection.NAME));
            Aggregator.Result incomplete = new Aggregator.Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "1 of 2");
            assertEquals(incomplete, AuxiliaryChecks.attach(incomplete, mine));
            assertTrue(AuxiliaryChecks.OFF.compute(cpu, ChecksumMode.STANDARD, rows, null).isEmpty());
            assertThrows(IllegalArgumentException.class, () -> new AuxiliaryChecks(false, 12));
        }
    }
}
