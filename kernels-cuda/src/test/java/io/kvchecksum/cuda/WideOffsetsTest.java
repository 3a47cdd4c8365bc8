package io.kvchecksum.cuda;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static io.kvchecksum.cuda.RecordOnlyCuda.at;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Offsets past 2^31 (and 2^32): a region's {@code page x pageStride} in bytes, device addresses high in the 64-bit
 * space, and request positions (so piece indices) beyond 32 bits. The KV lies at <b>fake device addresses</b> (tens
 * of GiB that exist nowhere): the driver records every launch and decodes its parameter struct and the descriptors
 * it uploaded ({@code KvcChecksumParams}, {@code KvcSlice}, the page table, {@code KvcRequest}), and <b>executes
 * nothing</b>. The tests assert those structs carry the 64-bit values exactly, as the test computes them from the
 * layout (not from the code under test), and that the kernels' own address formula
 * ({@code base + page_id * page_stride + slot * token_stride}, wrapping uint64, kvc_cell) reaches the cell the layout
 * means. What cannot be represented is refused before anything is enqueued, with a clear error. One case runs for
 * real: a request whose positions lie past 2^33, in small host memory, against the reference backend.
 */
class WideOffsetsTest {
    private static final long STREAM = 0x5_71DEL;
    /** A 16-byte-aligned device address far above 4 GiB, as a 64-bit GPU virtual address may be. */
    private static final long ADDRESS = 0x7F12_3400_0000L;
    private static final long GIB = 1L << 30;
    private static final Set<String> ENQUEUING = Set.of("cuMemcpyHtoDAsync", "cuLaunchKernel", "cuEventRecord",
            "cuMemcpyDtoHAsync", "cuMemsetD8Async", "cuStreamWaitEvent", "cuMemcpyDtoDAsync");

    /** One decoded KvcSlice. */
    record Slice(long factor, long kBase, long kPageStride, long kTokenStride, long vBase, long vPageStride,
            long vTokenStride, int kPieces, int vPieces) {
    }

    /** One decoded KvcRequest. */
    record Request(long startToken, long firstBlock, long numTokens, long blockBegin, int tableOffset, int numBlocks) {
    }

    /** One launch as the kernel would have seen it. */
    record Launch(String kernel, int gx, int gy, long stream, long startToken, long firstBlock, long numTokens, int blockSize,
            int pageSize, int numBlocks, int numSlices, List<Slice> slices, int[] table, List<Request> requests) {
    }

    private RecordingDriver rec;

    @RegisterExtension
    final RecordOnlyCuda<Launch> recorder = new RecordOnlyCuda<>(WideOffsetsTest::decode,
            d -> (rec = new RecordingDriver(d)).driver);

