package io.kvchecksum;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Seeded random paged caches with random strides, for cross-backend tests. */
final class RandomCaches {
    record Case(KvCacheGroup group, RequestBlocks request, String label) {
    }

    private RandomCaches() {
    }

    static Case random(Arena arena, Random rnd, int maxTokens) {
        return random(arena, rnd, 1, maxTokens);
    }

    /** A random case of {@code minTokens .. maxTokens} tokens. */
    static Case random(Arena arena, Random rnd, int minTokens, int maxTokens) {
        int layers = 1 + rnd.nextInt(3);
        int heads = 1 + rnd.nextInt(4);
        // 32 pieces (bf16 head dim 128) is the common cell and has a loop of its own in the vector kernel.
        int kPieces = rnd.nextInt(4) == 0 ? 32 : 1 + rnd.nextInt(20);
        int vPieces = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(4) == 0 ? 32 : 1 + rnd.nextInt(20);
        int pageSize = 1 + rnd.nextInt(8);
        int blockSize = 1 + rnd.nextInt(20);
        long numTokens = minTokens + rnd.nextInt(maxTokens - minTokens + 1);
        long firstBlock = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt((int) Math.ceilDiv(numTokens, blockSize));
        long start = firstBlock * blockSize;
        int pagesNeeded = (int) Math.ceilDiv(numTokens - start, pageSize);
        int numPages = pagesNeeded + rnd.nextInt(4);
        // token-major or head-major, with random padding
        boolean headMajor = rnd.nextBoolean();
        int cellK = 8 * kPieces, cellV = 8 * vPieces;
        int pad = 8 * rnd.nextInt(3);
        long headStride, tokenStride, pageStride;
        if (headMajor) {
            tokenStride = cellK + cellV + pad;
            headStride = tokenStride * pageSize + pad;
            pageStride = headStride * heads + pad;
        } else {
            headStride = cellK + cellV + pad;
            tokenStride = headStride * heads + pad;
            pageStride = tokenStride * pageSize + pad;
        }
        int misalign = rnd.nextInt(8);
        long bytes = misalign + pageStride * numPages + 64;
        List<CacheLayer> ls = new ArrayList<>();
        List<Integer> used = new ArrayList<>();
        for (int i = 0; i < layers; i++) {
            MemorySegment seg = arena.allocate(bytes, 8);
            for (long o = 0; o + 8 <= bytes; o += 8) {
                seg.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, o, rnd.nextLong());
            }
            KvMemory m = KvMemory.host(seg);
            int layer;
            do {
                layer = rnd.nextInt(100);
            } while (used.contains(layer));
            used.add(layer);
            int firstHead = rnd.nextInt(3) * heads;
            KvRegion k = new KvRegion(m, misalign, pageStride, tokenStride, headStride, cellK);
            KvRegion v = vPieces == 0 ? null : new KvRegion(m, misalign + cellK, pageStride, tokenStride, headStride, cellV);
            ls.add(new CacheLayer(layer, firstHead, heads, k, v));
        }
        int[] table = new int[pagesNeeded];
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < numPages; i++) {
            ids.add(i);
        }
        java.util.Collections.shuffle(ids, rnd);
        for (int i = 0; i < pagesNeeded; i++) {
            table[i] = ids.get(i);
        }
        String label = layers + "L" + heads + "H k" + kPieces + "v" + vPieces + " page" + pageSize + " B" + blockSize + " N"
                + numTokens + " F" + firstBlock + (headMajor ? " HND" : " NHD");
        return new Case(KvCacheGroup.of(pageSize, numPages, ls), RequestBlocks.of(table, numTokens, firstBlock, blockSize), label);
    }
}
