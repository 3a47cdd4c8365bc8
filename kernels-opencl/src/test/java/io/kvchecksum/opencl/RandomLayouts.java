package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * Seeded random paged caches: random dimension orders, padding (odd sizes too, so pieces are unaligned), offsets,
 * K/V split or interleaved, several layers in one segment or one each, native or heap memory, random block tables.
 */
final class RandomLayouts {
    record Case(KvCacheGroup group, RequestBlocks request, String label) {
    }

    private RandomLayouts() {
    }

    static Case random(long seed, Arena arena) {
        Random r = new Random(seed);
        int pageSize = 1 + r.nextInt(8);
        int blockSize = 1 + r.nextInt(12);
        long firstBlock = r.nextInt(4) == 0 ? 0 : r.nextInt(4);
        long start = firstBlock * blockSize;
        long numTokens = start + r.nextInt(pageSize * 8 + 1);
        int pagesNeeded = (int) Math.ceilDiv(numTokens - start, pageSize);
        int numPages = Math.max(1, pagesNeeded + r.nextInt(5));
        boolean unaligned = r.nextBoolean();
        boolean oneSegment = r.nextBoolean();
        boolean heap = r.nextInt(3) == 0;

        int nLayers = 1 + r.nextInt(3);
        Set<Integer> numbers = new LinkedHashSet<>();
        while (numbers.size() < nLayers) {
            numbers.add(r.nextInt(100));
        }
        // Plan every region's strides first, then place them.
        record Shape(int layer, int firstHead, int heads, int kBytes, int vBytes, boolean interleaved, long[] strides,
                     long size) {
        }
        List<Shape> shapes = new ArrayList<>();
        for (int layer : numbers) {
            int heads = 1 + r.nextInt(3);
            int kBytes = 8 * (1 + r.nextInt(4));
            int vBytes = r.nextInt(4) == 0 ? 0 : 8 * (1 + r.nextInt(4));
            boolean interleaved = vBytes > 0 && r.nextBoolean();
            long cell = interleaved ? kBytes + vBytes : Math.max(kBytes, vBytes);
            long[] strides = new long[3]; // page, token, head
            int[] order = permutation(r);
            long stride = cell + pad(r, unaligned);
            long[] counts = {numPages, pageSize, heads};
            for (int d = 2; d >= 0; d--) {
                int dim = order[d];
                strides[dim] = stride;
                stride = stride * counts[dim] + pad(r, unaligned);
            }
            shapes.add(new Shape(layer, r.nextInt(4) * heads, heads, kBytes, vBytes, interleaved, strides, stride));
        }
        List<long[]> placements = new ArrayList<>(); // per region: {segment index, offset}
        List<Long> segmentSizes = new ArrayList<>();
        long cursor = 0;
        for (Shape s : shapes) {
            int regions = s.vBytes == 0 || s.interleaved ? 1 : 2;
            for (int i = 0; i < regions; i++) {
                long offset = (oneSegment ? cursor : 0) + (unaligned ? r.nextInt(40) : 8L * r.nextInt(5));
                long end = offset + s.size + 16;
                if (oneSegment) {
                    placements.add(new long[] {0, offset});
                    cursor = end;
                } else {
                    placements.add(new long[] {segmentSizes.size(), offset});
                    segmentSizes.add(end + r.nextInt(9));
                }
            }
        }
        if (oneSegment) {
            segmentSizes.add(cursor + r.nextInt(9));
        }
        List<KvMemory> memories = new ArrayList<>();
        for (long size : segmentSizes) {
            MemorySegment seg = heap ? MemorySegment.ofArray(new byte[(int) size]) : arena.allocate(size, 8);
            byte[] bytes = new byte[(int) size];
            r.nextBytes(bytes);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, seg, 0, size);
            memories.add(KvMemory.host(seg));
        }
        List<CacheLayer> layers = new ArrayList<>();
        int p = 0;
        StringBuilder label = new StringBuilder();
        for (Shape s : shapes) {
            long[] kp = placements.get(p++);
            long[] st = s.strides;
            KvRegion k = new KvRegion(memories.get((int) kp[0]), kp[1], st[0], st[1], st[2], s.kBytes);
            KvRegion v = null;
            if (s.vBytes > 0) {
                long[] vp = s.interleaved ? new long[] {kp[0], kp[1] + s.kBytes} : placements.get(p++);
                v = new KvRegion(memories.get((int) vp[0]), vp[1], st[0], st[1], st[2], s.vBytes);
            }
            layers.add(new CacheLayer(s.layer, s.firstHead, s.heads, k, v));
            label.append(" L").append(s.layer).append('x').append(s.heads).append(s.interleaved ? "i" : "");
        }
        int[] table = new int[pagesNeeded + r.nextInt(2)];
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < numPages; i++) {
            ids.add(i);
        }
        java.util.Collections.shuffle(ids, r);
        for (int i = 0; i < table.length; i++) {
            table[i] = ids.get(i % ids.size());
        }
        KvCacheGroup g = KvCacheGroup.of(pageSize, numPages, layers);
        RequestBlocks req = RequestBlocks.of(table, numTokens, firstBlock, blockSize);
        return new Case(g, req, "seed " + seed + ":" + label + " page " + pageSize + " block " + blockSize + " tokens "
                + numTokens + " from block " + firstBlock + (unaligned ? " unaligned" : "") + (heap ? " heap" : "")
                + (oneSegment ? " one-segment" : ""));
    }

    private static long pad(Random r, boolean unaligned) {
        return unaligned ? r.nextInt(12) : 8L * r.nextInt(2);
    }

    private static int[] permutation(Random r) {
        int[] a = {0, 1, 2};
        for (int i = 2; i > 0; i--) {
            int j = r.nextInt(i + 1);
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        return a;
    }
}
