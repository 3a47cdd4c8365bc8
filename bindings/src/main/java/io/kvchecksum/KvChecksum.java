package io.kvchecksum;

/**
 * One backend's implementation of the KV checksum (see {@code docs/definition.md}).
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
 * <p>A backend implements what differs per backend and nothing else: the fused block checksums, the slice sums, and
 * {@code submit}. The other two operations of the checksum are pure functions on the value types, the same for
 * every backend: the per-layer/head combination {@link SliceSums#combine()} and block-size rechunking
 * {@link Rechunked#of}.
 *
 * <p>Arguments are validated once, when the {@link SlicePlan} is built (the methods taking a group and a request
 * build it first): bad input throws {@link InvalidLayoutException} naming the problem before any KV byte is read,
 * e.g. a page id out of range, a table too short, memory the backend cannot read (device memory on a CPU backend).
 * Nothing is read outside the regions described. A plan may be built once and passed to many calls.
 *
 * <p>Backends are thread-safe: several threads may call one instance at once. Obtain them from {@link KvChecksums}.
 */
public interface KvChecksum extends AutoCloseable {

    /**
     * {@return the backend's name as {@link KvChecksums#byName} accepts it: {@code reference}, {@code cpu},
     * {@code cuda}, {@code opencl}}
     */
    String name();

    /** {@return what exactly runs: the name plus implementation details (device, vector width, threads)} */
    String description();

    /**
     * {@return whether this backend implements checksum mode {@code mode} ({@link SlicePlan#mode()})} A backend given a
     * plan in a mode it does not implement throws {@link InvalidLayoutException} before reading anything.
     *
     * @param mode the checksum mode asked about
     */
    default boolean supports(ChecksumMode mode) {
        return mode == ChecksumMode.STANDARD;
    }

    /**
     * {@return the block checksums, in one fused pass: one per block position
     * {@code firstBlock .. ceil(numTokens/blockSize)-1} of the plan's request, over all layers and heads of the group,
     * each KV byte read once}
     *
     * @param plan the validated group and request; its memory must be of a kind this backend reads
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    long[] blockChecksums(SlicePlan plan);

    /**
     * {@return the per-slice weighted sums for the same blocks, one row per (layer, head) slice in the plan's order}
     *
     * @param plan the validated group and request; its memory must be of a kind this backend reads
     */
    SliceSums sliceSums(SlicePlan plan);

    /**
     * Starts {@link #blockChecksums(SlicePlan)} and returns before it finishes where the backend can (GPU backends
     * enqueue and return at once); CPU backends compute on the calling thread and return completed values.
     *
     * @param plan the validated group and request; its memory must stay alive and unchanged until the handle is done
     * @return the pending values, equal to {@link #blockChecksums(SlicePlan)}'s; call {@code get()} or {@code close()}
     */
    default PendingChecksums submit(SlicePlan plan) {
        return PendingChecksums.completed(blockChecksums(plan));
    }

    /**
     * {@return {@link #blockChecksums(SlicePlan)} of a plan built (and validated) for this one call}
     *
     * @param group the cache to read
     * @param request the blocks to checksum, in {@code group}'s pages
     * @throws InvalidLayoutException when the request does not fit the group, or its memory is of a kind this backend
     *     cannot read
     */
    default long[] blockChecksums(KvCacheGroup group, RequestBlocks request) {
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
    default SliceSums sliceSums(KvCacheGroup group, RequestBlocks request) {
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
    default PendingChecksums submit(KvCacheGroup group, RequestBlocks request) {
        return submit(SlicePlan.of(group, request));
    }

    /**
     * Stream-ordered {@link #submit}: for an engine's worker, which must neither wait for the device nor race its own
     * writes. The checksum is ordered after the work already enqueued on {@code stream} (the forward that finished
     * the prompt, the load that landed) and before anything enqueued on it later, and on a GPU backend the call never
     * waits for the device: only the handle's {@code get()} waits, and {@code isDone()} polls.
     *
     * <p>{@code stream} is an opaque handle whose meaning is the backend's: a {@code CUstream} for {@code cuda} (0 is
     * the legacy default stream; the group must be device memory), a {@code cl_command_queue} for {@code opencl}
     * (which runs on its own in-order queue only: 0 or its {@code commandQueue()}). CPU backends have no stream:
     * they ignore it, compute on the calling thread and return a completed handle, exactly as {@link #submit}.
     *
     * @param stream the engine's stream or queue handle, as the backend documents it
     * @param plan the validated group and request; its memory must stay alive and unchanged until the handle is done
     * @return the pending values; call {@code get()} or {@code close()}
     */
    default PendingChecksums submit(SlicePlan plan, long stream) {
        return submit(plan);
    }

    /**
     * {@return {@link #submit(SlicePlan, long)} of a plan built (and validated) for this one call}
     *
     * @param group the cache to read; its memory must stay alive and unchanged until the handle is done
     * @param request the blocks to checksum, in {@code group}'s pages
     * @param stream the engine's stream or queue handle, as {@link #submit(SlicePlan, long)} describes it
     * @throws InvalidLayoutException when the request does not fit the group, or its memory is of a kind this backend
     *     cannot read
     */
    default PendingChecksums submit(KvCacheGroup group, RequestBlocks request, long stream) {
        return submit(SlicePlan.of(group, request), stream);
    }

    /**
     * {@return SGLang's page digest: Adler-32 ({@code java.util.zip.Adler32}, zlib's {@code adler32}) of the plan's
     * ordered byte stream (every layer's K pages, then V pages, then state rows; see {@link PageDigestPlan}), in
     * {@code [0, 2^32)}} Unlike the weighted sum it depends on the page layout.
     *
     * <p>The default reads host memory with {@code java.util.zip.Adler32}, on the calling thread; backends override
     * it with parallel forms (Adler-32 parts of consecutive chunks combine exactly).
     *
     * @param plan the resolved byte stream; the default reads only host memory
     * @throws InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    default long pageDigest(PageDigestPlan plan) {
        return io.kvchecksum.internal.PageDigestReference.digest(plan, name());
    }

    /**
     * One digest per state row (per request, per state buffer), in the order given: the row read as little-endian
     * 8-byte pieces, the last one zero-padded at its end when the row is not a multiple of 8 bytes, and
     * {@code D = sum_p v(x_p)*(2p+1) mod 2^64} with {@code v} the identity ({@code STANDARD}) or
     * {@link Definition#feistel3} ({@code MIXED}); an empty row gives 0. This is the slice sum of a one-token request
     * whose cell is the row; no layer/head factor, no blocks (state is per request).
     *
     * <p>The default computes it with this backend's own {@link #sliceSums(SlicePlan)} over one-token cells, so every
     * backend reads the rows where they live (host or device memory), on the calling thread, synchronously; it may
     * read up to 7 bytes of a row's memory outside the row, never outside the memory ({@link StateDigests}).
     *
     * @param rows the state rows, none null; may be empty (then the result is empty)
     * @param mode the checksum mode, not null
     * @return a new array of {@code rows.size()} digests, {@code [i]} for {@code rows.get(i)}
     * @throws InvalidLayoutException when a row's memory is of a kind this backend cannot read or the backend does
     *     not implement {@code mode}, before anything is read
     */
    default long[] stateDigests(java.util.List<StateRow> rows, ChecksumMode mode) {
        return StateDigests.compute(this, rows, mode);
    }

    /** Releases native resources; the pure-Java backends hold none. */
    @Override
    default void close() {
    }
}