    private static Launch decode(String kernel, int gx, int gy, long stream, long argv) {
        MemorySegment p = at(at(argv, 8).get(ValueLayout.JAVA_LONG, 0), KernelAbi.CHECKSUM_PARAMS_BYTES);
        int numSlices = p.get(KernelAbi.U32, KernelAbi.PARAMS_NUM_SLICES);
        List<Slice> slices = new ArrayList<>();
        MemorySegment s = at(p.get(KernelAbi.U64, KernelAbi.PARAMS_SLICES), (long) numSlices * KernelAbi.SLICE_BYTES);
        for (int i = 0; i < numSlices; i++) {
            long o = (long) i * KernelAbi.SLICE_BYTES;
            slices.add(new Slice(s.get(KernelAbi.U64, o + KernelAbi.SLICE_FACTOR), s.get(KernelAbi.U64, o + KernelAbi.SLICE_K_BASE),
                    s.get(KernelAbi.U64, o + KernelAbi.SLICE_K_PAGE_STRIDE), s.get(KernelAbi.U64, o + KernelAbi.SLICE_K_TOKEN_STRIDE),
                    s.get(KernelAbi.U64, o + KernelAbi.SLICE_V_BASE), s.get(KernelAbi.U64, o + KernelAbi.SLICE_V_PAGE_STRIDE),
                    s.get(KernelAbi.U64, o + KernelAbi.SLICE_V_TOKEN_STRIDE), s.get(KernelAbi.U32, o + KernelAbi.SLICE_K_PIECES),
                    s.get(KernelAbi.U32, o + KernelAbi.SLICE_V_PIECES)));
        }
        int numRequests = p.get(KernelAbi.U32, KernelAbi.PARAMS_NUM_REQUESTS);
        List<Request> requests = new ArrayList<>();
        int tableLength = 0;
        if (numRequests > 0) {
            MemorySegment r = at(p.get(KernelAbi.U64, KernelAbi.PARAMS_REQUESTS), (long) numRequests * KernelAbi.REQUEST_BYTES);
            for (int i = 0; i < numRequests; i++) {
                long o = (long) i * KernelAbi.REQUEST_BYTES;
                Request q = new Request(r.get(KernelAbi.U64, o + KernelAbi.REQUEST_START_TOKEN), r.get(KernelAbi.U64, o + KernelAbi.REQUEST_FIRST_BLOCK),
                        r.get(KernelAbi.U64, o + KernelAbi.REQUEST_NUM_TOKENS), r.get(KernelAbi.U64, o + KernelAbi.REQUEST_BLOCK_BEGIN),
                        r.get(KernelAbi.U32, o + KernelAbi.REQUEST_TABLE_OFFSET), r.get(KernelAbi.U32, o + KernelAbi.REQUEST_NUM_BLOCKS));
                requests.add(q);
            }
        }
        // The table: as many ids as the launch's requests need (one request: its blocks' pages from start_token).
        long start = p.get(KernelAbi.U64, KernelAbi.PARAMS_START_TOKEN);
        long tokens = p.get(KernelAbi.U64, KernelAbi.PARAMS_NUM_TOKENS);
        int pageSize = p.get(KernelAbi.U32, KernelAbi.PARAMS_PAGE_SIZE);
        tableLength = numRequests > 0 ? 0 : (int) Math.ceilDiv(tokens - start, (long) pageSize);
        for (Request q : requests) {
            tableLength = Math.max(tableLength, q.tableOffset() + (int) Math.ceilDiv(q.numTokens() - q.startToken(), (long) pageSize));
        }
        int[] table = at(p.get(KernelAbi.U64, KernelAbi.PARAMS_TABLE), 4L * tableLength).toArray(ValueLayout.JAVA_INT);
        return new Launch(kernel, gx, gy, stream, start, p.get(KernelAbi.U64, KernelAbi.PARAMS_FIRST_BLOCK), tokens,
                p.get(KernelAbi.U32, KernelAbi.PARAMS_BLOCK_SIZE), pageSize, p.get(KernelAbi.U32, KernelAbi.PARAMS_NUM_BLOCKS),
                numSlices, slices, table, requests);
    }

    /** A region of {@code heads} heads in pages of 3 GiB + 16 bytes, {@code offset} bytes into its memory. */
    record Wide(long offset, long pageStride, long tokenStride, long headStride, int cellBytes, int heads, int numPages,
            int pageSize) {
        long extent() {
            return offset + (numPages - 1) * pageStride + (pageSize - 1) * tokenStride + (heads - 1) * headStride + cellBytes;
        }
    }

    private static final Wide K = new Wide(0x1_2345_6780L, 3 * GIB + 16, 4096, 512, 256, 2, 6, 16);
    private static final Wide V = new Wide(0x9_0000_0000L + 0x40, 5 * GIB + 0x1_0000, 8192, 1024, 512, 2, 6, 16);

    private static KvCacheGroup wideGroup(long address, long bytes) {
        KvMemory mem = KvMemory.device(address, bytes);
        KvRegion k = new KvRegion(mem, K.offset(), K.pageStride(), K.tokenStride(), K.headStride(), K.cellBytes());
        KvRegion v = new KvRegion(mem, V.offset(), V.pageStride(), V.tokenStride(), V.headStride(), V.cellBytes());
        return new KvCacheGroup(List.of(new CacheLayer(7, 4, 2, k, v)), 16, 6);
    }

    private static long memoryBytes() {
        return Math.max(K.extent(), V.extent());
    }

