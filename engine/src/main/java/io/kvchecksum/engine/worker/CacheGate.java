package io.kvchecksum.engine.worker;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.Definition;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.BinaryOperator;
import java.util.stream.Collectors;
import java.util.regex.Pattern;

/**
 * Startup gating of one worker's KV caches: decides once, when the engine describes its caches, which groups can be
 * checksummed and which are skipped with a reason, instead of throwing in the middle of a request. A skipped group is
 * reported in every record of this worker ({@link WorkerChecksummer}); a group skipped on both sides is left out of
 * the verdict, one skipped on one side only is unverified.
 *
 * <p>A group is skipped, with the reason logged once at startup, when any of its caches:
 * <ul>
 *   <li>has a layer name without a layer number;</li>
 *   <li>has cells that are not whole 8-byte pieces (K plus V bytes per head and token not a multiple of 8), unless
 *       the gate pads cells ({@link CellPadding#ZEROS}, the opt-in extension); K and V need not be whole pieces each
 *       (a piece may straddle them);</li>
 *   <li>has kernel blocks (pages) that do not tile the group's block size, or the group's caches disagree on it;</li>
 *   <li>shares its layer number with a cache of another layer module (a main layer and an MTP layer, which PP may place
 *       on different stages: the two could not take consecutive heads of one layer consistently);</li>
 *   <li>would take head numbers past {@code 2^16} in its layer;</li>
 *   <li>is host-resident (offloaded KV: not what the transfer moved).</li>
 * </ul>
 *
 * <p><b>Head numbers.</b> Distinct caches of one layer module with one layer number (an attention cache and its
 * indexer's K cache) take consecutive heads of that layer, in layer-name order: the second starts after all of the
 * first's heads across TP. <b>KV sharing.</b> One cache listed under several layer names (the same {@code cacheId})
 * is counted once, under the lowest layer number. A group's fingerprint sums the hashes of the layers counted.
 *
 * <p>The gate is the {@link WorkerChecksummer.GatedLayout} a {@link WorkerChecksummer} is built from: it produces the
 * worker's validated layout, and the worker knows only that interface, not the gate.
 *
 * <p>Immutable once built; thread-safe.
 */
public final class CacheGate implements WorkerChecksummer.GatedLayout {

    /** Builds a cache's {@link CacheLayer} once it is admitted: the layer number and global first head to use. */
    @FunctionalInterface
    public interface LayerFactory {
        /**
         * Describes the admitted cache's memory.
         *
         * @param layerNumber the layer number the gate assigned (the lowest one for a cache shared by several layers)
         * @param firstHead the global number of this worker's first head of the cache, after the heads of any earlier
         *     cache of the same layer
         * @return the cache's layer, with exactly these numbers
         */
        CacheLayer layer(int layerNumber, int firstHead);
    }

