package io.kvchecksum.cli;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.cli.dump.KvDump;

import java.io.PrintWriter;

/**
 * Block checksums of a dump, computed in pieces of whole blocks so a long run can show progress: each piece is a
 * request of its own blocks (same block size, a later first block, its own pages of the table), and block checksums
 * do not depend on how the blocks are grouped into calls. Without a progress bar to draw, one call does it all.
 */
final class ChunkedChecksums {
    /** KV bytes per call: small enough for a smooth progress bar, large enough that per-call costs do not show. */
    static volatile long chunkBytes = 64L << 20;

    private ChunkedChecksums() {
    }

    /** The block checksums of {@code dump} in {@code mode}; a progress bar named {@code label} when {@code shown}. */
    static long[] blockChecksums(KvChecksum backend, KvDump dump, ChecksumMode mode, PrintWriter err, boolean shown,
            String label) {
        try (Progress progress = new Progress(err, shown, label, dump.kvBytes())) {
            return blockChecksums(backend, dump, mode, progress);
        }
    }

    private static long[] blockChecksums(KvChecksum backend, KvDump dump, ChecksumMode mode, Progress progress) {
        RequestBlocks r = dump.request();
        long perToken = dump.group().bytesPerToken();
        if (dump.kvBytes() <= chunkBytes || !progress.enabled()) {
            long[] v = backend.blockChecksums(SlicePlan.of(dump.group(), r, new ChecksumSpec(mode, dump.padding())));
            progress.update(dump.kvBytes());
            return v;
        }
        int blocks = r.numBlocks();
        int perChunk = (int) Math.max(1, Math.min(blocks, chunkBytes / Math.max(1, perToken * r.blockSize())));
        long[] out = new long[blocks];
        long done = 0;
        for (int i = 0; i < blocks; i += perChunk) {
            long fb = r.firstBlock() + i;
            int nb = Math.min(perChunk, blocks - i);
            long end = Math.min((fb + nb) * r.blockSize(), r.numTokens());
            RequestBlocks part = RequestBlocks.of(dump.tablePart(fb * r.blockSize(), end), end, fb, r.blockSize());
            long[] v = backend.blockChecksums(SlicePlan.of(dump.group(), part, new ChecksumSpec(mode, dump.padding())));
            System.arraycopy(v, 0, out, i, nb);
            done += (end - fb * r.blockSize()) * perToken;
            progress.update(done);
        }
        return out;
    }
}
