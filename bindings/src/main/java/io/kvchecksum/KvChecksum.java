package io.kvchecksum;

/**
 * One backend's implementation of the KV checksum (see {@code docs/definition.md}).
 *
 * <p><b>The contract, the same for every backend.</b> A cell is one token of one KV head of one layer: its K bytes
 * followed by its V bytes (MLA: the latent row only). It is read as little-endian 8-byte pieces; piece {@code p} of
 * the token at request position {@code t} has index {@code j = t*P + p}, where {@code P} is the cell's piece count,
 * and weight {@code 2j+1}. A slice sum is {@code s = sum_j x_j*(2j+1)} over one (layer, head) and one block's
 * tokens; a block checksum is {@code c = sum m*s} over the group's slices with {@code m = 2*(layer*2^16 + head)+1}.
 * Everything is unsigned 64-bit arithmetic modulo 2^64 (Java {@code long} wraps identically; print with
 * {@link Long#toUnsignedString}). The dtype of the KV does not matter: bytes are bytes. Results are exact: two
 * backends agree bit for bit or one of them is wrong.
 *
 * <p>Every method validates its arguments completely before reading any KV byte and throws
 * {@link InvalidLayoutException} naming the problem: a page id out of range, a table too short, memory the backend
 * cannot read (device memory on a CPU backend). Nothing is read outside the regions described.
 *
 * <p>Backends are thread-safe: several threads may call one instance at once. Obtain them from {@link KvChecksums}.
 */
public interface KvChecksum extends AutoCloseable {

    /** The backend's name as {@link KvChecksums#byName} accepts it: {@code reference}, {@code cpu}, {@code cuda}, {@code opencl}. */
    String name();

    /** What exactly runs: the name plus implementation details (device, vector width, threads). */
    String description();

    /**
     * The fused single pass: one checksum per block position {@code firstBlock .. ceil(numTokens/blockSize)-1} of the
     * request, over all layers and heads of the group, each KV byte read once.
     */
    long[] blockChecksums(KvCacheGroup group, RequestBlocks request);

    /** The per-slice weighted sums for the same blocks, one row per (layer, head) slice. */
    SliceSums sliceSums(KvCacheGroup group, RequestBlocks request);

    /**
     * The per-layer/head combination: {@code c_b = sum over slices of m(layer, head) * s[slice][b]}.
     * {@code combine(sliceSums(g, r))} equals {@code blockChecksums(g, r)}.
     */
    long[] combine(SliceSums sums);

    /**
     * Block-size rechunking: sums consecutive checksums of blocks of size {@code B} into checksums of size
     * {@code factor*B}, exact because piece indices count from the request's first token.
     *
     * <p>{@code values[i]} is the checksum of block {@code firstBlock + i}, and the input must run to the request's
     * last block. Chunks that the input does not cover whole are left out: the result starts at chunk
     * {@code ceil(firstBlock/factor)}; the last chunk, which ends with the request, is whole even if it holds fewer
     * than {@code factor} blocks.
     */
    Rechunked rechunk(long[] values, long firstBlock, int factor);

    /**
     * Starts {@link #blockChecksums} and returns before it finishes where the backend can (GPU backends enqueue on a
     * stream and return at once); CPU backends compute on the calling thread and return completed values.
     */
    default PendingChecksums submit(KvCacheGroup group, RequestBlocks request) {
        return PendingChecksums.completed(blockChecksums(group, request));
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
     * @return the pending values; call {@code get()} or {@code close()}
     */
    default PendingChecksums submit(KvCacheGroup group, RequestBlocks request, long stream) {
        return submit(group, request);
    }

    /** Releases native resources; the pure-Java backends hold none. */
    @Override
    default void close() {
    }
}
