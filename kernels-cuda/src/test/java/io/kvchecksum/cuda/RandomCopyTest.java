package io.kvchecksum.cuda;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random verifying copies through the CUDA backend's copy kernels (run on the CPU by the host test library) against the
 * reference backend's literal copy-then-checksum: NHD and HND on either side, page sizes from 1 to 16 on each side,
 * cells of whole pieces (even and odd piece counts, K only or K and V) and byte cells, every alignment class (16, 8 and
 * none) on each side, head ranges that overlap partly (TP re-sharding), both modes, grids cut into launches of at most
 * 3 blocks. Every value is compared exactly, and both buffers byte for byte. The seed is printed; the kernels of all
 * three kinds must have run.
 */
class RandomCopyTest {
    private static final long SEED = 0xC0_9E57L;
    private static final int CASES = 120;

    /** One side of a copy: its buffer's bytes and the group over them. */
    record Side(MemorySegment bytes, int pageSize, int numPages, boolean hnd, int align, int firstHead, int numHeads) {
    }

    @Test
    void randomCopiesMatchTheReferenceByteForByte() {
        System.out.println("RandomCopyTest seed = 0x" + Long.toHexString(SEED));
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        fake.smCount = 2;
        Random rnd = new Random(SEED);
        Map<String, Integer> kernels = new TreeMap<>();
        try (Arena arena = Arena.ofShared(); KvChecksum cuda = NamedBackend.cudaHost(fake, 3)) {
            KvChecksum reference = KvChecksums.reference();
            for (int c = 0; c < CASES; c++) {
                int layers = 1 + rnd.nextInt(2);
                int kBytes = pick(rnd, 16, 32, 64, 128, 16, 32, 8, 24, 40, 6, 12, 13);
                int vBytes = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(3) != 0 ? kBytes : pick(rnd, 8, 16, 24, 12);
                boolean bytes = kBytes % 8 != 0 || vBytes % 8 != 0;
                int totalHeads = 1 + rnd.nextInt(6);
                int sa = rnd.nextInt(totalHeads);
                int sb = sa + 1 + rnd.nextInt(totalHeads - sa);
                int da = rnd.nextInt(sb);             // overlaps [sa, sb): da < sb and db > sa
                int db = Math.max(da, sa) + 1 + rnd.nextInt(totalHeads - Math.max(da, sa));
                int blockSize = pick(rnd, 1, 3, 8, 16);
                long numTokens = 1 + rnd.nextInt(70);
                long firstBlock = numTokens > blockSize && rnd.nextBoolean() ? 1 : 0;
                long start = firstBlock * blockSize;
                int ps = pick(rnd, 1, 2, 3, 4, 8, 16);
                int pd = pick(rnd, 1, 2, 4, 5, 8, 16);
                int srcPagesNeeded = (int) Math.ceilDiv(numTokens - start, (long) ps);
                int dstPagesNeeded = (int) Math.ceilDiv(numTokens - start, (long) pd);
                Side src = side(rnd, arena, ps, srcPagesNeeded + rnd.nextInt(3), sa, sb - sa, layers, kBytes, vBytes);
                Side dst = side(rnd, arena, pd, dstPagesNeeded + rnd.nextInt(3), da, db - da, layers, kBytes, vBytes);
                int[] srcTable = IntStream.range(0, srcPagesNeeded).map(i -> rnd.nextInt(src.numPages())).toArray();
                List<Integer> ids = new ArrayList<>(IntStream.range(0, dst.numPages()).boxed().toList());
                Collections.shuffle(ids, rnd);
                int[] dstTable = ids.subList(0, dstPagesNeeded).stream().mapToInt(i -> i).toArray();
                RequestBlocks sq = RequestBlocks.of(srcTable, numTokens, firstBlock, blockSize);
                RequestBlocks dq = RequestBlocks.of(dstTable, numTokens, firstBlock, blockSize);
                ChecksumSpec spec = new ChecksumSpec(rnd.nextBoolean() ? ChecksumMode.STANDARD : ChecksumMode.MIXED,
                        bytes || rnd.nextBoolean() ? CellPadding.ZEROS : CellPadding.NONE);
                String who = "case " + c + ": " + layers + " layers, K " + kBytes + " V " + vBytes + ", heads " + sa + ".." + (sb - 1)
                        + " into " + da + ".." + (db - 1) + ", Ps " + ps + (src.hnd() ? " HND" : " NHD") + " align " + src.align()
                        + ", Pd " + pd + (dst.hnd() ? " HND" : " NHD") + " align " + dst.align() + ", B " + blockSize + ", N " + numTokens
                        + ", F " + firstBlock + ", " + spec;

                // The reference on host copies of the buffers; the CUDA backend on simulated device copies of the same bytes.
                MemorySegment refSrc = arena.allocate(src.bytes().byteSize(), 64).copyFrom(src.bytes());
                MemorySegment refDst = arena.allocate(dst.bytes().byteSize(), 64).copyFrom(dst.bytes());
                long dSrc = fake.upload(src.bytes());
                long dDst = fake.upload(dst.bytes());
                try {
                    CopyPlan refPlan = reference.compileCopy(group(src, KvMemory.host(refSrc), layers, kBytes, vBytes), sq,
                            group(dst, KvMemory.host(refDst), layers, kBytes, vBytes), dq, spec);
                    long[] want = reference.copyAndChecksum(refPlan);
                    CopyPlan plan = cuda.compileCopy(group(src, KvMemory.device(dSrc, src.bytes().byteSize()), layers, kBytes, vBytes), sq,
                            group(dst, KvMemory.device(dDst, dst.bytes().byteSize()), layers, kBytes, vBytes), dq, spec);
                    for (CopyPlan.Launch l : plan.launches()) {
                        kernels.merge(CudaBackend.copyKernel(l), 1, Integer::sum);
                    }
                    long[] got = cuda.copyAndChecksum(plan);
                    assertArrayEquals(want, got, who);
                    MemorySegment back = arena.allocate(dst.bytes().byteSize(), 64);
                    fake.cuMemcpyDtoHAsync(back.address(), dDst, back.byteSize(), 0);
                    assertEquals(-1, refDst.mismatch(back), who + ": destination bytes");
                    MemorySegment srcBack = arena.allocate(src.bytes().byteSize(), 64);
                    fake.cuMemcpyDtoHAsync(srcBack.address(), dSrc, srcBack.byteSize(), 0);
                    assertEquals(-1, src.bytes().mismatch(srcBack), who + ": source bytes");
                } finally {
                    fake.cuMemFree(dSrc);
                    fake.cuMemFree(dDst);
                }
            }
        }
        System.out.println("RandomCopyTest kernels (launches): " + kernels);
        for (String k : List.of(CudaBackend.COPY_16B, CudaBackend.COPY_8B, CudaBackend.COPY_BYTE_CELLS)) {
            assertTrue(kernels.containsKey(k), "no case ran " + k + ": " + kernels);
        }
    }

