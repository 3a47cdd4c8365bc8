package io.kvchecksum;

import io.kvchecksum.internal.ProbeWindows;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * The head/tail probe of a request's pages: a check that every page a request touched was completely written
 * (seeds/004: a completion signal that fired before the write landed), reading a small fraction of the
 * bytes of the full checksum.
 *
 * <p><b>The definition.</b> Page {@code i} of the plan's request holds request positions
 * {@code [start + i*pageSize, min(start + (i+1)*pageSize, numTokens))}, {@code start = firstBlock*blockSize} (the page
 * table's order). Its <i>head window</i> of a (layer, global head {@code g}, kind {@code K|V}) is the first
 * {@code n = min(probeBytes, C)} bytes of that kind's cell (of {@code C} bytes) of the page's first token; its
 * <i>tail window</i> the last {@code n} bytes of the cell of the page's last token. A window's value is the state-row
 * digest of its bytes in the standard mode ({@code D = sum_p x_p*(2p+1)}, {@link KvChecksum#stateDigests}), and
 * <pre>{@code head[i] = sum over (layer, g, kind) of w*D(head window),  w = 2*(2*(layer*2^16 + g) + kind) + 1  (kind K=0, V=1)}</pre>
 * modulo 2^64 (tail alike). The weights are odd and distinct, so the value does not depend on the order of layers
 * or on the memory layout, and TP ranks' (or PP stages') partial probes over disjoint heads add up.
 * {@code probeBytes} must be a positive multiple of 8; cells are whole pieces, so windows are too.
 *
 * <p>In a token-major page (SGLang {@code [slots, heads, dim]}, vLLM flash) the head windows are the page's first
 * bytes and the tail windows its last written bytes, which is where a transfer still in flight shows first.
 *
 * <p><b>Where it runs.</b> On host memory the windows are read directly, pages in the order of their page ids,
 * 64-byte windows on the Vector API where the JVM has it: on the calling thread, or for requests of 2^14 windows or
 * more in chunks of pages over the common {@code ForkJoinPool} (see {@code docs/bench-cpu.md}, "Page probe cost", for
 * its cost: about that of a plain read of the same windows in the same order, plus a fixed cost per call; scattered
 * 64-byte windows cost the memory system several times their share of a sequential full pass). On device memory every
 * window becomes a {@link StateRow} digested by the backend's {@link KvChecksum#stateDigests} (one-token slices, one
 * plan: one launch on a GPU backend): correct on every backend, not tuned. {@link #submit} enqueues that launch on an engine's stream and
 * returns {@link PendingProbes} without waiting.
 */
public final class PageProbe {
    /** The probe bytes per cell end when an engine does not choose. */
    public static final int DEFAULT_PROBE_BYTES = 64;

    /** Windows (pages x slices) from which the host path spreads pages over the common pool. */
    private static final long PARALLEL_WINDOWS = 1 << 14;
    private static final ValueLayout.OfLong PIECE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private PageProbe() {
    }

    /**
     * One worker's probes of one request, as 64-bit partial sums (add the workers' sums before folding).
     *
     * @param pageSize tokens per page
     * @param probeBytes the bytes probed at each end of each cell
     * @param firstToken the request position of page 0's first token ({@code firstBlock*blockSize})
     * @param numTokens the request's token count
     * @param head per page, in the request's page order
     * @param tail per page
     */
    public record Probes(int pageSize, int probeBytes, long firstToken, long numTokens, long[] head, long[] tail) {
        /**
         * Copies the two arrays, so the record is immutable.
         *
         * @throws IllegalArgumentException when {@code head} and {@code tail} differ in length
         * @throws NullPointerException when {@code head} or {@code tail} is null
         */
        public Probes {
            if (head.length != tail.length) {
                throw new IllegalArgumentException(head.length + " heads and " + tail.length + " tails");
            }
            head = head.clone();
            tail = tail.clone();
        }

        /**
         * The per-page values of several workers' probes of one request, added; the workers must agree on the pages.
         *
         * @param parts the workers' probes, at least one, all with the same page size, probe bytes, first token, token
         *     count and number of pages
         * @return the per-page sums modulo 2^64, with the parts' page size, probe bytes and tokens
         * @throws IllegalArgumentException when {@code parts} is empty or two parts disagree on the pages
         */
        public static Probes sum(List<Probes> parts) {
            if (parts.isEmpty()) {
                throw new IllegalArgumentException("no probes to add");
            }
            Probes a = parts.get(0);
            long[] h = new long[a.head.length];
            long[] t = new long[a.tail.length];
            for (Probes p : parts) {
                if (p.pageSize != a.pageSize || p.probeBytes != a.probeBytes || p.firstToken != a.firstToken
                        || p.numTokens != a.numTokens || p.head.length != h.length) {
                    throw new IllegalArgumentException("workers probed other pages: " + a + " and " + p);
                }
                for (int i = 0; i < h.length; i++) {
                    h[i] += p.head[i];
                    t[i] += p.tail[i];
                }
            }
            return new Probes(a.pageSize, a.probeBytes, a.firstToken, a.numTokens, h, t);
        }

        /** {@return a copy of the head-window values, one per page in the request's page order} */
        @Override
        public long[] head() {
            return head.clone();
        }

        /** {@return a copy of the tail-window values, one per page in the request's page order} */
        @Override
        public long[] tail() {
            return tail.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Probes p && p.pageSize == pageSize && p.probeBytes == probeBytes
                    && p.firstToken == firstToken && p.numTokens == numTokens && Arrays.equals(p.head, head)
                    && Arrays.equals(p.tail, tail);
        }

        @Override
        public int hashCode() {
            return Objects.hash(pageSize, probeBytes, firstToken, numTokens, Arrays.hashCode(head),
                    Arrays.hashCode(tail));
        }

        @Override
        public String toString() {
            return "Probes[pageSize=" + pageSize + ", probeBytes=" + probeBytes + ", firstToken=" + firstToken
                    + ", numTokens=" + numTokens + ", pages=" + head.length + "]";
        }
    }

    /**
     * {@return the window weight {@code w = 2*(2*(layer*2^16 + head) + kind) + 1}: odd, and distinct for distinct
     * (layer, head, kind) with {@code 0 <= head < 2^16}}
     *
     * @param layer the layer number
     * @param head the global head number
     * @param kind 0 for K, 1 for V
     */
    public static long weight(int layer, int head, int kind) {
        return 2 * (2 * ((long) layer * Definition.MAX_KV_HEADS_PER_LAYER + head) + kind) + 1;
    }

    /**
     * The probes of every page of {@code plan}'s request (its mode is ignored: probes are always in the standard
     * mode), read directly on host memory, through {@code backend} on device memory.
     *
     * @param backend the backend that digests the windows when the plan's memory is not all host memory, not null
     * @param plan the request's validated plan; its pages are the ones probed, not null
     * @param probeBytes the bytes probed at each end of each cell (fewer when a cell is shorter), a positive multiple
     *     of 8; {@link #DEFAULT_PROBE_BYTES} when an engine does not choose
     * @return one head and one tail value per page of the plan, in the page table's order, as 64-bit partial sums
     *     over the plan's heads
     * @throws NullPointerException when {@code backend} or {@code plan} is null
     * @throws InvalidLayoutException when {@code probeBytes} is not a positive multiple of 8, or (device memory) the
     *     backend cannot read the plan's memory
     */
    public static Probes compute(KvChecksum backend, SlicePlan plan, int probeBytes) {
        try (PendingProbes p = start(backend, plan, probeBytes, OptionalLong.empty())) {
            return p.get();
        }
    }

    /**
     * Stream-ordered {@link #compute}, for an engine's worker: the same probes, with the device reads enqueued on
     * {@code stream} after the work already on it (the engine's writes of the pages) and no wait for the device. On
     * host memory the windows are read at once, on the calling thread, and the result is completed; on device memory
     * they are digested by one {@link KvChecksum#submitStateDigests} on {@code stream} and folded into the head and
     * tail values when {@link PendingProbes#get()} is called.
     *
     * @param backend the backend that digests the windows when the plan's memory is not all host memory, not null
     * @param plan the request's validated plan, not null; its memory must stay alive and unchanged until the handle
     *     is done
     * @param probeBytes the bytes probed at each end of each cell, a positive multiple of 8
     * @param stream the engine's stream or queue handle, as {@link KvChecksum#submit(CompiledPlan, long)} describes it
     *     (ignored on host memory and by CPU backends)
     * @return the pending probes; call {@code get()} or {@code close()}
     * @throws NullPointerException when {@code backend} or {@code plan} is null
     * @throws InvalidLayoutException when {@code probeBytes} is not a positive multiple of 8, or (device memory) the
     *     backend cannot read the plan's memory on a stream, before anything is enqueued
     * @throws IllegalStateException when the backend refuses the stream (a CUDA stream capturing a graph)
     */
    public static PendingProbes submit(KvChecksum backend, SlicePlan plan, int probeBytes, long stream) {
        return start(backend, plan, probeBytes, OptionalLong.of(stream));
    }

    /**
     * Probes that may still be computing: returned by {@link #submit}. Only {@link #get()} waits (on a GPU backend, for
     * the window digests' result copy). Not thread-safe; {@link #close()} releases what the computation holds and must
     * be called once the probes are no longer needed, or after {@code get()}.
     */
    public static final class PendingProbes implements Pending<Probes> {
        private final SlicePlan plan;
        private final int probeBytes;
        private final PendingChecksums digests;
        private final long[][] where;
        private Probes probes;

        private PendingProbes(Probes probes) {
            this(null, 0, null, null);
            this.probes = probes;
        }

        private PendingProbes(SlicePlan plan, int probeBytes, PendingChecksums digests, long[][] where) {
            this.plan = plan;
            this.probeBytes = probeBytes;
            this.digests = digests;
            this.where = where;
        }

        /**
         * Waits for the window digests (device memory) and returns the probes; later calls return the same probes.
         *
         * @return one head and one tail value per page of the plan, as {@link #compute} returns them
         * @throws IllegalStateException when the handle was closed before the probes were read
         */
        @Override
        public Probes get() {
            if (probes == null) {
                long[] d = digests.get();
                digests.close();
                Pages f = new Pages(plan);
                for (int k = 0; k < d.length; k++) {
                    long[] at = where[k];
                    (at[1] == 0 ? f.head : f.tail)[(int) at[0]] += at[2] * d[k];
                }
                probes = f.probes(probeBytes);
            }
            return probes;
        }

        /** {@return true when {@link #get()} would not block} */
        @Override
        public boolean isDone() {
            return probes != null || digests.isDone();
        }

        /** Releases the window digests' resources (on a GPU backend, once their result copy is done). */
        @Override
        public void close() {
            if (digests != null) {
                digests.close();
            }
        }
    }

    private static PendingProbes start(KvChecksum backend, SlicePlan plan, int probeBytes, OptionalLong stream) {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(plan, "plan");
        if (probeBytes <= 0 || probeBytes % 8 != 0) {
            throw new InvalidLayoutException("probeBytes must be a positive multiple of 8, got " + probeBytes);
        }
        Pages f = new Pages(plan);
        if (plan.group().isHostResident()) {
            HostWindows.of(plan, probeBytes).probe(plan, f, ProbeWindows.INSTANCE.touchAhead());
            return new PendingProbes(f.probes(probeBytes));
        }
        return throughBackend(backend, plan, probeBytes, stream);
    }

    /**
     * For tests: the host path with the touch of the next page on or off ({@code touchAhead}), whichever this CPU's loop
     * takes ({@link ProbeWindows#touchAhead}), so that both run on any CPU. {@code plan}'s group must be host-resident.
     */
    static Probes onHost(SlicePlan plan, int probeBytes, boolean touchAhead) {
        Pages f = new Pages(plan);
        HostWindows.of(plan, probeBytes).probe(plan, f, touchAhead);
        return f.probes(probeBytes);
    }

    /**
     * The host path: every (kind, slice) part resolved once into flat arrays, grouped in runs of one memory (a layer's
     * heads of one kind), so the per-page loop is arithmetic and reads with the memory's checks hoisted per run.
     *
     * <p>Why it is shaped so (measured, {@code docs/bench-cpu.md} "Page probe cost"): 64-byte windows (the default) go
     * through {@link ProbeWindows}, on the Vector API where the JVM has it (a load and a multiply-add per window, the
     * sums carried over all runs of a page and the piece weights applied once per page: eight times fewer instructions
     * than the scalar loop, which kept the probe compute-bound where it reads half of every cell, SGLang's page size 1;
     * a reduction per run instead of per page cost twice the instructions of a plain read of the windows). A window is one or two cache lines
     * far from the last, so beyond that the probe is bound by how many of its reads are in flight. Before a
     * page's windows are summed, one read of each window of the next page is issued (a loop of independent loads, as
     * many in flight as the core allows), so the sums find their lines arriving or in cache, except where the loop
     * measured faster without those reads ({@link ProbeWindows#touchAhead}: Intel at 512 bits); and pages are cut into
     * chunks of about {@value #CHUNK_WINDOWS} windows spread over the common pool once a request has
     * {@value #PARALLEL_WINDOWS} windows.
     */
    private record HostWindows(MemorySegment[] runSeg, int[] runStart, boolean[] runOf8, boolean anyOf8, boolean allOf8,
            long[] base, long[] pageStride, long[] tokenStride, long[] tailSkip, int[] pieces, long[] w) {
        static HostWindows of(SlicePlan plan, int probeBytes) {
            List<SlicePlan.Slice> slices = plan.slices();
            int np = 0;
            for (SlicePlan.Slice s : slices) {
                np += s.v() == null ? 1 : 2;
            }
            long[] base = new long[np];
            long[] pageStride = new long[np];
            long[] tokenStride = new long[np];
            long[] tailSkip = new long[np];
            int[] pieces = new int[np];
            long[] w = new long[np];
            List<MemorySegment> runSeg = new ArrayList<>();
            List<Integer> runStart = new ArrayList<>();
            int k = 0;
            for (int kind = 0; kind < 2; kind++) {
                for (SlicePlan.LayerRun run : plan.layerRuns()) {
                    for (int h = 0; h < run.numHeads(); h++) {
                        SlicePlan.Slice s = slices.get(run.firstSlice() + h);
                        SlicePlan.Part part = kind == 0 ? s.k() : s.v();
                        if (part == null) {
                            continue;
                        }
                        MemorySegment seg = ((KvMemory.Host) part.memory()).segment();
                        if (runSeg.isEmpty() || runSeg.get(runSeg.size() - 1) != seg) {
                            runSeg.add(seg);
                            runStart.add(k);
                        }
                        int n = Math.min(probeBytes, part.pieces() * 8);
                        base[k] = part.base();
                        pageStride[k] = part.pageStride();
                        tokenStride[k] = part.tokenStride();
                        tailSkip[k] = part.pieces() * 8L - n;
                        pieces[k] = n >>> 3;
                        w[k] = weight(s.layer(), s.head(), kind);
                        k++;
                    }
                }
            }
            runStart.add(k);
            int[] starts = runStart.stream().mapToInt(Integer::intValue).toArray();
            boolean[] of8 = new boolean[runSeg.size()];
            boolean any = false;
            boolean all = true;
            for (int r = 0; r < of8.length; r++) {
                of8[r] = true;
                for (int j = starts[r]; j < starts[r + 1]; j++) {
                    of8[r] &= pieces[j] == 8;
                }
                any |= of8[r];
                all &= of8[r];
            }
            return new HostWindows(runSeg.toArray(new MemorySegment[0]), starts, of8, any, all, base, pageStride,
                    tokenStride, tailSkip, pieces, w);
        }

        void probe(SlicePlan plan, Pages f, boolean ahead) {
            int pages = f.head.length;
            int perPage = 2 * base.length;
            int chunk = Math.max(1, CHUNK_WINDOWS / Math.max(1, perPage));
            int chunks = Math.ceilDiv(pages, chunk);
            int[] order = addressOrder(plan, pages);
            java.util.function.IntConsumer one = c -> {
                int p0 = c * chunk;
                int p1 = Math.min(pages, p0 + chunk);
                long touched = ahead ? touch(plan.page(order[p0]), f.lastSlot(order[p0])) : 0;
                for (int p = p0; p < p1; p++) {
                    if (ahead && p + 1 < p1) {
                        touched += touch(plan.page(order[p + 1]), f.lastSlot(order[p + 1]));
                    }
                    int i = order[p];
                    sum(plan.page(i), f.lastSlot(i), f, i);
                }
                if (touched == 0x5EED_F00DL) {
                    sink = touched;   // the touches must look used, or the JIT drops the loads
                }
            };
            java.util.stream.IntStream range = java.util.stream.IntStream.range(0, chunks);
            ((long) pages * perPage >= PARALLEL_WINDOWS ? range.parallel() : range).forEach(one);
        }

        /**
         * The request's page indices in the order of their page ids: a churned table visits memory at random, and a
         * page's windows are a few lines of each of many rows, each a TLB miss and a DRAM row opened in table order; in
         * address order they are the same lines the prefetchers and the open rows already serve (measured: SGLang's
         * page size 1 at 64 MiB, shuffled table, most of the probe's time was its first read of each window).
         */
        private static int[] addressOrder(SlicePlan plan, int pages) {
            long[] keys = new long[pages];
            boolean sorted = true;
            for (int i = 0; i < pages; i++) {
                keys[i] = (long) plan.page(i) << 32 | i;
                sorted &= i == 0 || keys[i] > keys[i - 1];
            }
            int[] order = new int[pages];
            if (!sorted) {
                Arrays.sort(keys);
            }
            for (int p = 0; p < pages; p++) {
                order[p] = (int) keys[p];
            }
            return order;
        }

        /** One read of each window of page {@code page}: issued back to back, so many are in flight at once. */
        private long touch(long page, long lastSlot) {
            long t = 0;
            for (int r = 0; r < runSeg.length; r++) {
                MemorySegment m = runSeg[r];
                for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                    long at = base[j] + page * pageStride[j];
                    t += m.get(ValueLayout.JAVA_BYTE, at);
                    t += m.get(ValueLayout.JAVA_BYTE, at + lastSlot * tokenStride[j] + tailSkip[j]);
                }
            }
            return t;
        }

        /** Page {@code i}'s head and tail values; first-token windows, then last-token ones, each in part order. */
        private void sum(long page, long lastSlot, Pages f, int i) {
            long[] ht = new long[2];
            if (anyOf8) {
                // the default 64-byte windows: the Vector API loop where the JVM has it, its sums carried over the runs
                ProbeWindows.INSTANCE.sumRuns(runSeg, runStart, runOf8, base, pageStride, tokenStride, tailSkip, w, page,
                        lastSlot, ht);
            }
            long h = ht[0];
            long t = ht[1];
            if (!allOf8) {
                for (int r = 0; r < runSeg.length; r++) {
                    if (runOf8[r]) {
                        continue;
                    }
                    MemorySegment m = runSeg[r];
                    for (int j = runStart[r]; j < runStart[r + 1]; j++) {
                        long at = base[j] + page * pageStride[j];
                        h += w[j] * window(m, at, pieces[j]);
                        t += w[j] * window(m, at + lastSlot * tokenStride[j] + tailSkip[j], pieces[j]);
                    }
                }
            }
            f.head[i] = h;
            f.tail[i] = t;
        }
    }

    /** Windows per chunk of pages a thread of the host path takes at a time. */
    private static final int CHUNK_WINDOWS = 1 << 12;
    private static volatile long sink;

    /** {@link #throughBackend(KvChecksum, SlicePlan, int, OptionalLong)} on the backend's own stream, waited for. */
    static Probes throughBackend(KvChecksum backend, SlicePlan plan, int probeBytes) {
        try (PendingProbes p = throughBackend(backend, plan, probeBytes, OptionalLong.empty())) {
            return p.get();
        }
    }

    /**
     * The device path: every window a {@link StateRow}, digested by the backend in one plan (any memory) on
     * {@code stream} (empty: its own), folded into the pages' values when read.
     */
    private static PendingProbes throughBackend(KvChecksum backend, SlicePlan plan, int probeBytes, OptionalLong stream) {
        Pages f = new Pages(plan);
        List<StateRow> rows = new ArrayList<>();
        List<long[]> where = new ArrayList<>(); // {page index, 0 head | 1 tail, weight}
        for (int i = 0; i < f.head.length; i++) {
            int page = plan.page(i);
            long lastSlot = f.lastSlot(i);
            for (SlicePlan.Slice s : plan.slices()) {
                for (int kind = 0; kind < 2; kind++) {
                    SlicePlan.Part part = kind == 0 ? s.k() : s.v();
                    if (part == null) {
                        continue;
                    }
                    long w = weight(s.layer(), s.head(), kind);
                    int cell = part.pieces() * 8;
                    int n = Math.min(probeBytes, cell);
                    rows.add(new StateRow("head", part.memory(), part.cellOffset(page, 0), n));
                    where.add(new long[] {i, 0, w});
                    rows.add(new StateRow("tail", part.memory(), part.cellOffset(page, lastSlot) + cell - n, n));
                    where.add(new long[] {i, 1, w});
                }
            }
        }
        PendingChecksums d = StateDigests.start(backend, rows, ChecksumMode.STANDARD, stream);
        return new PendingProbes(plan, probeBytes, d, where.toArray(new long[0][]));
    }

    /** The probes of a plan as they are filled: a head and a tail value per page, in the page table's order. */
    private static final class Pages {
        final long[] head;
        final long[] tail;
        private final RequestBlocks r;
        private final int ps;

        Pages(SlicePlan plan) {
            r = plan.request();
            ps = plan.pageSize();
            head = new long[plan.numPages()];
            tail = new long[plan.numPages()];
        }

        /** The slot of page {@code i}'s last token of the request. */
        long lastSlot(int i) {
            return Math.min(ps, r.numTokens() - r.startToken() - (long) i * ps) - 1;
        }

        Probes probes(int probeBytes) {
            return new Probes(ps, probeBytes, r.startToken(), r.numTokens(), head, tail);
        }
    }

    private static long window(MemorySegment m, long at, int pieces) {
        long d = 0;
        for (int p = 0; p < pieces; p++) {
            d += m.get(PIECE, at + 8L * p) * (2L * p + 1);
        }
        return d;
    }
}
