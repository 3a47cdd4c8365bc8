package io.kvchecksum.cuda;

import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.SlicePlan;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * The byte layout of the kernels' parameter structs ({@code src/main/cuda/kvchecksum.cuh}), written from Java.
 * The GPU and x86-64 hosts are little-endian; {@code KernelAbiTest} checks these offsets against the C compiler's.
 */
final class KernelAbi {
    static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static final int SLICE_BYTES = 64;
    static final int CHECKSUM_PARAMS_BYTES = 96;
    static final int REQUEST_BYTES = 40;
    static final int DIGEST_PIECE_BYTES = 16;
    static final int DIGEST_PARAMS_BYTES = 24;
    static final int COPY_PARAMS_BYTES = 88;

    // Every field's offset, each checked against the C compiler's offsetof by KernelAbiTest. KvcSlice:
    static final int SLICE_FACTOR = 0;
    static final int SLICE_K_BASE = 8;
    static final int SLICE_K_PAGE_STRIDE = 16;
    static final int SLICE_K_TOKEN_STRIDE = 24;
    static final int SLICE_V_BASE = 32;
    static final int SLICE_V_PAGE_STRIDE = 40;
    static final int SLICE_V_TOKEN_STRIDE = 48;
    static final int SLICE_K_PIECES = 56;
    static final int SLICE_V_PIECES = 60;
    // KvcChecksumParams
    static final int PARAMS_SLICES = 0;
    static final int PARAMS_TABLE = 8;
    static final int PARAMS_OUT = 16;
    static final int PARAMS_START_TOKEN = 24;
    static final int PARAMS_FIRST_BLOCK = 32;
    static final int PARAMS_NUM_TOKENS = 40;
    static final int PARAMS_BLOCK_SIZE = 48;
    static final int PARAMS_PAGE_SIZE = 52;
    static final int PARAMS_NUM_BLOCKS = 56;
    static final int PARAMS_NUM_SLICES = 60;
    static final int PARAMS_SLICES_PER_PART = 64;
    static final int PARAMS_NUM_PARTS = 68;
    static final int PARAMS_OUT_STRIDE = 72;
    static final int PARAMS_REQUESTS = 80;
    static final int PARAMS_NUM_REQUESTS = 88;
    // KvcRequest
    static final int REQUEST_START_TOKEN = 0;
    static final int REQUEST_FIRST_BLOCK = 8;
    static final int REQUEST_NUM_TOKENS = 16;
    static final int REQUEST_BLOCK_BEGIN = 24;
    static final int REQUEST_TABLE_OFFSET = 32;
    static final int REQUEST_NUM_BLOCKS = 36;
    // KvcDigestPiece, KvcDigestParams (kvchecksum_digest.cuh)
    static final int DIGEST_PIECE_ADDR = 0;
    static final int DIGEST_PIECE_LEN = 8;
    static final int DIGEST_PIECES = 0;
    static final int DIGEST_OUT = 8;
    static final int DIGEST_NUM_PIECES = 16;
    // KvcCopyParams (kvchecksum_copy.cuh)
    static final int COPY_SRC = 0;
    static final int COPY_DST = 8;
    static final int COPY_SRC_TABLE = 16;
    static final int COPY_DST_TABLE = 24;
    static final int COPY_OUT = 32;
    static final int COPY_START_TOKEN = 40;
    static final int COPY_FIRST_BLOCK = 48;
    static final int COPY_NUM_TOKENS = 56;
    static final int COPY_BLOCK_SIZE = 64;
    static final int COPY_SRC_PAGE_SIZE = 68;
    static final int COPY_DST_PAGE_SIZE = 72;
    static final int COPY_NUM_PAIRS = 76;
    static final int COPY_NUM_BLOCKS = 80;

    private KernelAbi() {
    }

