package io.kvchecksum.cuda;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * A random paged KV cache in host memory: random page and block sizes, K/V cell sizes (odd and even piece counts),
 * axis orders (head-major, token-major, page-interleaved), padding and offsets (so some layouts are only 8-byte
 * aligned), layers with and without V, a random block table, partial last blocks and a random first block.
 */
record RandomCase(String label, KvCacheGroup group, RequestBlocks request) {

    static RandomCase make(Random rnd, Arena arena, boolean align16) {
        int pageSize = pick(rnd, 1, 2, 3, 4, 5, 8, 16);
        int blockSize = pick(rnd, 1, 2, 3, 4, 7, 16, 32);
        int numPages = 1 + rnd.nextInt(12);
        int numLayers = 1 + rnd.nextInt(4);
        List<CacheLayer> layers = new ArrayList<>();
        Set<Integer> used = new HashSet<>();
        StringBuilder label = new StringBuilder("page " + pageSize + ", block " + blockSize + ", pages " + numPages);
        for (int i = 0; i < numLayers; i++) {
            int layer;
            do {
                layer = rnd.nextInt(100);
            } while (!used.add(layer));
            int heads = 1 + rnd.nextInt(4);
            int firstHead = rnd.nextInt(3) * heads;
            int kPieces = align16 ? 2 * (1 + rnd.nextInt(4)) : 1 + rnd.nextInt(7);
            int vPieces = rnd.nextInt(3) == 0 ? 0 : align16 ? 2 * (1 + rnd.nextInt(4)) : 1 + rnd.nextInt(7);
            KvRegion k = region(rnd, arena, kPieces, heads, pageSize, numPages, align16);
            KvRegion v = vPieces == 0 ? null : region(rnd, arena, vPieces, heads, pageSize, numPages, align16);
            layers.add(new CacheLayer(layer, firstHead, heads, k, v));
            label.append("; L").append(layer).append(" h").append(firstHead).append("+").append(heads).append(" K")
                    .append(kPieces).append(" V").append(vPieces);
        }
        KvCacheGroup g = new KvCacheGroup(layers, pageSize, numPages);
        long numTokens = rnd.nextInt(4) == 0 ? rnd.nextInt(3) : rnd.nextInt(120);
        long firstBlock = rnd.nextInt(3) == 0 ? rnd.nextLong(numTokens / blockSize + 1) : 0;
        int pages = (int) Math.ceilDiv(numTokens - firstBlock * blockSize, (long) pageSize);
        int[] table = new int[pages + rnd.nextInt(3)];
        for (int i = 0; i < table.length; i++) {
            table[i] = rnd.nextInt(numPages);
        }
        RequestBlocks r = RequestBlocks.of(table, numTokens, firstBlock, blockSize);
        label.append("; tokens ").append(numTokens).append(" from block ").append(firstBlock);
        return new RandomCase(label.toString(), g, r);
    }

    private static KvRegion region(Random rnd, Arena arena, int pieces, int heads, int pageSize, int numPages, boolean align16) {
        int cell = 8 * pieces;
        int pad = align16 ? 16 * rnd.nextInt(2) : 8 * rnd.nextInt(2);
        long offset = align16 ? 16L * rnd.nextInt(3) : 8L * rnd.nextInt(3);
        long unit = cell + pad;
        // axis order of (page, token, head), outermost first
        long pageStride;
        long tokenStride;
        long headStride;
        switch (rnd.nextInt(3)) {
            case 0 -> { // page, token, head (vLLM flash: token-major within a page)
                headStride = unit;
                tokenStride = heads * unit;
                pageStride = pageSize * tokenStride;
            }
            case 1 -> { // page, head, token (FlashInfer HND)
                tokenStride = unit;
                headStride = pageSize * unit;
                pageStride = heads * headStride;
            }
            default -> { // head, page, token (each head a separate plane)
                tokenStride = unit;
                pageStride = pageSize * unit;
                headStride = numPages * pageStride;
            }
        }
        long bytes = offset + (numPages - 1) * pageStride + (pageSize - 1) * tokenStride + (heads - 1) * headStride + cell;
        MemorySegment seg = arena.allocate(bytes, 64);
        for (long i = 0; i < bytes; i += 8) {
            seg.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
        return new KvRegion(KvMemory.host(seg), offset, pageStride, tokenStride, headStride, cell);
    }

    private static int pick(Random rnd, int... options) {
        return options[rnd.nextInt(options.length)];
    }
}
