package io.kvchecksum.engine.auxiliary;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.Decision;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.PolicyTest;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.MalformedPayloadException;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.SglangDigestSection;
import io.kvchecksum.engine.wire.Verifier;
import io.kvchecksum.engine.worker.Aggregator;
import io.kvchecksum.engine.worker.PayloadSender;
import io.kvchecksum.engine.worker.PendingLoads;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.zip.Adler32;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sglang-digest section: the layout signature's definition, the section's bytes, its strict decoder and its
 * comparison (LAYOUT_DIFFERS gates the digest only), the once-per-peer warning, and the engine's opt-in helper.
 */
class SglangDigestSectionTest {
    /** The sections value {@code [1, {"sglang-digest": ...}]} up to the section's value. */
    private static final String SECTION_HEX_PREFIX = "9201" + "81ad73676c616e672d646967657374";

    /** Expected values computed by the Python lines of docs/sglang.md (FNV-1a 64 over little-endian words). */
    @Test
    void layoutSignatureIsFnv1a64OfPageSizeCountAndItemLengths() {
        assertEquals(0x43b9365510146df1L, LayoutSignature.of(16, new long[] {8192, 8192, 8192, 8192}));
        assertEquals(0xea15055285d4de69L, LayoutSignature.of(8, new long[] {4096, 4096, 4096, 4096}));
        assertEquals(0x05ebc4eb42428ec8L, LayoutSignature.of(16, new long[] {8192, 8192, 8192, 8192, 24}));
        assertEquals(0x392209f14dea4c24L, LayoutSignature.of(1, new long[0]));
    }

    @Test
    void signatureOfAnSglangGroupIsKPagesThenVPagesThenStateRows() {
        try (Arena arena = Arena.ofConfined()) {
            KvLayouts.PagedShape s = new KvLayouts.PagedShape(4, 16, 2, 128, 2); // 16 slots x 2 heads x 256 bytes = 8192
            List<KvMemory> ks = List.of(KvMemory.host(arena.allocate(4 * 8192)), KvMemory.host(arena.allocate(4 * 8192)));
            List<KvMemory> vs = List.of(KvMemory.host(arena.allocate(4 * 8192)), KvMemory.host(arena.allocate(4 * 8192)));
            KvCacheGroup g = KvLayouts.sglang(s, 0, new int[] {0, 1}, ks, vs);
            assertArrayEquals(new long[] {8192, 8192, 8192, 8192}, LayoutSignature.itemLengths(g, List.of()));
            assertEquals(0x43b9365510146df1L, LayoutSignature.of(g, List.of()));
            StateRow row = new StateRow("ssm", KvMemory.host(arena.allocate(32)), 8, 24);
            assertEquals(0x05ebc4eb42428ec8L, LayoutSignature.of(g, List.of(row)));
        }
    }

    private static ChecksumPayload base() {
        return ChecksumPayload.of(2, 20, List.of(new GroupChecksums(3, -1L, 16, 1, new long[] {0x0102030405060708L})));
    }

    @Test
    void theSectionsBytesAreWhatPythonsMsgpackWrites() {
        // /usr/bin/python3 -c 'import msgpack, zlib; print(msgpack.packb([[0,0,0xea15055285d4de69,8,0,7,
        //     zlib.adler32(b"kvchecksum")],[1,3,0x43b9365510146df1,16,32,2,1]]).hex())'
        String value = "92970000cfea15055285d4de69080007ce16f70435970103cf43b9365510146df110200201";
        SglangDigestSection s = new SglangDigestSection(List.of(
                new SglangDigestSection.Entry(1, 3, 0x43b9365510146df1L, 16, 32, 2, 1),
                new SglangDigestSection.Entry(0, 0, 0xea15055285d4de69L, 8, 0, 7, 0x16f70435L)));
        byte[] bytes = PayloadCodec.encodeSections(base().withSection(s));
        assertEquals(SECTION_HEX_PREFIX + value, HexFormat.of().formatHex(bytes));
        assertArrayEquals(PayloadCodec.encode(base()), PayloadCodec.encode(base().withSection(s)), "the checksums' bytes");
        ChecksumPayload back = PayloadCodec.decode(PayloadCodec.encode(base()), bytes);
        assertEquals(s, back.section(SglangDigestSection.NAME), "a known section decodes to the same value");
    }

