// kvchecksum: the kernels of the byte-assembling path (kvchecksum_byte_cells.cuh), included by kvchecksum_kernels.cu.
// Grid (num_blocks, ceil(num_slices / KVC_WARPS)), KVC_THREADS threads: warp w of CTA (bx, by) sums byte-cell slice
// by*KVC_WARPS + w over block first_block + bx. `slices` of the parameters points at KvcByteCellSlice descriptors.
// __launch_bounds__(KVC_THREADS, 2) like the default whole-piece kernels: a batch's 128 bytes of loads per thread fit
// 128 registers without spills (PtxEvidenceTest reads ptxas' report).
#pragma once
#include "kvchecksum_byte_cells.cuh"

__device__ __forceinline__ uint64_t kvc_byte_cell_warp_sum(uint64_t v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Block checksums: each warp adds m * s of its slice to out[bx] (the host zeroed out, or it holds the whole-piece
// kernels' values of the same blocks when both run into it); wrapping addition is order-free.
template <int MIX>
__device__ __forceinline__ void kvc_byte_cells_block_checksums_body(const KvcChecksumParams& p) {
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t i = kvc_byte_cell_slice(p, blockIdx.y, warp);
    if (i < 0) return;  // the whole warp leaves together
    const KvcByteCellSlice& s = reinterpret_cast<const KvcByteCellSlice*>(p.slices)[i];
    const uint64_t v = kvc_byte_cell_warp_sum(kvc_byte_cell_lane_sum<MIX>(p, s, p.first_block + blockIdx.x, lane));
    if (lane == 0) atomicAdd(reinterpret_cast<unsigned long long*>(p.out + blockIdx.x), (unsigned long long)(s.factor * v));
}

// Slice sums: row i at out + i*out_stride, column bx.
template <int MIX>
__device__ __forceinline__ void kvc_byte_cells_slice_sums_body(const KvcChecksumParams& p) {
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t i = kvc_byte_cell_slice(p, blockIdx.y, warp);
    if (i < 0) return;
    const KvcByteCellSlice& s = reinterpret_cast<const KvcByteCellSlice*>(p.slices)[i];
    const uint64_t v = kvc_byte_cell_warp_sum(kvc_byte_cell_lane_sum<MIX>(p, s, p.first_block + blockIdx.x, lane));
    if (lane == 0) p.out[(uint64_t)i * p.out_stride + blockIdx.x] = v;
}

extern "C" __global__ void __launch_bounds__(KVC_THREADS, 2) kvc_byte_cells_block_checksums(const KvcChecksumParams p) {
    if (p.num_requests == 0) kvc_byte_cells_block_checksums_body<0>(p); else kvc_byte_cells_block_checksums_body<0>(kvc_request_params(p, blockIdx.x));
}
extern "C" __global__ void __launch_bounds__(KVC_THREADS, 2) kvc_byte_cells_slice_sums(const KvcChecksumParams p) {
    if (p.num_requests == 0) kvc_byte_cells_slice_sums_body<0>(p); else kvc_byte_cells_slice_sums_body<0>(kvc_request_params(p, blockIdx.x));
}
extern "C" __global__ void __launch_bounds__(KVC_THREADS, 2) kvc_byte_cells_block_checksums_mixed(const KvcChecksumParams p) {
    if (p.num_requests == 0) kvc_byte_cells_block_checksums_body<1>(p); else kvc_byte_cells_block_checksums_body<1>(kvc_request_params(p, blockIdx.x));
}
extern "C" __global__ void __launch_bounds__(KVC_THREADS, 2) kvc_byte_cells_slice_sums_mixed(const KvcChecksumParams p) {
    if (p.num_requests == 0) kvc_byte_cells_slice_sums_body<1>(p); else kvc_byte_cells_slice_sums_body<1>(kvc_request_params(p, blockIdx.x));
}