    /**
     * Refuses, before anything is enqueued, a plan whose numbers the structs cannot carry. Every byte offset, stride,
     * token position and block index is a 64-bit field (KvcSlice, KvcChecksumParams, KvcRequest) that the kernels
     * compute in 64-bit arithmetic, so those need no check; what can break is device memory whose end lies past 2^64
     * (its cells' absolute addresses would wrap, and the kernel would read somewhere else) and a batch's page table
     * beyond what the 32-bit {@code KvcRequest.table_offset} and the upload's int sizes hold ({@link #tableEntries}).
     *
     * @throws InvalidLayoutException naming the memory or the batch
     */
    static void requireRepresentable(CompiledPlan plan) {
        for (CompiledPlan.Launch l : plan.launches()) {
            for (SlicePlan.Slice s : l.slices().slices()) {
                requireAddressable(s.k().memory());
                if (s.v() != null) {
                    requireAddressable(s.v().memory());
                }
            }
        }
        for (CompiledPlan.Batch b : plan.batches()) {
            tableEntries(b.launches().stream().mapToLong(x -> x.slices().numPages()).sum());
        }
    }

    private static void requireAddressable(KvMemory m) {
        if (m instanceof KvMemory.Device d && Long.compareUnsigned(d.address() + d.byteSize(), d.address()) < 0) {
            throw new InvalidLayoutException("device memory at 0x" + Long.toHexString(d.address()) + " of " + d.byteSize()
                    + " bytes reaches past the end of the 64-bit address space: the kernels' cell addresses would wrap");
        }
    }

    /**
     * {@return {@code entries}, the page ids of one launch's table, as an int} A batch's table is uploaded in one piece
     * and each request finds its ids at a 32-bit {@code KvcRequest.table_offset}.
     *
     * @throws InvalidLayoutException when there are more than {@link Integer#MAX_VALUE}
     */
    static int tableEntries(long entries) {
        if (entries < 0 || entries > Integer.MAX_VALUE) {
            throw new InvalidLayoutException("a batch of requests has " + entries + " page-table entries; one CUDA launch "
                    + "takes at most " + Integer.MAX_VALUE + " (32-bit KvcRequest.table_offset): submit fewer requests at once");
        }
        return (int) entries;
    }

    /**
     * Writes one KvcSlice per plan slice from {@code host}'s start, at the parts' absolute addresses; the counts are
     * pieces, or bytes for a byte-cell launch (KvcByteCellSlice: KvcSlice's layout, byte counts where KvcSlice has piece
     * counts).
     */
    static void slices(MemorySegment host, SlicePlan plan, ToLongFunction<KvMemory> address, boolean byteCells) {
        long at = 0;
        for (SlicePlan.Slice s : plan.slices()) {
            slice(host, at, s, address, byteCells);
            at += SLICE_BYTES;
        }
    }

    /** Writes one KvcSlice (or KvcByteCellSlice: byte counts) at {@code at}, at the parts' absolute addresses. */
    static void slice(MemorySegment host, long at, SlicePlan.Slice s, ToLongFunction<KvMemory> address, boolean byteCells) {
        SlicePlan.Part k = s.k();
        SlicePlan.Part v = s.v();
        host.set(U64, at + SLICE_FACTOR, s.factor());
        host.set(U64, at + SLICE_K_BASE, address.applyAsLong(k.memory()) + k.base());
        host.set(U64, at + SLICE_K_PAGE_STRIDE, k.pageStride());
        host.set(U64, at + SLICE_K_TOKEN_STRIDE, k.tokenStride());
        host.set(U64, at + SLICE_V_BASE, v == null ? 0 : address.applyAsLong(v.memory()) + v.base());
        host.set(U64, at + SLICE_V_PAGE_STRIDE, v == null ? 0 : v.pageStride());
        host.set(U64, at + SLICE_V_TOKEN_STRIDE, v == null ? 0 : v.tokenStride());
        host.set(U32, at + SLICE_K_PIECES, byteCells ? k.bytes() : k.pieces());
        host.set(U32, at + SLICE_V_PIECES, byteCells ? (v == null ? 0 : v.bytes()) : s.vPieces());
    }

    /**
     * Refuses, before anything is enqueued, a verifying copy the copy kernels cannot address: device memory reaching past
     * the end of the 64-bit address space on either side (see {@link #requireRepresentable(CompiledPlan)}).
     *
     * @throws InvalidLayoutException naming the memory
     */
    static void requireRepresentable(CopyPlan plan) {
        for (CopyPlan.Pair p : plan.pairs()) {
            for (SlicePlan.Slice s : List.of(p.source(), p.destination())) {
                requireAddressable(s.k().memory());
                if (s.v() != null) {
                    requireAddressable(s.v().memory());
                }
            }
        }
    }

