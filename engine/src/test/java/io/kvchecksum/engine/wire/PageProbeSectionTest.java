package io.kvchecksum.engine.wire;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PageProbe;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.worker.Side;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The head/tail probe of seed 004 end to end: a producer's probe, a consumer whose page was not completely written
 * when it consumed (its tail still stale), and what the verifier says.
 */
class PageProbeSectionTest {
    private static final long SEED = 0x9A6E_9409EL;
    private static final int PAGE = 16;
    private static final int HEADS = 2;
    private static final int HEAD_DIM = 64; // bf16: 128-byte K and V cells
    private static final int[] LAYERS = {0, 1, 2};
    private static final long TOKENS = 70;  // 5 pages, the last one partial

    /** One side: SGLang or vLLM-flash caches of {@code numPages} pages, random bytes, and the request's page table. */
    private record Side(KvCacheGroup group, int[] table) {
        SlicePlan plan() {
            return SlicePlan.of(group, RequestBlocks.of(table, TOKENS, PAGE));
        }
    }

    private static Side side(Arena arena, Random rnd, boolean sglang, int[] table) {
        KvLayouts.PagedShape s = new KvLayouts.PagedShape(8, PAGE, HEADS, HEAD_DIM, 2);
        long bytes = 8L * PAGE * HEADS * HEAD_DIM * 2;
        List<KvMemory> k = new ArrayList<>();
        List<KvMemory> v = new ArrayList<>();
        for (int l = 0; l < LAYERS.length; l++) {
            for (List<KvMemory> list : List.of(k, v)) {
                MemorySegment m = arena.allocate(sglang ? bytes : 2 * bytes, 8);
                for (long i = 0; i < m.byteSize(); i += 8) {
                    m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
                }
                list.add(KvMemory.host(m));
            }
        }
        KvCacheGroup g = sglang ? KvLayouts.sglang(s, 0, LAYERS, k, v) : KvLayouts.vllmFlash(s, 0, LAYERS, k);
        return new Side(g, table);
    }

    /** The transfer: every cell of tokens [0, TOKENS) except {@code skip} (positions not yet landed). */
    private static void load(Side from, Side to, java.util.function.LongPredicate skip) {
        for (int i = 0; i < LAYERS.length; i++) {
            CacheLayer a = from.group().layers().get(i);
            CacheLayer b = to.group().layers().get(i);
            for (long t = 0; t < TOKENS; t++) {
                if (skip.test(t)) {
                    continue;
                }
                for (int h = 0; h < HEADS; h++) {
                    copy(a.k(), b.k(), from.table()[(int) (t / PAGE)], to.table()[(int) (t / PAGE)], t % PAGE, h);
                    copy(a.v(), b.v(), from.table()[(int) (t / PAGE)], to.table()[(int) (t / PAGE)], t % PAGE, h);
                }
            }
        }
    }

    private static void copy(KvRegion a, KvRegion b, int pa, int pb, long slot, int h) {
        MemorySegment.copy(((KvMemory.Host) a.memory()).segment(), a.cellOffset(pa, slot, h),
                ((KvMemory.Host) b.memory()).segment(), b.cellOffset(pb, slot, h), a.cellBytes());
    }

    private static ChecksumPayload payload(KvChecksum k, SlicePlan plan, PageProbeSection probe) {
        return ChecksumPayload.of(1, TOKENS, List.of(new GroupChecksums(0, 7, PAGE, 0, k.blockChecksums(plan))))
                .withSection(probe);
    }

