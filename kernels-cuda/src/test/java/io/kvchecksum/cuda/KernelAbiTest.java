package io.kvchecksum.cuda;

import io.kvchecksum.Definition;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The Java writers of the kernels' parameter structs agree with the C compiler's layout (queried from the host library). */
class KernelAbiTest {
    @Test
    void structLayoutsMatchTheCompilers() {
        HostLibrary lib = HostLibrary.load();
        assertEquals(KernelAbi.SLICE_BYTES, lib.kvc_abi(0), "sizeof(KvcSlice)");
        assertEquals(KernelAbi.CHECKSUM_PARAMS_BYTES, lib.kvc_abi(1), "sizeof(KvcChecksumParams)");
        assertEquals(KernelAbi.REDUCE_PARAMS_BYTES, lib.kvc_abi(2), "sizeof(KvcReduceParams)");
        assertEquals(KernelAbi.FILL_PARAMS_BYTES, lib.kvc_abi(5), "sizeof(KvcFillParams)");
        assertEquals(KernelAbi.SUM_PARAMS_BYTES, lib.kvc_abi(6), "sizeof(KvcSumParams)");
        assertEquals(KernelAbi.SLICE_K_BASE, lib.kvc_abi(10), "KvcSlice.k_base");
        assertEquals(KernelAbi.SLICE_V_BASE, lib.kvc_abi(11), "KvcSlice.v_base");
        assertEquals(KernelAbi.SLICE_K_PIECES, lib.kvc_abi(12), "KvcSlice.k_pieces");
        assertEquals(KernelAbi.SLICE_V_PIECES, lib.kvc_abi(13), "KvcSlice.v_pieces");
        assertEquals(KernelAbi.PARAMS_START_TOKEN, lib.kvc_abi(20), "KvcChecksumParams.start_token");
        assertEquals(KernelAbi.PARAMS_BLOCK_SIZE, lib.kvc_abi(21), "KvcChecksumParams.block_size");
        assertEquals(KernelAbi.PARAMS_NUM_SLICES, lib.kvc_abi(22), "KvcChecksumParams.num_slices");
        assertEquals(KernelAbi.PARAMS_OUT_STRIDE, lib.kvc_abi(23), "KvcChecksumParams.out_stride");
        assertEquals(KernelAbi.REDUCE_N, lib.kvc_abi(33), "KvcReduceParams.n");
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
