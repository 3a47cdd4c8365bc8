package io.kvchecksum.engine;

import java.util.List;
import java.util.Objects;

/**
 * What a producer sends with a request: every group's block checksums, summed over its workers. The consumer builds
 * the same structure for the blocks its load wrote (in its own block numbering) and hands both to
 * {@link Verifier#compare}.
 *
 * <p>Version 2 (written by {@link PayloadCodec}) carries the producer's TP size and each group's block size;
 * version 1, an earlier revision's form, carries neither and is only read. A consumer-side payload may list a group
 * several times: one entry per replica check (see {@link Aggregator}).
 *
 * @param version 1 or 2
 * @param tpSize the producer's TP size, informational; {@code null} exactly in version 1
 * @param numTokens the request's token count ({@code num_computed_tokens}), non-negative
 * @param groups the groups, in any order
 */
public record ChecksumPayload(int version, Integer tpSize, long numTokens, List<GroupChecksums> groups) {
    /** The version {@link PayloadCodec} writes. */
    public static final int CURRENT_VERSION = 2;

    public ChecksumPayload {
        groups = List.copyOf(Objects.requireNonNull(groups, "groups"));
        if (version != 1 && version != 2) {
            throw new IllegalArgumentException("unknown payload version " + version + " (known: 1, 2)");
        }
        if (numTokens < 0) {
            throw new IllegalArgumentException("numTokens must be non-negative, got " + numTokens);
        }
        if (version == 1) {
            if (tpSize != null) {
                throw new IllegalArgumentException("a version-1 payload carries no tpSize");
            }
            for (GroupChecksums g : groups) {
                if (g.blockSize() != null) {
                    throw new IllegalArgumentException("a version-1 payload carries no block size (group " + g.groupId() + ")");
                }
            }
        } else {
            if (tpSize == null || tpSize <= 0) {
                throw new IllegalArgumentException("a version-2 payload needs a positive tpSize, got " + tpSize);
            }
            for (GroupChecksums g : groups) {
                String problem = rangeProblem(g, numTokens);
                if (problem != null) {
                    throw new IllegalArgumentException(problem);
                }
            }
        }
    }

    /** A current-version payload. */
    public static ChecksumPayload of(int tpSize, long numTokens, List<GroupChecksums> groups) {
        return new ChecksumPayload(CURRENT_VERSION, tpSize, numTokens, groups);
    }

    /**
     * Why a version-2 group's blocks do not run from {@code start} to the request's last block, or {@code null} when
     * they do.
     */
    static String rangeProblem(GroupChecksums g, long numTokens) {
        if (g.blockSize() == null) {
            return "group " + g.groupId() + " has no block size";
        }
        long blocks = Math.ceilDiv(numTokens, (long) g.blockSize());
        if (g.start() > blocks || blocks - g.start() != g.numBlocks()) {
            return "group " + g.groupId() + ": " + g.numBlocks() + " values from block " + g.start() + " do not end at block "
                    + blocks + " (" + numTokens + " tokens of block size " + g.blockSize() + ")";
        }
        return null;
    }
}
