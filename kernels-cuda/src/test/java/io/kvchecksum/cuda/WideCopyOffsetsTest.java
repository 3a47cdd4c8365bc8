package io.kvchecksum.cuda;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static io.kvchecksum.cuda.RecordOnlyCuda.at;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The verifying copy's 64-bit fields, as {@link WideOffsetsTest} checks the checksum kernels': source and destination
 * KV at <b>fake device addresses</b> high in the 64-bit space, pages of more than 3 GiB (page x page stride past 2^32)
 * and request positions past 2^33. The driver records every launch and decodes {@code KvcCopyParams}, both sides'
 * {@code KvcSlice}s and both page tables from what was uploaded, and <b>executes nothing</b>; the expected values come
 * from the layout, not from the code under test.
 */
class WideCopyOffsetsTest {
    private static final long STREAM = 0xC0_971DEL;
    private static final long SOURCE = 0x7F12_3400_0000L;
    private static final long DESTINATION = 0x7E00_0000_0000L;
    private static final long GIB = 1L << 30;

    /** One decoded launch of a copy kernel. */
    record Launch(String kernel, int gx, int gy, long stream, long[] src, long[] dst, int[] srcTable, int[] dstTable,
            long startToken, long firstBlock, long numTokens, int blockSize, int srcPageSize, int dstPageSize, int numPairs,
            int numBlocks) {
    }

    @RegisterExtension
    final RecordOnlyCuda<Launch> recorder = new RecordOnlyCuda<>(WideCopyOffsetsTest::decode, d -> d);

    private static Launch decode(String kernel, int gx, int gy, long stream, long argv) {
        MemorySegment p = at(at(argv, 8).get(ValueLayout.JAVA_LONG, 0), KernelAbi.COPY_PARAMS_BYTES);
        int pairs = p.get(KernelAbi.U32, KernelAbi.COPY_NUM_PAIRS);
        long start = p.get(KernelAbi.U64, KernelAbi.COPY_START_TOKEN);
        long tokens = p.get(KernelAbi.U64, KernelAbi.COPY_NUM_TOKENS);
        int ps = p.get(KernelAbi.U32, KernelAbi.COPY_SRC_PAGE_SIZE);
        int pd = p.get(KernelAbi.U32, KernelAbi.COPY_DST_PAGE_SIZE);
        long[] src = at(p.get(KernelAbi.U64, KernelAbi.COPY_SRC), (long) pairs * KernelAbi.SLICE_BYTES).toArray(KernelAbi.U64);
        long[] dst = at(p.get(KernelAbi.U64, KernelAbi.COPY_DST), (long) pairs * KernelAbi.SLICE_BYTES).toArray(KernelAbi.U64);
        int[] st = at(p.get(KernelAbi.U64, KernelAbi.COPY_SRC_TABLE), 4 * Math.ceilDiv(tokens - start, (long) ps)).toArray(ValueLayout.JAVA_INT);
        int[] dt = at(p.get(KernelAbi.U64, KernelAbi.COPY_DST_TABLE), 4 * Math.ceilDiv(tokens - start, (long) pd)).toArray(ValueLayout.JAVA_INT);
        return new Launch(kernel, gx, gy, stream, src, dst, st, dt, start, p.get(KernelAbi.U64, KernelAbi.COPY_FIRST_BLOCK), tokens,
                p.get(KernelAbi.U32, KernelAbi.COPY_BLOCK_SIZE), ps, pd, pairs, p.get(KernelAbi.U32, KernelAbi.COPY_NUM_BLOCKS));
    }

