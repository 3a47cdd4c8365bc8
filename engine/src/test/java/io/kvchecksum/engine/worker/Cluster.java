package io.kvchecksum.engine.worker;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvLayouts.PagedShape;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.StateRow;

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
    /** The hybrid model's index-K group: every layer's indexer key cache, one 16-byte row per token, held whole by every TP rank. */
    public static final int INDEX_K_GROUP = 2;
    public static final int INDEX_K_DIM = 8; // bf16 elements: a 16-byte cell
    /** Logical bytes of one layer's state buffers: the SSM state (split across TP ranks) and the conv state (replicated). */
    public static final int SSM_BYTES = 128;
    public static final int CONV_BYTES = 40;

    /** What the model caches: KV only (groups 0, 1), a hybrid (KV, index-K, state rows), or state rows only. */
    public enum Kind {
        KV_ONLY, HYBRID, PURE_STATE;

        public int numGroups() {
            return switch (this) {
                case KV_ONLY -> 2;
                case HYBRID -> 3;
                case PURE_STATE -> 0;
            };
        }

        /** The layers of group {@code g}. */
        public int[] groupLayers(int g) {
            return g == INDEX_K_GROUP ? new int[] {0, 1, 2, 3, 4, 5} : GROUP_LAYERS[g];
        }

        /** The layers holding state rows ({@code l<L>.ssm}, {@code l<L>.conv}). */
        public int[] stateLayers() {
            return switch (this) {
                case KV_ONLY -> new int[0];
                case HYBRID -> new int[] {1, 4};
                case PURE_STATE -> new int[] {0, 1, 2, 3, 4, 5};
            };
        }
    }

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
        public final byte[][] indexCells; // [layer] -> numTokens * 2 * INDEX_K_DIM
        public final byte[][][] state; // [layer][0 ssm, 1 conv]

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
            // A second stream, so the KV bytes above stay what they were before the hybrid parts existed.
            Random more = new Random(seed ^ 0x1DE7_57A7EL);
            indexCells = new byte[NUM_LAYERS][(int) numTokens * 2 * INDEX_K_DIM];
            state = new byte[NUM_LAYERS][][];
            for (int l = 0; l < NUM_LAYERS; l++) {
                more.nextBytes(indexCells[l]);
                state[l] = new byte[][] {new byte[SSM_BYTES], new byte[CONV_BYTES]};
                more.nextBytes(state[l][0]);
                more.nextBytes(state[l][1]);
            }
        }

        /** The logical bytes of group {@code g}'s cells of {@code layer}, {@code head}. */
        byte[] source(int group, int layer, int head) {
            return group == INDEX_K_GROUP ? indexCells[layer] : cells[layer][head];
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

    /** One worker's state row of a request: which layer and buffer (0 ssm, 1 conv), and where its bytes are. */
    public record StatePart(int layer, int kind, int shard, int shards, int copy, int copies, long logicalOffset,
            MemorySegment memory, long offset, int length) {
        public String name() {
            return "l" + layer + (kind == 0 ? ".ssm" : ".conv");
        }

        public StateShard stateShard() {
            return new StateShard(new StateRow(name(), KvMemory.host(memory), offset, length), shard, shards, copy, copies);
        }
    }

    /** One engine: its workers' caches and the request's block table per group. */
    public static final class Engine {
        public final Model model;
        public final Config config;
        public final Kind kind;
        public final long numPages; // per group, in pages
        public final int[][] tables; // per group: block ids from position 0
        public final WorkerCache[][][] caches; // [stage][rank][group], null when the stage holds no layer of the group
        public final List<StatePart>[][] state; // [stage][rank]

        public Engine(Model model, Config config, long numTokens, Random rnd, Arena arena) {
            this(model, config, Kind.KV_ONLY, numTokens, rnd, arena);
        }

        @SuppressWarnings("unchecked")
        public Engine(Model model, Config config, Kind kind, long numTokens, Random rnd, Arena arena) {
            this.model = model;
            this.config = config;
            this.kind = kind;
            int blocks = (int) Math.ceilDiv(numTokens, (long) config.blockSize());
            int capacity = blocks + 5;
            int kernel = config.blockSize() / config.pageSize();
            numPages = (long) capacity * kernel;
            tables = new int[kind.numGroups()][];
            for (int g = 0; g < tables.length; g++) {
                List<Integer> ids = new ArrayList<>();
                for (int i = 1; i < capacity; i++) {
                    ids.add(i);
                }
                java.util.Collections.shuffle(ids, rnd);
                tables[g] = ids.subList(0, blocks).stream().mapToInt(Integer::intValue).toArray();
            }
            caches = new WorkerCache[config.pp()][config.tp()][kind.numGroups()];
            state = new List[config.pp()][config.tp()];
            for (int s = 0; s < config.pp(); s++) {
                for (int r = 0; r < config.tp(); r++) {
                    for (int g = 0; g < kind.numGroups(); g++) {
                        caches[s][r][g] = buildCache(s, r, g, arena);
                    }
                    state[s][r] = buildState(s, r, arena);
                }
            }
        }

        /** Each state layer of the stage: its SSM shard (rank r of tp) and its conv row (copy r of tp), in one allocation. */
        private List<StatePart> buildState(int stage, int rank, Arena arena) {
            int tp = config.tp();
            List<StatePart> out = new ArrayList<>();
            List<Integer> mine = new ArrayList<>();
            for (int l : stageLayers(stage)) {
                for (int sl : kind.stateLayers()) {
                    if (sl == l) {
                        mine.add(l);
                    }
                }
            }
            if (mine.isEmpty()) {
                return out;
            }
            int shardBytes = SSM_BYTES / tp;
            MemorySegment m = arena.allocate((long) mine.size() * (shardBytes + CONV_BYTES) + 8, 8);
            long at = 8; // rows do not start at 0, so an offset mix-up reads other bytes
            for (int l : mine) {
                out.add(new StatePart(l, 0, rank, tp, 0, 1, (long) rank * shardBytes, m, at, shardBytes));
                at += shardBytes;
                out.add(new StatePart(l, 1, 0, 1, rank, tp, 0, m, at, CONV_BYTES));
                at += CONV_BYTES;
            }
            return out;
        }

        /** Every worker's state rows with the prompt's bytes (the producer's prefill). */
        public void fillState(Prompt p) {
            forEachState((s, r, part) -> MemorySegment.copy(MemorySegment.ofArray(p.state[part.layer()][part.kind()]),
                    part.logicalOffset(), part.memory(), part.offset(), part.length()));
        }

        /** The transfer of state: every consumer row assembled from the producer workers' rows (copy 0). */
        public void loadStateFrom(Engine producer) {
            forEachState((s, r, part) -> {
                byte[] whole = producer.logicalState(part.layer(), part.kind());
                MemorySegment.copy(MemorySegment.ofArray(whole), part.logicalOffset(), part.memory(), part.offset(), part.length());
            });
        }

        /** The logical bytes of one layer's buffer, read back from this engine's workers. */
        private byte[] logicalState(int layer, int kindOfRow) {
            byte[] out = new byte[kindOfRow == 0 ? SSM_BYTES : CONV_BYTES];
            forEachState((s, r, part) -> {
                if (part.layer() == layer && part.kind() == kindOfRow && part.copy() == 0) {
                    MemorySegment.copy(part.memory(), part.offset(), MemorySegment.ofArray(out), part.logicalOffset(), part.length());
                }
            });
            return out;
        }

        /** Flips one bit of byte {@code at} of one worker's state row. */
        public StatePart corruptState(int stage, int rank, int index, int at) {
            StatePart part = state[stage][rank].get(index);
            long where = part.offset() + at;
            part.memory().set(ValueLayout.JAVA_BYTE, where, (byte) (part.memory().get(ValueLayout.JAVA_BYTE, where) ^ 0x04));
            return part;
        }

        public interface StateVisitor {
            void visit(int stage, int rank, StatePart part);
        }

        public void forEachState(StateVisitor v) {
            for (int s = 0; s < config.pp(); s++) {
                for (int r = 0; r < config.tp(); r++) {
                    for (StatePart part : state[s][r]) {
                        v.visit(s, r, part);
                    }
                }
            }
        }

        /** The hash of one layer of group {@code g} (the index-K cache is its own spec). */
        public long layerHash(int group, int layer) {
            return group == INDEX_K_GROUP
                    ? Fingerprints.ofLayer("model.layers." + layer + ".self_attn.indexer.k_cache", "MLAAttentionSpec", "torch.bfloat16")
                    : model.layerHash(layer);
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

        /** {@return the PP stage that holds {@code layer}} */
        public int stageOf(int layer) {
            for (int s = 0; s < config.pp(); s++) {
                for (int l : stageLayers(s)) {
                    if (l == layer) {
                        return s;
                    }
                }
            }
            throw new AssertionError("no stage holds layer " + layer);
        }

        private WorkerCache buildCache(int stage, int rank, int group, Arena arena) {
            List<Integer> mine = new ArrayList<>();
            for (int l : stageLayers(stage)) {
                for (int gl : kind.groupLayers(group)) {
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
            if (group == INDEX_K_GROUP) {
                // Every rank holds the whole indexer cache: copy r of tp.
                List<CacheLayer> layers = new ArrayList<>();
                for (int l : mine) {
                    PagedShape s = new PagedShape(numPages, config.pageSize(), 1, INDEX_K_DIM, 2);
                    MemorySegment m = arena.allocate(numPages * config.pageSize() * 2 * INDEX_K_DIM, 8);
                    layers.add(KvLayouts.vllmMlaLayer(l, 0, KvMemory.host(m), s));
                }
                return new WorkerCache(group, ReplicaKey.forRank(1, tp, rank), 0, 1, layers,
                        KvCacheGroup.of(config.pageSize(), numPages, layers));
            }
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
            for (int g = 0; g < kind.numGroups(); g++) {
                int group = g;
                forEachCopy(g, (s, r, c, l, head) -> {
                    for (long t = from; t < to; t++) {
                        writeCell(c, l, head, t, p.source(group, l.layer(), head), t * l.cellBytes());
                    }
                });
            }
        }

        /** A locally computed prefix: other bytes than the producer's (local KV is not bit-identical in general). */
        public void fillLocal(long from, long to, Random rnd) {
            for (int g = 0; g < kind.numGroups(); g++) {
                forEachCopy(g, (s, r, c, l, head) -> {
                    byte[] b = new byte[l.cellBytes()];
                    for (long t = from; t < to; t++) {
                        rnd.nextBytes(b);
                        writeCell(c, l, head, t, b, 0);
                    }
                });
            }
        }

        /** The transfer: every consumer cell of tokens [from, to) copied from a producer worker that holds it. */
        public void loadFrom(Engine producer, long from, long to) {
            for (int g = 0; g < kind.numGroups(); g++) {
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
            for (int g = 0; g < kind.numGroups(); g++) {
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
            return records(backend, side, numTokens, scheduled, skipped, mode, false, null, 0);
        }

        /**
         * Every worker's record, with its auxiliary parts: its state rows' digests when {@code stateDigests}, its probe
         * partials of group {@code probeGroup} (null: none) of {@code probeBytes}.
         */
        public List<WorkerRecord> records(KvChecksum backend, Side side, long numTokens, List<BlockSelection> scheduled,
                Map<Integer, String> skipped, io.kvchecksum.ChecksumMode mode, boolean stateDigests, Integer probeGroup,
                int probeBytes) {
            List<WorkerRecord> out = new ArrayList<>();
            for (int s = 0; s < config.pp(); s++) {
                for (int r = 0; r < config.tp(); r++) {
                    List<WorkerChecksummer.WorkerGroup> layout = new ArrayList<>();
                    for (int g = 0; g < kind.numGroups(); g++) {
                        WorkerCache c = caches[s][r][g];
                        if (c == null) {
                            continue;
                        }
                        List<Long> hashes = new ArrayList<>();
                        for (CacheLayer l : c.layers()) {
                            hashes.add(layerHash(g, l.layer()));
                        }
                        layout.add(new WorkerChecksummer.WorkerGroup(g, Fingerprints.ofGroup(hashes),
                                List.of(new WorkerChecksummer.ReplicaPart(c.key(), c.group()))));
                    }
                    WorkerChecksummer.Builder b = WorkerChecksummer.builder(backend).tpRank(r).ppStage(s).groups(layout)
                            .skipped(skipped).spec(io.kvchecksum.ChecksumSpec.of(mode)).stateDigests(stateDigests);
                    if (probeGroup != null) {
                        b.pageProbe(probeGroup, probeBytes);
                    }
                    out.add(b.build().compute(side, numTokens, scheduled,
                            state[s][r].stream().map(StatePart::stateShard).toList()));
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