    private static byte[] withValue(String valueHex) {
        return HexFormat.of().parseHex(SECTION_HEX_PREFIX + valueHex);
    }

    @Test
    void aMalformedSectionNamesItsField() {
        String[][] cases = {
                {"07", "sections.sglang-digest: expected an array"},
                {"9196000000000000", "sections.sglang-digest[0]: expected [group_id"},
                // the rest written by Python's msgpack.packb([[...7 fields...]]).hex()
                {"9197ff000001000000", "sections.sglang-digest[0].group_id: -1 is outside"},
                {"919700000000000000", "sections.sglang-digest[0].page_size: 0 is outside"},
                {"91970000a010000000", "sections.sglang-digest[0].signature: expected an unsigned"},
                {"91970000fb10000001", "sections.sglang-digest[0].signature: -5 is negative"},
                {"919700000010030000", "sections.sglang-digest[0].first_token: 3 is not a multiple"},
                {"9197000000100000cefff10000", "sections.sglang-digest[0].digest: 4293984256 is not an Adler-32"},
                {"9197000000100000cf0000000100000000", "sections.sglang-digest[0].digest: 4294967296 is outside"},
                {"9297000000100000009700000010000000", "sections.sglang-digest[1]: group 0 worker 0 appears twice"},
        };
        for (String[] c : cases) {
            byte[] bytes = withValue(c[0]);
            MalformedPayloadException e = assertThrows(MalformedPayloadException.class,
                    () -> PayloadCodec.decode(PayloadCodec.encode(base()), bytes), c[0]);
            assertTrue(e.getMessage().startsWith(c[1]), c[0] + ": " + e.getMessage());
        }
        // The one well-formed value among them decodes.
        assertEquals(1, ((SglangDigestSection) PayloadCodec.decode(PayloadCodec.encode(base()), withValue("919700000010000001"))
                .section(SglangDigestSection.NAME)).entries().size());
    }

    private static SglangDigestSection one(long signature, int page, long first, int pages, long digest) {
        return SglangDigestSection.of(new SglangDigestSection.Entry(0, 0, signature, page, first, pages, digest));
    }

