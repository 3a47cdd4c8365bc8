// kvchecksum CUDA kernels. Raw pointers and plain structs in, results in device memory out; nothing here knows of
// Java. Launch planning (grid sizes, chunking, the 8- or 16-byte variant) is done by the host: see
// io.kvchecksum.cuda.LaunchPlanner. Every kernel runs KVC_THREADS threads per CTA.
//
// Names are extern "C" so the host finds them with cuLibraryGetKernel without C++ mangling.
#include "kvchecksum.cuh"
#include "kvchecksum_byte_cells_kernels.cuh"  // cells that are not whole pieces: their own kernels

static_assert(sizeof(KvcSlice) == 64, "KvcSlice ABI");
static_assert(sizeof(KvcChecksumParams) == 96, "KvcChecksumParams ABI");
static_assert(offsetof(KvcChecksumParams, out_stride) == 72, "KvcChecksumParams ABI");
static_assert(offsetof(KvcChecksumParams, requests) == 80, "KvcChecksumParams ABI");
static_assert(sizeof(KvcRequest) == 40, "KvcRequest ABI");

__device__ __forceinline__ uint64_t kvc_warp_sum(uint64_t v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// The fused single pass: CTA (bx, by) reads part `by` of the slices of block first_block + bx, once, and adds its
// partial to out[bx] with a 64-bit atomic (the host zeroes out on the same stream first). Wrapping addition is
// order-free, so the result is deterministic whatever order the parts land in, and one launch does it all (no
// reduce kernel); gridDim.y CTAs per word is a light contention (at most ceil(slices/8)). The staging phases
// (kvchecksum.cuh) put the block's page ids and the part's descriptors in shared memory first.
template <int VEC, int MIX>
__device__ __forceinline__ void kvc_block_checksums_body(const KvcChecksumParams& p) {
    __shared__ KvcSlice stage_slices[KVC_SLICE_CHUNK];
    __shared__ int32_t stage_table[KVC_TABLE_STAGE];
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint64_t block = p.first_block + blockIdx.x;
    const int32_t* tab;
    uint64_t tab0;
    kvc_table_view(p, block, stage_table, tab, tab0);
    uint32_t s0, s1;
    kvc_part_slices(p, blockIdx.y, s0, s1);
    uint64_t acc = 0;
    for (uint32_t c0 = s0; c0 < s1; c0 += KVC_SLICE_CHUNK) {
        const uint32_t c1 = c0 + KVC_SLICE_CHUNK < s1 ? c0 + KVC_SLICE_CHUNK : s1;
        // The first chunk is staged together with the table, as in the slices kernels (one barrier, one round trip of
        // staging before the data); a later one once the previous chunk is no longer read.
        if (c0 != s0) __syncthreads();
        kvc_stage_phase(p, block, c0 == s0, c0, c1, threadIdx.x, stage_table, stage_slices);
        __syncthreads();
        acc += kvc_block_thread_range<VEC, MIX>(p, stage_slices, c0, c0, c1, tab, tab0, block, warp, lane);
    }
    uint64_t v = kvc_warp_sum(acc);
    __shared__ uint64_t ws[KVC_WARPS];
    if (lane == 0) ws[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t s = 0;
#pragma unroll
        for (int w = 0; w < KVC_WARPS; ++w) s += ws[w];
        atomicAdd(reinterpret_cast<unsigned long long*>(p.out + blockIdx.x), (unsigned long long)s);
    }
}

// The emit of the slices kernels (kvc_lane_slice_sums): as the walk leaves slice i, the warp's lanes add their shares
// (every lane reaches this point together: slice boundaries are warp-uniform) and lane 0 writes the sum, once per slice
// per block, row i column bx.
struct KvcSliceSumsEmit {
    static constexpr bool writes = true;
    uint64_t* out;
    uint64_t stride;
    uint32_t bx, lane;
    __device__ __forceinline__ void operator()(uint32_t i, uint64_t v) {
        v = kvc_warp_sum(v);
        if (lane == 0) out[(uint64_t)i * stride + bx] = v;
    }
};

// Per-slice sums: warp w of CTA (bx, by) sums its consecutive slices (kvc_slice_sums_warp_slices: the planner's slices
// per warp, enough to fill a lane's batch of loads) over block first_block + bx in one walk, after the same staging as
// the fused kernel (the block's page ids, the CTA's descriptors).
template <int VEC, int MIX>
__device__ __forceinline__ void kvc_slice_sums_body(const KvcChecksumParams& p) {
    __shared__ KvcSlice stage_slices[KVC_WARPS * KVC_SLICE_SUMS_MAX_SPW];
    __shared__ int32_t stage_table[KVC_TABLE_STAGE];
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint64_t block = p.first_block + blockIdx.x;
    uint32_t c0, c1;
    kvc_slice_sums_chunk(p, blockIdx.y, c0, c1);
    kvc_stage_phase(p, block, true, c0, c1, threadIdx.x, stage_table, stage_slices);
    __syncthreads();
    uint32_t i0, i1;
    kvc_slice_sums_warp_slices(p, blockIdx.y, warp, i0, i1);
    if (i0 >= i1) return;  // whole warp leaves together, after the barrier: the shuffles stay full-warp
    const int32_t* tab;
    uint64_t tab0;
    kvc_table_view(p, block, stage_table, tab, tab0);
    KvcSliceSumsEmit emit{p.out, p.out_stride, blockIdx.x, lane};
    kvc_lane_slice_sums<VEC, MIX>(p, stage_slices, c0, i0, i1, tab, tab0, block, lane, emit);
}

// Twelve kernels, kvc_{block_checksums,slice_sums}_{16b,8b,1b}[_mixed], each in two occupancy variants:
//   16b: 16-byte loads: every slice's bases and strides are 16-byte aligned and its K and V piece counts are even;
//   8b: 8-byte loads: bases and strides multiples of 8;
//   1b: pieces assembled from aligned 8-byte words: any layout (offsets and strides of any byte count);
//   _mixed: the mixed mode, the same kernels with every loaded piece through kvc_feistel3 first.
// The default variant asks for 2 CTAs of 256 per SM (at most 128 registers: a batch's 128 bytes of loads per thread
// in flight with no spills; PtxEvidenceTest reads ptxas' report); the _occ3 variant, the same code, for 3 (at most
// 80 registers), more bytes in flight per SM if ptxas fits the batch without spills. CudaBackend loads one variant
// (system property kvchecksum.cuda.variant, kernels-cuda/README.md); the default changes only after a device run.
// A batched launch (num_requests > 0) first resolves the CTA's request (kvc_request_params), then runs the same body.
#define KVC_CHECKSUM_KERNEL(NAME, BODY, VEC, MIX) \
    extern "C" __global__ void __launch_bounds__(KVC_THREADS, 2) NAME(const KvcChecksumParams p) { \
        if (p.num_requests == 0) BODY<VEC, MIX>(p); else BODY<VEC, MIX>(kvc_request_params(p, blockIdx.x)); } \
    extern "C" __global__ void __launch_bounds__(KVC_THREADS, 3) NAME##_occ3(const KvcChecksumParams p) { \
        if (p.num_requests == 0) BODY<VEC, MIX>(p); else BODY<VEC, MIX>(kvc_request_params(p, blockIdx.x)); }