    /** Every KvcSlice of the launch carries the 64-bit bases and strides exactly; kvc_cell's arithmetic lands in the cell. */
    private static void assertWideSlices(Launch l) {
        assertEquals(2, l.numSlices(), l.kernel());
        for (int h = 0; h < 2; h++) {
            Slice s = l.slices().get(h);
            String who = l.kernel() + " slice " + h;
            assertEquals(2L * ((7L << 16) + 4 + h) + 1, s.factor(), who + " factor");
            assertEquals(ADDRESS + K.offset() + h * K.headStride(), s.kBase(), who + " k_base");
            assertEquals(K.pageStride(), s.kPageStride(), who + " k_page_stride");
            assertEquals(K.tokenStride(), s.kTokenStride(), who + " k_token_stride");
            assertEquals(ADDRESS + V.offset() + h * V.headStride(), s.vBase(), who + " v_base");
            assertEquals(V.pageStride(), s.vPageStride(), who + " v_page_stride");
            assertEquals(V.tokenStride(), s.vTokenStride(), who + " v_token_stride");
            assertEquals(K.cellBytes() / 8, s.kPieces(), who + " k_pieces");
            assertEquals(V.cellBytes() / 8, s.vPieces(), who + " v_pieces");
            for (int page = 0; page < 6; page++) {
                for (int slot : new int[] {0, 15}) {
                    // kvc_cell: base + (uint64)(int64)page_id * page_stride + slot * token_stride, modulo 2^64
                    long kCell = s.kBase() + (long) page * s.kPageStride() + slot * s.kTokenStride();
                    long vCell = s.vBase() + (long) page * s.vPageStride() + slot * s.vTokenStride();
                    assertEquals(ADDRESS + K.offset() + page * (3 * GIB + 16) + slot * 4096L + h * 512L, kCell, who + " K cell " + page);
                    assertEquals(ADDRESS + V.offset() + page * (5 * GIB + 0x1_0000) + slot * 8192L + h * 1024L, vCell, who + " V cell " + page);
                    assertTrue(Long.compareUnsigned(vCell + V.cellBytes(), ADDRESS + memoryBytes()) <= 0, who + " past the memory");
                }
            }
        }
    }

    @Test
    void pageTimesPageStridePast2To32IsCarriedExactly() {
        KvChecksum cuda = recorder.front();
        assertTrue(5 * K.pageStride() > 1L << 32 && 5 * V.pageStride() > 1L << 34, "the case must reach past 2^32");
        KvCacheGroup g = wideGroup(ADDRESS, memoryBytes());
        int[] pages = {5, 0, 3, 4};
        RequestBlocks r = RequestBlocks.of(pages, 60, 16);
        for (ChecksumMode mode : ChecksumMode.values()) {
            recorder.launches.clear();
            CompiledPlan plan = cuda.compile(g, List.of(r), new ChecksumSpec(mode, io.kvchecksum.CellPadding.NONE));
            cuda.submit(plan, STREAM).close();
            cuda.submitSliceSums(io.kvchecksum.SlicePlan.of(g, r, new ChecksumSpec(mode, io.kvchecksum.CellPadding.NONE)), STREAM).close();
            assertEquals(2, recorder.launches.size(), "one launch per call: " + recorder.launches);
            String suffix = mode == ChecksumMode.MIXED ? CudaBackend.MIXED_SUFFIX : "";
            assertEquals(List.of(CudaBackend.BLOCK_CHECKSUMS_16B + suffix, CudaBackend.sliceSums(CudaBackend.BLOCK_CHECKSUMS_16B) + suffix),
                    recorder.launches.stream().map(Launch::kernel).toList(), "16-byte loads: every base and stride is a multiple of 16");
            for (Launch l : recorder.launches) {
                assertEquals(STREAM, l.stream());
                assertWideSlices(l);
                assertArrayEquals(pages, l.table(), l.kernel() + " page table");
                assertEquals(0, l.startToken());
                assertEquals(60, l.numTokens());
                assertEquals(16, l.blockSize());
                assertEquals(4, l.numBlocks());
            }
        }
    }

    @Test
    void requestPositionsPast2To33AreCarriedExactly() {
        KvChecksum cuda = recorder.front();
        KvCacheGroup g = wideGroup(ADDRESS, memoryBytes());
        long numTokens = (5L << 31) + 37;                 // 10.7e9 tokens: piece indices t * 96 past 2^39
        long firstBlock = numTokens / 16 - 1;            // the last two blocks, the second partial
        long numTokens2 = (3L << 32) + 5;
        long firstBlock2 = numTokens2 / 16;
        RequestBlocks a = RequestBlocks.of(new int[] {2, 5}, numTokens, firstBlock, 16);
        RequestBlocks b = RequestBlocks.of(new int[] {1}, numTokens2, firstBlock2, 16);
        ChecksumSpec spec = new ChecksumSpec(ChecksumMode.STANDARD, io.kvchecksum.CellPadding.NONE);

        cuda.submit(cuda.compile(g, List.of(a), spec), STREAM).close();
        Launch one = recorder.launches.getLast();
        assertWideSlices(one);
        assertEquals(firstBlock * 16, one.startToken(), "start_token");
        assertEquals(firstBlock, one.firstBlock(), "first_block");
        assertEquals(numTokens, one.numTokens(), "num_tokens");
        assertEquals(2, one.numBlocks());
        assertArrayEquals(new int[] {2, 5}, one.table());

        // Two requests in one launch: their fields travel in KvcRequest.
        cuda.submit(cuda.compile(g, List.of(a, b), spec), STREAM).close();
        Launch batch = recorder.launches.getLast();
        assertWideSlices(batch);
        assertEquals(List.of(new Request(firstBlock * 16, firstBlock, numTokens, 0, 0, 2),
                new Request(firstBlock2 * 16, firstBlock2, numTokens2, 2, 2, 1)), batch.requests());
        assertArrayEquals(new int[] {2, 5, 1}, batch.table());
        assertEquals(3, batch.gx(), "one CTA column per block of the batch");
    }