    /**
     * One cache of one layer on this worker, as the engine describes it at startup; built by name with
     * {@link #builder}.
     *
     * @param layerName the engine's layer name, holding the layer number ({@code model.layers.12.self_attn.attn})
     * @param groupId the KV cache group
     * @param specType the cache spec's type name, for the fingerprint
     * @param dtype the cache's dtype name, for the fingerprint
     * @param kCellBytes K bytes per head and token (MLA: the latent row)
     * @param vCellBytes V bytes per head and token; 0 when the cell is K only
     * @param cacheHeads KV heads of this cache across TP (1 for MLA)
     * @param firstHead this worker's first head within the cache ({@code rank * cacheHeads / tp}; for a head replicated on
     *     {@code R} ranks, {@code rank / R}; 0 for MLA)
     * @param replica which copy of its heads this worker holds
     * @param kernelBlockSize tokens per physical page of this cache
     * @param blockSize tokens per block of the group
     * @param hostResident true for KV held in host memory (offloaded)
     * @param cacheId identifies the cache's storage: one cache listed under two layer names has one id
     * @param factory builds the layer's description, called only if the group is admitted
     */
    public record CacheSpec(String layerName, int groupId, String specType, String dtype, int kCellBytes, int vCellBytes,
            int cacheHeads, int firstHead, ReplicaKey replica, int kernelBlockSize, int blockSize, boolean hostResident,
            Object cacheId, LayerFactory factory) {
        /**
         * Checks the references are given; the numbers are judged by {@link CacheGate#of}, which skips a group it
         * cannot checksum instead of throwing.
         *
         * @throws NullPointerException when {@code layerName}, {@code specType}, {@code dtype}, {@code replica},
         *     {@code cacheId} or {@code factory} is null
         */
        public CacheSpec {
            Objects.requireNonNull(layerName, "layerName");
            Objects.requireNonNull(specType, "specType");
            Objects.requireNonNull(dtype, "dtype");
            Objects.requireNonNull(replica, "replica");
            Objects.requireNonNull(cacheId, "cacheId");
            Objects.requireNonNull(factory, "factory");
        }

        /**
         * {@return a builder of the cache listed under {@code layerName}: group 0, one head held whole (TP rank 0 of
         * 1), kernel blocks of the block size, on the device, its own storage (the layer name is its id)} The
         * fingerprint, cells, block size and layer factory must be set.
         *
         * @param layerName the engine's layer name, holding the layer number; not null
         * @throws NullPointerException when {@code layerName} is null
         */
        public static Builder builder(String layerName) {
            return new Builder(Objects.requireNonNull(layerName, "layerName"));
        }

        /**
         * A {@link CacheSpec} by name. The numbers are not judged here: {@link CacheGate#of} skips a group it cannot
         * checksum, with the reason. Not thread-safe.
         */
        public static final class Builder {
            private final String layerName;
            private int groupId;
            private String specType;
            private String dtype;
            private int kCellBytes;
            private int vCellBytes;
            private int cacheHeads = 1;
            private int tpRank;
            private int tpSize = 1;
            private Integer kernelBlockSize;
            private int blockSize;
            private boolean hostResident;
            private Object cacheId;
            private LayerFactory factory;

            private Builder(String layerName) {
                this.layerName = layerName;
            }

            /**
             * {@return this builder, for the cache of KV cache group {@code id}} Default 0.
             *
             * @param id the group
             */
            public Builder group(int id) {
                this.groupId = id;
                return this;
            }

            /**
             * {@return this builder, with what the group's fingerprint hashes besides the layer name
             * ({@link Fingerprints#ofLayer})}
             *
             * @param specType the cache spec's type name ({@code FullAttentionSpec}); not null at {@link #build}
             * @param dtype the cache's dtype as the engine prints it ({@code torch.bfloat16}); not null at {@link #build}
             */
            public Builder fingerprint(String specType, String dtype) {
                this.specType = specType;
                this.dtype = dtype;
                return this;
            }

            /**
             * {@return this builder, with cells of {@code kBytes} K and {@code vBytes} V bytes per head and token}
             *
             * @param kBytes K bytes (MLA: the latent row)
             * @param vBytes V bytes; 0 for a cell of K only
             */
            public Builder cells(int kBytes, int vBytes) {
                this.kCellBytes = kBytes;
                this.vCellBytes = vBytes;
                return this;
            }

            /**
             * {@return this builder, for a cache of {@code kvHeads} KV heads across TP} Default 1 (MLA, an indexer).
             *
             * @param kvHeads the cache's KV heads across TP
             */
            public Builder heads(int kvHeads) {
                this.cacheHeads = kvHeads;
                return this;
            }

            /**
             * {@return this builder, for TP rank {@code rank} of {@code size}} The rank holds heads
             * {@code rank * heads / size ..} of the cache, or, with fewer KV heads than ranks, one head replicated on
             * {@code size / heads} consecutive ranks ({@link ReplicaKey#forRank}). Default rank 0 of 1.
             *
             * @param rank this worker's TP rank
             * @param size the TP size
             */
            public Builder tp(int rank, int size) {
                this.tpRank = rank;
                this.tpSize = size;
                return this;
            }

            /**
             * {@return this builder, with blocks of {@code tokens} tokens in the group}
             *
             * @param tokens tokens per block of the group
             */
            public Builder blockSize(int tokens) {
                this.blockSize = tokens;
                return this;
            }

            /**
             * {@return this builder, with physical pages of {@code tokens} tokens} Default: the block size.
             *
             * @param tokens tokens per physical page of this cache
             */
            public Builder kernelBlockSize(int tokens) {
                this.kernelBlockSize = tokens;
                return this;
            }

            /**
             * {@return this builder, for a cache held in host memory or not} Default false.
             *
             * @param host true for offloaded KV
             */
            public Builder hostResident(boolean host) {
                this.hostResident = host;
                return this;
            }

            /**
             * {@return this builder, for the storage {@code id} names} Caches listed under several layer names with
             * one id are counted once. Default: the layer name.
             *
             * @param id identifies the cache's storage; not null at {@link #build}
             */
            public Builder cacheId(Object id) {
                this.cacheId = id;
                return this;
            }

            /**
             * {@return this builder, with what describes the cache's memory once admitted}
             *
             * @param layer builds the layer from the numbers the gate assigns; not null at {@link #build}
             */
            public Builder layer(LayerFactory layer) {
                this.factory = layer;
                return this;
            }

            /**
             * {@return the cache's spec}
             *
             * @throws NullPointerException when the fingerprint or the layer factory was not set
             * @throws IllegalArgumentException when the TP rank and size are out of range, or more ranks than KV
             *     heads are not a multiple of them ({@link ReplicaKey#forRank})
             */
            public CacheSpec build() {
                ReplicaKey replica = ReplicaKey.forRank(cacheHeads, tpSize, tpRank);
                int first = replica.replicas() > 1 ? tpRank / replica.replicas() : tpRank * (cacheHeads / tpSize);
                return new CacheSpec(layerName, groupId, specType, dtype, kCellBytes, vCellBytes, cacheHeads, first,
                        replica, kernelBlockSize != null ? kernelBlockSize : blockSize, blockSize, hostResident,
                        cacheId != null ? cacheId : layerName, factory);
            }
        }
    }

