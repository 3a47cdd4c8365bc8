package io.kvchecksum.spi;

import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.Pending;
import io.kvchecksum.PendingChecksums;

import java.util.OptionalLong;

/**
 * What differs per backend, and nothing else: running a {@link CompiledPlan} (on the backend's own stream, or on an
 * engine's), and the Adler-32 page digest primitive (on the backend's own stream, or on an engine's). Everything the same for every backend (validation, the
 * empty-request shortcut, combination, rechunking, closing on failure) is done once by {@link io.kvchecksum.KvChecksum},
 * which wraps a backend ({@link io.kvchecksum.KvChecksum#of}); a backend never sees a plan compiled against limits
 * other than its own {@link #limits()}, nor a launch without blocks.
 *
 * <p>Implementations must be thread-safe: several threads may run plans on one instance at once.
 */
public interface Backend extends AutoCloseable {

    /** {@return the backend's name as {@link io.kvchecksum.KvChecksums#byName} accepts it} */
    String name();

    /** {@return what exactly runs: the name plus implementation details (device, vector width, threads)} */
    String description();

    /** {@return what this backend can read, as data: the compiler refuses anything else before a kernel runs} */
    BackendLimits limits();

    /**
     * Runs every launch of {@code plan} and returns the per-request results, concatenated in request order: request
     * {@code r}'s values start at {@link CompiledPlan#offset(CompiledPlan.Output, int)}. A backend that computes launch
     * by launch places their values with {@link CompiledPlan#gather}. GPU backends enqueue and return at once; CPU
     * backends compute on the calling thread and return completed values.
     *
     * @param plan the compiled plan, checked against {@link #limits()} for this kind of stream
     * @param output block checksums or slice sums
     * @param stream the engine's stream or queue handle (as the backend documents it), or empty for the backend's own
     * @return the pending values; the caller closes it
     */
    PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream);

    /**
     * {@return SGLang's page digest: Adler-32 of the plan's ordered byte stream, in {@code [0, 2^32)}}
     *
     * @param plan the resolved byte stream
     * @throws io.kvchecksum.InvalidLayoutException when the plan's memory is of a kind this backend cannot read
     */
    long pageDigest(PageDigestPlan plan);

    /**
     * {@return {@link #pageDigest} enqueued on the engine's {@code stream} (as the backend documents it), ordered after
     * the work already on it, without waiting for the device} GPU backends override it; this default, for CPU
     * backends (which have no stream), computes the digest on the calling thread and returns it completed.
     *
     * @param plan the resolved byte stream, not null; its memory must stay alive and unchanged until the handle is done
     * @param stream the engine's stream or queue handle
     * @throws io.kvchecksum.InvalidLayoutException when the plan's memory is of a kind this backend cannot read on a
     *     stream
     */
    default Pending<Long> submitPageDigest(PageDigestPlan plan, long stream) {
        return Pending.completed(pageDigest(plan));
    }

    /**
     * Runs a verifying copy: every launch of {@code plan} copies its pairs' cells from the source to the destination
     * and returns the destination's block checksums over them, {@link CopyPlan#numBlocks()} values (both launches'
     * values added). GPU backends enqueue and return at once (stream-ordered, no host synchronization); CPU backends
     * copy on the calling thread and return completed values. The front never calls it for an empty plan, nor for a
     * plan outside {@link BackendLimits#copies()} (for this kind of stream).
     *
     * <p>This default, for backends without the copy (their limits declare no copy route, so the front refuses before
     * calling it), refuses with the backend's name.
     *
     * @param plan the compiled copy, checked against {@link #limits()} for this kind of stream
     * @param stream the engine's stream or queue handle (as the backend documents it), or empty for the backend's own
     * @return the pending block checksums; the caller closes it
     * @throws UnsupportedOperationException when the backend does not implement the copy
     */
    default PendingChecksums runCopy(CopyPlan plan, OptionalLong stream) {
        throw new UnsupportedOperationException("backend '" + name() + "' does not implement the verifying copy"
                + " (copyAndChecksum) yet");
    }

    /** Releases native resources; the pure-Java backends hold none. */
    @Override
    void close();
}
