package io.kvchecksum.engine.worker;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvLayouts.PagedShape;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Real producer and consumer engines in memory for end-to-end tests: paged caches in {@link Arena} segments laid out
 * with {@link KvLayouts}, one per worker (TP rank x PP stage) and layer, filled from a seeded {@link Random}; a load
 * copies the producer's cells into the consumer's pages cell by cell (other page ids, layout, page and block size);
 * every checksum comes from a real backend.
 */
/** The test cluster (public: the faults tests use it too). */
public final class Cluster {
    /** Two groups: full attention layers 0..3, and layers 4..5 (a second group, for skip cases). */
    public static final int[][] GROUP_LAYERS = {{0, 1, 2, 3}, {4, 5}};
    public static final int NUM_LAYERS = 6;
    public static final int NULL_BLOCK = 0;

    /** The model: GQA with {@code kvHeads} heads of {@code headDim} bf16 elements, or MLA with one latent row. */
    public record Model(boolean mla, int kvHeads, int headDim, long seed) {
        public static Model gqa(int kvHeads, long seed) {
            return new Model(false, kvHeads, 8, seed);
        }

        public static Model mla(long seed) {
            return new Model(true, 1, 24, seed);
        }

        /** Bytes of one cell (K then V; MLA: the latent row). */
        public int cellBytes() {
            return mla ? headDim * 2 : 2 * headDim * 2;
        }

        public String specType() {
            return mla ? "MLAAttentionSpec" : "FullAttentionSpec";
        }

        public long layerHash(int layer) {
            return Fingerprints.ofLayer("model.layers." + layer + ".self_attn.attn", specType(), "torch.bfloat16");
        }
    }

    /** Which layout an engine uses for its GQA caches. */
    public enum Layout { FLASH, NHD, HND, SGLANG }

    /** One engine's configuration. */
    public record Config(int tp, int pp, int blockSize, int pageSize, Layout layout) {
        public static Config of(int tp, int pp, int blockSize) {
            return new Config(tp, pp, blockSize, blockSize, Layout.FLASH);
        }

        public Config layout(Layout l) {
            return new Config(tp, pp, blockSize, pageSize, l);
        }

        public Config pageSize(int p) {
            return new Config(tp, pp, blockSize, p, layout);
        }
    }

    /** The request's logical KV: what the producer's prefill computed, per layer, global head and token. */
    public static final class Prompt {
        public final Model model;
        public final long numTokens;
        public final byte[][][] cells; // [layer][head] -> numTokens * cellBytes

        public Prompt(Model model, long numTokens, long seed) {
            this.model = model;
            this.numTokens = numTokens;
            Random rnd = new Random(seed);
            cells = new byte[NUM_LAYERS][model.kvHeads()][];
            for (int l = 0; l < NUM_LAYERS; l++) {
                for (int h = 0; h < model.kvHeads(); h++) {
                    cells[l][h] = new byte[(int) numTokens * model.cellBytes()];
                    rnd.nextBytes(cells[l][h]);
                }
            }
        }

        /**
         * The reference backend's checksums of one group over the whole model on one worker, in a flat layout built
         * straight from the logical KV: the independent expectation for what a side's workers sum to.
         */
        public long[] referenceChecksums(int group, long firstBlock, int blockSize, Arena arena) {
            return referenceChecksums(group, firstBlock, blockSize, arena, io.kvchecksum.ChecksumMode.STANDARD);
        }

        /** As {@link #referenceChecksums(int, long, int, Arena)}, in checksum mode {@code mode}. */
        public long[] referenceChecksums(int group, long firstBlock, int blockSize, Arena arena, io.kvchecksum.ChecksumMode mode) {
            int[] layers = GROUP_LAYERS[group];
            int heads = model.kvHeads();
            int half = model.cellBytes() / 2; // K half then V half: for MLA the latent row split in two, same pieces
            MemorySegment k = arena.allocate((long) layers.length * numTokens * heads * half, 8);
            MemorySegment v = arena.allocate((long) layers.length * numTokens * heads * half, 8);
            for (int i = 0; i < layers.length; i++) {
                for (int t = 0; t < numTokens; t++) {
                    for (int h = 0; h < heads; h++) {
                        long at = (((long) i * numTokens + t) * heads + h) * half;
                        MemorySegment.copy(MemorySegment.ofArray(cells[layers[i]][h]), (long) t * model.cellBytes(), k, at, half);
                        MemorySegment.copy(MemorySegment.ofArray(cells[layers[i]][h]), (long) t * model.cellBytes() + half, v, at, half);
                    }
                }
            }
            KvCacheGroup g = KvLayouts.flat(layers, 0, KvMemory.host(k), KvMemory.host(v), (int) numTokens, heads, half / 2, 2);
            try (KvChecksum ref = KvChecksums.reference()) {
                return ref.blockChecksums(io.kvchecksum.SlicePlan.of(g, KvLayouts.flatRequest(numTokens, firstBlock, blockSize), mode));
            }
        }
    }

