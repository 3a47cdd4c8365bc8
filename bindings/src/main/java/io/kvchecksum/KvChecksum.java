package io.kvchecksum;

import io.kvchecksum.spi.Backend;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The KV checksum on one backend (see {@code docs/definition.md}): the one front every backend runs behind.
 *
 * <p><b>The contract, the same for every backend.</b> A cell is one token of one KV head of one layer: its K bytes
 * followed by its V bytes (MLA: the latent row only). It is read as little-endian 8-byte pieces; piece {@code p} of
 * the token at request position {@code t} has index {@code j = t*P + p}, where {@code P} is the cell's piece count,
 * and weight {@code 2j+1}. A slice sum is {@code s = sum_j x_j*(2j+1)} over one (layer, head) and one block's
 * tokens; a block checksum is {@code c = sum m*s} over the group's slices with {@code m = 2*(layer*2^16 + head)+1}.
 * In the {@link ChecksumMode#MIXED mixed mode} each piece {@code x_j} is replaced by {@link Definition#feistel3}{@code (x_j)}
 * first; the plan carries the mode. Everything is unsigned 64-bit arithmetic modulo 2^64 (Java {@code long} wraps identically; print with
 * {@link Long#toUnsignedString}). The dtype of the KV does not matter: bytes are bytes. Results are exact: two
 * backends agree bit for bit or one of them is wrong.
 *
 * <p><b>Stream-ordered operations.</b> Every computation has a form for an engine's worker that enqueues it on the
 * engine's stream, ordered after the engine's writes, and returns a pending result without waiting for the device:
 * {@link #submit(CompiledPlan, long)} (block checksums), {@link #submitSliceSums}, {@link #submitStateDigests},
 * {@link #submitPageDigest}, {@link PageProbe#submit} and {@link #submitCopy} (the verifying copy).
 *
 * <p><b>The verifying copy.</b> {@link #compileCopy} and {@link #copyAndChecksum} move KV from one cache into another
 * (another layout, page size, page ids or head range) in one pass and return the destination's block checksums,
 * computed from the bytes as they are copied; see {@link CopyPlan}.
 *
 * <p><b>The three operations.</b> The per-slice weighted sum ({@link #sliceSums}), the per-layer/head combination
 * ({@link SliceSums#combine()}, a pure function) and block-size rechunking ({@link Rechunked#of}, a pure function);
 * {@link #blockChecksums} fuses the first two into one pass over the KV.
 *
 * <p><b>One front, many backends.</b> This final class does, once for every backend, what is the same for all of
 * them: every request is compiled ({@link CompiledPlan}) and checked against the backend's declared
 * {@link io.kvchecksum.spi.BackendLimits limits} before anything runs, a request without blocks returns at once, the
 * launches' values are placed into the requests' results, and a failed computation is closed. A backend
 * ({@link Backend}) only runs compiled launches and computes the Adler-32 page digest. Bad input throws
 * {@link InvalidLayoutException} naming the problem before any KV byte is read, e.g. a page id out of range, a table
 * too short, memory the backend cannot read (device memory on a CPU backend). Nothing is read outside the regions
 * described. A plan may be built once and passed to many calls.
 *
 * <p>Thread-safe: several threads may call one instance at once. Obtain instances from {@link KvChecksums}, or wrap
 * a backend with {@link #of}.
 */
public final class KvChecksum implements AutoCloseable {
    private final Backend backend;

    private KvChecksum(Backend backend) {
        this.backend = backend;
    }

    /**
     * {@return the front over {@code backend}; closing it closes the backend}
     *
     * @param backend the backend, not null
     */
    public static KvChecksum of(Backend backend) {
        if (backend == null) {
            throw new NullPointerException("backend");
        }
        return new KvChecksum(backend);
    }

    /** {@return the backend behind this front (for its own extras, e.g. a GPU backend's buffers)} */
    public Backend backend() {
        return backend;
    }

    /**
     * {@return the backend's name as {@link KvChecksums#byName} accepts it: {@code reference}, {@code cpu},
     * {@code cuda}, {@code opencl}}
     */
    public String name() {
        return backend.name();
    }

    /** {@return what exactly runs: the name plus implementation details (device, vector width, threads)} */
    public String description() {
        return backend.description();
    }

    /**
     * {@return true: every backend implements every checksum mode}
     *
     * @param mode the checksum mode asked about
     * @deprecated every backend implements both modes; what a backend cannot run is declared by its
     *     {@link io.kvchecksum.spi.BackendLimits} and refused when a plan is compiled
     */
    @Deprecated(forRemoval = true)
    public boolean supports(ChecksumMode mode) {
        return mode != null;
    }

    /**
     * Compiles requests of one step over {@code source} and checks them against this backend's limits: every
     * refusal happens here, before any kernel runs.
     *
     * @param source a cache group or a segmented cache
     * @param requests the requests, at least one (a segmented cache's requests have empty page tables)
     * @param spec the mode and padding
     * @return the compiled plan, reusable across calls
     * @throws InvalidLayoutException as {@link CompiledPlan#compile} and {@link CompiledPlan#check} say
     */
    public CompiledPlan compile(KvSource source, List<RequestBlocks> requests, ChecksumSpec spec) {
        CompiledPlan plan = CompiledPlan.compile(source, requests, spec);
        plan.check(name(), backend.limits(), false);
        return plan;
    }

    /**
     * Compiles the requests of one engine step, each over its own source (several sessions of an engine that keeps
     * each in its own allocations, as Jlama does), into one plan run by one call, and checks it against this backend's
     * limits: every refusal happens here, before any kernel runs.
     *
     * @param sources each request's cache, in order, all of one geometry
     * @param requests the requests, as many as sources (a segmented cache's requests have empty page tables)
     * @param spec the mode and padding
     * @return the compiled plan, reusable across calls
     * @throws InvalidLayoutException as {@link CompiledPlan#compile(List, List, ChecksumSpec)} and
     *     {@link CompiledPlan#check} say
     */
    public CompiledPlan compile(List<? extends KvSource> sources, List<RequestBlocks> requests, ChecksumSpec spec) {
        CompiledPlan plan = CompiledPlan.compile(sources, requests, spec);
        plan.check(name(), backend.limits(), false);
        return plan;
    }

    /**
     * {@return the block checksums of every request of {@code plan}, one array per request in order}
     *
     * @param plan the compiled plan
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    public List<long[]> blockChecksums(CompiledPlan plan) {
        long[] all = values(plan, CompiledPlan.Output.BLOCK_CHECKSUMS);
        List<long[]> out = new ArrayList<>(plan.requests().size());
        for (int r = 0; r < plan.requests().size(); r++) {
            out.add(plan.blockChecksums(all, r));
        }
        return out;
    }

    /**
     * {@return the slice sums of every request of {@code plan}, one per request in order}
     *
     * @param plan the compiled plan
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    public List<SliceSums> sliceSums(CompiledPlan plan) {
        long[] all = values(plan, CompiledPlan.Output.SLICE_SUMS);
        List<SliceSums> out = new ArrayList<>(plan.requests().size());
        for (int r = 0; r < plan.requests().size(); r++) {
            out.add(plan.sliceSums(all, r));
        }
        return out;
    }

    /**
     * Starts the block checksums of every request of {@code plan} and returns before they finish where the backend
     * can (GPU backends enqueue on their own stream and return at once); CPU backends compute on the calling thread.
     *
     * @param plan the compiled plan; its memory must stay alive and unchanged until the handle is done
     * @return the pending values of all requests concatenated in order ({@link CompiledPlan#offset}); call
     *     {@code get()} or {@code close()}
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    public PendingChecksums submit(CompiledPlan plan) {
        return start(plan, CompiledPlan.Output.BLOCK_CHECKSUMS, OptionalLong.empty());
    }

    /**
     * Stream-ordered {@link #submit(CompiledPlan)}: for an engine's worker, which must neither wait for the device nor
     * race its own writes. The checksum is ordered after the work already enqueued on {@code stream} and before
     * anything enqueued on it later; on a GPU backend the call never waits for the device.
     *
     * <p>{@code stream} is an opaque handle whose meaning is the backend's: a {@code CUstream} for {@code cuda} (0 is
     * the legacy default stream; the memory must be device memory), a {@code cl_command_queue} for {@code opencl}
     * (which runs on its own in-order queue only: 0 or its {@code commandQueue()}). CPU backends have no stream: they
     * ignore it and compute on the calling thread.
     *
     * @param plan the compiled plan; its memory must stay alive and unchanged until the handle is done
     * @param stream the engine's stream or queue handle, as the backend documents it
     * @return the pending values of all requests concatenated in order; call {@code get()} or {@code close()}
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read on a stream
     */
    public PendingChecksums submit(CompiledPlan plan, long stream) {
        return start(plan, CompiledPlan.Output.BLOCK_CHECKSUMS, OptionalLong.of(stream));
    }

    /**
     * {@return the block checksums, in one fused pass: one per block position
     * {@code firstBlock .. ceil(numTokens/blockSize)-1} of the plan's request, over all layers and heads of the group,
     * each KV byte read once}
     *
     * @param plan the validated group and request; its memory must be of a kind this backend reads
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    public long[] blockChecksums(SlicePlan plan) {
        return values(plan.compiled(), CompiledPlan.Output.BLOCK_CHECKSUMS);
    }

    /**
     * {@return the per-slice weighted sums for the same blocks, one row per (layer, head) slice in the plan's order}
     *
     * @param plan the validated group and request; its memory must be of a kind this backend reads
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    public SliceSums sliceSums(SlicePlan plan) {
        CompiledPlan c = plan.compiled();
        return c.sliceSums(values(c, CompiledPlan.Output.SLICE_SUMS), 0);
    }

    /**
     * Starts {@link #blockChecksums(SlicePlan)} and returns before it finishes where the backend can (GPU backends
     * enqueue and return at once); CPU backends compute on the calling thread and return completed values.
     *
     * @param plan the validated group and request; its memory must stay alive and unchanged until the handle is done
     * @return the pending values, equal to {@link #blockChecksums(SlicePlan)}'s; call {@code get()} or {@code close()}
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    public PendingChecksums submit(SlicePlan plan) {
        return submit(plan.compiled());
    }

    /**
     * Stream-ordered {@link #submit(SlicePlan)}, as {@link #submit(CompiledPlan, long)} describes it.
     *
     * @param plan the validated group and request; its memory must stay alive and unchanged until the handle is done
     * @param stream the engine's stream or queue handle, as the backend documents it
     * @return the pending values; call {@code get()} or {@code close()}
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read on a stream
     */
    public PendingChecksums submit(SlicePlan plan, long stream) {
        return submit(plan.compiled(), stream);
    }

    /**
     * {@return {@link #blockChecksums(SlicePlan)} of a plan built (and validated) for this one call}
     *
     * @param group the cache to read
     * @param request the blocks to checksum, in {@code group}'s pages
     * @throws InvalidLayoutException when the request does not fit the group, or its memory is of a kind this backend
     *     cannot read
     */
    public long[] blockChecksums(KvCacheGroup group, RequestBlocks request) {
        return blockChecksums(SlicePlan.of(group, request));
    }

    /**
     * {@return {@link #sliceSums(SlicePlan)} of a plan built (and validated) for this one call}
     *
     * @param group the cache to read
     * @param request the blocks to checksum, in {@code group}'s pages
     * @throws InvalidLayoutException when the request does not fit the group, or its memory is of a kind this backend
     *     cannot read
     */
    public SliceSums sliceSums(KvCacheGroup group, RequestBlocks request) {
        return sliceSums(SlicePlan.of(group, request));
    }

    /**
     * {@return {@link #submit(SlicePlan)} of a plan built (and validated) for this one call}
     *
     * @param group the cache to read; its memory must stay alive and unchanged until the handle is done
     * @param request the blocks to checksum, in {@code group}'s pages
     * @throws InvalidLayoutException when the request does not fit the group, or its memory is of a kind this backend
     *     cannot read
     */
    public PendingChecksums submit(KvCacheGroup group, RequestBlocks request) {
        return submit(SlicePlan.of(group, request));
    }

    /**
     * {@return {@link #submit(SlicePlan, long)} of a plan built (and validated) for this one call}
     *
     * @param group the cache to read; its memory must stay alive and unchanged until the handle is done
     * @param request the blocks to checksum, in {@code group}'s pages
     * @param stream the engine's stream or queue handle, as {@link #submit(CompiledPlan, long)} describes it
     * @throws InvalidLayoutException when the request does not fit the group, or its memory is of a kind this backend
     *     cannot read
     */
    public PendingChecksums submit(KvCacheGroup group, RequestBlocks request, long stream) {
        return submit(SlicePlan.of(group, request), stream);
    }

    /**
     * {@return SGLang's page digest: Adler-32 ({@code java.util.zip.Adler32}, zlib's {@code adler32}) of the plan's
     * ordered byte stream (every layer's K pages, then V pages, then state rows; see {@link PageDigestPlan}), in
     * {@code [0, 2^32)}} Unlike the weighted sum it depends on the page layout.
     *
     * @param plan the resolved byte stream
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    public long pageDigest(PageDigestPlan plan) {
        return backend.pageDigest(plan);
    }

    /**
     * One digest per state row (per request, per state buffer), in the order given: the row read as little-endian
     * 8-byte pieces, the last one zero-padded at its end when the row is not a multiple of 8 bytes, and
     * {@code D = sum_p v(x_p)*(2p+1) mod 2^64} with {@code v} the identity ({@code STANDARD}) or
     * {@link Definition#feistel3} ({@code MIXED}); an empty row gives 0. This is the slice sum of a one-token request
     * whose cell is the row; no layer/head factor, no blocks (state is per request).
     *
     * <p>Computed with this backend's own slice sums over one-token cells, all rows in one plan (one launch on a GPU
     * backend, on its own stream), so every backend reads the rows where they live (host or device memory); waits for
     * the values. It may read up to 7 bytes of a row's memory outside the row, never outside the memory
     * ({@link StateDigests}). An engine's worker uses {@link #submitStateDigests} instead.
     *
     * @param rows the state rows, none null; may be empty (then the result is empty)
     * @param mode the checksum mode, not null
     * @return a new array of {@code rows.size()} digests, {@code [i]} for {@code rows.get(i)}
     * @throws InvalidLayoutException when a row's memory is of a kind this backend cannot read, before anything is read
     */
    public long[] stateDigests(List<StateRow> rows, ChecksumMode mode) {
        return StateDigests.compute(this, rows, mode);
    }

    /**
     * Stream-ordered {@link #stateDigests}: the same digests, computed in one plan enqueued on {@code stream} after
     * the work already on it (the engine's writes of the rows), without waiting for the device; {@code stream} as
     * {@link #submit(CompiledPlan, long)} describes it (a {@code CUstream} for {@code cuda}, whose rows must be in
     * device memory; ignored on CPU backends, which compute on the calling thread and return completed values).
     *
     * @param rows the state rows, none null; may be empty (then the result is empty); their memory must stay alive
     *     and unchanged until the handle is done
     * @param mode the checksum mode, not null
     * @param stream the engine's stream or queue handle, as the backend documents it
     * @return the pending digests, {@code rows.size()} of them, {@code [i]} for {@code rows.get(i)}; call
     *     {@code get()} or {@code close()}
     * @throws InvalidLayoutException when a row's memory is of a kind this backend cannot read on a stream, before
     *     anything is enqueued
     * @throws IllegalStateException when the backend refuses the stream (a CUDA stream capturing a graph)
     */
    public PendingChecksums submitStateDigests(List<StateRow> rows, ChecksumMode mode, long stream) {
        return StateDigests.start(this, rows, mode, OptionalLong.of(stream));
    }

    /**
     * Stream-ordered {@link #sliceSums(SlicePlan)}, enqueued as {@link #submit(CompiledPlan, long)} describes it.
     *
     * @param plan the validated group and request; its memory must stay alive and unchanged until the handle is done
     * @param stream the engine's stream or queue handle, as the backend documents it
     * @return the pending slice sums, equal to {@link #sliceSums(SlicePlan)}'s; call {@code get()} or {@code close()}
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read on a stream
     * @throws IllegalStateException when the backend refuses the stream (a CUDA stream capturing a graph)
     */
    public Pending<SliceSums> submitSliceSums(SlicePlan plan, long stream) {
        CompiledPlan c = plan.compiled();
        return Pending.of(start(c, CompiledPlan.Output.SLICE_SUMS, OptionalLong.of(stream)), v -> c.sliceSums(v, 0));
    }

    /**
     * Stream-ordered {@link #pageDigest}: the same Adler-32, enqueued on {@code stream} after the work already on it,
     * without waiting for the device ({@code stream} as {@link #submit(CompiledPlan, long)} describes it; a
     * {@code cuda} stream reads device memory only). CPU backends compute it on the calling thread and return it
     * completed.
     *
     * @param plan the resolved byte stream; its memory must stay alive and unchanged until the handle is done
     * @param stream the engine's stream or queue handle, as the backend documents it
     * @return the pending digest, in {@code [0, 2^32)}; call {@code get()} or {@code close()}
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read on a stream
     * @throws IllegalStateException when the backend refuses the stream (a CUDA stream capturing a graph)
     */
    public Pending<Long> submitPageDigest(PageDigestPlan plan, long stream) {
        if (plan == null) {
            throw new NullPointerException("plan");
        }
        return backend.submitPageDigest(plan, stream);
    }

    /**
     * Compiles a verifying copy ({@link CopyPlan}: what is copied, what is returned, what is refused) and checks it
     * against this backend's limits (the memory kinds it copies, overlapping memory): every refusal happens here,
     * before any byte is read or written.
     *
     * @param source the cache read
     * @param sourceRequest where the positions lie in the source (its page table from the first copied position)
     * @param destination the cache written
     * @param destinationRequest where the positions go in the destination, and the blocks of the returned checksums
     * @param spec the mode and padding of the returned checksums
     * @return the compiled copy, reusable while both caches' memory and tables stay the same
     * @throws InvalidLayoutException as {@link CopyPlan#compile} and {@link CopyPlan#check} say
     */
    public CopyPlan compileCopy(KvCacheGroup source, RequestBlocks sourceRequest, KvCacheGroup destination,
                                RequestBlocks destinationRequest, ChecksumSpec spec) {
        CopyPlan plan = CopyPlan.compile(source, sourceRequest, destination, destinationRequest, spec);
        plan.check(name(), backend.limits(), false);
        return plan;
    }

    /**
     * Compiles a verifying copy into a segmented destination ({@link KvSegments}, Jlama's pages) as one plan
     * ({@link CopyPlan#compile(KvCacheGroup, RequestBlocks, KvSegments, RequestBlocks, ChecksumSpec)}) and checks it
     * against this backend's limits. The CPU backends run it in one call (the cpu backend in one pass over its pool);
     * other backends run its segment plans one after another, the values added up.
     *
     * @param source the cache read
     * @param sourceRequest where the positions lie in the source (its page table from the first copied position)
     * @param destination the segments written
     * @param destinationRequest the positions and blocks of the returned checksums ({@link KvSegments#request})
     * @param spec the mode and padding of the returned checksums
     * @return the compiled copy, reusable while both caches' memory and the source's table stay the same
     * @throws InvalidLayoutException as {@link CopyPlan#compile(KvCacheGroup, RequestBlocks, KvSegments, RequestBlocks,
     *     ChecksumSpec)} and {@link CopyPlan#check} say
     */
    public CopyPlan compileCopy(KvCacheGroup source, RequestBlocks sourceRequest, KvSegments destination,
                                RequestBlocks destinationRequest, ChecksumSpec spec) {
        CopyPlan plan = CopyPlan.compile(source, sourceRequest, destination, destinationRequest, spec);
        plan.check(name(), backend.limits(), false);
        return plan;
    }

    /**
     * Copies the plan's cells from its source to its destination in one pass and returns the destination's block
     * checksums over the copied slices, computed from the bytes as they pass: after a correct copy, equal to
     * {@link #blockChecksums(KvCacheGroup, RequestBlocks) blockChecksums}{@code (plan.copiedDestination(),
     * plan.destinationRequest())}. Waits for the copy. Writes to the destination after the copy are not covered.
     *
     * @param plan the compiled copy
     * @return one value per block position of the destination request, from its {@code firstBlock}
     * @throws InvalidLayoutException when the plan is beyond this backend's limits
     */
    public long[] copyAndChecksum(CopyPlan plan) {
        try (PendingChecksums p = startCopy(plan, OptionalLong.empty())) {
            return p.get();
        }
    }

    /**
     * Stream-ordered {@link #copyAndChecksum}: the copy is enqueued on {@code stream} after the work already on it (the
     * transfer that filled the source) and before anything enqueued later (the engine's reads of the destination),
     * without waiting for the device; {@code stream} as {@link #submit(CompiledPlan, long)} describes it. CPU backends
     * copy on the calling thread and return completed values.
     *
     * @param plan the compiled copy; both caches' memory must stay alive until the handle is done
     * @param stream the engine's stream or queue handle, as the backend documents it
     * @return the pending block checksums; call {@code get()} or {@code close()}
     * @throws InvalidLayoutException when the plan is beyond this backend's limits on a stream
     */
    public PendingChecksums submitCopy(CopyPlan plan, long stream) {
        return startCopy(plan, OptionalLong.of(stream));
    }

    private PendingChecksums startCopy(CopyPlan plan, OptionalLong stream) {
        if (plan == null) {
            throw new NullPointerException("plan");
        }
        plan.check(name(), backend.limits(), stream.isPresent());
        if (plan.isEmpty()) {
            return PendingChecksums.completed(new long[plan.numBlocks()]);
        }
        if (plan.isSegmented() && !backend.limits().copiesSegments()) {
            return new SegmentCopies(plan, backend, stream);
        }
        return backend.runCopy(plan, stream);
    }

    /** A segmented copy on a backend that takes one group per call: its segment plans in order, the values added. */
    private static final class SegmentCopies implements PendingChecksums {
        private final CopyPlan plan;
        private final List<PendingChecksums> parts = new ArrayList<>();
        private final List<Integer> at = new ArrayList<>();

        SegmentCopies(CopyPlan plan, Backend backend, OptionalLong stream) {
            this.plan = plan;
            try {
                for (int i = 0; i < plan.segments().size(); i++) {
                    CopyPlan part = plan.segments().get(i);
                    if (!part.isEmpty()) {
                        parts.add(backend.runCopy(part, stream));
                        at.add(i);
                    }
                }
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        @Override
        public long[] get() {
            long[] out = new long[plan.numBlocks()];
            for (int k = 0; k < parts.size(); k++) {
                plan.addSegment(at.get(k), parts.get(k).get(), out);
            }
            return out;
        }

        @Override
        public boolean isDone() {
            for (PendingChecksums p : parts) {
                if (!p.isDone()) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public void close() {
            for (PendingChecksums p : parts) {
                p.close();
            }
        }
    }

    /** Releases the backend's native resources; the pure-Java backends hold none. */
    @Override
    public void close() {
        backend.close();
    }

    @Override
    public String toString() {
        return description();
    }

    /** Runs {@code plan} synchronously: the values of all requests, concatenated. */
    private long[] values(CompiledPlan plan, CompiledPlan.Output output) {
        try (PendingChecksums p = start(plan, output, OptionalLong.empty())) {
            return p.get();
        }
    }

    /** Starts the slice sums of {@code plan} on {@code stream} (empty: the backend's own), for {@link StateDigests}. */
    PendingChecksums startSliceSums(CompiledPlan plan, OptionalLong stream) {
        return start(plan, CompiledPlan.Output.SLICE_SUMS, stream);
    }

    private PendingChecksums start(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
        plan.check(name(), backend.limits(), stream.isPresent());
        if (plan.isEmpty()) {
            return PendingChecksums.completed(new long[plan.offset(output, plan.requests().size())]);
        }
        return backend.run(plan, output, stream);
    }
}
