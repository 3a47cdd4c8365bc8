package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.CellPadding;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvLayouts.PagedShape;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

/**
 * The presets ({@link FieldLayouts}): each, through the gate and a worker on the CPU backend, gives the block
 * checksums the reference gives for the {@link KvLayouts} group built by hand over the same random bytes.
 */
class FieldLayoutsTest {
    private static final long SEED = 0xF1E1DL;
    private static final long PAGES = 4;
    private static final int B = 16;
    private static final long N = 40;
    private static final int[] TABLE = {3, 0, 2};
    private static final List<String> NAMES = List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn");
    private static final int[] NUMBERS = {0, 1};

    private static List<KvMemory> memories(Arena a, Random rnd, long bytes) {
        List<KvMemory> out = new ArrayList<>();
        for (int i = 0; i < NAMES.size(); i++) {
            MemorySegment m = a.allocate(bytes, 8);
            for (long o = 0; o < bytes; o++) {
                m.set(ValueLayout.JAVA_BYTE, o, (byte) rnd.nextInt());
            }
            out.add(KvMemory.host(m));
        }
        return out;
    }

    /** The worker's values of the one admitted group, for TP rank {@code rank}; the gate skipped nothing. */
    private static long[] throughTheGate(KvChecksum cpu, List<CacheGate.CacheSpec> specs, int rank) {
        CacheGate gate = CacheGate.of(specs, PAGES, CellPadding.NONE);
        assertTrue(gate.skipped().isEmpty(), gate.skipped().toString());
        WorkerRecord r = WorkerChecksummer.builder(cpu).tpRank(rank).layout(gate).build().compute(Side.PRODUCER, N,
                List.of(BlockSelection.producer(0, TABLE, -1, N, B, null)));
        assertEquals(1, r.groups().size(), r.toString());
        return r.groups().get(0).columns().values().iterator().next();
    }

    private static long[] byHand(KvCacheGroup g) {
        return KvChecksums.reference().blockChecksums(g, RequestBlocks.of(TABLE, N, B));
    }

    private record Attention(String name,
            Function<List<KvMemory>, List<CacheGate.CacheSpec>> preset,
            Function<List<KvMemory>, KvCacheGroup> byHand) {
    }

    @Test
    void everyAttentionPresetIsItsKvLayoutsGroupAtItsHeads() {
        Random rnd = new Random(SEED);
        System.out.println("FieldLayoutsTest seed " + SEED);
        PagedShape s = new PagedShape(PAGES, B, 2, 8, 2);
        long bytes = 2 * PAGES * B * 2 * 16;
        // TP rank 1 of 2: this rank holds heads 2 and 3 of the cache's 4.
        List<Attention> presets = List.of(
                new Attention("vllm flash", c -> FieldLayouts.vllmFlash(s, 1, 2, NAMES, c), c -> KvLayouts.vllmFlash(s, 2, NUMBERS, c)),
                new Attention("flashinfer nhd", c -> FieldLayouts.flashInferNhd(s, 1, 2, NAMES, c),
                        c -> KvLayouts.flashInferNhd(s, 2, NUMBERS, c)),
                new Attention("flashinfer hnd", c -> FieldLayouts.flashInferHnd(s, 1, 2, NAMES, c),
                        c -> KvLayouts.flashInferHnd(s, 2, NUMBERS, c)));
        try (Arena a = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            List<Long> fingerprints = new ArrayList<>();
            for (Attention p : presets) {
                List<KvMemory> caches = memories(a, rnd, bytes);
                assertArrayEquals(byHand(p.byHand().apply(caches)), throughTheGate(cpu, p.preset().apply(caches), 1), p.name());
                fingerprints.add(CacheGate.of(p.preset().apply(caches), PAGES, CellPadding.NONE).groups().get(0).fingerprint());
            }
            assertEquals(1, fingerprints.stream().distinct().count(), "the layout is not in the fingerprint: " + fingerprints);

            // Split pages (SGLang's k_buffer / v_buffer): a K and a V pool per layer.
            List<KvMemory> k = memories(a, rnd, bytes / 2);
            List<KvMemory> v = memories(a, rnd, bytes / 2);
            assertArrayEquals(byHand(KvLayouts.sglang(s, 2, NUMBERS, k, v)),
                    throughTheGate(cpu, FieldLayouts.splitPages(s, 1, 2, NAMES, k, v), 1));
            assertThrows(IllegalArgumentException.class, () -> FieldLayouts.splitPages(s, 1, 2, NAMES, k, v.subList(0, 1)));
            assertThrows(IllegalArgumentException.class, () -> FieldLayouts.vllmFlash(s, 0, 1, NAMES.subList(0, 1), k));
        }
    }

    @Test
    void mlaPresetsAreReplicatedOnEveryRankAndTheFp8DsRowNeedsNoPadding() {
        Random rnd = new Random(SEED + 1);
        try (Arena a = Arena.ofConfined(); KvChecksum cpu = KvChecksums.cpu()) {
            PagedShape bf16 = new PagedShape(PAGES, B, 1, 576, 2);
            List<KvMemory> latents = memories(a, rnd, PAGES * B * 1152);
            long[] expected = byHand(KvLayouts.vllmMla(bf16, NUMBERS, latents));
            for (int rank = 0; rank < 2; rank++) {
                List<CacheGate.CacheSpec> specs = FieldLayouts.vllmMla(bf16, rank, 2, NAMES, latents);
                assertEquals(new ReplicaKey(2, rank), specs.get(0).replica());
                assertEquals(0, specs.get(0).firstHead());
                if (rank == 0) {
                    assertArrayEquals(expected, throughTheGate(cpu, specs, rank), "bf16 MLA, 576 elements");
                }
            }

            assertEquals(656, FieldLayouts.FP8_DS_MLA_ROW_BYTES);
            List<KvMemory> rows = memories(a, rnd, PAGES * B * 656);
            List<CacheGate.CacheSpec> fp8 = FieldLayouts.vllmMlaFp8Ds(PAGES, B, 0, 1, NAMES, rows);
            assertEquals(656, fp8.get(0).kCellBytes());
            assertEquals(0, fp8.get(0).vCellBytes());
            assertArrayEquals(byHand(KvLayouts.vllmMla(new PagedShape(PAGES, B, 1, 656, 1), NUMBERS, rows)),
                    throughTheGate(cpu, fp8, 0), "656-byte rows, admitted without padding");
            assertThrows(IllegalArgumentException.class, () -> FieldLayouts.vllmMla(new PagedShape(PAGES, B, 2, 576, 2), 0, 1,
                    NAMES, latents));
        }
    }
}