    /** One worker's caches of one group. */
    public record WorkerCache(int groupId, ReplicaKey key, int firstHead, int numHeads, List<CacheLayer> layers, KvCacheGroup group) {
    }

    /** One engine: its workers' caches and the request's block table per group. */
    public static final class Engine {
        public final Model model;
        public final Config config;
        public final long numPages; // per group, in pages
        public final int[][] tables; // per group: block ids from position 0
        public final WorkerCache[][][] caches; // [stage][rank][group], null when the stage holds no layer of the group

        public Engine(Model model, Config config, long numTokens, Random rnd, Arena arena) {
            this.model = model;
            this.config = config;
            int blocks = (int) Math.ceilDiv(numTokens, (long) config.blockSize());
            int capacity = blocks + 5;
            int kernel = config.blockSize() / config.pageSize();
            numPages = (long) capacity * kernel;
            tables = new int[GROUP_LAYERS.length][];
            for (int g = 0; g < tables.length; g++) {
                List<Integer> ids = new ArrayList<>();
                for (int i = 1; i < capacity; i++) {
                    ids.add(i);
                }
                java.util.Collections.shuffle(ids, rnd);
                tables[g] = ids.subList(0, blocks).stream().mapToInt(Integer::intValue).toArray();
            }
            caches = new WorkerCache[config.pp()][config.tp()][GROUP_LAYERS.length];
            for (int s = 0; s < config.pp(); s++) {
                for (int r = 0; r < config.tp(); r++) {
                    for (int g = 0; g < GROUP_LAYERS.length; g++) {
                        caches[s][r][g] = buildCache(s, r, g, arena);
                    }
                }
            }
        }

        public int[] stageLayers(int stage) {
            int lo = stage * NUM_LAYERS / config.pp();
            int hi = (stage + 1) * NUM_LAYERS / config.pp();
            int[] out = new int[hi - lo];
            for (int i = 0; i < out.length; i++) {
                out[i] = lo + i;
            }
            return out;
        }

        private WorkerCache buildCache(int stage, int rank, int group, Arena arena) {
            List<Integer> mine = new ArrayList<>();
            for (int l : stageLayers(stage)) {
                for (int gl : GROUP_LAYERS[group]) {
                    if (gl == l) {
                        mine.add(l);
                    }
                }
            }
            if (mine.isEmpty()) {
                return null;
            }
            int tp = config.tp();
            int heads;
            int firstHead;
            ReplicaKey key;
            if (model.mla()) {
                heads = 1;
                firstHead = 0;
                key = ReplicaKey.forRank(1, tp, rank);
            } else if (tp <= model.kvHeads()) {
                heads = model.kvHeads() / tp;
                firstHead = rank * heads;
                key = ReplicaKey.NONE;
            } else {
                heads = 1;
                key = ReplicaKey.forRank(model.kvHeads(), tp, rank);
                firstHead = rank / key.replicas();
            }
            List<CacheLayer> layers = new ArrayList<>();
            for (int l : mine) {
                if (model.mla()) {
                    PagedShape s = new PagedShape(numPages, config.pageSize(), 1, model.headDim(), 2);
                    MemorySegment m = arena.allocate(numPages * config.pageSize() * model.cellBytes(), 8);
                    layers.add(KvLayouts.vllmMlaLayer(l, 0, KvMemory.host(m), s));
                } else {
                    PagedShape s = new PagedShape(numPages, config.pageSize(), heads, model.headDim(), 2);
                    long bytes = numPages * config.pageSize() * heads * model.cellBytes();
                    MemorySegment m = arena.allocate(bytes, 8);
                    layers.add(switch (config.layout()) {
                        case FLASH -> KvLayouts.vllmFlashLayer(l, firstHead, KvMemory.host(m), s);
                        case NHD -> KvLayouts.flashInferNhdLayer(l, firstHead, KvMemory.host(m), s);
                        case HND -> KvLayouts.flashInferHndLayer(l, firstHead, KvMemory.host(m), s);
                        case SGLANG -> KvLayouts.sglangLayer(l, firstHead, KvMemory.host(m.asSlice(0, bytes / 2)),
                                KvMemory.host(m.asSlice(bytes / 2)), s);
                    });
                }
            }
            return new WorkerCache(group, key, firstHead, heads, layers, KvCacheGroup.of(config.pageSize(), numPages, layers));
        }

