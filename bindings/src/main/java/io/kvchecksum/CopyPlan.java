package io.kvchecksum;

import io.kvchecksum.SlicePlan.Residency;
import io.kvchecksum.SlicePlan.Slice;
import io.kvchecksum.spi.BackendLimits;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * A verifying copy, compiled: KV moved from a source cache to a destination cache in one pass over the bytes, with the
 * destination's block checksums computed from the bytes as they pass ({@link KvChecksum#copyAndChecksum}). What an
 * engine does after a transfer (a page permutation, NHD to HND, flash to FlashInfer, a block-size change, TP
 * re-sharding, staging buffer to cache) becomes verified at the cost of the copy alone.
 *
 * <p><b>What is copied.</b> Request position {@code t} lies in the source at page {@code sourceTable[(t-S)/Ps]}, slot
 * {@code (t-S)%Ps}, and in the destination at page {@code destinationTable[(t-S)/Pd]}, slot {@code (t-S)%Pd}
 * ({@code S} the requests' common first position, {@code Ps}, {@code Pd} the groups' page sizes). For every position
 * {@code S <= t < N} and every (layer, global head) slice present in both groups (the intersection: a producer rank's
 * head range into a consumer's pages), the cell's K bytes and V bytes are copied from the source's cell to the
 * destination's. Nothing else of the destination is written.
 *
 * <p><b>What is returned.</b> The destination's block checksums (block size {@code B} of the destination request,
 * blocks {@code firstBlock ..}) over the copied slices: exactly {@link KvChecksum#blockChecksums(KvCacheGroup,
 * RequestBlocks) blockChecksums}{@code (}{@link #copiedDestination()}{@code , destinationRequest)} after a correct
 * copy, i.e. the consumer worker's record for that head range (the records of several copies into one cache add up as
 * TP workers' do). Values are read from the source, weights come from the destination: each value's position is derived
 * from the destination's own table, its layer and global head from the destination's layer. So a corrupted source byte,
 * a source page paired with the wrong destination page, a copy into the wrong slot or layout, and a wrong head range
 * all change the values. Writes to the destination after the copy are out of scope: the values describe what the copy
 * wrote, not what the destination holds later.
 *
 * <p><b>Refused here, before anything runs</b> ({@link InvalidLayoutException} naming the problem): a null argument,
 * requests of unequal token counts or first positions, a table too short or a page id out of range on either side
 * (named "source" or "destination"), a destination page listed twice, cells that are not whole pieces without padding,
 * a (layer, head) whose cell geometry (K bytes, V bytes) differs between the sides, no (layer, head) in common, and
 * destination cells that overlap one another (two layers described onto one buffer, heads closer than a cell, K and V
 * on the same bytes, pages closer than a page's span, segments sharing bytes: the copy would write one cell over
 * another while its values, read from the source, still matched), naming both cells (segment, layer, head, K or V,
 * page, slot, byte range). That check is exact per written cell and, for real layouts, costs a sort of the layers'
 * K and V regions rather than of their cells: it compares cells one by one only where strides, hulls and residues
 * modulo the page, token and head strides do not already show the regions (then the heads) disjoint. The
 * backend's limits are checked by {@link #check}: the memory kinds it copies ({@link BackendLimits#copies()}: host to
 * host on the CPU backends, pinned host memory counting as host memory; on CUDA device memory and pinned host memory,
 * pageable host memory refused with the advice to pin it), and an in-place copy (below) whose staging unit exceeds
 * what the backend stages ({@link BackendLimits#maxStagedUnitBytes()}).
 *
 * <p><b>In place.</b> Source and destination memory may overlap (vLLM's in-place rearrangement after a transfer: the
 * received blocks read, permuted NHD to HND or reshaped from the remote block size, and written back into the same
 * block ids). Overlap ({@link #overlaps()}) means a byte the source cells read is a byte the destination cells write,
 * decided byte-exactly: one TP rank's heads copied onto other heads of the same NHD pages, whose head ranges
 * interleave inside each token row, share no byte and are a plain copy. It is decided from the memories' ranges, then
 * page spans, then, only where spans meet, the cells ({@code SharedBytes}: residues modulo a stride, then cell by cell),
 * and stays conservative (overlapping) only past {@code SharedBytes.BUDGET} cell comparisons. An overlapping copy is
 * {@link #staged()} when every staging unit (one layer's cells of one destination page,
 * K and V together) reads only bytes no other unit writes; every backend then reads each unit whole before writing
 * it, which gives what reading every source cell before writing any would. Otherwise (an in-place page permutation, a
 * unit reading another page's bytes) {@link #check} refuses it, naming both units: per-page staging cannot order it,
 * copy through separate memory. Both questions (overlap, staging) are answered exactly and, for real layouts, from a
 * few lattices of page spans and the two tables ({@code PageSpans}) and a residue test per layer and part where spans
 * meet without sharing bytes: an in-place compilation costs about what an out-of-place one costs (vLLM's in-place NHD to HND of Llama-3-8B, 32 layers x 8 heads, 1000 to 4000 pages of 16:
 * 1.5 to 1.7 times, where one span per slice and page and a hull per unit cost 40 to 1400 times; docs/architecture.md
 * has the numbers). Layers interleaved within a page (side by side in each token's row) are shown apart layer by layer
 * by residues modulo the row, at any size (Llama-3-8B's 32 layers, 4000 pages: about a millisecond). Cells are
 * compared one by one only where no such argument separates two units (one layer's pages interleaved with one another,
 * say), at most 2<sup>21</sup> destination cells: beyond that the copy is refused as not shown stageable.
 *
 * <p><b>The lowering</b>, for backends: {@link #launches()}, at most two (one per {@link CompiledPlan.CellKind cell
 * kind}, like {@link CompiledPlan}'s), each a list of {@link Pair}s (source slice, destination slice: for each side the
 * K and V {@link SlicePlan.Part}s, i.e. base offset, page stride, token stride, pieces, bytes, alignment class) plus
 * everything a kernel needs: both page tables (validated, exactly the entries the positions need), {@code Ps},
 * {@code Pd}, {@code B}, {@code S} (the start), {@code N}, the first destination block, the number of blocks, the cell
 * kind and the checksum mode, and each side's memory kind. A kernel iterates the destination's blocks {@code b} (block
 * {@code firstBlock + b} covers {@code [S + b*B, min(S + (b+1)*B, N))}) and their positions {@code t}; for each pair
 * it finds the destination cell from {@code destinationTable}, the source cell from {@code sourceTable}, loads each
 * 8-byte piece {@code p} from the source, stores it to the destination, and adds {@code x*(2(t*P+p)+1)} into the pair's
 * slice sum exactly as the checksum kernels do ({@code P} the cell's pieces, the padded last piece counting with
 * {@link CellPadding#ZEROS}); block {@code b}'s value is {@code sum factor*s} over the pairs ({@link Pair#factor()},
 * the destination's). A launch's values are added into the plan's blocks: both launches cover every block.
 *
 * <p><b>A segmented destination</b> ({@link KvSegments}, one group per allocation as Jlama's pages:
 * {@link #compile(KvCacheGroup, RequestBlocks, KvSegments, RequestBlocks, ChecksumSpec)}) is one plan of single-group
 * {@link #segments() segment plans}, one per segment share in {@link KvSegments#plan}'s split, each lowered as above in
 * its own blocks (which nest in the plan's: {@link #blockOf}); {@link #launches()} lists all of theirs. Backends
 * declaring {@link BackendLimits#copiesSegments()} take the plan in one call (the CPU backends; cpu in one pass over its
 * pool), the front runs it segment plan by segment plan on the others.
 *
 * <p>Immutable and thread-safe; reusable for as long as both caches' memory and tables stay the same.
 */
public final class CopyPlan {

    /**
     * One copied (layer, global head) slice: where its cells are read and where they are written.
     *
     * @param source the slice in the source group: its K and V parts (bases, strides) in the source's memory
     * @param destination the slice in the destination group, with the same layer, head and cell geometry
     */
    public record Pair(Slice source, Slice destination) {
        /** {@return the layer number} */
        public int layer() {
            return destination.layer();
        }

        /** {@return the global head number} */
        public int head() {
            return destination.head();
        }

        /** {@return the slice's factor {@code m = 2*(layer*2^16 + head) + 1}, from the destination's coordinates} */
        public long factor() {
            return destination.factor();
        }

        /** {@return pieces per cell, {@code P = ceil(cellBytes / 8)}} */
        public int pieces() {
            return destination.pieces();
        }
    }

    /**
     * One homogeneous launch of the copy: pairs of one cell kind, and everything a kernel needs to run them.
     * The tables are the plan's (shared by both launches); the accessors of the arrays copy them, {@link #sourcePage}
     * and {@link #destinationPage} do not.
     *
     * @param pairs the copied slices, in the destination's order (its layers, then local heads), never empty
     * @param cellKind how the cells are read: whole 8-byte pieces, or byte cells (a piece straddling K and V, or a
     *     padded last piece)
     * @param mode the checksum mode
     * @param sourceMemory where the pairs' source parts live
     * @param destinationMemory where the pairs' destination parts live
     * @param sourceTable the source's page ids: entry {@code i} holds positions {@code [S + i*Ps, S + (i+1)*Ps)}
     * @param destinationTable the destination's page ids: entry {@code i} holds positions {@code [S + i*Pd, ..)}
     * @param sourcePageSize {@code Ps}, slots per source page
     * @param destinationPageSize {@code Pd}, slots per destination page
     * @param blockSize {@code B}, the destination request's block size: the output's
     * @param startToken {@code S}, the first copied position ({@code firstBlock * B})
     * @param numTokens {@code N}: positions {@code S .. N-1} are copied
     * @param firstBlock the destination request's first block: the launch's value {@code b} is block
     *     {@code firstBlock + b}'s
     */
    public record Launch(List<Pair> pairs, CompiledPlan.CellKind cellKind, ChecksumMode mode, Residency sourceMemory,
                         Residency destinationMemory, int[] sourceTable, int[] destinationTable, int sourcePageSize,
                         int destinationPageSize, int blockSize, long startToken, long numTokens, long firstBlock) {
        /** Keeps the pairs immutable; the tables are the plan's own copies. */
        public Launch {
            pairs = List.copyOf(pairs);
        }

        /** {@return the number of values: blocks {@code firstBlock .. ceil(N/B)-1}} */
        public int numBlocks() {
            return (int) (Math.ceilDiv(numTokens, (long) blockSize) - firstBlock);
        }

        /** {@return the source table (a copy)} */
        @Override
        public int[] sourceTable() {
            return sourceTable.clone();
        }

        /** {@return the destination table (a copy)} */
        @Override
        public int[] destinationTable() {
            return destinationTable.clone();
        }

        /**
         * {@return source table entry {@code i}, without a copy}
         *
         * @param i an index, {@code 0 <= i < ceil((N-S)/Ps)}
         */
        public int sourcePage(int i) {
            return sourceTable[i];
        }

        /**
         * {@return destination table entry {@code i}, without a copy}
         *
         * @param i an index, {@code 0 <= i < ceil((N-S)/Pd)}
         */
        public int destinationPage(int i) {
            return destinationTable[i];
        }

        /** {@return the route: where the sources live and where the destinations live} */
        public BackendLimits.CopyRoute route() {
            return new BackendLimits.CopyRoute(sourceMemory, destinationMemory);
        }

        /**
         * {@return the launch's staging units, for a staged copy ({@link CopyPlan#staged()})} A unit is the launch's
         * pairs of one layer, K and V together, run for one destination table entry at a time; the units are the
         * plan's decision, so that every staging backend stages the same bytes together (and {@link CopyPlan#check}
         * bounds what they stage by {@link CopyPlan#stagingUnitBytes()}, the largest unit of every launch).
         */
        public Staging staging() {
            Map<Integer, List<Pair>> byLayer = new java.util.LinkedHashMap<>();
            for (Pair p : pairs) {
                byLayer.computeIfAbsent(p.layer(), k -> new ArrayList<>()).add(p);
            }
            long positions = Math.min(destinationPageSize, numTokens - startToken);
            List<Pair> ordered = new ArrayList<>(pairs.size());
            int[] starts = new int[byLayer.size() + 1];
            long[] unitBytes = new long[byLayer.size()];
            int u = 0;
            for (List<Pair> unit : byLayer.values()) {
                starts[u] = ordered.size();
                long pieces = 0;
                for (Pair p : unit) {
                    pieces += p.pieces();
                }
                unitBytes[u++] = 8 * pieces * Math.max(positions, 0);
                ordered.addAll(unit);
            }
            starts[u] = ordered.size();
            return new Staging(ordered, starts, unitBytes);
        }

        /** {@return the bytes the launch moves: every pair's cell for every copied position} */
        public long bytes() {
            long perToken = 0;
            for (Pair p : pairs) {
                perToken += p.destination().cellBytes();
            }
            return perToken * (numTokens - startToken);
        }

        @Override
        public boolean equals(Object o) {
            return this == o;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }

        @Override
        public String toString() {
            return "CopyPlan.Launch[" + pairs.size() + " pairs, " + cellKind + ", " + mode.wireName() + ", " + route()
                    + ", Ps " + sourcePageSize + ", Pd " + destinationPageSize + ", B " + blockSize + ", tokens "
                    + startToken + ".." + numTokens + "]";
        }
    }

    /**
     * A launch's staging units ({@link Launch#staging()}).
     *
     * @param pairs the launch's pairs with each unit's together: each layer's in the launch's order, the layers in the
     *     order of their first pairs
     * @param starts where unit {@code u}'s pairs start in {@code pairs}: {@code [starts[u], starts[u+1])}; one more
     *     entry than units, the last {@code pairs.size()}
     * @param unitBytes unit {@code u}'s bytes staged for a full destination page ({@code min(Pd, N-S)} positions of
     *     its pairs' cells, K and V as whole 8-byte pieces, {@link Pair#pieces()})
     */
    public record Staging(List<Pair> pairs, int[] starts, long[] unitBytes) {
        /** Keeps the pairs immutable and the arrays the record's own. */
        public Staging {
            pairs = List.copyOf(pairs);
            starts = starts.clone();
            unitBytes = unitBytes.clone();
        }

        /** {@return the number of units} */
        public int units() {
            return unitBytes.length;
        }

        /** {@return where each unit's pairs start in {@link #pairs()}, then {@code pairs().size()} (a copy)} */
        @Override
        public int[] starts() {
            return starts.clone();
        }

        /** {@return each unit's staged bytes for a full destination page (a copy)} */
        @Override
        public long[] unitBytes() {
            return unitBytes.clone();
        }

        /**
         * {@return unit {@code u}'s pairs, a view of {@link #pairs()}}
         *
         * @param u a unit, {@code 0 <= u < units()}
         */
        public List<Pair> unit(int u) {
            return pairs.subList(starts[u], starts[u + 1]);
        }

        /**
         * {@return unit {@code u}'s staged bytes for a full destination page}
         *
         * @param u a unit, {@code 0 <= u < units()}
         */
        public long bytes(int u) {
            return unitBytes[u];
        }

        /** {@return the largest unit's staged bytes, 0 without units} */
        public long largest() {
            long most = 0;
            for (long b : unitBytes) {
                most = Math.max(most, b);
            }
            return most;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Staging other && pairs.equals(other.pairs) && Arrays.equals(starts, other.starts)
                    && Arrays.equals(unitBytes, other.unitBytes);
        }

        @Override
        public int hashCode() {
            return 31 * (31 * pairs.hashCode() + Arrays.hashCode(starts)) + Arrays.hashCode(unitBytes);
        }

        @Override
        public String toString() {
            return "CopyPlan.Staging[" + units() + " units of " + pairs.size() + " pairs, largest " + largest() + " bytes]";
        }
    }

    private final KvCacheGroup source;
    private final RequestBlocks sourceRequest;
    private final KvCacheGroup destination;
    private final RequestBlocks destinationRequest;
    private final ChecksumSpec spec;
    private final List<Launch> launches;
    private final List<Pair> pairs;
    /** The restricted groups, made on first use: a segmented plan's segment plans rarely need them. */
    private volatile KvCacheGroup copiedDestination;
    private volatile KvCacheGroup copiedSource;
    /** Whether source and destination memory overlap. */
    private final boolean overlapping;
    /** Says why they overlap, naming two slices: made on first use, only a refusal needs it. */
    private final Supplier<String> overlapWhy;
    private volatile String overlap;
    /** Where memory overlaps: why per-page staging cannot order the copy, or null when it can (or nothing overlaps). */
    private final String stagingConflict;
    /** Where memory overlaps: the largest staging unit's bytes; 0 otherwise. */
    private final long stagingUnitBytes;
    /** The segmented destination, or null when the destination is one group. */
    private final KvSegments destinationSegments;
    /** One single-group plan per segment share; {@code List.of(this)} for a one-group plan. */
    private final List<CopyPlan> segmentPlans;
    /** Per segment plan: its first block and block size, whose blocks nest in this plan's. */
    private final long[] segmentFirst;
    private final int[] segmentBlock;

    private CopyPlan(KvCacheGroup source, RequestBlocks sourceRequest, KvCacheGroup destination,
                     RequestBlocks destinationRequest, ChecksumSpec spec, List<Pair> pairs, List<Launch> launches,
                     Supplier<String> overlapWhy, CopyStaging.Result staging) {
        this.source = source;
        this.sourceRequest = sourceRequest;
        this.destination = destination;
        this.destinationRequest = destinationRequest;
        this.spec = spec;
        this.pairs = pairs;
        this.launches = launches;
        this.overlapping = overlapWhy != null;
        this.overlapWhy = overlapWhy;
        this.stagingConflict = staging == null ? null : staging.conflict();
        // the largest unit of any launch: the units are the launches' (Launch.staging()), which the backends stage
        this.stagingUnitBytes = staging == null ? 0
                : launches.stream().mapToLong(l -> l.staging().largest()).max().orElse(0);
        this.destinationSegments = null;
        this.segmentPlans = List.of(this);
        this.segmentFirst = new long[] {destinationRequest.firstBlock()};
        this.segmentBlock = new int[] {destinationRequest.blockSize()};
    }

    private CopyPlan(KvCacheGroup source, RequestBlocks sourceRequest, KvSegments destination,
                     RequestBlocks destinationRequest, ChecksumSpec spec, List<CopyPlan> parts) {
        this.source = source;
        this.sourceRequest = sourceRequest;
        this.destination = destination.geometry();
        this.destinationRequest = destinationRequest;
        this.spec = spec;
        this.destinationSegments = destination;
        this.segmentPlans = List.copyOf(parts);
        List<Launch> all = new ArrayList<>();
        int why = -1;
        segmentFirst = new long[parts.size()];
        segmentBlock = new int[parts.size()];
        for (int i = 0; i < parts.size(); i++) {
            CopyPlan part = parts.get(i);
            all.addAll(part.launches());
            if (why < 0 && part.overlapping) {
                why = i;
            }
            segmentFirst[i] = part.destinationRequest.firstBlock();
            segmentBlock[i] = part.destinationRequest.blockSize();
        }
        this.launches = List.copyOf(all);
        this.overlapping = why >= 0;
        int first = why;
        this.overlapWhy = why < 0 ? null : () -> "segment plan " + first + ": " + segmentPlans.get(first).overlapMessage();
        // a unit of one segment plan could read what another segment plan writes, which no segment plan sees
        this.stagingConflict = why < 0 ? null : "an in-place copy into a segmented destination is not staged:"
                + " copy through separate memory";
        this.stagingUnitBytes = 0;
        this.pairs = parts.isEmpty() ? List.of() : parts.get(0).pairs();
    }

    /**
     * Validates a copy and compiles it; nothing is read or written. {@link KvChecksum#compileCopy} also checks it
     * against the backend's limits.
     *
     * @param source the cache read, not null
     * @param sourceRequest where the request's positions lie in the source: its page table (from {@code S}) and its
     *     token count; its block size only sets {@code S = firstBlock*blockSize}
     * @param destination the cache written, not null
     * @param destinationRequest where the positions go: the destination's page table (from {@code S}), the token count
     *     (equal to the source's), the first block and the block size of the returned checksums
     * @param spec the mode and padding of the returned checksums, not null
     * @return the compiled copy
     * @throws InvalidLayoutException naming the problem, as the class documentation lists
     */
    public static CopyPlan compile(KvCacheGroup source, RequestBlocks sourceRequest, KvCacheGroup destination,
                                   RequestBlocks destinationRequest, ChecksumSpec spec) {
        return compile(source, sourceRequest, destination, destinationRequest, spec, null);
    }

    /**
     * What every segment share of one segmented copy has in common on the source side, made once: the source's
     * slices (a share only validates its table, {@link SlicePlan#withRequest}), their indices by (layer, head), the
     * address ranges of the source's memories, and (in {@code pairing[0]}, set by the first share whose geometry
     * checks passed) the source slice of each destination slice, -1 where the source holds none.
     */
    private record Source(SlicePlan plan, Map<Long, Integer> bySlice, Map<Object, long[]> ranges, int[][] pairing) {
        static Source of(KvCacheGroup source, RequestBlocks request, ChecksumSpec spec) {
            SlicePlan plan = side("source", source, request, spec);
            Map<Long, Integer> bySlice = new HashMap<>();
            Map<Object, long[]> ranges = new IdentityHashMap<>();
            for (int i = 0; i < plan.slices().size(); i++) {
                Slice s = plan.slices().get(i);
                bySlice.put(key(s.layer(), s.head()), i);
                memoryRanges(s, ranges);
            }
            return new Source(plan, bySlice, ranges, new int[1][]);
        }
    }

    private static CopyPlan compile(KvCacheGroup source, RequestBlocks sourceRequest, KvCacheGroup destination,
                                    RequestBlocks destinationRequest, ChecksumSpec spec, Source pre) {
        if (source == null || sourceRequest == null || destination == null || destinationRequest == null || spec == null) {
            throw new InvalidLayoutException("copy: source, sourceRequest, destination, destinationRequest and spec must not be null");
        }
        if (sourceRequest.numTokens() != destinationRequest.numTokens()) {
            throw new InvalidLayoutException("copy: the source request has " + sourceRequest.numTokens()
                    + " tokens but the destination request has " + destinationRequest.numTokens()
                    + " (both must cover the same positions)");
        }
        if (sourceRequest.startToken() != destinationRequest.startToken()) {
            throw new InvalidLayoutException("copy: the source request starts at position " + sourceRequest.startToken()
                    + " but the destination request at " + destinationRequest.startToken()
                    + " (firstBlock x blockSize must be equal: both tables start at the first copied position)");
        }
        SlicePlan src;
        if (pre == null) {
            src = side("source", source, sourceRequest, spec);
        } else {
            try {
                src = pre.plan.withRequest(sourceRequest);
            } catch (InvalidLayoutException e) {
                throw new InvalidLayoutException("copy: source: " + e.getMessage());
            }
        }
        SlicePlan dst = side("destination", destination, destinationRequest, spec);
        int[] dstTable = dst.pageTable();
        requireDistinctPages(dstTable);

        List<Slice> srcSlices = src.slices();
        List<Slice> dstSlices = dst.slices();
        List<Pair> pairs = new ArrayList<>(dstSlices.size());
        int[] known = pre == null ? null : pre.pairing[0];
        boolean reused = known != null && known.length == dstSlices.size();
        if (reused) {
            // every segment has the first one's (layer, head)s and cell bytes in order (KvSegments.of): its pairing
            for (int i = 0; i < known.length; i++) {
                if (known[i] >= 0) {
                    pairs.add(new Pair(srcSlices.get(known[i]), dstSlices.get(i)));
                }
            }
        }
        Map<Long, Integer> bySlice = pre == null ? null : pre.bySlice;
        if (bySlice == null) {
            bySlice = new HashMap<>();
            for (int i = 0; i < srcSlices.size(); i++) {
                bySlice.put(key(srcSlices.get(i).layer(), srcSlices.get(i).head()), i);
            }
        }
        int[] pairing = new int[dstSlices.size()];
        for (int i = 0; i < dstSlices.size() && !reused; i++) {
            Slice d = dstSlices.get(i);
            Integer at = bySlice.get(key(d.layer(), d.head()));
            pairing[i] = at == null ? -1 : at;
            if (at == null) {
                continue;
            }
            Slice s = srcSlices.get(at);
            int sv = s.v() == null ? -1 : s.v().bytes();
            int dv = d.v() == null ? -1 : d.v().bytes();
            if (s.k().bytes() != d.k().bytes() || sv != dv) {
                throw new InvalidLayoutException("copy: layer " + d.layer() + " head " + d.head() + " has cells of "
                        + geometry(s) + " in the source but " + geometry(d) + " in the destination (the cell geometry"
                        + " must be equal: a copy does not convert dtypes or head sizes)");
            }
            pairs.add(new Pair(s, d));
        }
        if (pre != null && !reused) {
            pre.pairing[0] = pairing;
        }
        if (pairs.isEmpty()) {
            throw new InvalidLayoutException("copy: no (layer, head) is in both groups: the source holds "
                    + heads(source) + ", the destination " + heads(destination));
        }
        if (pre == null) {   // a segmented destination checks all its shares together
            WrittenCells.requireDisjoint(List.of(WrittenCells.Pages.of("", dstTable, destination,
                    destinationRequest.numTokens() - destinationRequest.startToken())), List.of(pairs));
        }
        Map<Object, long[]> ranges = pre == null ? null : pre.ranges;
        List<Pair> copied = List.copyOf(pairs);
        SharedBytes.Witness shared = overlapping(copied, source, src, destination, dst, ranges,
                destinationRequest.numTokens() - destinationRequest.startToken());
        Supplier<String> overlap = shared == null ? null : shared::message;
        CopyStaging.Result staging = overlap == null ? null : CopyStaging.classify(pairs, src.pageTable(), dstTable,
                source.pageSize(), destination.pageSize(), destinationRequest.startToken(), destinationRequest.numTokens());

        List<Launch> launches = new ArrayList<>(2);
        int[] srcTable = src.pageTable();
        for (boolean byteCells : new boolean[] {false, true}) {
            List<Pair> mine = new ArrayList<>(pairs.size());
            for (Pair p : pairs) {
                if (p.destination().byteCells() == byteCells) {
                    mine.add(p);
                }
            }
            if (mine.isEmpty() || destinationRequest.numBlocks() == 0) {
                continue;
            }
            launches.add(new Launch(mine, byteCells ? CompiledPlan.CellKind.BYTE_CELLS : CompiledPlan.CellKind.WHOLE_PIECES,
                    spec.mode(), residency(mine, true), residency(mine, false), srcTable, dstTable, source.pageSize(),
                    destination.pageSize(), destinationRequest.blockSize(), destinationRequest.startToken(),
                    destinationRequest.numTokens(), destinationRequest.firstBlock()));
        }
        return new CopyPlan(source, sourceRequest, destination, destinationRequest, spec, copied,
                List.copyOf(launches), overlap, staging);
    }

    /**
     * Validates a copy into a segmented destination ({@link KvSegments}: one group per allocation, as Jlama's pages)
     * and compiles it as one plan; nothing is read or written. The positions and blocks are those
     * {@link KvSegments#plan} uses: each segment's share of the positions is one single-group plan
     * ({@link #segments()}) in blocks that nest in the request's (a block straddling two segments is the sum of its two
     * partial blocks), and the source's table is cut at each share's first position. A backend whose limits declare
     * {@link BackendLimits#copiesSegments()} runs all of them in one call (the CPU backend in one pass over its pool);
     * for others {@link KvChecksum#copyAndChecksum} runs the segment plans one after another and adds their values.
     *
     * @param source the cache read, not null
     * @param sourceRequest where the request's positions lie in the source: its page table from {@code S} and its token
     *     count; its block size only sets {@code S}
     * @param destination the segments written, not null
     * @param destinationRequest the positions and blocks of the returned checksums, as {@link KvSegments#request}
     *     makes it (its table is not used: positions are the segments' addresses)
     * @param spec the mode and padding of the returned checksums, not null
     * @return the compiled copy
     * @throws InvalidLayoutException as {@link #compile(KvCacheGroup, RequestBlocks, KvCacheGroup, RequestBlocks,
     *     ChecksumSpec)} says for each segment (the message names the segment), for destination cells of two segments
     *     (or shares of one) that overlap, and for tokens past the last segment,
     *     a share starting inside a destination page, or a source page size that does not divide the distance from
     *     {@code S} to every segment start inside the request
     */
    public static CopyPlan compile(KvCacheGroup source, RequestBlocks sourceRequest, KvSegments destination,
                                   RequestBlocks destinationRequest, ChecksumSpec spec) {
        if (source == null || sourceRequest == null || destination == null || destinationRequest == null || spec == null) {
            throw new InvalidLayoutException("copy: source, sourceRequest, destination, destinationRequest and spec must not be null");
        }
        long numTokens = destinationRequest.numTokens();
        long start = destinationRequest.startToken();
        int blockSize = destinationRequest.blockSize();
        if (sourceRequest.numTokens() != numTokens || sourceRequest.startToken() != start) {
            throw new InvalidLayoutException("copy: the source request covers positions " + sourceRequest.startToken()
                    + ".." + (sourceRequest.numTokens() - 1) + " but the destination request " + start + ".."
                    + (numTokens - 1) + " (both must cover the same positions)");
        }
        if (numTokens > destination.endToken()) {
            throw new InvalidLayoutException("copy: tokens " + start + ".." + (numTokens - 1) + " requested but the"
                    + " destination segments hold positions 0.." + (destination.endToken() - 1));
        }
        int ps = source.pageSize();
        int[] srcTable = sourceRequest.pageTable();
        Source pre = Source.of(source, sourceRequest, spec);
        List<CopyPlan> parts = new ArrayList<>();
        List<WrittenCells.Pages> written = new ArrayList<>();
        List<KvSegments.Segment> list = destination.segments();
        for (int i = 0; i < list.size(); i++) {
            KvSegments.Segment seg = list.get(i);
            long a = Math.max(seg.startToken(), start);
            long e = Math.min(seg.endToken(), numTokens);
            if (a >= e) {
                continue;
            }
            int pd = seg.group().pageSize();
            if ((a - seg.startToken()) % pd != 0) {
                throw new InvalidLayoutException("copy: destination segment " + i + " (positions " + seg.startToken()
                        + ".." + (seg.endToken() - 1) + ", pages of " + pd + ") would be written from position " + a
                        + ", which is not a page boundary");
            }
            long body = Math.ceilDiv(a, (long) blockSize) * blockSize;
            // split at the first block boundary only where it is a page boundary on both sides: blocks of gcd(a, B)
            // nest in the request's blocks anyway, the split only makes the body's runs longer
            if (body >= e || (body - seg.startToken()) % pd != 0 || (body - start) % ps != 0) {
                parts.add(share(source, pre, srcTable, ps, start, written, i, seg, a, e, gcd(a, blockSize), spec));
            } else {
                if (body > a) {
                    parts.add(share(source, pre, srcTable, ps, start, written, i, seg, a, body, gcd(a, blockSize), spec));
                }
                parts.add(share(source, pre, srcTable, ps, start, written, i, seg, body, e, blockSize, spec));
            }
        }
        List<List<Pair>> pairs = new ArrayList<>(parts.size());
        for (CopyPlan p : parts) {
            pairs.add(p.pairs);
        }
        WrittenCells.requireDisjoint(written, pairs);
        return new CopyPlan(source, sourceRequest, destination, destinationRequest, spec, parts);
    }

    /** Positions {@code [from, to)} of destination segment {@code i}, in blocks of {@code small} tokens. */
    private static CopyPlan share(KvCacheGroup source, Source pre, int[] srcTable, int ps, long start,
            List<WrittenCells.Pages> written, int i, KvSegments.Segment seg, long from, long to, int small, ChecksumSpec spec) {
        if ((from - start) % ps != 0) {
            throw new InvalidLayoutException("copy: the source's pages of " + ps + " positions cannot be copied into"
                    + " destination segment " + i + " from position " + from + ", " + (from - start) + " positions"
                    + " after the first copied position " + start + ": the source's page size must divide the"
                    + " distance from the first copied position to every segment start");
        }
        int first = Math.toIntExact((from - start) / ps);
        int count = Math.toIntExact(Math.ceilDiv(to - from, (long) ps));
        if (first + count > srcTable.length) {
            throw new InvalidLayoutException("copy: the source table has " + srcTable.length + " entries; positions "
                    + start + ".." + (to - 1) + " need " + (first + count));
        }
        int pd = seg.group().pageSize();
        long firstPage = (from - seg.startToken()) / pd;
        int[] table = new int[Math.toIntExact(Math.ceilDiv(to - from, (long) pd))];
        for (int k = 0; k < table.length; k++) {
            table[k] = Math.toIntExact(firstPage + k);
        }
        written.add(WrittenCells.Pages.of("segment " + i + "'s ", table, seg.group(), to - from));
        try {
            return compile(source, RequestBlocks.of(Arrays.copyOfRange(srcTable, first, first + count), to, from / small,
                    small), seg.group(), RequestBlocks.of(table, to, from / small, small), spec, pre);
        } catch (InvalidLayoutException x) {
            throw new InvalidLayoutException("destination segment " + i + " (positions " + from + ".." + (to - 1)
                    + "): " + x.getMessage());
        }
    }

    private static int gcd(long a, long b) {
        while (b != 0) {
            long t = a % b;
            a = b;
            b = t;
        }
        return (int) a;
    }

    /**
     * Refuses the copy, before anything runs, for a limit the backend declares: a launch whose (source, destination)
     * memory kinds are not among the routes it copies, or an in-place copy (source and destination memory overlap)
     * whose largest staging unit exceeds {@link BackendLimits#maxStagedUnitBytes()}; and an in-place copy that per-page
     * staging cannot order on any backend ({@link #staged()} false), naming two conflicting units.
     *
     * @param backend the backend's name, for the message
     * @param limits what it copies
     * @param onStream whether the copy is to run on an engine's stream or queue
     * @throws InvalidLayoutException naming the limit and what is beyond it
     */
    public void check(String backend, BackendLimits limits, boolean onStream) {
        Set<BackendLimits.CopyRoute> routes = limits.copyRoutes(onStream);
        String where = onStream ? " on an engine's stream" : "";
        if (limits.copies().isEmpty() && limits.copiesOnStream().isEmpty()) {
            throw new InvalidLayoutException("backend '" + backend + "' does not implement the verifying copy"
                    + " (copyAndChecksum) yet; use the cpu or reference backend, or copy and then checksum the destination");
        }
        for (Launch l : launches) {   // a segmented plan's launches are its segment plans'
            if (!limits.copies(l.route(), onStream)) {
                // Pageable host memory where the backend copies pinned host memory: say so first, the fix is to pin it.
                String pin = limits.copies(l.route().asPinned(), onStream) ? ": host memory must be pinned for it (pass "
                        + "KvMemory.pinnedHost(segment) over memory the backend pinned; pageable memory cannot be read in place)"
                        : "";
                throw new InvalidLayoutException("backend '" + backend + "' cannot copy " + l.route() + where + pin
                        + " (it copies: " + (routes.isEmpty() ? "nothing" : routes.stream().map(Object::toString).sorted().toList())
                        + ")" + (l.route().source() != Residency.DEVICE || l.route().destination() != Residency.DEVICE
                                ? limits.hint() : ""));
            }
        }
        if (overlapping && stagingConflict != null) {
            throw new InvalidLayoutException("copy: " + overlapMessage() + "; " + stagingConflict + " (backend '" + backend
                    + "')");
        }
        if (overlapping && stagingUnitBytes > limits.maxStagedUnitBytes()) {
            throw new InvalidLayoutException("copy: " + overlapMessage() + "; " + (limits.maxStagedUnitBytes() == 0
                    ? "backend '" + backend + "' does not stage pages for an in-place copy"
                    : "its largest staging unit (one layer's cells of one destination page) is " + stagingUnitBytes
                            + " bytes, but backend '" + backend + "' stages at most " + limits.maxStagedUnitBytes()
                            + " bytes per unit") + ": copy through separate memory");
        }
    }

    /** {@return the cache read} */
    public KvCacheGroup source() {
        return source;
    }

    /** {@return where the positions lie in the source} */
    public RequestBlocks sourceRequest() {
        return sourceRequest;
    }

    /** {@return the cache written; for a segmented destination the first segment's group (every segment's geometry)} */
    public KvCacheGroup destination() {
        return destination;
    }

    /**
     * {@return where the positions go in the destination, and the blocks of the returned checksums} For a segmented
     * destination the request has no table (positions are the segments' addresses).
     */
    public RequestBlocks destinationRequest() {
        return destinationRequest;
    }

    /** {@return the mode and padding of the returned checksums} */
    public ChecksumSpec spec() {
        return spec;
    }

    /** {@return the copied slices, in the destination's order; for a segmented destination the first segment plan's} */
    public List<Pair> pairs() {
        return pairs;
    }

    /**
     * {@return the launches: one per cell kind present, none when the destination request has no block} For a
     * segmented destination every segment plan's launches, in order, each with values in its own segment plan's blocks
     * (see {@link #segments()} and {@link #blockOf}).
     */
    public List<Launch> launches() {
        return launches;
    }

    /** {@return true when there is nothing to copy: the destination request has no block} */
    public boolean isEmpty() {
        return launches.isEmpty();
    }

    /** {@return the number of block checksums returned: the destination request's blocks} */
    public int numBlocks() {
        return destinationRequest.numBlocks();
    }

    /**
     * {@return the destination restricted to the copied slices: the group whose block checksums over the destination
     * request the copy returns} Its layers are the destination's, each cut to the runs of heads that are copied. For a
     * segmented destination the first segment plan's (each segment plan has its own).
     */
    public KvCacheGroup copiedDestination() {
        KvCacheGroup g = copiedDestination;
        if (g == null) {
            g = isSegmented() ? (segmentPlans.isEmpty() ? destination : segmentPlans.get(0).copiedDestination())
                    : restrict(destination, pairs);
            copiedDestination = g;
        }
        return g;
    }

    /**
     * {@return the source restricted to the copied slices} With the source's table and the destination's blocks
     * ({@code RequestBlocks.of(sourceTable, N, firstBlock, B)}) its block checksums are the producer's record of the
     * copied head range: what the copy's values must equal when source and copy are intact.
     */
    public KvCacheGroup copiedSource() {
        KvCacheGroup g = copiedSource;
        if (g == null) {
            g = isSegmented() && segmentPlans.isEmpty() ? source : restrict(source, pairs);
            copiedSource = g;
        }
        return g;
    }

    /**
     * {@return the source's request in the destination's blocks: the source's table from {@code S}, {@code N} tokens,
     * the destination's first block and block size} With {@link #copiedSource()}, the producer's record to compare
     * the copy's values with.
     */
    public RequestBlocks sourceInDestinationBlocks() {
        return new RequestBlocks(sourceRequest.pageTable(), sourceRequest.numTokens(), destinationRequest.firstBlock(),
                destinationRequest.blockSize());
    }

    /**
     * {@return whether the source and destination memory overlap: some byte the copy reads from a source cell is a byte
     * it writes to a destination cell (a copy only a staging backend may run)} Exact to the byte over the positions
     * copied (a partial last page counts its used slots only): cells that merely lie within each other's page spans,
     * as one TP rank's heads copied onto other heads of the same token-major pages, do not overlap, and such a copy
     * is a plain one. Conservative (true without a shared byte found) only where the cells could not be compared
     * within {@code SharedBytes.BUDGET} (2<sup>22</sup>) comparisons; never false where a byte is shared.
     */
    public boolean overlaps() {
        return overlapping;
    }

    /**
     * Why source and destination memory overlap, or null when they do not: two cells (source and destination layer,
     * head, K or V, page) that share a byte, or past the budget two heads not shown apart. Package-private for tests.
     */
    String overlapMessage() {
        String why = overlap;
        if (why == null && overlapping) {
            why = overlapWhy.get();
            overlap = why;
        }
        return why;
    }

    /**
     * {@return whether the copy must be staged: source and destination memory overlap and per-page staging orders
     * it} Then a backend runs each <em>staging unit</em> as: read every source cell of the unit (adding the checksum
     * terms as usual, values from the source and weights from the destination), then write every destination cell of
     * the unit. A unit is, within one launch, the pairs of one layer (K and V together) and one destination table entry
     * {@code i}: positions {@code [S + i*Pd, min(S + (i+1)*Pd, N))}, i.e. the (layer, destination page) order the
     * launches already follow; no unit's source cells share bytes with another unit's destination cells, so the units
     * may run in any order and in parallel, and a backend may stage several units (all layers of one destination page)
     * together. {@link #check} refuses an overlapping copy that is not staged, and one whose
     * {@link #stagingUnitBytes()} exceeds the backend's {@link BackendLimits#maxStagedUnitBytes()}.
     */
    public boolean staged() {
        return overlapping && stagingConflict == null;
    }

    /**
     * {@return the largest staging unit's bytes: one layer's copied cells of a full destination page
     * ({@code min(Pd, N-S)} positions), each cell's K and V bytes counted as whole 8-byte pieces ({@link Pair#pieces()},
     * as backends stage them); 0 when source and destination memory do not overlap}
     */
    public long stagingUnitBytes() {
        return overlapping ? stagingUnitBytes : 0;
    }

    /** {@return whether the destination is segmented: several groups, one plan per segment share ({@link #segments()})} */
    public boolean isSegmented() {
        return destinationSegments != null;
    }

    /** {@return the segmented destination, or null when the destination is one group} */
    public KvSegments destinationSegments() {
        return destinationSegments;
    }

    /**
     * {@return the single-group plans this plan runs: {@code List.of(this)} for one destination group, else one per
     * segment share in position order (empty when no block is requested)} Segment plan {@code i}'s value {@code k}
     * belongs to this plan's block {@link #blockOf blockOf(i, k)}; its launches are among {@link #launches()}.
     */
    public List<CopyPlan> segments() {
        return segmentPlans;
    }

    /**
     * {@return the index, among this plan's values, of the block that holds segment plan {@code segment}'s value
     * {@code value}} Segment blocks nest in this plan's blocks: several may add into one.
     *
     * @param segment an index into {@link #segments()}
     * @param value an index into that plan's values
     */
    public int blockOf(int segment, int value) {
        return (int) ((segmentFirst[segment] + value) * segmentBlock[segment] / destinationRequest.blockSize()
                - destinationRequest.firstBlock());
    }

    /**
     * Adds segment plan {@code segment}'s values into this plan's.
     *
     * @param segment an index into {@link #segments()}
     * @param values that plan's values
     * @param into this plan's values, {@link #numBlocks()} long
     */
    public void addSegment(int segment, long[] values, long[] into) {
        for (int k = 0; k < values.length; k++) {
            into[blockOf(segment, k)] += values[k];
        }
    }

    @Override
    public String toString() {
        return "CopyPlan[" + pairs.size() + " slices, " + numBlocks() + " blocks of " + destinationRequest.blockSize()
                + ", tokens " + destinationRequest.startToken() + ".." + destinationRequest.numTokens() + ", Ps "
                + source.pageSize() + ", Pd " + destination.pageSize() + ", " + spec.mode().wireName() + "]";
    }

    private static SlicePlan side(String name, KvCacheGroup group, RequestBlocks request, ChecksumSpec spec) {
        try {
            return SlicePlan.of(group, request, spec);
        } catch (InvalidLayoutException e) {
            throw new InvalidLayoutException("copy: " + name + ": " + e.getMessage());
        }
    }

    private static void requireDistinctPages(int[] table) {
        if (table.length < 2) {
            return;
        }
        Map<Integer, Integer> seen = new HashMap<>();
        for (int i = 0; i < table.length; i++) {
            Integer before = seen.putIfAbsent(table[i], i);
            if (before != null) {
                throw new InvalidLayoutException("copy: destination pageTable[" + before + "] and pageTable[" + i
                        + "] are both page " + table[i] + ": two positions would be written to one slot");
            }
        }
    }

    private static long key(int layer, int head) {
        return ((long) layer << 32) | head;
    }

    private static String geometry(Slice s) {
        return s.v() == null ? s.k().bytes() + " bytes (K only)" : "K " + s.k().bytes() + " + V " + s.v().bytes() + " bytes";
    }

    private static String heads(KvCacheGroup g) {
        List<String> out = new ArrayList<>();
        for (CacheLayer l : g.layers()) {
            out.add("layer " + l.layer() + " heads " + l.firstHead() + ".." + (l.firstHead() + l.numHeads() - 1));
            if (out.size() == 4 && g.layers().size() > 4) {
                out.add("...");
                break;
            }
        }
        return String.join(", ", out);
    }

    private static Residency residency(List<Pair> pairs, boolean source) {
        boolean host = false;
        boolean pageable = false;
        boolean device = false;
        for (Pair p : pairs) {
            Slice s = source ? p.source() : p.destination();
            for (KvMemory m : s.v() == null ? List.of(s.k().memory()) : List.of(s.k().memory(), s.v().memory())) {
                host |= m instanceof KvMemory.Host;
                pageable |= m instanceof KvMemory.Host h && !h.pinned();
                device |= m instanceof KvMemory.Device;
            }
        }
        // A side is pinned only when all of its host memory is (a backend copying pinned memory only refuses the rest).
        return host && device ? Residency.MIXED : device ? Residency.DEVICE : pageable ? Residency.HOST : Residency.PINNED_HOST;
    }

    /** A group cut to the copied (layer, head) slices: per layer, one layer per run of copied heads. */
    private static KvCacheGroup restrict(KvCacheGroup destination, List<Pair> pairs) {
        Set<Long> copied = new HashSet<>();
        for (Pair p : pairs) {
            copied.add(key(p.layer(), p.head()));
        }
        List<CacheLayer> layers = new ArrayList<>();
        for (CacheLayer l : destination.layers()) {
            int h = 0;
            while (h < l.numHeads()) {
                if (!copied.contains(key(l.layer(), l.firstHead() + h))) {
                    h++;
                    continue;
                }
                int from = h;
                while (h < l.numHeads() && copied.contains(key(l.layer(), l.firstHead() + h))) {
                    h++;
                }
                layers.add(new CacheLayer(l.layer(), l.firstHead() + from, h - from, shift(l.k(), from),
                        l.v() == null ? null : shift(l.v(), from)));
            }
        }
        return new KvCacheGroup(layers, destination.pageSize(), destination.numPages());
    }

    private static KvRegion shift(KvRegion r, int heads) {
        return new KvRegion(r.memory(), r.offset() + heads * r.headStride(), r.pageStride(), r.tokenStride(),
                r.headStride(), r.cellBytes());
    }

    // ---- overlap: the bytes read and the bytes written, per address space, at page granularity per slice ----

    /**
     * Two cells, one read and one written, that share a byte (or, past {@link SharedBytes#BUDGET} cell comparisons,
     * two heads not shown apart), or null when no byte read is written. Cheap tests first: the memories' address
     * ranges, then runs of page spans ({@link PageSpans}: the same answer as one span per slice, part and page, at the
     * cost of a few runs and two page lists); only where spans meet are the cells themselves compared
     * ({@link SharedBytes}: page spans over-approximate where other heads' cells lie between one head's, as in
     * token-major layouts).
     */
    private static SharedBytes.Witness overlapping(List<Pair> pairs, KvCacheGroup source, SlicePlan src,
            KvCacheGroup destination, SlicePlan dst, Map<Object, long[]> sourceRanges, long tokens) {
        if (!memoriesMeet(pairs, sourceRanges)) {
            return null;
        }
        PageSpans.Pages srcPages = new PageSpans.Pages(src.pageTable());
        PageSpans.Pages dstPages = new PageSpans.Pages(dst.pageTable());
        if (!PageSpans.anyMeet(PageSpans.runs(pairs, true, src.pageSize()), srcPages,
                PageSpans.runs(pairs, false, dst.pageSize()), dstPages)) {
            return null;
        }
        // the destination table lists no page twice (requireDistinctPages)
        return SharedBytes.find(pairs, source, srcPages, destination, dstPages, true, tokens, SharedBytes.BUDGET);
    }

    /**
     * Whether some memory's address range read by the source cells meets its range written by the destination cells
     * ({@code sourceRanges}: the source's, when already made; else made here): the cheap test before any span.
     */
    private static boolean memoriesMeet(List<Pair> pairs, Map<Object, long[]> sourceRanges) {
        Map<Object, long[]> srcRange = sourceRanges;
        if (srcRange == null) {
            srcRange = new IdentityHashMap<>();
            memoryRanges(pairs, true, srcRange);
        }
        Map<Object, long[]> dstRange = new IdentityHashMap<>();
        memoryRanges(pairs, false, dstRange);
        for (Map.Entry<Object, long[]> e : dstRange.entrySet()) {
            long[] s = srcRange.get(e.getKey());
            if (s != null && intersects(s, e.getValue())) {
                return true;
            }
        }
        return false;
    }

    private static boolean intersects(long[] a, long[] b) {
        return a[0] < b[1] && b[0] < a[1];
    }

    /** The address space of a memory: the native host space, one heap array, or the device space. */
    private static final Object NATIVE = new Object();
    private static final Object DEVICE = new Object();

    // instanceof rather than a pattern switch: these run per region of every compiled copy (2048 per request for
    // Jlama's one-position pages), where the switch's type-switch bootstrap showed in profiles
    static Object space(KvMemory m) {
        if (m instanceof KvMemory.Host h) {
            MemorySegment s = h.segment();
            return s.isNative() ? NATIVE : s.heapBase().orElse(NATIVE);
        }
        return DEVICE;
    }

    static long address(KvMemory m) {
        return m instanceof KvMemory.Host h ? h.segment().address() : ((KvMemory.Device) m).address();
    }

    private static void memoryRanges(Slice s, Map<Object, long[]> into) {
        range(s.k().memory(), into);
        if (s.v() != null) {
            range(s.v().memory(), into);
        }
    }

    /** The ranges of the slices' memories; consecutive slices of one memory (a layer's heads) counted once. */
    private static void memoryRanges(List<Pair> pairs, boolean source, Map<Object, long[]> into) {
        KvMemory lastK = null;
        KvMemory lastV = null;
        for (Pair p : pairs) {
            Slice s = source ? p.source() : p.destination();
            if (s.k().memory() != lastK) {
                lastK = s.k().memory();
                range(lastK, into);
            }
            if (s.v() != null && s.v().memory() != lastV) {
                lastV = s.v().memory();
                range(lastV, into);
            }
        }
    }

    private static void range(KvMemory m, Map<Object, long[]> into) {
        long from = address(m);
        long to = from + m.byteSize();
        Object space = space(m);
        long[] r = into.get(space);
        if (r == null) {
            into.put(space, new long[] {from, to});
        } else {
            r[0] = Math.min(r[0], from);
            r[1] = Math.max(r[1], to);
        }
    }
}
