package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
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
import io.kvchecksum.engine.worker.Cluster.Config;
import io.kvchecksum.engine.worker.Cluster.Engine;
import io.kvchecksum.engine.worker.Cluster.Kind;
import io.kvchecksum.engine.worker.Cluster.Layout;
import io.kvchecksum.engine.worker.Cluster.Model;
import io.kvchecksum.engine.worker.Cluster.Prompt;
import io.kvchecksum.engine.worker.Cluster.StatePart;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 26's end-to-end matrix: producer and consumer TP in {1, 2, 4} x PP in {1, 2}, split and replicated heads (GQA
 * with 4, 2 and 1 KV heads, MLA), for a KV-only model, a hybrid model (KV, an index-K group every rank holds whole,
 * state rows: an SSM state split across TP ranks and a conv state every rank holds) and a pure-state model, with the
 * state digests and the page probe on for both sides. Workers exchange only bytes: each worker's record goes to the
 * aggregating rank through {@link WorkerRecordCodec}, the producer's payload to the consumer through
 * {@link PayloadCodec}.
 *
 * <p>Healthy: never a MISMATCH; MATCH, or UNVERIFIED where the layouts cannot be compared, each as predicted from the
 * case alone (state rows split over other TP sizes: {@code LAYOUT_DIFFERS}; probe pages of other sizes:
 * {@code PROBE_PAGES_DIFFER}). One flipped bit in a covered region (a KV cell, an index-K cell, an SSM shard, a conv
 * copy, a replicated head's copy) is a MISMATCH naming the right group and block, or the buffer, shard and copy.
 *
 * <p>CI runs every one of the 36 TP x PP pairings once with a drawn model, plus one drawn pairing per model (45
 * cases), from a fixed, printed seed; {@code -Dkvchecksum.matrix.full=true} runs the full cross product (324 cases),
 * {@code -Dkvchecksum.matrix.seed=N} another draw.
 */
class TpPpMatrixTest {
    private static final long SEED = Long.getLong("kvchecksum.matrix.seed", 0x2026_0026L);
    private static final boolean FULL = Boolean.getBoolean("kvchecksum.matrix.full");
    private static final long TOKENS = 150;
    private static final int PRODUCER_BLOCK = 16;
    private static final int PROBE_BYTES = 16;
    private static final int PROBE_GROUP = 0;
    private static final int[][] SIDES = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}};
    private static final String[] HEADS = {"gqa4", "gqa2", "gqa1", "mla"};
    private static KvChecksum cpu;

    @BeforeAll
    static void backend() {
        cpu = KvChecksums.cpu();
        System.out.println("TpPpMatrixTest seed " + SEED + (FULL ? " (full cross product)" : " (CI draw)"));
    }

    @AfterAll
    static void close() {
        cpu.close();
    }

    /** One pairing: what each side runs, and the consumer's block, page, layout and local prefix (drawn). */
    record Case(Kind kind, String heads, int ptp, int ppp, int ctp, int cpp, int cBlock, int cPage, Layout cLayout,
            long prefix, long seed) {
        Model model() {
            return switch (heads) {
                case "gqa4" -> Model.gqa(4, seed);
                case "gqa2" -> Model.gqa(2, seed);
                case "gqa1" -> Model.gqa(1, seed);
                default -> Model.mla(seed);
            };
        }

        @Override
        public String toString() {
            return kind + "/" + heads + " P TP" + ptp + "xPP" + ppp + " -> C TP" + ctp + "xPP" + cpp + " block " + cBlock
                    + " page " + cPage + " " + cLayout + " prefix " + prefix;
        }
    }

    static List<Case> cases() {
        Random rnd = new Random(SEED);
        List<String[]> models = new ArrayList<>();
        for (Kind k : Kind.values()) {
            for (String h : k == Kind.PURE_STATE ? new String[] {"none"} : HEADS) {
                models.add(new String[] {k.name(), h});
            }
        }
        List<Case> out = new ArrayList<>();
        if (FULL) {
            for (String[] m : models) {
                for (int[] p : SIDES) {
                    for (int[] c : SIDES) {
                        out.add(draw(rnd, m, p, c));
                    }
                }
            }
            return out;
        }
        for (int[] p : SIDES) {
            for (int[] c : SIDES) {
                out.add(draw(rnd, models.get(rnd.nextInt(models.size())), p, c));
            }
        }
        for (String[] m : models) {
            out.add(draw(rnd, m, SIDES[rnd.nextInt(SIDES.length)], SIDES[rnd.nextInt(SIDES.length)]));
        }
        return out;
    }

    private static Case draw(Random rnd, String[] model, int[] p, int[] c) {
        int[][] blockPage = {{16, 16}, {16, 8}, {32, 16}};
        int[] bp = blockPage[rnd.nextInt(blockPage.length)];
        Layout[] layouts = {Layout.FLASH, Layout.HND, Layout.NHD};
        return new Case(Kind.valueOf(model[0]), model[1], p[0], p[1], c[0], c[1], bp[0], bp[1],
                layouts[rnd.nextInt(layouts.length)], rnd.nextBoolean() ? 0 : 32, rnd.nextLong());
    }

    @Test
    void healthyNeverMismatchesAndOneFlippedBitInACoveredRegionDoes() {
        long started = System.nanoTime();
        List<Case> all = cases();
        int loads = 0;
        for (Case k : all) {
            loads += new Pairing(k).run();
        }
        System.out.printf("TpPpMatrixTest: %d cases, %d loads verified in %.1f s%n", all.size(), loads,
                (System.nanoTime() - started) / 1e9);
        assertTrue(all.size() >= 45, "cases drawn: " + all.size());
    }

    /**
     * The producer's payload as the consumer receives it, through {@code kv_transfer_params}: the checksums under
     * {@code kv_checksums} (seed 003's version 2), the sections under {@code kv_checksum_sections}.
     */
    private static ChecksumPayload overTheWire(ChecksumPayload producer) {
        Map<String, String> params = io.kvchecksum.engine.wire.WirePayload.of(producer).params();
        return PayloadCodec.decodeBase64(params.get(PayloadCodec.CHECKSUMS_KEY), params.get(PayloadCodec.SECTIONS_KEY));
    }

    /** Every worker's record as the aggregating rank receives it: bytes. */
    private static List<WorkerRecord> toAggregator(List<WorkerRecord> records) {
        List<WorkerRecord> out = new ArrayList<>();
        for (WorkerRecord r : records) {
            WorkerRecord back = WorkerRecordCodec.decode(WorkerRecordCodec.encode(r));
            assertEquals(r, back, "worker record round trip");
            out.add(back);
        }
        // The aggregating rank receives them in any order.
        Collections.reverse(out);
        return out;
    }

    /** One case's two engines, a healthy load and its corrupted twins. */
    private static final class Pairing {
        final Case k;
        final Random rnd;

        Pairing(Case k) {
            this.k = k;
            this.rnd = new Random(k.seed());
        }

        int run() {
            try (Arena arena = Arena.ofConfined()) {
                Model model = k.model();
                Prompt prompt = new Prompt(model, TOKENS, k.seed() + 1);
                Engine p = new Engine(model, Config.of(k.ptp(), k.ppp(), PRODUCER_BLOCK), k.kind(), TOKENS, rnd, arena);
                p.fill(prompt, 0, TOKENS);
                p.fillState(prompt);
                Engine c = new Engine(model, new Config(k.ctp(), k.cpp(), k.cBlock(), k.cPage(), k.cLayout()), k.kind(),
                        TOKENS, rnd, arena);
                c.fillLocal(0, k.prefix(), rnd);
                c.loadFrom(p, k.prefix(), TOKENS);
                c.loadStateFrom(p);

                List<BlockSelection> ps = p.select(Side.PRODUCER, 0, TOKENS);
                Aggregator.Result pr = Aggregator.producer(k.ptp(), k.ppp(), TOKENS, ps,
                        toAggregator(p.records(cpu, Side.PRODUCER, TOKENS, ps, Map.of(), ChecksumMode.STANDARD, true,
                                PROBE_GROUP, PROBE_BYTES)));
                ChecksumPayload sent = overTheWire(assertInstanceOf(Aggregator.Complete.class, pr, k + ": " + pr).payload());
                if (k.kind() != Kind.PURE_STATE) {
                    PageProbeSection probe = (PageProbeSection) sent.section(PageProbeSection.NAME);
                    assertNotNull(probe, k.toString());
                    assertEquals(1, probe.numChecks(), "the producer sends copy 0 only");
                }
                int loads = 0;
                LoadVerdict healthy = consume(c, sent);
                loads++;
                assertHealthy(healthy);

                // One flipped bit in each covered region, each undone before the next.
                long t = token();
                if (k.kind() != Kind.PURE_STATE) {
                    loads += kvCell(c, sent, 0, t);
                    loads += kvCell(c, sent, 1, token());
                }
                if (k.kind() == Kind.HYBRID) {
                    loads += kvCell(c, sent, Cluster.INDEX_K_GROUP, token());
                }
                if (k.kind() != Kind.KV_ONLY) {
                    loads += stateRow(c, sent, 1);
                    if (k.ptp() == k.ctp()) {
                        loads += stateRow(c, sent, 0);
                    }
                }
                return loads;
            }
        }

        /** A loaded token; half the time the first token of a consumer page, where the probe's head window lies. */
        long token() {
            long t = k.prefix() + rnd.nextInt((int) (TOKENS - k.prefix()));
            return rnd.nextBoolean() ? t / k.cPage() * k.cPage() : t;
        }

        LoadVerdict consume(Engine c, ChecksumPayload sent) {
            List<BlockSelection> cs = c.select(Side.CONSUMER, k.prefix(), TOKENS);
            Aggregator.Result cr = Aggregator.consumer(k.ctp(), k.cpp(), TOKENS, cs,
                    toAggregator(c.records(cpu, Side.CONSUMER, TOKENS, cs, Map.of(), ChecksumMode.STANDARD, true,
                            PROBE_GROUP, PROBE_BYTES)));
            ChecksumPayload mine = assertInstanceOf(Aggregator.Complete.class, cr, k + ": " + cr).payload();
            return Verifier.compare(sent, mine);
        }

        void assertHealthy(LoadVerdict v) {
            String at = k + ": " + v;
            assertNotEquals(Status.MISMATCH, v.status(), at);
            SectionVerdict state = v.section(StateDigestsSection.NAME);
            SectionVerdict probe = v.section(PageProbeSection.NAME);
            // The states are split alike only when the TP sizes agree; the conv copies always compare.
            UnverifiedReason stateReason = k.ptp() == k.ctp() ? null : UnverifiedReason.LAYOUT_DIFFERS;
            if (k.kind() == Kind.KV_ONLY) {
                assertEquals(Status.MATCH, v.status(), at);
                // Both sides digest state, and hold none: nothing compared, which leaves the load to its groups.
                assertEquals(UnverifiedReason.NO_COMMON_POSITION, state.reason(), at);
            } else {
                assertEquals(stateReason == null ? Status.MATCH : Status.UNVERIFIED, state.status(), at);
                assertEquals(stateReason, state.reason(), at);
            }
            if (k.kind() == Kind.PURE_STATE) {
                assertNull(probe, at);
                assertEquals(stateReason == null ? Status.MATCH : Status.UNVERIFIED, v.status(), at);
                assertEquals(stateReason == null ? null : UnverifiedReason.NOTHING_TO_COMPARE, v.reason(), at);
                assertTrue(v.groups().isEmpty(), at);
                return;
            }
            assertEquals(Status.MATCH, v.status(), at);
            for (GroupVerdict g : v.groups()) {
                assertEquals(Status.MATCH, g.status(), at);
            }
            assertEquals(k.kind().numGroups(), v.groups().size(), at);
            assertEquals(k.cPage() == PRODUCER_BLOCK ? Status.MATCH : Status.UNVERIFIED, probe.status(), at);
            if (k.cPage() != PRODUCER_BLOCK) {
                assertEquals(UnverifiedReason.PROBE_PAGES_DIFFER, probe.reason(), at);
            }
        }

        /** Flips a K bit of a cell of {@code group} at token {@code t} on a drawn consumer worker (any copy). */
        int kvCell(Engine c, ChecksumPayload sent, int group, long t) {
            int[] layers = k.kind().groupLayers(group);
            int layer = layers[rnd.nextInt(layers.length)];
            int stage = c.stageOf(layer);
            int rank = rnd.nextInt(k.ctp());
            Cluster.WorkerCache wc = c.caches[stage][rank][group];
            c.corrupt(stage, rank, group, layer, wc.firstHead(), t, 3);
            LoadVerdict v = consume(c, sent);
            c.corrupt(stage, rank, group, layer, wc.firstHead(), t, 3);
            String at = k + ", group " + group + " layer " + layer + " token " + t + " on stage " + stage + " rank " + rank
                    + " (copy " + wc.key() + "): " + v;
            assertEquals(Status.MISMATCH, v.status(), at);
            GroupVerdict g = v.group(group);
            assertNotNull(g, at);
            assertEquals(Status.MISMATCH, g.status(), at);
            assertArrayEquals(new long[] {t / k.cBlock()}, g.mismatchedBlocks(), at);
            for (GroupVerdict other : v.groups()) {
                if (other.groupId() != group) {
                    assertEquals(Status.MATCH, other.status(), at);
                }
            }
            // The probe's head window of a page is the first bytes of the K cell of its first token, its tail window the
            // last bytes of the K cell of its last token: a flipped bit there shows in the check of the corrupted copy,
            // at that page; anywhere else the probe cannot see it.
            SectionVerdict probe = v.section(PageProbeSection.NAME);
            int kCell = k.model().mla() ? k.model().cellBytes() : k.model().cellBytes() / 2;
            int window = Math.min(PROBE_BYTES, kCell);
            boolean head = t % PRODUCER_BLOCK == 0 && 3 < window;
            boolean tail = ((t + 1) % PRODUCER_BLOCK == 0 || t == TOKENS - 1) && 3 >= kCell - window;
            if (group == PROBE_GROUP && k.cPage() == PRODUCER_BLOCK && (head || tail)) {
                assertEquals(Status.MISMATCH, probe.status(), at);
                long page = t / PRODUCER_BLOCK;
                String where = "page " + page + " (token " + page * PRODUCER_BLOCK + ") "
                        + (head && tail ? "head+tail" : head ? "head" : "tail");
                int check = wc.key().index();
                assertTrue(probe.detail().contains(where + (check > 0 ? " in copy check " + check : "")), where + ": " + at);
            } else if (probe != null) {
                assertNotEquals(Status.MISMATCH, probe.status(), "a bit outside every probe window: " + at);
            }
            return 1;
        }

        /** Flips a bit of a drawn consumer worker's state row of kind {@code kind} (0 SSM shard, 1 conv copy). */
        int stateRow(Engine c, ChecksumPayload sent, int kind) {
            List<int[]> where = new ArrayList<>();
            c.forEachState((s, r, part) -> {
                if (part.kind() == kind) {
                    where.add(new int[] {s, r, c.state[s][r].indexOf(part)});
                }
            });
            int[] w = where.get(rnd.nextInt(where.size()));
            StatePart part = c.state[w[0]][w[1]].get(w[2]);
            int at = rnd.nextInt(part.length());
            c.corruptState(w[0], w[1], w[2], at);
            LoadVerdict v = consume(c, sent);
            c.corruptState(w[0], w[1], w[2], at);
            String label = part.name() + " shard " + part.shard() + "/" + part.shards()
                    + (part.copies() > 1 ? " copy " + part.copy() + "/" + part.copies() : "");
            String msg = k + ", " + label + " byte " + at + " on stage " + w[0] + " rank " + w[1] + ": " + v;
            assertEquals(Status.MISMATCH, v.status(), msg);
            SectionVerdict s = v.section(StateDigestsSection.NAME);
            assertEquals(Status.MISMATCH, s.status(), msg);
            assertTrue(s.detail().startsWith("state buffers differ: " + label + (w[0] != 0 ? " (stage " + w[0] + ")" : "")),
                    msg);
            for (GroupVerdict g : v.groups()) {
                assertEquals(Status.MATCH, g.status(), msg);
            }
            return 1;
        }
    }
}
