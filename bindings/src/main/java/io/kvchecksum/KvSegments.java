package io.kvchecksum;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One request's KV when its token positions live in several allocations: consecutive position ranges, each held by
 * its own {@link KvCacheGroup} of the same geometry (same layers, heads and cell sizes, in the same order). Jlama is
 * the case in point: it keeps a session's KV in pages of a few positions, each page its own tensor, so no single
 * {@link KvRegion} (one memory per region) can describe a session.
 *
 * <p><b>Addressing.</b> Segment {@code i} holds request positions {@code [start_i, start_i + numPages*pageSize)} of its
 * group, in page order: position {@code t} is in page {@code (t - start_i) / pageSize}, slot
 * {@code (t - start_i) % pageSize}. The first segment starts at position 0 and each next one where the previous one
 * ends. Positions are the addresses: a segmented cache has no page table.
 *
 * <p><b>How it is computed.</b> {@link CompiledPlan#compile} (through {@link #plan} or {@link KvChecksum#compile}) turns
 * each segment's share of the requested blocks into launches, ordinary {@link SlicePlan}s over that segment's group,
 * and places their values into the request's blocks, so every backend computes it unchanged. This is exact, not an
 * approximation: piece indices count from the request's first token, so a segment's values are the same numbers a
 * single allocation would give for the same tokens, and a block's checksum is the sum of its tokens' contributions,
 * so a block that straddles two segments is the sum of the two segments' partial blocks. A segment's share is one
 * plan in blocks of {@code blockSize} from the first block boundary inside it, and, when it starts inside a block, one
 * plan for that block's head in blocks of {@code gcd(start, blockSize)} tokens (the largest size that starts at the
 * segment's first token and nests in the blocks); the partial block at a segment's end is the plan's last block cut at
 * the segment's end, the same rule that cuts a request's last block.
 *
 * <p><b>The one requirement.</b> A plan's page table starts at a page boundary, so a segment's page size must divide
 * the distance from the segment's start to the first position computed in it: for every segment after the first
 * requested token this is the segment's start (distance 0); for the segment holding the first requested token
 * ({@code firstBlock * blockSize}, a consumer's first loaded block) it must divide that distance. A page size that
 * divides both the segment's length and the block size always satisfies it. Otherwise {@link #plan} throws
 * {@link InvalidLayoutException} saying so.
 *
 * <p><b>Checked at configuration.</b> Whether a request may start at a block boundary depends only on the segments'
 * page sizes and the block size, never on the request: {@link #blockBoundaryProblem} and
 * {@link #requireBlockBoundaries} answer it once, when an engine configures its caches, for every block boundary at
 * once, so that a layout some consumer load could not read is refused there rather than in the middle of a request.
 * Segments that pass are planned by {@link #plan} from any first block, for any token count they hold.
 *
 * <p>Immutable and thread-safe, like the groups it holds; the memory they describe must outlive every computation.
 */
public final class KvSegments implements KvSource {

    /**
     * One allocation: request positions {@code [startToken, endToken())} in {@code group}'s pages, in order.
     *
     * @param startToken the request position of slot 0 of page 0
     * @param group the allocation's layout
     */
    public record Segment(long startToken, KvCacheGroup group) {
        /**
         * Validates the components.
         *
         * @throws NullPointerException when {@code group} is null
         * @throws InvalidLayoutException when {@code startToken} is negative
         */
        public Segment {
            Objects.requireNonNull(group, "group");
            if (startToken < 0) {
                throw new InvalidLayoutException("a segment's start must be non-negative, got " + startToken);
            }
        }

        /**
         * {@return one past the last request position the segment holds: {@code startToken + numPages * pageSize}}
         *
         * @throws InvalidLayoutException when that sum overflows a {@code long}
         */
        public long endToken() {
            try {
                return Math.addExact(startToken, Math.multiplyExact(group.numPages(), (long) group.pageSize()));
            } catch (ArithmeticException e) {
                throw new InvalidLayoutException("segment at token " + startToken + ": its end overflows a long");
            }
        }
    }

    private final List<Segment> segments;

    private KvSegments(List<Segment> segments) {
        this.segments = segments;
    }

    /**
     * The request's positions held by {@code groups} in order: the first from position 0, each next one from where the
     * previous one ends.
     *
     * @param groups the allocations in position order, at least one, none null; copied
     * @return the segments, segment {@code i} starting where segment {@code i - 1} ends
     * @throws InvalidLayoutException when the list is empty or null, a group in it is null, or a group's geometry
     *     (layer numbers, heads, K and V pieces per cell, in order) differs from the first group's
     */
    public static KvSegments of(List<KvCacheGroup> groups) {
        if (groups == null || groups.isEmpty()) {
            throw new InvalidLayoutException("segmented KV needs at least one segment");
        }
        List<Segment> out = new ArrayList<>(groups.size());
        long start = 0;
        KvCacheGroup first = groups.get(0);
        for (int i = 0; i < groups.size(); i++) {
            KvCacheGroup g = groups.get(i);
            if (g == null) {
                throw new InvalidLayoutException("segment " + i + " is null");
            }
            requireSameGeometry(first, g, "segment " + i, "segment 0's");
            Segment s = new Segment(start, g);
            out.add(s);
            start = s.endToken();
        }
        return new KvSegments(List.copyOf(out));
    }

    /**
     * Why some request over these segments in blocks of {@code blockSize} tokens could not be planned: a block boundary
     * strictly inside a segment that is not one of the segment's page boundaries, where a consumer's load (after a
     * local prefix hit, or a sliding window's clip) may start. A segment's boundaries are all page boundaries when its
     * page size divides both the distance from its start to its first block boundary and, if it holds a second one,
     * the block size. O(segments).
     *
     * @param blockSize tokens per block, positive
     * @return the first offending segment and boundary, in words, or {@code null} when {@link #plan} accepts every
     *     first block for this block size (for every token count up to {@link #endToken()})
     * @throws InvalidLayoutException when {@code blockSize} is not positive
     */
    public String blockBoundaryProblem(int blockSize) {
        if (blockSize <= 0) {
            throw new InvalidLayoutException("blockSize must be positive, got " + blockSize);
        }
        for (int i = 0; i < segments.size(); i++) {
            Segment s = segments.get(i);
            long end = s.endToken();
            int p = s.group().pageSize();
            // The first block boundary after the segment's start (its start itself is a page boundary).
            long first = (s.startToken() / blockSize + 1) * blockSize;
            long bad;
            if (first >= end) {
                continue;
            } else if ((first - s.startToken()) % p != 0) {
                bad = first;
            } else if (first + blockSize < end && blockSize % p != 0) {
                bad = first + blockSize;
            } else {
                continue;
            }
            return "segment " + i + " (positions " + s.startToken() + ".." + (end - 1) + ", pages of " + p + ") holds block "
                    + "boundary " + bad + " (block " + bad / blockSize + " of " + blockSize + " tokens) " + (bad - s.startToken())
                    + " slots into it, which is not a page boundary: a load starting at that block could not be read; give"
                    + " segments a page size that divides both the block size and the distance from their start to their"
                    + " first block boundary";
        }
        return null;
    }

    /**
     * {@link #blockBoundaryProblem} as a refusal: for an engine's configuration, once, before any request.
     *
     * @param blockSize tokens per block, positive
     * @return these segments, which {@link #plan} accepts from every first block for this block size
     * @throws InvalidLayoutException naming the first segment and block boundary that is not a page boundary, or when
     *     {@code blockSize} is not positive
     */
    public KvSegments requireBlockBoundaries(int blockSize) {
        String problem = blockBoundaryProblem(blockSize);
        if (problem != null) {
            throw new InvalidLayoutException(problem);
        }
        return this;
    }

    /** {@return the segments, in position order: an unmodifiable list of at least one} */
    public List<Segment> segments() {
        return segments;
    }

    /** {@return one past the last request position any segment holds: the last segment's end} */
    public long endToken() {
        return segments.get(segments.size() - 1).endToken();
    }

    /**
     * {@return the first segment's group: the layers, heads and cells every segment has (its memory is segment 0's
     * only)}
     */
    @Override
    public KvCacheGroup geometry() {
        return segments.get(0).group();
    }

    /**
     * {@link #plan(long, long, int, ChecksumSpec)} in the standard mode, without padding.
     *
     * @param numTokens the request's token count, at most {@link #endToken()}
     * @param firstBlock the first block computed (a consumer's first loaded block; 0 for the whole request)
     * @param blockSize tokens per block, positive
     * @return the validated plan
     * @throws InvalidLayoutException as {@link #plan(long, long, int, ChecksumSpec)} says
     */
    public Plan plan(long numTokens, long firstBlock, int blockSize) {
        return plan(numTokens, firstBlock, blockSize, ChecksumSpec.STANDARD);
    }

    /**
     * {@link #plan(long, long, int, ChecksumSpec)} in {@code mode}, without padding.
     *
     * @param numTokens the request's token count, at most {@link #endToken()}
     * @param firstBlock the first block computed
     * @param blockSize tokens per block, positive
     * @param mode the checksum mode, not null
     * @return the validated plan
     * @throws InvalidLayoutException as {@link #plan(long, long, int, ChecksumSpec)} says
     */
    public Plan plan(long numTokens, long firstBlock, int blockSize, ChecksumMode mode) {
        return plan(numTokens, firstBlock, blockSize, ChecksumSpec.of(mode));
    }

    /**
     * Validates a request against the segments and compiles it ({@link CompiledPlan#compile}): blocks
     * {@code firstBlock .. ceil(numTokens / blockSize) - 1} of {@code blockSize} tokens, as {@link RequestBlocks}
     * defines them. Nothing is read.
     *
     * @param numTokens the request's token count, at most {@link #endToken()}
     * @param firstBlock the first block computed (a consumer's first loaded block; 0 for the whole request)
     * @param blockSize tokens per block, positive
     * @param spec the mode and padding, not null
     * @return the validated plan, immutable and reusable while the segments' memory stays the same
     * @throws InvalidLayoutException for arguments {@link RequestBlocks} refuses, tokens past the last segment, a
     *     segment whose page size does not divide the offset of the first requested token in it (see the class
     *     comment), a null {@code spec}, or anything {@link SlicePlan#of} refuses
     */
    public Plan plan(long numTokens, long firstBlock, int blockSize, ChecksumSpec spec) {
        RequestBlocks request = request(numTokens, firstBlock, blockSize);
        return new Plan(CompiledPlan.compile(this, List.of(request), spec));
    }

    /**
     * {@return the request of a segmented cache: its numbers, no page table (positions are the addresses)}
     *
     * @param numTokens the request's token count
     * @param firstBlock the first block computed
     * @param blockSize tokens per block, positive
     * @throws InvalidLayoutException for numbers {@link RequestBlocks} refuses
     */
    public static RequestBlocks request(long numTokens, long firstBlock, int blockSize) {
        return RequestBlocks.of(new int[0], numTokens, firstBlock, blockSize);
    }

    /** The segments' shares of request {@code shape}: what {@link CompiledPlan#compile} turns into launches. */
    List<Share> shares(RequestBlocks shape, ChecksumSpec spec) {
        long numTokens = shape.numTokens();
        int blockSize = shape.blockSize();
        long start = shape.startToken();
        if (numTokens > endToken()) {
            throw new InvalidLayoutException("tokens " + start + ".." + (numTokens - 1) + " requested but the segments hold"
                    + " positions 0.." + (endToken() - 1));
        }
        List<Share> shares = new ArrayList<>();
        for (int i = 0; i < segments.size(); i++) {
            Segment s = segments.get(i);
            long a = Math.max(s.startToken(), start);
            long e = Math.min(s.endToken(), numTokens);
            if (a >= e) {
                continue;
            }
            int p = s.group().pageSize();
            if ((a - s.startToken()) % p != 0) {
                throw new InvalidLayoutException("segment " + i + " (positions " + s.startToken() + ".." + (s.endToken() - 1)
                        + ", pages of " + p + ") would be read from position " + a + ", " + (a - s.startToken())
                        + " slots into it, which is not a page boundary: give segments a page size that divides both"
                        + " their length and the block size " + blockSize);
            }
            long body = Math.ceilDiv(a, (long) blockSize) * blockSize;
            if (body >= e || (body - s.startToken()) % p != 0) {
                // Entirely inside one block, or the block boundary is not a page boundary: one plan of the largest
                // blocks that start at a and nest in the request's blocks.
                shares.add(share(s, a, e, (int) gcd(a, blockSize), spec));
            } else {
                if (body > a) {
                    shares.add(share(s, a, body, (int) gcd(a, blockSize), spec));
                }
                shares.add(share(s, body, e, blockSize, spec));
            }
        }
        return shares;
    }

    /** Tokens {@code [from, to)} of segment {@code s} in blocks of {@code g} tokens ({@code g} divides {@code from}). */
    private static Share share(Segment s, long from, long to, int g, ChecksumSpec spec) {
        int p = s.group().pageSize();
        long firstPage = (from - s.startToken()) / p;
        int pages = Math.toIntExact(Math.ceilDiv(to - from, (long) p));
        int[] table = new int[pages];
        for (int i = 0; i < pages; i++) {
            table[i] = Math.toIntExact(firstPage + i);
        }
        SlicePlan plan = SlicePlan.of(s.group(), RequestBlocks.of(table, to, from / g, g), spec);
        return new Share(plan, from / g, g);
    }

    /** The JDK's gcd (what the other modules' copies can use too); once per segment share, never per token. */
    private static long gcd(long a, long b) {
        return BigInteger.valueOf(a).gcd(BigInteger.valueOf(b)).longValue();
    }

    /**
     * Refuses {@code b} unless it has {@code a}'s geometry: the same layers, heads and cell bytes, in the same order.
     * {@code what} names {@code b} and {@code first} names {@code a}'s in the message.
     */
    static void requireSameGeometry(KvCacheGroup a, KvCacheGroup b, String what, String first) {
        if (a.layers().size() != b.layers().size()) {
            throw new InvalidLayoutException(what + " has " + b.layers().size() + " layers, " + first + " "
                    + a.layers().size() + ": every segment (every source of one plan) must hold the same layers");
        }
        for (int i = 0; i < a.layers().size(); i++) {
            CacheLayer x = a.layers().get(i);
            CacheLayer y = b.layers().get(i);
            boolean same = x.layer() == y.layer() && x.firstHead() == y.firstHead() && x.numHeads() == y.numHeads()
                    && x.k().cellBytes() == y.k().cellBytes() && (x.v() == null) == (y.v() == null)
                    && (x.v() == null || x.v().cellBytes() == y.v().cellBytes());
            if (!same) {
                throw new InvalidLayoutException(what + " layer entry " + i + " (layer " + y.layer() + ", heads "
                        + y.firstHead() + "+" + y.numHeads() + ", " + bytes(y) + ") differs from " + first + " (layer "
                        + x.layer() + ", heads " + x.firstHead() + "+" + x.numHeads() + ", " + bytes(x) + "):"
                        + " every segment (every source of one plan) must have the same geometry, in the same order");
            }
        }
    }

    private static String bytes(CacheLayer l) {
        return l.v() == null ? l.k().cellBytes() + "-byte cells" : "K " + l.k().cellBytes() + " + V " + l.v().cellBytes()
                + " bytes per cell";
    }

    /**
     * One segment's share of a request: {@code plan}'s block {@code k} is block {@code firstSmall + k} of
     * {@code small} tokens, which lies inside request block {@code (firstSmall + k) * small / blockSize}.
     */
    record Share(SlicePlan plan, long firstSmall, int small) {
    }

    /**
     * A validated request over segmented KV, compiled ({@link #compiled()}): the same three results as a
     * {@link SlicePlan} gives (block checksums, slice sums, a submitted computation), each the sum of the segments'
     * shares, from any backend. Immutable; reusable for as long as the memory stays the same.
     */
    public static final class Plan {
        private final CompiledPlan compiled;
        private final RequestBlocks request;

        private Plan(CompiledPlan compiled) {
            this.compiled = compiled;
            this.request = compiled.requests().get(0);
        }

        /** {@return the segments the plan reads} */
        public KvSegments segments() {
            return (KvSegments) compiled.source();
        }

        /** {@return the compiled plan: one request over the segments} */
        public CompiledPlan compiled() {
            return compiled;
        }

        /** {@return the request's token count} */
        public long numTokens() {
            return request.numTokens();
        }

        /** {@return the first block position computed} */
        public long firstBlock() {
            return request.firstBlock();
        }

        /** {@return tokens per block} */
        public int blockSize() {
            return request.blockSize();
        }

        /** {@return the number of block checksums: {@code ceil(numTokens/blockSize) - firstBlock}} */
        public int numBlocks() {
            return request.numBlocks();
        }

        /** {@return the checksum mode} */
        public ChecksumMode mode() {
            return compiled.spec().mode();
        }

        /**
         * {@return the per-segment plans a backend runs, in position order (for tools that want to see the split; a
         * segment may have two, see {@link KvSegments}, and layers of byte cells have their own)}
         */
        public List<SlicePlan> parts() {
            return compiled.launches().stream().map(CompiledPlan.Launch::slices).toList();
        }

        /**
         * {@return {@link KvChecksum#blockChecksums(CompiledPlan)} of the request}
         *
         * @param backend the backend that computes every share, synchronously
         */
        public long[] blockChecksums(KvChecksum backend) {
            return backend.blockChecksums(compiled).get(0);
        }

        /**
         * {@return {@link KvChecksum#sliceSums(CompiledPlan)} of the request: rows in the segments' common slice order}
         *
         * @param backend the backend that computes every share, synchronously
         */
        public SliceSums sliceSums(KvChecksum backend) {
            return backend.sliceSums(compiled).get(0);
        }

        /**
         * {@return {@link KvChecksum#submit(CompiledPlan)} of the request}
         *
         * @param backend the backend that computes every share
         */
        public PendingChecksums submit(KvChecksum backend) {
            return backend.submit(compiled);
        }

        /**
         * {@return {@link KvChecksum#submit(CompiledPlan, long)} of the request on {@code stream}}
         *
         * @param backend the backend that computes every share
         * @param stream the engine's stream or queue handle, as the backend documents it
         */
        public PendingChecksums submit(KvChecksum backend, long stream) {
            return backend.submit(compiled, stream);
        }

        @Override
        public String toString() {
            return "KvSegments.Plan[segments=" + segments().segments().size() + ", launches=" + compiled.launches().size()
                    + ", blocks=" + numBlocks() + " from " + firstBlock() + " of " + blockSize() + ", numTokens="
                    + numTokens() + ", " + mode().wireName() + "]";
        }
    }
}
