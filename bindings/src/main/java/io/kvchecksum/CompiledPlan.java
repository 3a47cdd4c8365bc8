package io.kvchecksum;

import io.kvchecksum.SlicePlan.Residency;
import io.kvchecksum.spi.BackendLimits;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The one compiled form of every checksum: a source ({@link KvCacheGroup} or {@link KvSegments}), one or more requests
 * and a {@link ChecksumSpec}, validated once and turned into a short list of homogeneous {@link Launch launches}. Each
 * launch is a {@link SlicePlan} whose slices are all of one {@link CellKind} and one memory kind, with where its values
 * go: which request, which of that request's rows (for slice sums) and which of its blocks. A backend runs launches and
 * dispatches on their kinds; it never splits, validates or places anything itself ({@link #gather}).
 *
 * <p>What the compiler decides, once for every backend:
 * <ul>
 *   <li>every refusal ({@link #compile(KvSource, List, ChecksumSpec)} for the request and the spec; {@link #check} for a backend's declared
 *       {@link BackendLimits}), before any kernel runs;</li>
 *   <li>cells that are not whole pieces: refused without padding, else a {@link CellKind#BYTE_CELLS} launch of their
 *       layers beside the {@link CellKind#WHOLE_PIECES} launch of the others;</li>
 *   <li>a segmented cache: one launch per segment's share (two where a segment starts inside a block, whose head is
 *       computed in smaller blocks that nest in the request's; see {@link KvSegments}), placed into the request's blocks;
 *       padding and mixed mode apply to segments exactly as to a group;</li>
 *   <li>several requests of one engine step: one plan, the launches of all of them, the results concatenated in
 *       request order ({@link #offset}); each request may read its own source of the same geometry (several segmented
 *       sessions of one step: {@link #compile(List, List, ChecksumSpec)}), so one backend call covers every request and
 *       every segment of the step (the CPU backend runs all launches as one pass over its threads);</li>
 *   <li>requests without blocks: no launch at all.</li>
 * </ul>
 *
 * <p>Immutable and thread-safe; reusable for as long as the memory and page tables it was compiled from stay the same
 * (the plan holds its own copies of the page tables).
 */
public final class CompiledPlan {

    /** What a run produces per request. */
    public enum Output {
        /** One fused block checksum per block: {@link #numBlocks(int)} values. */
        BLOCK_CHECKSUMS,
        /** One weighted sum per (layer, head) slice and block, slice-major: {@link #numRows()} x {@link #numBlocks(int)}. */
        SLICE_SUMS
    }

    /** How a launch's cells are read. */
    public enum CellKind {
        /** K and V are whole 8-byte pieces: the backends' fast loops. */
        WHOLE_PIECES,
        /** A piece straddles K's end and V's start, or the last piece is zero-padded: the byte-assembling path. */
        BYTE_CELLS
    }

    /**
     * One homogeneous launch and where its values go.
     *
     * @param request the request it computes part of (index into {@link #requests()})
     * @param slices the slices, blocks and pages it reads: all of one cell kind, never empty, at least one block
     * @param cellKind how its cells are read
     * @param rows for each of its slices, the request's slice-sum row it adds into (the source's geometry order)
     * @param firstSmall its block {@code k} is block {@code firstSmall + k} of {@code small} tokens
     * @param small tokens per block of this launch: the request's block size, or (a segment starting inside a block)
     *     a divisor of it whose blocks nest in the request's
     */
    public record Launch(int request, SlicePlan slices, CellKind cellKind, int[] rows, long firstSmall, int small) {
        /** {@return where the launch's memory lives} */
        public Residency memory() {
            return slices.residency();
        }

        /** {@return the launch's number of blocks} */
        public int numBlocks() {
            return slices.numBlocks();
        }
    }

    /**
     * Launches that one kernel launch can run: the same slices (a step's requests over one group share them), cell
     * kind, memory, block size and page size; they differ only in their request's blocks and page table. A backend with
     * a cost per launch runs a batch as one ({@link #startBatches}); its values are its launches' values concatenated
     * in order, each in its own layout ({@link Launch#numBlocks} block checksums, or its slices x {@code numBlocks}
     * slice sums, slice-major).
     *
     * @param launches the launches, at least one, in plan order
     * @param indices each launch's index in {@link #launches()} of the plan
     */
    public record Batch(List<Launch> launches, int[] indices) {
        /** Validates and keeps immutable copies. */
        public Batch {
            launches = List.copyOf(launches);
            indices = indices.clone();
            if (launches.isEmpty() || indices.length != launches.size()) {
                throw new IllegalArgumentException("a batch needs at least one launch, and an index for each");
            }
        }

        /** {@return each launch's index among the plan's launches (a copy)} */
        @Override
        public int[] indices() {
            return indices.clone();
        }

        /** {@return the first launch: its slices, kinds and sizes are every launch's} */
        public Launch first() {
            return launches.get(0);
        }

        /** {@return the blocks of all launches} */
        public int numBlocks() {
            int n = 0;
            for (Launch l : launches) {
                n += l.numBlocks();
            }
            return n;
        }

        /**
         * {@return how many values the batch produces}
         *
         * @param output the kind of values
         */
        public int numValues(Output output) {
            return output == Output.BLOCK_CHECKSUMS ? numBlocks() : first().slices().numSlices() * numBlocks();
        }

        static boolean joinable(Launch a, Launch b) {
            SlicePlan x = a.slices();
            SlicePlan y = b.slices();
            return x.slices() == y.slices() && a.cellKind() == b.cellKind() && x.residency() == y.residency()
                    && x.request().blockSize() == y.request().blockSize() && x.pageSize() == y.pageSize()
                    && x.mode() == y.mode();
        }
    }

    private final KvSource source;
    /** Per request, the source it reads (all {@link #source} unless compiled from one source per request). */
    private final List<KvSource> sources;
    private final ChecksumSpec spec;
    private final List<RequestBlocks> requests;
    private final List<Launch> launches;
    private final List<Batch> batches;
    private final int numRows;
    /** Per request and one past the last: where its block checksums start in a run's concatenated values. */
    private final int[] blockOffsets;
    private final int[] layerNumbers;
    private final int[] headNumbers;
    /** One launch that is its request's whole result, in place: its values need no placing. */
    private final boolean passThrough;

    private CompiledPlan(List<KvSource> sources, ChecksumSpec spec, List<RequestBlocks> requests, List<Launch> launches) {
        this.source = sources.get(0);
        this.sources = sources;
        this.spec = spec;
        this.requests = requests;
        this.launches = launches;
        KvCacheGroup g = source.geometry();
        this.numRows = g.numSlices();
        this.layerNumbers = new int[numRows];
        this.headNumbers = new int[numRows];
        int r = 0;
        for (CacheLayer l : g.layers()) {
            for (int h = 0; h < l.numHeads(); h++, r++) {
                layerNumbers[r] = l.layer();
                headNumbers[r] = l.firstHead() + h;
            }
        }
        blockOffsets = new int[requests.size() + 1];
        long total = 0;
        for (int i = 0; i < requests.size(); i++) {
            total += requests.get(i).numBlocks();
            if (total * Math.max(1, numRows) > Integer.MAX_VALUE - 16) {
                throw new InvalidLayoutException(requests.size() + " requests of " + numRows + " slices: " + total
                        + " blocks of slice sums do not fit one array");
            }
            blockOffsets[i + 1] = (int) total;
        }
        passThrough = launches.size() == 1 && requests.size() == 1 && identity(launches.get(0));
        // Each launch joins the first batch it is joinable with (a request of a group with whole-piece and byte-cell
        // layers has one launch of each kind: a step of them is two batches), else starts one.
        // Candidates are looked up by the identity of the slices (a group's launches share one list), so a step of many
        // requests over many segments stays linear.
        List<List<Integer>> joined = new ArrayList<>();
        Map<List<SlicePlan.Slice>, List<List<Integer>>> bySlices = new IdentityHashMap<>();
        for (int i = 0; i < launches.size(); i++) {
            List<List<Integer>> candidates = bySlices.computeIfAbsent(launches.get(i).slices().slices(), k -> new ArrayList<>());
            List<Integer> home = null;
            for (List<Integer> b : candidates) {
                if (Batch.joinable(launches.get(b.get(0)), launches.get(i))) {
                    home = b;
                    break;
                }
            }
            if (home == null) {
                home = new ArrayList<>();
                joined.add(home);
                candidates.add(home);
            }
            home.add(i);
        }
        List<Batch> out = new ArrayList<>(joined.size());
        for (List<Integer> b : joined) {
            out.add(new Batch(b.stream().map(launches::get).toList(), b.stream().mapToInt(Integer::intValue).toArray()));
        }
        batches = List.copyOf(out);
    }

    /**
     * Validates the requests against the source and the spec, and compiles them. Nothing is read.
     *
     * @param source the cache: a group (each request's page table addresses its pages) or a segmented cache (positions
     *     are the addresses: each request's page table must be empty)
     * @param requests the requests of one step, at least one, none null (results come back in this order)
     * @param spec the mode and padding
     * @return the compiled plan
     * @throws InvalidLayoutException naming the problem: a null or empty argument, a page table too short or an id out
     *     of range, tokens past a segmented cache's end, a segment whose pages do not start at a computed position,
     *     cells that are not whole pieces without padding, results that do not fit an array
     */
    public static CompiledPlan compile(KvSource source, List<RequestBlocks> requests, ChecksumSpec spec) {
        if (source == null || requests == null || spec == null) {
            throw new InvalidLayoutException("source, requests and spec must not be null");
        }
        return compileEach(java.util.Collections.nCopies(requests.size(), source), requests, spec);
    }

    /**
     * Validates and compiles the requests of one engine step, each over its own source (several sessions of an engine
     * that keeps each session in its own allocations, as Jlama does; or requests over several groups of one
     * geometry): one plan whose launches cover every request and every segment, run by one backend call. The sources
     * must have the same geometry (layer numbers, heads and cell bytes, in order), so the requests' slice sums have the
     * same rows. Nothing is read.
     *
     * @param sources for each request, in order, the cache it reads: a group or a segmented cache; the same object may
     *     appear for several requests (their launches then batch as those of {@link #compile(KvSource, List,
     *     ChecksumSpec)} do)
     * @param requests the requests, as many as sources, at least one, none null (results come back in this order)
     * @param spec the mode and padding
     * @return the compiled plan; {@link #source()} is the first request's source, {@link #source(int)} each one's
     * @throws InvalidLayoutException as {@link #compile(KvSource, List, ChecksumSpec)} says, and when the lists differ
     *     in length, a source is null, or a source's geometry differs from the first's
     */
    public static CompiledPlan compile(List<? extends KvSource> sources, List<RequestBlocks> requests, ChecksumSpec spec) {
        if (sources == null || requests == null || spec == null) {
            throw new InvalidLayoutException("sources, requests and spec must not be null");
        }
        if (sources.size() != requests.size()) {
            throw new InvalidLayoutException(sources.size() + " sources for " + requests.size() + " requests: give each"
                    + " request its source");
        }
        for (int r = 0; r < sources.size(); r++) {
            if (sources.get(r) == null) {
                throw new InvalidLayoutException("the source of request " + r + " is null");
            }
            if (r > 0 && sources.get(r) != sources.get(0)) {
                KvSegments.requireSameGeometry(sources.get(0).geometry(), sources.get(r).geometry(),
                        "the source of request " + r, "the first request's");
            }
        }
        return compileEach(List.copyOf(sources), requests, spec);
    }

    private static CompiledPlan compileEach(List<? extends KvSource> sources, List<RequestBlocks> requests,
            ChecksumSpec spec) {
        if (requests.isEmpty()) {
            throw new InvalidLayoutException("a plan needs at least one request");
        }
        for (int r = 0; r < requests.size(); r++) {
            if (requests.get(r) == null) {
                throw new InvalidLayoutException("request " + r + " is null");
            }
        }
        List<RequestBlocks> reqs = List.copyOf(requests);
        List<Launch> launches = new ArrayList<>();
        // A group's slices and their split by cell kind depend on the group alone: resolved for its first request, then
        // shared by the others, whose page tables alone are validated (and whose launches batch: the same slices).
        Map<KvCacheGroup, List<SlicePlan.Split>> groupParts = new IdentityHashMap<>();
        for (int r = 0; r < reqs.size(); r++) {
            RequestBlocks q = reqs.get(r);
            switch (sources.get(r)) {
                case KvCacheGroup g -> {
                    List<SlicePlan.Split> parts = groupParts.get(g);
                    if (parts == null) {
                        parts = SlicePlan.of(g, q, spec).byCellKind();
                        groupParts.put(g, parts);
                        addLaunches(launches, r, parts, q.firstBlock(), q.blockSize());
                    } else {
                        List<SlicePlan.Split> mine = new ArrayList<>(parts.size());
                        for (SlicePlan.Split part : parts) {
                            mine.add(new SlicePlan.Split(part.plan().withRequest(q), part.byteCells(), part.rows()));
                        }
                        addLaunches(launches, r, mine, q.firstBlock(), q.blockSize());
                    }
                }
                case KvSegments s -> {
                    if (q.tableLength() != 0) {
                        throw new InvalidLayoutException("request " + r + " has a page table of " + q.tableLength()
                                + " entries, but a segmented cache has none (positions are the addresses)");
                    }
                    for (KvSegments.Share share : s.shares(q, spec)) {
                        addLaunches(launches, r, share.plan().byCellKind(), share.firstSmall(), share.small());
                    }
                }
            }
        }
        return new CompiledPlan(List.copyOf(sources), spec, reqs, List.copyOf(launches));
    }

    /**
     * {@return the plan of one request over one group, compiled from its validated {@link SlicePlan}}
     *
     * @param plan the validated slice plan, not null
     */
    public static CompiledPlan of(SlicePlan plan) {
        List<Launch> launches = new ArrayList<>();
        addLaunches(launches, 0, plan.byCellKind(), plan.request().firstBlock(), plan.request().blockSize());
        return new CompiledPlan(List.of(plan.group()), new ChecksumSpec(plan.mode(), plan.padding()),
                List.of(plan.request()), List.copyOf(launches));
    }

    /** A plan's launches: its layers split by cell kind (a layer's slices share their regions, so one kind). */
    private static void addLaunches(List<Launch> into, int request, List<SlicePlan.Split> parts, long firstSmall, int small) {
        if (parts.get(0).plan().numBlocks() == 0) {
            return;
        }
        for (SlicePlan.Split part : parts) {
            into.add(new Launch(request, part.plan(), part.byteCells() ? CellKind.BYTE_CELLS : CellKind.WHOLE_PIECES,
                    part.rows(), firstSmall, small));
        }
    }

    /**
     * Refuses the plan, before anything runs, for a limit the backend declares: a launch's memory of a kind it does not
     * read, or more slices of byte cells in one launch than it takes.
     *
     * @param backend the backend's name, for the message
     * @param limits what it reads
     * @param onStream whether the plan is to run on an engine's stream or queue
     * @throws InvalidLayoutException naming the limit and what is beyond it
     */
    public void check(String backend, BackendLimits limits, boolean onStream) {
        Set<Residency> allowed = limits.allowed(onStream);
        for (Launch l : launches) {
            if (!allowed.contains(l.memory())) {
                throw l.slices().wrongMemory(rule(backend, allowed, onStream), allowed, limits.hint());
            }
            if (l.cellKind() == CellKind.BYTE_CELLS && l.slices().numSlices() > limits.maxByteCellSlices()) {
                throw new InvalidLayoutException("backend '" + backend + "' takes at most " + limits.maxByteCellSlices()
                        + " slices of byte cells in one launch, but request " + l.request() + " has "
                        + l.slices().numSlices() + " (layers " + l.slices().group().layers().stream()
                        .map(x -> Integer.toString(x.layer())).distinct().limit(8).toList() + ")");
            }
        }
    }

    private static String rule(String backend, Set<Residency> allowed, boolean onStream) {
        String where = onStream ? " on an engine's stream" : "";
        if (allowed.equals(Set.of(Residency.HOST))) {
            return "backend '" + backend + "' reads host memory only" + where;
        }
        if (allowed.equals(Set.of(Residency.DEVICE))) {
            return "backend '" + backend + "' takes device memory only" + where;
        }
        return "backend '" + backend + "' reads host memory only or device memory only, not both among the layers of one launch" + where;
    }

    /**
     * {@return the source the plan reads: the first request's, every request's unless the plan was compiled with one
     * source per request ({@link #compile(List, List, ChecksumSpec)})}
     */
    public KvSource source() {
        return source;
    }

    /**
     * {@return the source request {@code r} reads}
     *
     * @param r a request index
     */
    public KvSource source(int r) {
        return sources.get(r);
    }

    /** {@return the mode and padding} */
    public ChecksumSpec spec() {
        return spec;
    }

    /** {@return the requests, in the order their results are concatenated} */
    public List<RequestBlocks> requests() {
        return requests;
    }

    /** {@return the launches, all of them with at least one block} */
    public List<Launch> launches() {
        return launches;
    }

    /**
     * {@return the launches joined into batches (in the order of their first launch): a step's requests over one group
     * make one batch per cell kind}
     */
    public List<Batch> batches() {
        return batches;
    }

    /**
     * {@return the number of blocks of request {@code r}}
     *
     * @param r a request index
     */
    public int numBlocks(int r) {
        return blockOffsets[r + 1] - blockOffsets[r];
    }

    /** {@return the (layer, head) slices of the source: the rows of each request's slice sums} */
    public int numRows() {
        return numRows;
    }

    /** {@return true when no request has a block: nothing to run} */
    public boolean isEmpty() {
        return launches.isEmpty();
    }

    /**
     * {@return where request {@code r}'s values start in a run's concatenated values}
     *
     * @param output the kind of values
     * @param r a request index, or the number of requests for the total length
     */
    public int offset(Output output, int r) {
        return output == Output.BLOCK_CHECKSUMS ? blockOffsets[r] : blockOffsets[r] * numRows;
    }

    /**
     * {@return request {@code r}'s block checksums out of a run's concatenated values}
     *
     * @param all the values of a {@link Output#BLOCK_CHECKSUMS} run
     * @param r a request index
     */
    public long[] blockChecksums(long[] all, int r) {
        return requests.size() == 1 ? all : Arrays.copyOfRange(all, blockOffsets[r], blockOffsets[r + 1]);
    }

    /**
     * {@return request {@code r}'s slice sums out of a run's concatenated values}
     *
     * @param all the values of a {@link Output#SLICE_SUMS} run
     * @param r a request index
     */
    public SliceSums sliceSums(long[] all, int r) {
        long[] mine = requests.size() == 1 ? all
                : Arrays.copyOfRange(all, offset(Output.SLICE_SUMS, r), offset(Output.SLICE_SUMS, r + 1));
        return new SliceSums(layerNumbers, headNumbers, requests.get(r).firstBlock(), numBlocks(r), mine);
    }

    /**
     * Places launch values into the per-request results: what a backend that computes launch by launch returns.
     *
     * @param output the kind of values
     * @param perLaunch for each launch, in order, its values ({@code numBlocks} block checksums, or its slices x
     *     {@code numBlocks} slice sums)
     * @return the concatenated per-request values, {@link #offset offset(output, numRequests)} of them
     */
    public long[] gather(Output output, long[][] perLaunch) {
        if (passThrough) {
            return perLaunch[0];
        }
        long[] out = new long[offset(output, requests.size())];
        for (int i = 0; i < launches.size(); i++) {
            place(output, launches.get(i), perLaunch[i], out);
        }
        return out;
    }

    /**
     * Starts every {@link #batches() batch} through {@code start} (one kernel launch each, on a backend that joins a
     * batch's launches) and gathers their handles; if starting one fails, those already started are closed before the
     * failure goes on.
     *
     * @param output the kind of values
     * @param start starts one batch and returns its pending values ({@link Batch#numValues} of them, in the batch's
     *     layout)
     * @return the pending per-request values
     */
    public PendingChecksums startBatches(Output output, Function<Batch, PendingChecksums> start) {
        List<PendingChecksums> started = new ArrayList<>(batches.size());
        try {
            for (Batch b : batches) {
                started.add(start.apply(b));
            }
        } catch (RuntimeException | Error e) {
            closeAll(started, e);
            throw e;
        }
        return passThrough ? started.get(0) : new Gathered(this, output, started);
    }

    /** Each launch's values out of its batch's, for {@link #gather(Output, long[][])}. */
    private long[][] perLaunch(Output output, long[][] perBatch) {
        long[][] each = new long[launches.size()][];
        for (int b = 0; b < perBatch.length; b++) {
            Batch batch = batches.get(b);
            int at = 0;
            for (int k = 0; k < batch.launches().size(); k++) {
                Launch l = batch.launches().get(k);
                int n = output == Output.BLOCK_CHECKSUMS ? l.numBlocks() : l.slices().numSlices() * l.numBlocks();
                each[batch.indices[k]] = batch.launches().size() == 1 ? perBatch[b] : Arrays.copyOfRange(perBatch[b], at, at + n);
                at += n;
            }
        }
        return each;
    }

    private boolean identity(Launch l) {
        RequestBlocks q = requests.get(l.request());
        if (l.small() != q.blockSize() || l.firstSmall() != q.firstBlock() || l.rows().length != numRows) {
            return false;
        }
        for (int i = 0; i < l.rows().length; i++) {
            if (l.rows()[i] != i) {
                return false;
            }
        }
        return true;
    }

    private void place(Output output, Launch l, long[] values, long[] out) {
        RequestBlocks q = requests.get(l.request());
        int nb = l.numBlocks();
        int base = offset(output, l.request());
        if (output == Output.BLOCK_CHECKSUMS) {
            for (int k = 0; k < nb; k++) {
                out[base + column(l, q, k)] += values[k];
            }
            return;
        }
        int cols = numBlocks(l.request());
        for (int i = 0; i < l.rows().length; i++) {
            int row = base + l.rows()[i] * cols;
            for (int k = 0; k < nb; k++) {
                out[row + column(l, q, k)] += values[i * nb + k];
            }
        }
    }

    /** The request block (relative to its first block) holding block {@code k} of launch {@code l}. */
    private static int column(Launch l, RequestBlocks q, int k) {
        return (int) ((l.firstSmall() + k) * l.small() / q.blockSize() - q.firstBlock());
    }

    private static void closeAll(List<PendingChecksums> pending, Throwable failure) {
        for (PendingChecksums p : pending) {
            try {
                p.close();
            } catch (RuntimeException e) {
                failure.addSuppressed(e);
            }
        }
    }

    /** Batch handles placed into per-request values when read. */
    private static final class Gathered implements PendingChecksums {
        private final CompiledPlan plan;
        private final Output output;
        private final List<PendingChecksums> pending;
        private long[] values;

        Gathered(CompiledPlan plan, Output output, List<PendingChecksums> pending) {
            this.plan = plan;
            this.output = output;
            this.pending = pending;
        }

        @Override
        public long[] get() {
            if (values == null) {
                long[][] each = new long[pending.size()][];
                for (int i = 0; i < each.length; i++) {
                    each[i] = pending.get(i).get();
                }
                values = plan.gather(output, plan.perLaunch(output, each));
            }
            return values.clone();
        }

        @Override
        public boolean isDone() {
            for (PendingChecksums p : pending) {
                if (!p.isDone()) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public void close() {
            RuntimeException f = new RuntimeException("closing the launches of a compiled plan");
            closeAll(pending, f);
            if (f.getSuppressed().length > 0) {
                throw f;
            }
        }
    }

    @Override
    public String toString() {
        return "CompiledPlan[" + requests.size() + " request(s), " + launches.size() + " launch(es) in " + batches.size()
                + " batch(es), "
                + spec.mode().wireName() + ", padding " + spec.padding() + "]";
    }
}