    private static final Pattern LAYER_NUMBER = Pattern.compile("\\.(\\d+)(?=\\.|$)");

    private final List<WorkerChecksummer.WorkerGroup> groups;
    private final Map<Integer, String> skipped;
    private final CellPadding padding;

    private CacheGate(List<WorkerChecksummer.WorkerGroup> groups, Map<Integer, String> skipped, CellPadding padding) {
        this.groups = List.copyOf(groups);
        this.skipped = Collections.unmodifiableMap(new TreeMap<>(skipped));
        this.padding = padding;
    }

    /**
     * Gates the caches, logging each skipped group once to {@code System.getLogger(CacheGate.class.getName())}, with
     * what to do about cells that are not whole 8-byte pieces: the engine's configuration. {@link CellPadding#NONE}
     * skips their groups with the reason; {@link CellPadding#ZEROS} admits them and a {@link WorkerChecksummer} built
     * from this gate pads them (a peer that does not pad skips the group, so the comparison is
     * {@link UnverifiedReason#ONE_SIDE_ONLY}, never a mismatch).
     *
     * @param caches every cache of this worker, under every layer name it is listed under ({@link FieldLayouts} for
     *     the layouts in the field, {@link CacheSpec#builder} for any other)
     * @param numBlocks the caches' capacity in blocks of their group's block size
     * @param padding what to do with cells that are not whole pieces, the same on both sides; not null
     * @return the admitted groups, ready for {@link WorkerChecksummer}, and the skipped ones with their reasons
     * @throws NullPointerException when {@code padding} is null
     */
    public static CacheGate of(List<CacheSpec> caches, long numBlocks, CellPadding padding) {
        return of(caches, numBlocks, System.getLogger(CacheGate.class.getName()), padding);
    }

    static CacheGate of(List<CacheSpec> caches, long numBlocks, Logger log, CellPadding padding) {
        Objects.requireNonNull(padding, "padding");
        Map<Integer, List<CacheSpec>> byGroup = caches.stream()
                .collect(Collectors.groupingBy(CacheSpec::groupId, TreeMap::new, Collectors.toList()));
        List<WorkerChecksummer.WorkerGroup> admitted = new ArrayList<>();
        Map<Integer, String> skipped = new LinkedHashMap<>();
        for (Map.Entry<Integer, List<CacheSpec>> e : byGroup.entrySet()) {
            int id = e.getKey();
            String reason = problem(e.getValue(), padding);
            if (reason != null) {
                skipped.put(id, reason);
                log.log(Level.WARNING, "KV checksums skip group " + id + ": " + reason);
                continue;
            }
            admitted.add(build(id, e.getValue(), numBlocks));
        }
        return new CacheGate(admitted, skipped, padding);
    }

    /**
     * {@return whether admitted groups' cells are padded: what a {@link WorkerChecksummer} built from this gate
     * computes with}
     */
    @Override
    public CellPadding padding() {
        return padding;
    }

    /** {@return the admitted groups, for {@link WorkerChecksummer}} */
    @Override
    public List<WorkerChecksummer.WorkerGroup> groups() {
        return groups;
    }

    /** {@return the skipped groups with their reasons, for {@link WorkerChecksummer}} */
    @Override
    public Map<Integer, String> skipped() {
        return skipped;
    }

    /** The layer number in a layer name (its last dotted number), or -1. */
    static int layerNumber(String name) {
        String digits = LAYER_NUMBER.matcher(name).results().map(m -> m.group(1)).reduce((a, b) -> b).orElse(null);
        return digits != null && digits.length() <= 9 ? Integer.parseInt(digits) : -1;
    }

