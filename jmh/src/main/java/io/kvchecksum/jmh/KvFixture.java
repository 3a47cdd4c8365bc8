package io.kvchecksum.jmh;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvLayouts.PagedShape;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * One request's KV cache for a model shape, filled with seeded pseudo-random bytes, in host memory of a shared arena
 * (a confined arena's memory can only be read by its owner thread, which would keep the CPU backend on one core).
 *
 * <p>The cache holds exactly the request's pages, one segment per layer, and the block table is a seeded shuffle of
 * the page ids, as in an engine whose free list has been churned: the checksum reads pages out of order while the
 * read bound reads the same bytes in address order.
 */
public final class KvFixture implements AutoCloseable {
    /** The seed of the KV bytes and of the block table; recorded so any mismatch can be reproduced. */
    public static final long SEED = 0x6b76636865636bL;

    private final ModelShape shape;
    private final long tokens;
    private final Arena arena;
    private final List<MemorySegment> segments;
    private final KvCacheGroup group;
    private final int[] table;
    private final RequestBlocks request;

    private KvFixture(ModelShape shape, long tokens) {
        this.shape = shape;
        this.tokens = tokens;
        int pages = Math.toIntExact(Math.ceilDiv(tokens, (long) ModelShape.BLOCK_SIZE));
        PagedShape ps = new PagedShape(pages, ModelShape.BLOCK_SIZE, shape.heads(), shape.headDim(), shape.elemBytes());
        long layerBytes = shape.bytesPerToken() / shape.layers() * pages * ModelShape.BLOCK_SIZE;
        this.arena = Arena.ofShared();
        List<MemorySegment> segs = new ArrayList<>();
        for (int l = 0; l < shape.layers(); l++) {
            segs.add(arena.allocate(layerBytes, 64));
        }
        this.segments = List.copyOf(segs);
        // Filling 1 GiB on one core takes seconds: spread the layers over the cores.
        IntStream.range(0, segs.size()).parallel().forEach(l -> fill(segs.get(l), SEED + l));
        List<KvMemory> mem = segs.stream().map(KvMemory::host).map(KvMemory.class::cast).toList();
        this.group = shape.mla() ? KvLayouts.vllmMla(ps, null, mem) : KvLayouts.vllmFlash(ps, 0, null, mem);
        this.table = shuffledPages(pages, new Random(SEED));
        this.request = RequestBlocks.of(table, tokens, ModelShape.BLOCK_SIZE);
    }

    /** Allocates and fills the cache of a request of {@code tokens} tokens (a multiple of the block size). */
    public static KvFixture create(ModelShape shape, long tokens) {
        return new KvFixture(shape, tokens);
    }

    /** {@link #create} for a {@link ModelShape#id()} and a size as {@link ModelShape#tokens} reads it. */
    public static KvFixture of(String shape, String size) {
        ModelShape s = ModelShape.of(shape);
        return create(s, s.tokens(size));
    }

    public ModelShape shape() {
        return shape;
    }

    public long tokens() {
        return tokens;
    }

    /** The layers' memory, one segment per layer, each read whole by the bounds. */
    public List<MemorySegment> segments() {
        return segments;
    }

    public KvCacheGroup group() {
        return group;
    }

    /** The whole request: blocks {@code 0 .. tokens/16 - 1}. */
    public RequestBlocks request() {
        return request;
    }

    /** The first {@code n} tokens of the same request (same pages, same bytes), for checking one oracle against another. */
    public RequestBlocks prefix(long n) {
        long t = Math.min(n, tokens);
        int pages = Math.toIntExact(Math.ceilDiv(t, (long) ModelShape.BLOCK_SIZE));
        return RequestBlocks.of(Arrays.copyOf(table, pages), t, ModelShape.BLOCK_SIZE);
    }

    /** KV bytes the request covers: what every checksum operation reads. */
    public long kvBytes() {
        return tokens * shape.bytesPerToken();
    }

    @Override
    public void close() {
        arena.close();
    }

    /** SplitMix64 of the word index: every byte differs between words, layers and runs of different seeds. */
    private static void fill(MemorySegment s, long seed) {
        long n = s.byteSize() / 8;
        long z0 = seed * 0x9E3779B97F4A7C15L;
        for (long i = 0; i < n; i++) {
            long z = z0 + (i + 1) * 0x9E3779B97F4A7C15L;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            s.setAtIndex(ValueLayout.JAVA_LONG, i, z ^ (z >>> 31));
        }
    }

    /** The page ids {@code 0 .. pages-1} in a Fisher-Yates shuffle drawn from {@code rnd}. */
    static int[] shuffledPages(int pages, Random rnd) {
        int[] t = new int[pages];
        for (int i = 0; i < pages; i++) {
            t[i] = i;
        }
        for (int i = pages - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int x = t[i];
            t[i] = t[j];
            t[j] = x;
        }
        return t;
    }
}