        /** The byte offsets of a cell's K and V parts for a token of the request. */
        private long[] where(CacheLayer layer, int group, int localHead, long token) {
            int kernel = config.blockSize() / config.pageSize();
            long page = (long) tables[group][(int) (token / config.blockSize())] * kernel
                    + (token % config.blockSize()) / config.pageSize();
            long slot = token % config.pageSize();
            long k = layer.k().cellOffset(page, slot, localHead);
            long v = layer.v() == null ? -1 : layer.v().cellOffset(page, slot, localHead);
            return new long[] {k, v};
        }

        private static MemorySegment seg(KvRegion r) {
            return ((KvMemory.Host) r.memory()).segment();
        }

        /** Writes a cell (K bytes then V bytes) of a layer/global head/token held by one worker. */
        public void writeCell(WorkerCache c, CacheLayer layer, int globalHead, long token, byte[] src, long srcOffset) {
            long[] at = where(layer, c.groupId(), globalHead - c.firstHead(), token);
            int kb = layer.k().cellBytes();
            MemorySegment.copy(MemorySegment.ofArray(src), srcOffset, seg(layer.k()), at[0], kb);
            if (layer.v() != null) {
                MemorySegment.copy(MemorySegment.ofArray(src), srcOffset + kb, seg(layer.v()), at[1], layer.v().cellBytes());
            }
        }

        /** Reads a cell (K bytes then V bytes). */
        public byte[] readCell(WorkerCache c, CacheLayer layer, int globalHead, long token) {
            long[] at = where(layer, c.groupId(), globalHead - c.firstHead(), token);
            byte[] out = new byte[layer.cellBytes()];
            int kb = layer.k().cellBytes();
            MemorySegment.copy(seg(layer.k()), at[0], MemorySegment.ofArray(out), 0, kb);
            if (layer.v() != null) {
                MemorySegment.copy(seg(layer.v()), at[1], MemorySegment.ofArray(out), kb, layer.v().cellBytes());
            }
            return out;
        }

        /** Every (worker, layer, global head) holding a cell of the group. */
        public void forEachCopy(int group, CellVisitor v) {
            for (int s = 0; s < config.pp(); s++) {
                for (int r = 0; r < config.tp(); r++) {
                    WorkerCache c = caches[s][r][group];
                    if (c == null) {
                        continue;
                    }
                    for (CacheLayer l : c.layers()) {
                        for (int h = 0; h < c.numHeads(); h++) {
                            v.visit(s, r, c, l, c.firstHead() + h);
                        }
                    }
                }
            }
        }

        /** The prefill: every worker writes its cells of tokens [from, to) from the prompt. */
        public void fill(Prompt p, long from, long to) {
            for (int g = 0; g < GROUP_LAYERS.length; g++) {
                forEachCopy(g, (s, r, c, l, head) -> {
                    for (long t = from; t < to; t++) {
                        writeCell(c, l, head, t, p.cells[l.layer()][head], t * model.cellBytes());
                    }
                });
            }
        }

        /** A locally computed prefix: other bytes than the producer's (local KV is not bit-identical in general). */
        public void fillLocal(long from, long to, Random rnd) {
            for (int g = 0; g < GROUP_LAYERS.length; g++) {
                forEachCopy(g, (s, r, c, l, head) -> {
                    byte[] b = new byte[model.cellBytes()];
                    for (long t = from; t < to; t++) {
                        rnd.nextBytes(b);
                        writeCell(c, l, head, t, b, 0);
                    }
                });
            }
        }

        /** The transfer: every consumer cell of tokens [from, to) copied from a producer worker that holds it. */
        public void loadFrom(Engine producer, long from, long to) {
            for (int g = 0; g < GROUP_LAYERS.length; g++) {
                int group = g;
                forEachCopy(g, (s, r, c, l, head) -> {
                    for (long t = from; t < to; t++) {
                        byte[] cell = producer.cellOf(group, l.layer(), head, t);
                        writeCell(c, l, head, t, cell, 0);
                    }
                });
            }
        }