#define KVC_CHECKSUM_KERNELS(SUFFIX, MIX) \
    KVC_CHECKSUM_KERNEL(kvc_block_checksums_16b##SUFFIX, kvc_block_checksums_body, 2, MIX) \
    KVC_CHECKSUM_KERNEL(kvc_block_checksums_8b##SUFFIX, kvc_block_checksums_body, 1, MIX) \
    KVC_CHECKSUM_KERNEL(kvc_block_checksums_1b##SUFFIX, kvc_block_checksums_body, 0, MIX) \
    KVC_CHECKSUM_KERNEL(kvc_slice_sums_16b##SUFFIX, kvc_slice_sums_body, 2, MIX) \
    KVC_CHECKSUM_KERNEL(kvc_slice_sums_8b##SUFFIX, kvc_slice_sums_body, 1, MIX) \
    KVC_CHECKSUM_KERNEL(kvc_slice_sums_1b##SUFFIX, kvc_slice_sums_body, 0, MIX)
KVC_CHECKSUM_KERNELS(, 0)
KVC_CHECKSUM_KERNELS(_mixed, 1)

extern "C" __global__ void __launch_bounds__(KVC_THREADS) kvc_sum_parts(const KvcReduceParams p) {
    const uint32_t i = blockIdx.x * KVC_THREADS + threadIdx.x;
    if (i < p.n) p.out[i] = kvc_reduce_one(p, i);
}

extern "C" __global__ void __launch_bounds__(KVC_THREADS) kvc_fill_u64(const KvcFillParams p) {
    for (uint64_t i = (uint64_t)blockIdx.x * KVC_THREADS + threadIdx.x; i < p.n; i += (uint64_t)gridDim.x * KVC_THREADS) {
        p.p[i] = kvc_splitmix64(p.seed + i);
    }
}

// The read-bound reference for benchmarks: the least work that still reads every byte (16-byte loads, a few
// independent loads in flight per thread, wrapping adds), one partial per CTA.
extern "C" __global__ void __launch_bounds__(KVC_THREADS) kvc_sum_u64(const KvcSumParams p) {
    const ulonglong2* in = reinterpret_cast<const ulonglong2*>(p.p);
    const uint64_t stride = (uint64_t)gridDim.x * KVC_THREADS;
    uint64_t a = 0, b = 0;
    uint64_t i = (uint64_t)blockIdx.x * KVC_THREADS + threadIdx.x;
    for (; i + 3 * stride < p.n16; i += 4 * stride) {
        ulonglong2 v0 = __ldcs(in + i), v1 = __ldcs(in + i + stride), v2 = __ldcs(in + i + 2 * stride),
                   v3 = __ldcs(in + i + 3 * stride);
        a += v0.x + v1.x + v2.x + v3.x;
        b += v0.y + v1.y + v2.y + v3.y;
    }
    for (; i < p.n16; i += stride) {
        ulonglong2 v = __ldcs(in + i);
        a += v.x;
        b += v.y;
    }
    uint64_t v = kvc_warp_sum(a + b);
    __shared__ uint64_t ws[KVC_WARPS];
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t s = 0;
        for (int w = 0; w < KVC_WARPS; ++w) s += ws[w];
        p.partials[blockIdx.x] = s;
    }
}

// SGLang's page digest (kvchecksum_digest.cuh): warp w of CTA b writes the Adler-32 of piece b*KVC_WARPS + w.
#include "kvchecksum_digest.cuh"
static_assert(sizeof(KvcDigestPiece) == 16, "KvcDigestPiece ABI");
static_assert(sizeof(KvcDigestParams) == 24, "KvcDigestParams ABI");

extern "C" __global__ void __launch_bounds__(KVC_THREADS) kvc_page_digest(const KvcDigestParams p) {
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint64_t i = (uint64_t)blockIdx.x * KVC_WARPS + warp;
    if (i >= p.num_pieces) return;  // the whole warp leaves: the shuffles below stay full-warp
    const KvcDigestPiece piece = p.pieces[i];
    uint32_t s, w;
    kvc_digest_lane(reinterpret_cast<const char*>(piece.addr), piece.len, lane, s, w);
    const uint64_t ts = kvc_warp_sum(s), tw = kvc_warp_sum(w);
    if (lane == 0) p.out[i] = kvc_digest_finish(ts, tw, piece.len);
}

// The verifying copy (issue 29): kvc_copy_checksums_{16b,8b}[_mixed] and kvc_copy_byte_cells[_mixed].
#define KVC_COPY_KERNELS
#include "kvchecksum_copy.cuh"
static_assert(sizeof(KvcCopyParams) == 88, "KvcCopyParams ABI");