    private static int pick(Random rnd, int... values) {
        return values[rnd.nextInt(values.length)];
    }

    /** A side's buffer: per layer a K region then a V region, NHD or HND, every offset and stride a multiple of align. */
    private static Side side(Random rnd, Arena arena, int pageSize, int numPages, int firstHead, int numHeads, int layers, int kBytes,
            int vBytes) {
        int align = pick(rnd, 16, 16, 16, 8, 8, 1);
        boolean hnd = rnd.nextBoolean();
        long bytes = 64;
        for (int l = 0; l < layers; l++) {
            for (int cell : vBytes == 0 ? new int[] {kBytes} : new int[] {kBytes, vBytes}) {
                bytes += regionBytes(pageSize, numPages, numHeads, cell, align) + 2L * align + 64;
            }
        }
        MemorySegment m = arena.allocate(bytes, 64);
        for (long i = 0; i < bytes; i++) {
            m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return new Side(m, pageSize, numPages, hnd, align, firstHead, numHeads);
    }

    /** Cells padded to the alignment (plus one more unit where align is 1, so cells do not touch). */
    private static long cellStride(int cell, int align) {
        return align == 1 ? cell + 3 : (cell + align - 1) / align * align;
    }

    private static long regionBytes(int pageSize, int numPages, int heads, int cell, int align) {
        return (long) numPages * pageStride(pageSize, heads, cell, align);
    }

    private static long pageStride(int pageSize, int heads, int cell, int align) {
        return (long) pageSize * heads * cellStride(cell, align) + (align == 1 ? 5 : align);
    }

    private static KvCacheGroup group(Side s, KvMemory memory, int layers, int kBytes, int vBytes) {
        long at = s.align() == 1 ? 3 : s.align();
        List<CacheLayer> out = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            KvRegion[] r = new KvRegion[2];
            int[] cells = vBytes == 0 ? new int[] {kBytes} : new int[] {kBytes, vBytes};
            for (int x = 0; x < cells.length; x++) {
                long cs = cellStride(cells[x], s.align());
                long page = pageStride(s.pageSize(), s.numHeads(), cells[x], s.align());
                long token = s.hnd() ? cs : s.numHeads() * cs;
                long head = s.hnd() ? s.pageSize() * cs : cs;
                r[x] = new KvRegion(memory, at, page, token, head, cells[x]);
                at += regionBytes(s.pageSize(), s.numPages(), s.numHeads(), cells[x], s.align()) + (s.align() == 1 ? 7 : s.align());
            }
            out.add(new CacheLayer(2 * l + 1, s.firstHead(), s.numHeads(), r[0], r[1]));
        }
        return new KvCacheGroup(out, s.pageSize(), s.numPages());
    }
}