    /** The layer module: the name up to and including its layer number. */
    static String module(String name) {
        return name.substring(0, LAYER_NUMBER.matcher(name).results().mapToInt(m -> m.end(1)).reduce((a, b) -> b).orElse(-1));
    }

    /** The caches counted: one per {@code cacheId}, under its lowest layer number (then name). */
    private static List<CacheSpec> distinct(List<CacheSpec> caches) {
        return caches.stream().collect(Collectors.toMap(CacheSpec::cacheId, c -> c, BinaryOperator.minBy(ORDER)))
                .values().stream().sorted(ORDER).toList();
    }

    private static final Comparator<CacheSpec> ORDER = Comparator.comparingInt((CacheSpec c) -> layerNumber(c.layerName()))
            .thenComparing(CacheSpec::layerName);

    private static String problem(List<CacheSpec> all, CellPadding padding) {
        for (CacheSpec c : all) {
            if (layerNumber(c.layerName()) < 0) {
                return "layer " + c.layerName() + " has no layer number in its name";
            }
        }
        List<CacheSpec> caches = distinct(all);
        int blockSize = caches.get(0).blockSize();
        Map<Integer, String> moduleOf = new HashMap<>();
        Map<Integer, Long> headsOf = new HashMap<>();
        for (CacheSpec c : caches) {
            String at = "layer " + c.layerName();
            if (c.hostResident()) {
                return at + " is host-resident (offloaded KV)";
            }
            if (c.kCellBytes() <= 0 || c.vCellBytes() < 0) {
                return at + ": cells of " + c.kCellBytes() + " K and " + c.vCellBytes()
                        + " V bytes per head are not whole 8-byte pieces";
            }
            long cell = (long) c.kCellBytes() + c.vCellBytes();
            if (cell % 8 != 0 && padding == CellPadding.NONE) {
                return at + ": cells of " + (c.vCellBytes() == 0 ? cell + " bytes" : "K " + c.kCellBytes() + " + V "
                        + c.vCellBytes() + " = " + cell + " bytes") + " per head are not whole 8-byte pieces (the"
                        + " checksum is not defined for them; padding each cell with zeros is an opt-in extension: CellPadding.ZEROS)";
            }
            if (c.blockSize() != blockSize) {
                return at + " has block size " + c.blockSize() + ", other layers of the group " + blockSize;
            }
            if (c.kernelBlockSize() <= 0 || blockSize <= 0 || blockSize % c.kernelBlockSize() != 0) {
                return at + ": kernel blocks of " + c.kernelBlockSize() + " tokens do not tile blocks of " + blockSize;
            }
            int layer = layerNumber(c.layerName());
            String mod = moduleOf.putIfAbsent(layer, module(c.layerName()));
            if (mod != null && !mod.equals(module(c.layerName()))) {
                return "layers " + mod + " and " + c.layerName() + " share layer number " + layer
                        + " but belong to different modules";
            }
            long heads = headsOf.merge(layer, (long) c.cacheHeads(), Long::sum);
            if (heads > Definition.MAX_KV_HEADS_PER_LAYER) {
                return "layer " + layer + " has " + heads + " KV heads, more than " + Definition.MAX_KV_HEADS_PER_LAYER;
            }
        }
        return null;
    }

    private static WorkerChecksummer.WorkerGroup build(int id, List<CacheSpec> all, long numBlocks) {
        List<Long> hashes = new ArrayList<>();
        Map<Integer, Integer> nextHead = new HashMap<>();
        // Parts by (replica, kernel block size): a KvCacheGroup shares one paging.
        record Paging(ReplicaKey replica, int pageSize) {
        }
        Map<Paging, List<CacheLayer>> parts = new LinkedHashMap<>();
        for (CacheSpec c : distinct(all)) {
            int layer = layerNumber(c.layerName());
            int base = nextHead.getOrDefault(layer, 0);
            nextHead.put(layer, base + c.cacheHeads());
            hashes.add(Fingerprints.ofLayer(c.layerName(), c.specType(), c.dtype()));
            parts.computeIfAbsent(new Paging(c.replica(), c.kernelBlockSize()), x -> new ArrayList<>())
                    .add(c.factory().layer(layer, base + c.firstHead()));
        }
        List<WorkerChecksummer.ReplicaPart> out = new ArrayList<>();
        parts.forEach((k, layers) -> out.add(new WorkerChecksummer.ReplicaPart(k.replica(),
                KvCacheGroup.of(k.pageSize(), numBlocks * (all.get(0).blockSize() / k.pageSize()), layers))));
        return new WorkerChecksummer.WorkerGroup(id, Fingerprints.ofGroup(hashes), out);
    }
}