        private byte[] cellOf(int group, int layer, int head, long token) {
            Map<String, byte[]> found = new HashMap<>();
            forEachCopy(group, (s, r, c, l, h) -> {
                if (l.layer() == layer && h == head && found.isEmpty()) {
                    found.put("cell", readCell(c, l, h, token));
                }
            });
            if (found.isEmpty()) {
                throw new AssertionError("no producer worker holds layer " + layer + " head " + head);
            }
            return found.get("cell");
        }

        /** Flips one bit of one K byte of a cell on one worker. */
        public void corrupt(int stage, int rank, int group, int layer, int globalHead, long token, int byteInCell) {
            WorkerCache c = caches[stage][rank][group];
            for (CacheLayer l : c.layers()) {
                if (l.layer() == layer) {
                    long[] at = where(l, group, globalHead - c.firstHead(), token);
                    MemorySegment m = seg(l.k());
                    byte b = m.get(ValueLayout.JAVA_BYTE, at[0] + byteInCell);
                    m.set(ValueLayout.JAVA_BYTE, at[0] + byteInCell, (byte) (b ^ 0x10));
                    return;
                }
            }
            throw new AssertionError("worker " + stage + "/" + rank + " holds no layer " + layer);
        }

        /** The scheduler's selection per group. */
        public List<BlockSelection> select(Side side, long localPrefix, long numTokens) {
            return select(side, localPrefix, numTokens, null);
        }

        /** The scheduler's selection per group, every group a sliding window of {@code window} tokens (or none). */
        public List<BlockSelection> select(Side side, long localPrefix, long numTokens, Integer window) {
            List<BlockSelection> out = new ArrayList<>();
            for (int g = 0; g < GROUP_LAYERS.length; g++) {
                out.add(side == Side.PRODUCER
                        ? BlockSelection.producer(g, tables[g], NULL_BLOCK, numTokens, config.blockSize(), window)
                        : BlockSelection.consumer(g, tables[g], NULL_BLOCK, localPrefix, numTokens, config.blockSize(), window));
            }
            return out;
        }

        /** Marks block positions {@code [0, upTo)} of every group as the null block (freed out of a sliding window). */
        public void nullBlocksBefore(long upTo) {
            for (int[] t : tables) {
                for (int b = 0; b < upTo && b < t.length; b++) {
                    t[b] = NULL_BLOCK;
                }
            }
        }

        /** Every worker's record, computed with the backend. */
        public List<WorkerRecord> records(KvChecksum backend, Side side, long numTokens, List<BlockSelection> scheduled,
                Map<Integer, String> skipped) {
            return records(backend, side, numTokens, scheduled, skipped, io.kvchecksum.ChecksumMode.STANDARD);
        }

        /** Every worker's record, computed with the backend in checksum mode {@code mode} (the engine's configuration). */
        public List<WorkerRecord> records(KvChecksum backend, Side side, long numTokens, List<BlockSelection> scheduled,
                Map<Integer, String> skipped, io.kvchecksum.ChecksumMode mode) {
            List<WorkerRecord> out = new ArrayList<>();
            for (int s = 0; s < config.pp(); s++) {
                for (int r = 0; r < config.tp(); r++) {
                    List<WorkerChecksummer.WorkerGroup> layout = new ArrayList<>();
                    for (int g = 0; g < GROUP_LAYERS.length; g++) {
                        WorkerCache c = caches[s][r][g];
                        if (c == null) {
                            continue;
                        }
                        List<Long> hashes = new ArrayList<>();
                        for (CacheLayer l : c.layers()) {
                            hashes.add(model.layerHash(l.layer()));
                        }
                        layout.add(new WorkerChecksummer.WorkerGroup(g, Fingerprints.ofGroup(hashes),
                                List.of(new WorkerChecksummer.ReplicaPart(c.key(), c.group()))));
                    }
                    out.add(WorkerChecksummer.builder(backend).tpRank(r).ppStage(s).groups(layout).skipped(skipped)
                            .spec(io.kvchecksum.ChecksumSpec.of(mode)).build()
                            .compute(side, numTokens, scheduled));
                }
            }
            return out;
        }
    }

    public interface CellVisitor {
        public void visit(int stage, int rank, WorkerCache cache, CacheLayer layer, int globalHead);
    }

    private Cluster() {
    }
}
