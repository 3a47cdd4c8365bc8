package io.kvchecksum.cuda;

import io.kvchecksum.Definition;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The Java writers of the kernels' parameter structs agree with the C compiler's layout (queried from the host library). */
class KernelAbiTest {
    @Test
    void everyFieldOffsetMatchesTheCompilers() {
        HostLibrary lib = HostLibrary.load();
        assertEquals(KernelAbi.SLICE_BYTES, lib.kvc_abi(0), "sizeof(KvcSlice)");
        assertEquals(LaunchPlanner.MAX_SLICES_PER_WARP, lib.kvc_abi(10), "KVC_SLICE_SUMS_MAX_SPW");
        assertEquals(LaunchPlanner.BATCH_SLOTS_16B, lib.kvc_abi(11), "KVC_BATCH_SLOTS(2)");
        assertEquals(LaunchPlanner.BATCH_SLOTS_8B, lib.kvc_abi(12), "KVC_BATCH_SLOTS(1)");
        assertEquals(LaunchPlanner.BATCH_SLOTS_1B, lib.kvc_abi(13), "KVC_BATCH_SLOTS(0)");
        assertEquals(LaunchPlanner.BYTE_CELL_BATCH_K, lib.kvc_abi(14), "KVC_BYTE_CELL_BATCH(false)");
        assertEquals(LaunchPlanner.BYTE_CELL_BATCH_KV, lib.kvc_abi(15), "KVC_BYTE_CELL_BATCH(true)");
        assertEquals(LaunchPlanner.MAX_FUSED_WALK * LaunchPlanner.WARPS, lib.kvc_abi(16), "KVC_SLICE_CHUNK");
        assertEquals(KernelAbi.CHECKSUM_PARAMS_BYTES, lib.kvc_abi(1), "sizeof(KvcChecksumParams)");
        assertEquals(DeviceCheck.FILL_PARAMS_BYTES, lib.kvc_abi(5), "sizeof(KvcFillParams)");
        assertEquals(DeviceCheck.SUM_PARAMS_BYTES, lib.kvc_abi(6), "sizeof(KvcSumParams)");
        assertEquals(KernelAbi.DIGEST_PIECE_BYTES, lib.kvc_abi(7), "sizeof(KvcDigestPiece)");
        assertEquals(KernelAbi.DIGEST_PARAMS_BYTES, lib.kvc_abi(8), "sizeof(KvcDigestParams)");
        assertEquals(KernelAbi.DIGEST_PIECE_ADDR, lib.kvc_abi(400), "KvcDigestPiece.addr");
        assertEquals(KernelAbi.DIGEST_PIECE_LEN, lib.kvc_abi(401), "KvcDigestPiece.len");
        assertEquals(KernelAbi.DIGEST_PIECES, lib.kvc_abi(402), "KvcDigestParams.pieces");
        assertEquals(KernelAbi.DIGEST_OUT, lib.kvc_abi(403), "KvcDigestParams.out");
        assertEquals(KernelAbi.DIGEST_NUM_PIECES, lib.kvc_abi(404), "KvcDigestParams.num_pieces");
        assertEquals(KernelAbi.SLICE_FACTOR, lib.kvc_abi(100), "KvcSlice.factor");
        assertEquals(KernelAbi.SLICE_K_BASE, lib.kvc_abi(101), "KvcSlice.k_base");
        assertEquals(KernelAbi.SLICE_K_PAGE_STRIDE, lib.kvc_abi(102), "KvcSlice.k_page_stride");
        assertEquals(KernelAbi.SLICE_K_TOKEN_STRIDE, lib.kvc_abi(103), "KvcSlice.k_token_stride");
        assertEquals(KernelAbi.SLICE_V_BASE, lib.kvc_abi(104), "KvcSlice.v_base");
        assertEquals(KernelAbi.SLICE_V_PAGE_STRIDE, lib.kvc_abi(105), "KvcSlice.v_page_stride");
        assertEquals(KernelAbi.SLICE_V_TOKEN_STRIDE, lib.kvc_abi(106), "KvcSlice.v_token_stride");
        assertEquals(KernelAbi.SLICE_K_PIECES, lib.kvc_abi(107), "KvcSlice.k_pieces");
        assertEquals(KernelAbi.SLICE_V_PIECES, lib.kvc_abi(108), "KvcSlice.v_pieces");
        assertEquals(KernelAbi.PARAMS_SLICES, lib.kvc_abi(200), "KvcChecksumParams.slices");
        assertEquals(KernelAbi.PARAMS_TABLE, lib.kvc_abi(201), "KvcChecksumParams.table");
        assertEquals(KernelAbi.PARAMS_OUT, lib.kvc_abi(202), "KvcChecksumParams.out");
        assertEquals(KernelAbi.PARAMS_START_TOKEN, lib.kvc_abi(203), "KvcChecksumParams.start_token");
        assertEquals(KernelAbi.PARAMS_FIRST_BLOCK, lib.kvc_abi(204), "KvcChecksumParams.first_block");
        assertEquals(KernelAbi.PARAMS_NUM_TOKENS, lib.kvc_abi(205), "KvcChecksumParams.num_tokens");
        assertEquals(KernelAbi.PARAMS_BLOCK_SIZE, lib.kvc_abi(206), "KvcChecksumParams.block_size");
        assertEquals(KernelAbi.PARAMS_PAGE_SIZE, lib.kvc_abi(207), "KvcChecksumParams.page_size");
        assertEquals(KernelAbi.PARAMS_NUM_BLOCKS, lib.kvc_abi(208), "KvcChecksumParams.num_blocks");
        assertEquals(KernelAbi.PARAMS_NUM_SLICES, lib.kvc_abi(209), "KvcChecksumParams.num_slices");
        assertEquals(KernelAbi.PARAMS_SLICES_PER_PART, lib.kvc_abi(210), "KvcChecksumParams.slices_per_part");
        assertEquals(KernelAbi.PARAMS_NUM_PARTS, lib.kvc_abi(211), "KvcChecksumParams.num_parts");
        assertEquals(KernelAbi.PARAMS_OUT_STRIDE, lib.kvc_abi(212), "KvcChecksumParams.out_stride");
        assertEquals(KernelAbi.PARAMS_REQUESTS, lib.kvc_abi(213), "KvcChecksumParams.requests");
        assertEquals(KernelAbi.PARAMS_NUM_REQUESTS, lib.kvc_abi(214), "KvcChecksumParams.num_requests");
        assertEquals(KernelAbi.COPY_PARAMS_BYTES, lib.kvc_abi(17), "sizeof(KvcCopyParams)");
        int[] copy = {KernelAbi.COPY_SRC, KernelAbi.COPY_DST, KernelAbi.COPY_SRC_TABLE, KernelAbi.COPY_DST_TABLE, KernelAbi.COPY_OUT,
            KernelAbi.COPY_START_TOKEN, KernelAbi.COPY_FIRST_BLOCK, KernelAbi.COPY_NUM_TOKENS, KernelAbi.COPY_BLOCK_SIZE,
            KernelAbi.COPY_SRC_PAGE_SIZE, KernelAbi.COPY_DST_PAGE_SIZE, KernelAbi.COPY_NUM_PAIRS, KernelAbi.COPY_NUM_BLOCKS};
        for (int f = 0; f < copy.length; f++) {
            assertEquals(copy[f], lib.kvc_abi(500 + f), "KvcCopyParams field " + f);
        }
        assertEquals(KernelAbi.REQUEST_BYTES, lib.kvc_abi(9), "sizeof(KvcRequest)");
        assertEquals(KernelAbi.REQUEST_START_TOKEN, lib.kvc_abi(250), "KvcRequest.start_token");
        assertEquals(KernelAbi.REQUEST_FIRST_BLOCK, lib.kvc_abi(251), "KvcRequest.first_block");
        assertEquals(KernelAbi.REQUEST_NUM_TOKENS, lib.kvc_abi(252), "KvcRequest.num_tokens");
        assertEquals(KernelAbi.REQUEST_BLOCK_BEGIN, lib.kvc_abi(253), "KvcRequest.block_begin");
        assertEquals(KernelAbi.REQUEST_TABLE_OFFSET, lib.kvc_abi(254), "KvcRequest.table_offset");
        assertEquals(KernelAbi.REQUEST_NUM_BLOCKS, lib.kvc_abi(255), "KvcRequest.num_blocks");
    }

    @Test
    void factorsAgreeWithTheDefinition() {
        HostLibrary lib = HostLibrary.load();
        int[][] cases = {{0, 0}, {0, 1}, {1, 0}, {12, 7}, {60, 0}, {79, 65535}, {65535, 65535}};
        for (int[] c : cases) {
            assertEquals(Definition.factor(c[0], c[1]), lib.kvc_factor_host(c[0], c[1]), "layer " + c[0] + " head " + c[1]);
        }
    }
}