    /** K: pages of 3 GiB + 16 bytes; V: pages of 5 GiB + 64 KiB at an offset past 2^35; 2 heads of layer 7 from head 4. */
    private static KvCacheGroup group(long address, int pageSize, int numPages) {
        long k0 = 0x1_2345_6780L;
        long v0 = 0x9_0000_0000L + 0x40;
        long bytes = v0 + (numPages - 1) * (5 * GIB + 0x1_0000) + (pageSize - 1) * 8192L + 1024 + 512;
        KvMemory mem = KvMemory.device(address, bytes);
        KvRegion k = new KvRegion(mem, k0, 3 * GIB + 16, 4096, 512, 256);
        KvRegion v = new KvRegion(mem, v0, 5 * GIB + 0x1_0000, 8192, 1024, 512);
        return new KvCacheGroup(List.of(new CacheLayer(7, 4, 2, k, v)), pageSize, numPages);
    }

    /** The 64-bit words of side {@code h} of a decoded descriptor array: factor, K base and strides, V base and strides. */
    private static void assertSide(long[] words, int h, long address, String who) {
        int o = h * KernelAbi.SLICE_BYTES / 8;
        assertEquals(2L * ((7L << 16) + 4 + h) + 1, words[o], who + " factor");
        assertEquals(address + 0x1_2345_6780L + h * 512L, words[o + 1], who + " k_base");
        assertEquals(3 * GIB + 16, words[o + 2], who + " k_page_stride");
        assertEquals(4096, words[o + 3], who + " k_token_stride");
        assertEquals(address + 0x9_0000_0040L + h * 1024L, words[o + 4], who + " v_base");
        assertEquals(5 * GIB + 0x1_0000, words[o + 5], who + " v_page_stride");
        assertEquals(8192, words[o + 6], who + " v_token_stride");
        assertEquals(32L | (64L << 32), words[o + 7], who + " k_pieces, v_pieces");
    }

    @Test
    void positionsPast2To33AndPagesPast2To32AreCarriedExactly() {
        KvChecksum cuda = recorder.front();
        long numTokens = (5L << 31) + 37;     // 10.7e9 positions: piece indices past 2^39
        long firstBlock = numTokens / 16 - 2;  // the last three blocks of 16, the third partial
        int[] srcPages = {5, 0, 3};            // pages of 16: the 37 positions S .. N-1
        int[] dstPages = {1, 6, 2, 7, 0};      // pages of 8
        KvCacheGroup src = group(SOURCE, 16, 6);
        KvCacheGroup dst = group(DESTINATION, 8, 8);
        RequestBlocks sq = RequestBlocks.of(srcPages, numTokens, firstBlock, 16);
        RequestBlocks dq = RequestBlocks.of(dstPages, numTokens, firstBlock, 16);
        for (ChecksumMode mode : ChecksumMode.values()) {
            recorder.launches.clear();
            CopyPlan plan = cuda.compileCopy(src, sq, dst, dq, new ChecksumSpec(mode, CellPadding.NONE));
            cuda.submitCopy(plan, STREAM).close();
            assertEquals(1, recorder.launches.size(), "one launch: " + recorder.launches);
            Launch l = recorder.launches.getFirst();
            String suffix = mode == ChecksumMode.MIXED ? CudaBackend.MIXED_SUFFIX : "";
            assertEquals(CudaBackend.COPY_16B + suffix, l.kernel(), "16-byte loads and stores: every base and stride is a multiple of 16");
            assertEquals(STREAM, l.stream());
            assertEquals(3, l.gx(), "one CTA column per block");
            assertEquals(1, l.gy(), "one row of warps for 2 pairs");
            assertEquals(2, l.numPairs());
            for (int h = 0; h < 2; h++) {
                assertSide(l.src(), h, SOURCE, "source " + h);
                assertSide(l.dst(), h, DESTINATION, "destination " + h);
            }
            assertEquals(firstBlock * 16, l.startToken(), "start_token");
            assertEquals(firstBlock, l.firstBlock(), "first_block");
            assertEquals(numTokens, l.numTokens(), "num_tokens");
            assertEquals(16, l.blockSize());
            assertEquals(16, l.srcPageSize());
            assertEquals(8, l.dstPageSize());
            assertEquals(3, l.numBlocks());
            assertArrayEquals(srcPages, l.srcTable(), "source table");
            assertArrayEquals(dstPages, l.dstTable(), "destination table");
        }
    }
}
