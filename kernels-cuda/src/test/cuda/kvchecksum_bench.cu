// The device check's reference kernels (see kvchecksum_bench.cuh). Test-side: not part of the shipped fatbin.
#include "kvchecksum_bench.cuh"

static_assert(sizeof(KvcbGatherParams) == 56, "KvcbGatherParams ABI (DeviceCheck.GATHER_PARAMS_BYTES)");

// 8 independent 16-byte loads per lane before the first add (128 bytes in flight per thread, as many as the fused
// kernel issues), evict-first like the fused kernel's; 8 CTAs of 256 per SM by the launch (few registers).
extern "C" __global__ void __launch_bounds__(KVC_THREADS) kvcb_gather_sum(const KvcbGatherParams p) {
    const uint32_t lane = threadIdx.x & 31;
    const uint64_t chunks = (uint64_t)p.num_regions * p.num_pages;
    const uint64_t warps = (uint64_t)gridDim.x * KVC_WARPS;
    uint64_t a = 0, b = 0;
    for (uint64_t c = (uint64_t)blockIdx.x * KVC_WARPS + (threadIdx.x >> 5); c < chunks; c += warps) {
        const ulonglong2* in = reinterpret_cast<const ulonglong2*>(kvcb_chunk(p, c));
        uint32_t u = lane;
        for (; u + 7 * 32 < p.page_units; u += 8 * 32) {
            ulonglong2 v[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = __ldcs(in + u + 32 * k);
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                a += v[k].x;
                b += v[k].y;
            }
        }
        for (; u < p.page_units; u += 32) {
            const ulonglong2 v = __ldcs(in + u);
            a += v.x;
            b += v.y;
        }
    }
    uint64_t s = a + b;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    __shared__ uint64_t ws[KVC_WARPS];
    if (lane == 0) ws[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t t = 0;
        for (int w = 0; w < KVC_WARPS; ++w) t += ws[w];
        p.partials[blockIdx.x] = t;
    }
}

// The batched page copy (kvchecksum_bench.cuh): a warp per chunk, 8 independent 16-byte loads per lane before the first
// store, like the verifying copy's batches; plain stores (the copy's target is read next).
extern "C" __global__ void __launch_bounds__(KVC_THREADS) kvcb_page_copy(const KvcbGatherParams p) {
    const uint32_t lane = threadIdx.x & 31;
    const uint64_t chunks = (uint64_t)p.num_regions * p.num_pages;
    const uint64_t warps = (uint64_t)gridDim.x * KVC_WARPS;
    for (uint64_t c = (uint64_t)blockIdx.x * KVC_WARPS + (threadIdx.x >> 5); c < chunks; c += warps) {
        const ulonglong2* in = reinterpret_cast<const ulonglong2*>(kvcb_chunk(p, c));
        ulonglong2* out = reinterpret_cast<ulonglong2*>(kvcb_copy_target(p, c));
        uint32_t u = lane;
        for (; u + 7 * 32 < p.page_units; u += 8 * 32) {
            ulonglong2 v[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = __ldcs(in + u + 32 * k);
#pragma unroll
            for (int k = 0; k < 8; ++k) out[u + 32 * k] = v[k];
        }
        for (; u < p.page_units; u += 32) out[u] = __ldcs(in + u);
    }
}