    @Test
    void deviceMemoryPastTheEndOfTheAddressSpaceIsRefusedBeforeAnythingIsEnqueued() {
        KvChecksum cuda = recorder.front();
        long high = -(16L << 30);   // 0xFFFFFFFC00000000: the region's 20 GiB wrap past 2^64
        KvCacheGroup g = wideGroup(high, memoryBytes());
        RequestBlocks r = RequestBlocks.of(new int[] {5, 0, 3, 4}, 60, 16);
        rec.take();
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> cuda.submit(g, r, STREAM));
        assertTrue(e.getMessage().contains("0xfffffffc00000000") && e.getMessage().contains("64-bit address space"), e.getMessage());
        assertThrows(InvalidLayoutException.class, () -> cuda.submitSliceSums(io.kvchecksum.SlicePlan.of(g, r), STREAM));
        assertThrows(InvalidLayoutException.class, () -> cuda.blockChecksums(g, r));
        assertTrue(rec.take().stream().noneMatch(c -> ENQUEUING.contains(c.name())), "refused after enqueuing");
        assertTrue(recorder.launches.isEmpty());
        // The same layout just below the end is accepted.
        cuda.submit(wideGroup(-memoryBytes() - 4096, memoryBytes()), r, STREAM).close();
        assertEquals(1, recorder.launches.size());
    }

    @Test
    void aTableBeyondThe32BitOffsetIsRefusedWithItsSize() {
        assertEquals(Integer.MAX_VALUE, KernelAbi.tableEntries(Integer.MAX_VALUE));
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> KernelAbi.tableEntries(1L << 31));
        assertTrue(e.getMessage().contains("2147483648 page-table entries"), e.getMessage());
    }

    /**
     * Positions past 2^33 computed for real (small host memory, the emulated kernels) against the reference backend:
     * the kernels' 64-bit position and weight arithmetic, not just the structs.
     */
    @Test
    void valuesAtPositionsPast2To33EqualTheReference() {
        long seed = 0x2_0033L;
        System.out.println("WideOffsetsTest seed = 0x" + Long.toHexString(seed));
        Random rnd = new Random(seed);
        FakeCudaDriver executing = new FakeCudaDriver(HostLibrary.load());
        try (Arena arena = Arena.ofConfined(); CudaBackend b = new CudaBackend(executing, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum emulated = KvChecksum.of(b);
            for (int skew : new int[] {0, 8, 3}) {
                KvCacheGroup host = UnalignedLayoutTest.skewed(rnd, arena, skew, 4, skew == 3 ? 3 : 2, 2, 16, 8);
                KvCacheGroup dev = Relocation.relocate(host, executing::onDevice);
                long numTokens = (1L << 33) + 16 * 5 + 7;
                long firstBlock = (1L << 33) / 16 - 2;
                int[] table = new int[(int) Math.ceilDiv(numTokens - firstBlock * 16, 16L)];
                for (int i = 0; i < table.length; i++) {
                    table[i] = rnd.nextInt(8);
                }
                RequestBlocks r = RequestBlocks.of(table, numTokens, firstBlock, 16);
                for (ChecksumMode mode : ChecksumMode.values()) {
                    ChecksumSpec spec = new ChecksumSpec(mode, io.kvchecksum.CellPadding.NONE);
                    String who = "skew " + skew + " " + mode.wireName();
                    long[] expected = KvChecksums.reference().blockChecksums(io.kvchecksum.SlicePlan.of(host, r, spec));
                    try (PendingChecksums p = emulated.submit(io.kvchecksum.SlicePlan.of(dev, r, spec), STREAM)) {
                        assertArrayEquals(expected, p.get(), who);
                    }
                    SliceSums sums = KvChecksums.reference().sliceSums(io.kvchecksum.SlicePlan.of(host, r, spec));
                    assertEquals(sums, emulated.sliceSums(io.kvchecksum.SlicePlan.of(dev, r, spec)), who + " slice sums");
                }
            }
            executing.freeUploads();
        }
    }
}