    @Test
    void aPageWhoseTailHadNotLandedIsAProbeMismatchAtThatPagesTailOnly() {
        System.out.println("PageProbeSectionTest seed = " + SEED);
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            Side producer = side(arena, rnd, true, new int[] {3, 1, 7, 4, 2});
            Side consumer = side(arena, rnd, true, new int[] {5, 6, 1, 2, 3});
            // The completion signal fired while page 2 (tokens 32..47) was still being written: its last two tokens
            // still hold what the consumer's page held before.
            load(producer, consumer, t -> t == 46 || t == 47);
            PageProbeSection sent = PageProbeSection.compute(cpu, producer.plan(), PageProbe.DEFAULT_PROBE_BYTES);
            PageProbeSection seen = PageProbeSection.compute(cpu, consumer.plan(), PageProbe.DEFAULT_PROBE_BYTES);
            assertEquals(5, sent.numPages());

            ChecksumPayload sentPayload = payload(cpu, producer.plan(), sent);
            ChecksumPayload expected = PayloadCodec.decode(PayloadCodec.encode(sentPayload), PayloadCodec.encodeSections(sentPayload));
            assertEquals(sent, expected.section(PageProbeSection.NAME), "the section survives the wire");
            LoadVerdict v = Verifier.compare(expected, payload(cpu, consumer.plan(), seen));
            SectionVerdict probe = v.section(PageProbeSection.NAME);
            assertEquals(Status.MISMATCH, probe.status(), probe.toString());
            assertEquals(List.of(new PageProbeSection.PageDifference(2, 32, false, true)),
                    PageProbeSection.differences(expected.section(PageProbeSection.NAME), seen), probe.toString());
            assertTrue(probe.detail().contains("page 2 (token 32) tail"), probe.detail());
            assertEquals(Status.MISMATCH, v.status());
            // The full checksum agrees: block 2 only.
            assertArrayEquals(new long[] {2}, v.group(0).mismatchedBlocks());

            // Once the rest lands, the probe matches.
            load(producer, consumer, t -> t != 46 && t != 47);
            LoadVerdict after = Verifier.compare(expected, payload(cpu, consumer.plan(),
                    PageProbeSection.compute(cpu, consumer.plan(), PageProbe.DEFAULT_PROBE_BYTES)));
            assertEquals(Status.MATCH, after.status(), after.toString());
            assertEquals(Status.MATCH, after.section(PageProbeSection.NAME).status());
        }
    }

    @Test
    void theProbeDependsOnTokensNotOnLayoutAndTpPartsAddUp() {
        Random rnd = new Random(SEED + 1);
        try (Arena arena = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            Side sglang = side(arena, rnd, true, new int[] {3, 1, 7, 4, 2});
            Side flash = side(arena, rnd, false, new int[] {0, 5, 6, 2, 1});
            load(sglang, flash, t -> false);
            PageProbe.Probes a = PageProbe.compute(cpu, sglang.plan(), 24);
            assertEquals(a, PageProbe.compute(cpu, flash.plan(), 24), "SGLang and vLLM flash layouts, other page ids");
            // One head per "rank": the parts add up to the whole.
            List<PageProbe.Probes> parts = new ArrayList<>();
            for (int h = 0; h < HEADS; h++) {
                List<CacheLayer> mine = new ArrayList<>();
                for (CacheLayer l : sglang.group().layers()) {
                    mine.add(new CacheLayer(l.layer(), h, 1, shifted(l.k(), h), shifted(l.v(), h)));
                }
                KvCacheGroup g = new KvCacheGroup(mine, PAGE, 8);
                parts.add(PageProbe.compute(cpu, SlicePlan.of(g, RequestBlocks.of(sglang.table(), TOKENS, PAGE)), 24));
            }
            assertEquals(a, PageProbe.Probes.sum(parts));
            assertNotEquals(a, PageProbe.compute(cpu, sglang.plan(), 32), "the probe size is part of the value");
            assertThrows(io.kvchecksum.InvalidLayoutException.class, () -> PageProbe.compute(cpu, sglang.plan(), 12));
        }
    }

    private static KvRegion shifted(KvRegion r, int head) {
        return new KvRegion(r.memory(), r.offset() + head * r.headStride(), r.pageStride(), r.tokenStride(),
                r.headStride(), r.cellBytes());
    }

    @Test
    void oneSideOnlyOtherPagesAndTheWireForm() {
        PageProbeSection a = new PageProbeSection(16, 64, 0, 20, new int[] {1, 2}, new int[] {3, -1});
        // [16, 64, 0, 20, bin(8 * 2)]: heads and tails interleaved per page, little-endian uint32.
        ChecksumPayload with = ChecksumPayload.of(2, 20, List.of()).withSection(a);
        // The checksums stay version 2; the section travels in the sections value [1, {...}].
        assertEquals("9402021490", HexFormat.of().formatHex(PayloadCodec.encode(with)));
        assertEquals("9201" + "81" + "aa706167652d70726f6265" + "95" + "10" + "40" + "00"
                + "14" + "c410" + "01000000" + "03000000" + "02000000" + "ffffffff",
                HexFormat.of().formatHex(PayloadCodec.encodeSections(with)));
        ChecksumPayload without = ChecksumPayload.of(2, 20, List.of());
        SectionVerdict one = Verifier.compareSections(with, without, PayloadSections.KNOWN).get(0);
        assertEquals(UnverifiedReason.ONE_SIDE_ONLY, one.reason());
        PageProbeSection other = new PageProbeSection(8, 64, 0, 20, new int[3], new int[3]);
        assertEquals(UnverifiedReason.PROBE_PAGES_DIFFER,
                Verifier.compareSections(with, without.withSection(other), PayloadSections.KNOWN).get(0).reason());
        // A consumer that loaded from token 16 on compares the page both cover, [16, 20).
        PageProbeSection later = new PageProbeSection(16, 64, 16, 20, new int[] {2}, new int[] {-1});
        assertEquals(Status.MATCH, Verifier.compareSections(with, without.withSection(later), PayloadSections.KNOWN).get(0).status());
        PageProbeSection laterBad = new PageProbeSection(16, 64, 16, 20, new int[] {2}, new int[] {0});
        assertEquals(List.of(new PageProbeSection.PageDifference(1, 16, false, true)), PageProbeSection.differences(a, laterBad));
        // Malformed: a bin that does not hold 8 bytes per page (num_tokens 20 -> 40: three pages, 16 bytes).
        byte[] bytes = PayloadCodec.encodeSections(with);
        assertEquals(0x14, bytes[bytes.length - 19]);
        bytes[bytes.length - 19] = 0x28;
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class,
                () -> PayloadCodec.decode(PayloadCodec.encode(with), bytes));
        assertTrue(e.getMessage().startsWith("sections.page-probe.probes"), e.getMessage());
    }
}
