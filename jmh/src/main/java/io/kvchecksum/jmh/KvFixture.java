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
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * One request's KV cache for a model shape, filled with seeded pseudo-random bytes, in host memory of a shared arena
 * (a confined arena's memory can only be read by its owner thread, which would keep the CPU backend on one core).
 *
 * <p>The cache holds exactly the request's pages, one segment per layer, and the block table is a seeded shuffle of
 * the page ids, as in an engine whose free list has been churned: the checksum reads pages out of order while the
 * read bound reads the same bytes in address order.
 *
 * @param shape the model shape
 * @param tokens the request's tokens
 * @param arena the shared arena holding the memory, closed by {@link #close()}
 * @param segments the layers' memory, one segment per layer, each read whole by the bounds
 * @param group the cache over the segments
 * @param table the block table: the page ids in a seeded shuffle
 * @param request the whole request: blocks {@code 0 .. tokens/16 - 1}
 */
public record KvFixture(ModelShape shape, long tokens, Arena arena, List<MemorySegment> segments, KvCacheGroup group,
        int[] table, RequestBlocks request) implements AutoCloseable {
    /** The seed of the KV bytes and of the block table; recorded so any mismatch can be reproduced. */
    public static final long SEED = 0x6b76636865636bL;

    /** Allocates and fills the cache of a request of {@code tokens} tokens (a multiple of the block size). */
    public static KvFixture create(ModelShape shape, long tokens) {
        int pages = Math.toIntExact(Math.ceilDiv(tokens, (long) ModelShape.BLOCK_SIZE));
        PagedShape ps = new PagedShape(pages, ModelShape.BLOCK_SIZE, shape.heads(), shape.headDim(), shape.elemBytes());
        long layerBytes = shape.bytesPerToken() / shape.layers() * pages * ModelShape.BLOCK_SIZE;
        Arena arena = Arena.ofShared();
        List<MemorySegment> segs = IntStream.range(0, shape.layers()).mapToObj(l -> arena.allocate(layerBytes, 64)).toList();
        // Filling 1 GiB on one core takes seconds: spread the layers over the cores.
        IntStream.range(0, segs.size()).parallel().forEach(l -> fill(segs.get(l), SEED + l));
        List<KvMemory> mem = segs.stream().map(KvMemory::host).map(KvMemory.class::cast).toList();
        KvCacheGroup group = shape.mla() ? KvLayouts.vllmMla(ps, null, mem) : KvLayouts.vllmFlash(ps, 0, null, mem);
        int[] table = shuffledPages(pages, new Random(SEED));
        return new KvFixture(shape, tokens, arena, segs, group, table, RequestBlocks.of(table, tokens, ModelShape.BLOCK_SIZE));
    }

    /** {@link #create} for a {@link ModelShape#id()} and a size as {@link ModelShape#at} reads it (fewer layers in cache where a block of all of them is larger). */
    public static KvFixture of(String shape, String size) {
        ModelShape.Case c = ModelShape.of(shape).at(size);
        return create(c.shape(), c.tokens());
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

    /**
     * SplitMix64 ({@link SplittableRandom}) of the word index, from {@code seed} times its gamma: every byte differs
     * between words, layers and runs of different seeds.
     */
    private static void fill(MemorySegment s, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L);
        for (long i = 0; i < s.byteSize() / 8; i++) {
            s.setAtIndex(ValueLayout.JAVA_LONG, i, rnd.nextLong());
        }
    }

    /** The page ids {@code 0 .. pages-1} in a Fisher-Yates shuffle drawn from {@code rnd}. */
    static int[] shuffledPages(int pages, Random rnd) {
        List<Integer> t = new ArrayList<>(IntStream.range(0, pages).boxed().toList());
        Collections.shuffle(t, rnd);
        return t.stream().mapToInt(Integer::intValue).toArray();
    }
}