    @Test
    void comparisonGatesTheDigestOnTheSignature() {
        SglangDigestSection p = one(11, 16, 0, 4, 0x12345678L);
        assertEquals(Status.MATCH, SglangDigestSection.compare(p, one(11, 16, 0, 4, 0x12345678L)).status());
        SectionVerdict mm = SglangDigestSection.compare(p, one(11, 16, 0, 4, 0x12345679L));
        assertEquals(Status.MISMATCH, mm.status());
        assertTrue(mm.detail().contains("12345678 != 12345679"), mm.detail());
        SectionVerdict layout = SglangDigestSection.compare(p, one(12, 8, 0, 8, 0x12345679L));
        assertEquals(UnverifiedReason.LAYOUT_DIFFERS, layout.reason());
        assertTrue(layout.detail().contains("page 16 vs"), layout.detail());
        assertEquals(UnverifiedReason.NO_COMMON_POSITION, SglangDigestSection.compare(p, one(11, 16, 16, 3, 1)).reason());
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, SglangDigestSection.compare(p, null).reason());
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, SglangDigestSection.compare(null, p).reason());
        SglangDigestSection two = new SglangDigestSection(List.of(new SglangDigestSection.Entry(0, 0, 11, 16, 0, 4, 0x12345678L),
                new SglangDigestSection.Entry(0, 1, 11, 16, 0, 4, 5)));
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, SglangDigestSection.compare(two, p).reason(), "worker 1 on one side");
        // A mismatch anywhere outranks an unverified entry elsewhere.
        SglangDigestSection twoBad = new SglangDigestSection(List.of(new SglangDigestSection.Entry(0, 0, 11, 16, 0, 4, 7),
                new SglangDigestSection.Entry(0, 1, 99, 16, 0, 4, 5)));
        assertEquals(Status.MISMATCH, SglangDigestSection.compare(two, twoBad).status());
    }

    @Test
    void throughTheVerifierALayoutDifferenceLeavesTheGroupsMatchAndADigestMismatchFailsTheLoad() {
        LoadVerdict layout = Verifier.compare(base().withSection(one(11, 16, 0, 4, 1)), base().withSection(one(12, 8, 0, 8, 2)));
        assertEquals(Status.MATCH, layout.status(), layout.toString());
        assertEquals(UnverifiedReason.LAYOUT_DIFFERS, layout.section(SglangDigestSection.NAME).reason());
        LoadVerdict digest = Verifier.compare(base().withSection(one(11, 16, 0, 4, 1)), base().withSection(one(11, 16, 0, 4, 2)));
        assertEquals(Status.MISMATCH, digest.status());
        LoadVerdict plain = Verifier.compare(base(), base());
        assertNull(plain.section(SglangDigestSection.NAME));
    }

    @Test
    void aLayoutDifferenceIsWarnedOncePerPeerNotPerRequest() {
        PolicyTest.Recording log = new PolicyTest.Recording();
        FailurePolicy policy = FailurePolicy.failOpen(ChecksumMetrics.NONE, log);
        LoadVerdict v = Verifier.compare(base().withSection(one(11, 16, 0, 4, 1)), base().withSection(one(12, 8, 0, 8, 2)));
        for (int i = 0; i < 50; i++) {
            assertEquals(Action.USE_LOAD, policy.decide("r" + i, "decode-0", v).action());
        }
        assertEquals(1, log.count("WARNING"), log.lines.toString());
        assertTrue(log.lines.stream().anyMatch(l -> l.startsWith("WARNING") && l.contains("LAYOUT_DIFFERS")
                && l.contains("decode-0")), log.lines.toString());
        for (int i = 0; i < 5; i++) {
            policy.decide("s" + i, "decode-1", v);
        }
        assertEquals(2, log.count("WARNING"), "a second peer gets its own warning");
    }

    @Test
    void theEngineHelperDigestsThePagesAndItsSignatureTracksThePageSizeOnly() {
        Random rnd = new Random(20251129L);
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.byName("reference")) {
            // 2 layers x 2 heads x 8 bytes; the same 12 tokens paged by 4 (pages 2, 0, 1) and by 2 (pages 5, 0, 3, 1, 4, 2).
            byte[][] kv = new byte[4][12 * 2 * 8];
            for (byte[] b : kv) {
                rnd.nextBytes(b);
            }
            int[] t4 = {2, 0, 1};
            int[] t2 = {5, 0, 3, 1, 4, 2};
            List<KvMemory> k4 = new ArrayList<>();
            List<KvMemory> v4 = new ArrayList<>();
            List<KvMemory> k2 = new ArrayList<>();
            List<KvMemory> v2 = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                (i < 2 ? k4 : v4).add(KvMemory.host(scatter(arena, kv[i], 4, t4)));
                (i < 2 ? k2 : v2).add(KvMemory.host(scatter(arena, kv[i], 2, t2)));
            }
            KvCacheGroup g4 = KvLayouts.sglang(new KvLayouts.PagedShape(3, 4, 2, 4, 2), 0, new int[] {0, 1}, k4, v4);
            KvCacheGroup g2 = KvLayouts.sglang(new KvLayouts.PagedShape(6, 2, 2, 4, 2), 0, new int[] {0, 1}, k2, v2);
            SlicePlan p4 = SlicePlan.of(g4, RequestBlocks.of(t4, 12, 4));
            SlicePlan p2 = SlicePlan.of(g2, RequestBlocks.of(t2, 12, 4));
            SglangDigestSection.Entry e4 = SglangDigests.entry(cpu, 0, 0, p4, List.of());
            SglangDigestSection.Entry e2 = SglangDigests.entry(cpu, 0, 0, p2, List.of());
            // In logical order the stream is K0, K1, V0, V1 whatever the paging: equal digests, different signatures.
            Adler32 a = new Adler32();
            for (byte[] b : kv) {
                a.update(b);
            }
            assertEquals(a.getValue(), e4.digest());
            assertEquals(a.getValue(), e2.digest());
            assertEquals(LayoutSignature.of(4, new long[] {64, 64, 64, 64}), e4.signature());
            assertNotEquals(e4.signature(), e2.signature());
            assertArrayEquals(cpu.blockChecksums(p4), cpu.blockChecksums(p2), "the weighted sum ignores the paging");
            ChecksumPayload prod = SglangDigests.attach(ChecksumPayload.of(1, 12,
                    List.of(new GroupChecksums(0, 1, 4, 0, cpu.blockChecksums(p4)))), List.of(e4));
            ChecksumPayload cons = SglangDigests.attach(ChecksumPayload.of(1, 12,
                    List.of(new GroupChecksums(0, 1, 4, 0, cpu.blockChecksums(p2)))), List.of(e2));
            LoadVerdict v = Verifier.compare(PayloadCodec.decode(PayloadCodec.encode(prod), PayloadCodec.encodeSections(prod)), cons);
            assertEquals(Status.MATCH, v.status());
            assertEquals(UnverifiedReason.LAYOUT_DIFFERS, v.section(SglangDigestSection.NAME).reason());
            // Through the engine's own path: sender, pending loads, policy with the peer's name.
            PolicyTest.Recording log = new PolicyTest.Recording();
            FailurePolicy policy = FailurePolicy.failClosed(FailurePolicy.OnFailure.RECOMPUTE, ChecksumMetrics.NONE, log);
            PayloadSender sender = new PayloadSender(ChecksumMetrics.NONE);
            PendingLoads pending = new PendingLoads();
            for (int i = 0; i < 3; i++) {
                var wire = sender.wire("r" + i, SglangDigests.attach(new Aggregator.Complete(ChecksumPayload.of(1, 12,
                        List.of(new GroupChecksums(0, 1, 4, 0, cpu.blockChecksums(p4)))), java.util.Map.of()), List.of(e4)))
                        .orElseThrow();
                pending.expect("r" + i, wire.checksumsBase64(), wire.sectionsBase64());
                Decision d = pending.verify("r" + i, SglangDigests.attach(new Aggregator.Complete(ChecksumPayload.of(1, 12,
                        List.of(new GroupChecksums(0, 1, 4, 0, cpu.blockChecksums(p2)))), java.util.Map.of()), List.of(e2)))
                        .map(x -> policy.decide("r", "prefill-7", x)).orElseThrow();
                assertEquals(Action.USE_LOAD, d.action(), "fail-closed, yet a layout difference fails nothing: " + d);
                assertEquals(UnverifiedReason.LAYOUT_DIFFERS, d.verdict().section(SglangDigestSection.NAME).reason());
            }
            assertEquals(1, log.count("WARNING"), log.lines.toString());
            Aggregator.Result incomplete = new Aggregator.Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "1 of 2");
            assertEquals(incomplete, SglangDigests.attach(incomplete, List.of(e4)));
            assertEquals(ChecksumPayload.CURRENT_VERSION, SglangDigests.attach(ChecksumPayload.of(1, 12,
                    List.of(new GroupChecksums(0, 1, 4, 0, new long[3]))), List.of()).version(), "off: nothing changes");
            // One flipped byte in a V page: the same signature, another digest.
            MemorySegment v0 = ((KvMemory.Host) v4.getFirst()).segment();
            v0.set(ValueLayout.JAVA_BYTE, 5, (byte) (v0.get(ValueLayout.JAVA_BYTE, 5) ^ 1));
            SglangDigestSection.Entry flipped = SglangDigests.entry(cpu, 0, 0, p4, List.of());
            assertEquals(e4.signature(), flipped.signature());
            assertNotEquals(e4.digest(), flipped.digest());
            assertThrows(io.kvchecksum.InvalidLayoutException.class, () -> SglangDigests.entry(cpu, 0, 0,
                    SlicePlan.of(g4, RequestBlocks.of(new int[] {0, 1}, 12, 1, 2)), List.of()), "first token 2 inside a page of 4");
        }
    }

    /** Logical [tokens, heads*cell] bytes written into pages of {@code page} slots at the table's page ids. */
    private static MemorySegment scatter(Arena arena, byte[] logical, int page, int[] table) {
        int row = 16;
        MemorySegment m = arena.allocate((long) table.length * page * row);
        for (int t = 0; t < logical.length / row; t++) {
            long at = ((long) table[t / page] * page + t % page) * row;
            MemorySegment.copy(MemorySegment.ofArray(logical), (long) t * row, m, at, row);
        }
        return m;
    }
}
