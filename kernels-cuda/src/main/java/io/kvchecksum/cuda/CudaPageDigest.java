package io.kvchecksum.cuda;

import io.kvchecksum.Adler32Parts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.Pending;

import java.lang.foreign.MemorySegment;
import java.util.function.ToLongFunction;

/**
 * SGLang's page digest on the GPU: the plan's stream cut into pieces of at most {@value #PIECE} bytes (never across
 * runs), each piece's Adler-32 computed by one warp of {@code kvc_page_digest} ({@code kvchecksum_digest.cuh}), the
 * values copied back and joined in stream order with {@link Adler32Parts#combine}. One upload (the piece table), one
 * launch, one result copy, on the backend's own stream or on an engine's ({@link CudaBackend#submitPageDigest}).
 */
final class CudaPageDigest {
    /** KVC_DIGEST_PIECE: the kernel's 32-bit lane sums are exact up to this size. */
    static final int PIECE = 8192;

    private CudaPageDigest() {
    }

    /** The digest on the backend's own stream, waited for. */
    static long digest(CudaBackend backend, ContextResources resources, PageDigestPlan plan, ToLongFunction<KvMemory> address) {
        try (Pending<Long> p = start(backend, resources, resources.ownStream, plan, address)) {
            return p.get();
        }
    }

    /**
     * Enqueues the piece table's upload, the launch and the result copy on {@code stream} and returns at once; the
     * pieces are joined when the digest is read.
     */
    static Pending<Long> start(CudaBackend backend, ContextResources resources, long stream, PageDigestPlan plan,
            ToLongFunction<KvMemory> address) {
        long count = 0;
        for (PageDigestPlan.Run r : plan.runs()) {
            count += (r.length() + PIECE - 1) / PIECE;
        }
        if (count == 0) {
            return Pending.completed(Adler32Parts.EMPTY);
        }
        if (count > Integer.MAX_VALUE / KernelAbi.DIGEST_PIECE_BYTES) {
            throw new io.kvchecksum.InvalidLayoutException("the page digest's stream of " + plan.totalBytes()
                    + " bytes has more pieces than one launch takes: split the request");
        }
        int n = (int) count;
        long[] lengths = new long[n];
        long upload = (long) n * KernelAbi.DIGEST_PIECE_BYTES;
        int grid = (n + LaunchPlanner.THREADS / 32 - 1) / (LaunchPlanner.THREADS / 32);
        CudaPending p = backend.job(resources, stream, upload, n, null, (host, dUpload, dOut, cached) -> {
            int i = 0;
            for (PageDigestPlan.Run r : plan.runs()) {
                long base = address.applyAsLong(r.memory()) + r.offset();
                for (long o = 0; o < r.length(); o += PIECE) {
                    int len = (int) Math.min(PIECE, r.length() - o);
                    KernelAbi.digestPiece(host, (long) i * KernelAbi.DIGEST_PIECE_BYTES, base + o, len);
                    lengths[i++] = len;
                }
            }
            KernelAbi.digestParams(host, CudaBackend.paramsOffset(upload), dUpload, dOut, n);
            MemorySegment h = host;
            return () -> backend.launch(CudaBackend.PAGE_DIGEST, grid, 1, stream, h, upload);
        });
        return Pending.of(p, parts -> {
            long acc = Adler32Parts.EMPTY;
            for (int i = 0; i < n; i++) {
                acc = Adler32Parts.combine(acc, parts[i], lengths[i]);
            }
            return acc;
        });
    }
}