    /** KvcCopyParams at {@code at}: positions, block and page sizes are the plan's, 64-bit where the struct is. */
    @SuppressWarnings("checkstyle:ParameterNumber")
    static void copyParams(MemorySegment m, long at, long src, long dst, long srcTable, long dstTable, long out, long startToken,
            long firstBlock, long numTokens, int blockSize, int srcPageSize, int dstPageSize, int numPairs, int numBlocks) {
        m.set(U64, at + COPY_SRC, src);
        m.set(U64, at + COPY_DST, dst);
        m.set(U64, at + COPY_SRC_TABLE, srcTable);
        m.set(U64, at + COPY_DST_TABLE, dstTable);
        m.set(U64, at + COPY_OUT, out);
        m.set(U64, at + COPY_START_TOKEN, startToken);
        m.set(U64, at + COPY_FIRST_BLOCK, firstBlock);
        m.set(U64, at + COPY_NUM_TOKENS, numTokens);
        m.set(U32, at + COPY_BLOCK_SIZE, blockSize);
        m.set(U32, at + COPY_SRC_PAGE_SIZE, srcPageSize);
        m.set(U32, at + COPY_DST_PAGE_SIZE, dstPageSize);
        m.set(U32, at + COPY_NUM_PAIRS, numPairs);
        m.set(U32, at + COPY_NUM_BLOCKS, numBlocks);
        m.set(U32, at + COPY_NUM_BLOCKS + 4, 0);
    }

    @SuppressWarnings("checkstyle:ParameterNumber")
    static void checksumParams(MemorySegment m, long at, long slices, long table, long out, long startToken, long firstBlock,
            long numTokens, int blockSize, int pageSize, int numBlocks, int numSlices, int slicesPerPart, int numParts,
            long outStride, long requests, int numRequests) {
        m.set(U64, at + PARAMS_SLICES, slices);
        m.set(U64, at + PARAMS_TABLE, table);
        m.set(U64, at + PARAMS_OUT, out);
        m.set(U64, at + PARAMS_START_TOKEN, startToken);
        m.set(U64, at + PARAMS_FIRST_BLOCK, firstBlock);
        m.set(U64, at + PARAMS_NUM_TOKENS, numTokens);
        m.set(U32, at + PARAMS_BLOCK_SIZE, blockSize);
        m.set(U32, at + PARAMS_PAGE_SIZE, pageSize);
        m.set(U32, at + PARAMS_NUM_BLOCKS, numBlocks);
        m.set(U32, at + PARAMS_NUM_SLICES, numSlices);
        m.set(U32, at + PARAMS_SLICES_PER_PART, slicesPerPart);
        m.set(U32, at + PARAMS_NUM_PARTS, numParts);
        m.set(U64, at + PARAMS_OUT_STRIDE, outStride);
        m.set(U64, at + PARAMS_REQUESTS, requests);
        m.set(U32, at + PARAMS_NUM_REQUESTS, numRequests);
        m.set(U32, at + PARAMS_NUM_REQUESTS + 4, 0);
    }

    /** One KvcRequest of a batched launch at {@code at}. */
    static void request(MemorySegment m, long at, long startToken, long firstBlock, long numTokens, long blockBegin,
            int tableOffset, int numBlocks) {
        m.set(U64, at + REQUEST_START_TOKEN, startToken);
        m.set(U64, at + REQUEST_FIRST_BLOCK, firstBlock);
        m.set(U64, at + REQUEST_NUM_TOKENS, numTokens);
        m.set(U64, at + REQUEST_BLOCK_BEGIN, blockBegin);
        m.set(U32, at + REQUEST_TABLE_OFFSET, tableOffset);
        m.set(U32, at + REQUEST_NUM_BLOCKS, numBlocks);
    }

    static void digestPiece(MemorySegment m, long at, long addr, int len) {
        m.set(U64, at + DIGEST_PIECE_ADDR, addr);
        m.set(U32, at + DIGEST_PIECE_LEN, len);
        m.set(U32, at + DIGEST_PIECE_LEN + 4, 0);
    }

    static void digestParams(MemorySegment m, long at, long pieces, long out, int numPieces) {
        m.set(U64, at + DIGEST_PIECES, pieces);
        m.set(U64, at + DIGEST_OUT, out);
        m.set(U32, at + DIGEST_NUM_PIECES, numPieces);
        m.set(U32, at + DIGEST_NUM_PIECES + 4, 0);
    }
}
