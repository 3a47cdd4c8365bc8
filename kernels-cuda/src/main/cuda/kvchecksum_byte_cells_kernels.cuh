// kvchecksum: the kernels of the byte-assembling path (kvchecksum_byte_cells.cuh), included by kvchecksum_kernels.cu.
// Grid (num_blocks, ceil(num_slices / (KVC_WARPS * spw))), KVC_THREADS threads: warp w of CTA (bx, by) walks its spw
// consecutive byte-cell slices (kvc_slice_sums_warp_slices, spw = slices_per_part: LaunchPlanner's slices per warp,
// enough that a lane's batch fills) over block first_block + bx. `slices` of the parameters points at
// KvcByteCellSlice descriptors. __launch_bounds__(KVC_THREADS, 2) like the default whole-piece kernels: a batch's 128
// bytes of loads per thread fit 128 registers without spills (PtxEvidenceTest reads ptxas' report).
#pragma once
#include "kvchecksum_byte_cells.cuh"

__device__ __forceinline__ uint64_t kvc_byte_cell_warp_sum(uint64_t v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// The emit of the byte-cell slice sums: as the walk leaves slice i, the warp's lanes add their shares (every lane
// reaches this point together) and lane 0 writes the sum, row i column bx.
struct KvcByteCellSumsEmit {
    static constexpr bool writes = true;
    uint64_t* out;
    uint64_t stride;
    uint32_t bx, lane;
    __device__ __forceinline__ void operator()(uint32_t i, uint64_t v) {
        v = kvc_byte_cell_warp_sum(v);
        if (lane == 0) out[(uint64_t)i * stride + bx] = v;
    }
};

// Block checksums: each warp adds m * s of its slices to out[bx] (the host zeroed out, or it holds the whole-piece
// kernels' values of the same blocks when both run into it); wrapping addition is order-free.
template <int MIX>
__device__ __forceinline__ void kvc_byte_cells_block_checksums_body(const KvcChecksumParams& p) {
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    uint32_t i0, i1;
    kvc_slice_sums_warp_slices(p, blockIdx.y, warp, i0, i1);
    if (i0 >= i1) return;  // the whole warp leaves together
    const KvcByteCellSlice* sl = reinterpret_cast<const KvcByteCellSlice*>(p.slices);
    KvcByteCellFactorEmit e{sl, 0};
    kvc_byte_cell_lane_slices<MIX>(p, sl, i0, i1, p.first_block + blockIdx.x, lane, e);
    const uint64_t v = kvc_byte_cell_warp_sum(e.acc);
    if (lane == 0) atomicAdd(reinterpret_cast<unsigned long long*>(p.out + blockIdx.x), (unsigned long long)v);
}

// Slice sums: row i at out + i*out_stride, column bx, written as the walk leaves slice i.
template <int MIX>
__device__ __forceinline__ void kvc_byte_cells_slice_sums_body(const KvcChecksumParams& p) {
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    uint32_t i0, i1;
    kvc_slice_sums_warp_slices(p, blockIdx.y, warp, i0, i1);
    if (i0 >= i1) return;
    const KvcByteCellSlice* sl = reinterpret_cast<const KvcByteCellSlice*>(p.slices);
    KvcByteCellSumsEmit emit{p.out, p.out_stride, blockIdx.x, lane};
    kvc_byte_cell_lane_slices<MIX>(p, sl, i0, i1, p.first_block + blockIdx.x, lane, emit);
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
