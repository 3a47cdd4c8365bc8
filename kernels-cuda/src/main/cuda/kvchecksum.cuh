// kvchecksum: the arithmetic shared by the CUDA kernels and the host test library.
//
// Everything here is __host__ __device__: the kernels in kvchecksum_kernels.cu call it on the GPU and
// kvchecksum_host.cu calls the very same functions on the CPU, so CI (which has no GPU) runs the kernels'
// per-thread arithmetic over the golden vectors. Only the cross-thread sums (warp shuffles, shared memory)
// differ, and wrapping uint64 addition is associative and commutative, so any summation order is exact.
//
// The definition (docs/definition.md): piece j = t*P + p of a slice (t = request position, P = pieces per
// cell, p = piece in cell; K pieces first, then V) has weight 2j+1; slice sum s = sum x_j*(2j+1); block
// checksum c = sum m*s with m = 2*(layer*2^16 + head) + 1. All arithmetic is modulo 2^64.
//
// The structs below are the kernels' ABI. Java writes them byte for byte (io.kvchecksum.cuda.KernelAbi), and
// a test compares its offsets with kvc_abi() of the host library, so change both together.
#pragma once
#include <stdint.h>
#include <stddef.h>

#if defined(__CUDACC__)
#define KVC_HD __host__ __device__ __forceinline__
#else
#define KVC_HD inline
#endif

// Threads per CTA of every kernel (8 warps). Launch planning in Java uses the same number.
#define KVC_THREADS 256
#define KVC_WARPS (KVC_THREADS / 32)

// One (layer, global head) slice of a cache group. 64 bytes.
struct KvcSlice {
    uint64_t factor;          // m = 2*(layer*2^16 + head) + 1
    uint64_t k_base;          // address of this head's K cell in page 0, slot 0 (region base + offset + head*head_stride)
    int64_t k_page_stride;    // bytes from page i to page i+1 of K
    int64_t k_token_stride;   // bytes from slot o to slot o+1 within a K page
    uint64_t v_base;          // as k_base, for V; unused when v_pieces == 0
    int64_t v_page_stride;
    int64_t v_token_stride;
    uint32_t k_pieces;        // 8-byte pieces of K per cell (> 0)
    uint32_t v_pieces;        // 8-byte pieces of V per cell (0: the cell is K only, e.g. MLA)
};

// One request of a batched launch (several requests of one engine step over the same slices, one kernel launch):
// where its blocks and page ids lie in the batch's. The same for both outputs, so one upload serves both. 40 bytes.
struct KvcRequest {
    uint64_t start_token;     // as KvcChecksumParams.start_token, for this request
    uint64_t first_block;     // request block position of the request's first block in the batch
    uint64_t num_tokens;      // as KvcChecksumParams.num_tokens, for this request
    uint64_t block_begin;     // batch block index of the request's first block (ascending over the requests)
    uint32_t table_offset;    // entries of the batch's table before this request's page ids
    uint32_t num_blocks;      // the request's blocks: its slice sums' row stride
};

// Parameters of kvc_block_checksums_{8b,16b} and kvc_slice_sums_{8b,16b}, passed by value. 96 bytes.
// Batched (num_requests > 0): table, out and first_block are the batch's (first_block: the batch block index of
// blockIdx.x == 0) and out_stride is the values per block of the batch's output (1 for block checksums, num_slices
// for slice sums: each request's values follow the previous request's); each CTA takes its request's fields from
// `requests` (kvc_request_params) before anything else.
struct KvcChecksumParams {
    const KvcSlice* slices;   // [num_slices], device
    const int32_t* table;     // device page ids; entry i holds request positions start_token + i*page_size ..
    uint64_t* out;            // block checksums: [num_blocks], zeroed by the host, every part's CTA adds its partial
                              // atomically; slices: row i at out + i*out_stride, column b = this launch's block b
    uint64_t start_token;     // request position of table entry 0 (the request's firstBlock * block_size)
    uint64_t first_block;     // request block position of this launch's block 0 (blockIdx.x == 0)
    uint64_t num_tokens;      // the request's token count; clips the last block
    uint32_t block_size;      // tokens per checksum block
    uint32_t page_size;       // slots per physical page
    uint32_t num_blocks;      // blocks in this launch (gridDim.x)
    uint32_t num_slices;      // entries of slices
    uint32_t slices_per_part; // block checksums: slices summed by one CTA (gridDim.y parts cover all slices)
    uint32_t num_parts;       // block checksums: gridDim.y
    uint64_t out_stride;      // slice sums: elements between rows of out
    const KvcRequest* requests; // [num_requests], device; unused when num_requests == 0 (one request)
    uint32_t num_requests;    // 0: a launch of one request, fields as above
    uint32_t reserved;
};

// The parameters of CTA column bx of a batched launch as a launch of its request alone: the request holding batch
// block first_block + bx (the last whose block_begin is at most it), with table, out and first_block shifted so that
// the kernels' `p.first_block + bx`, `p.out + bx` and `p.out + i*out_stride + bx` address that request's block, output
// word and slice-sum row. Shifts wrap modulo 2^64 like every position here.
KVC_HD KvcChecksumParams kvc_request_params(KvcChecksumParams p, uint32_t bx) {
    const uint64_t g = p.first_block + bx;
    uint32_t lo = 0, hi = p.num_requests - 1;
    while (lo < hi) {
        const uint32_t mid = (lo + hi + 1) / 2;
        if (p.requests[mid].block_begin <= g) lo = mid; else hi = mid - 1;
    }
    const KvcRequest q = p.requests[lo];
    const uint64_t shift = p.first_block - q.block_begin;  // request-relative index of column 0 (may wrap)
    p.table += q.table_offset;
    p.start_token = q.start_token;
    p.first_block = q.first_block + shift;
    p.num_tokens = q.num_tokens;
    p.out = reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(p.out) + 8 * (q.block_begin * p.out_stride + shift));
    p.out_stride = q.num_blocks;
    p.num_requests = 0;
    return p;
}

// kvc_sum_parts: out[i] = sum_k in[i*parts + k], i < n.
struct KvcReduceParams {
    const uint64_t* in;
    uint64_t* out;
    uint32_t n;
    uint32_t parts;
};

// kvc_fill_u64 (benchmark data): p[i] = splitmix64(seed + i).  kvc_sum_u64 (read-bound reference): a plain
// wrapping sum of n 16-byte units, one partial per CTA.
struct KvcFillParams {
    uint64_t* p;
    uint64_t n;
    uint64_t seed;
};
struct KvcSumParams {
    const uint64_t* p;        // 16-byte aligned
    uint64_t n16;             // 16-byte units
    uint64_t* partials;       // [gridDim.x]
};

// The mixed mode's mixer, exactly Definition.feistel3 in Java (docs/detection.md): three Feistel rounds on the
// 32-bit halves, each one 32 x 32 -> 64-bit multiply (mul.wide.u32), a fold and an xor into the other half.
KVC_HD uint64_t kvc_feistel3(uint64_t x) {
    uint32_t hi = (uint32_t)(x >> 32), lo = (uint32_t)x;
    uint64_t p = (uint64_t)lo * 0x9E3779B9u;
    hi ^= (uint32_t)(p ^ (p >> 32));
    p = (uint64_t)hi * 0x85EBCA6Bu;
    lo ^= (uint32_t)(p ^ (p >> 32));
    p = (uint64_t)lo * 0xC2B2AE35u;
    hi ^= (uint32_t)(p ^ (p >> 32));
    return ((uint64_t)hi << 32) | lo;
}

// The value a piece contributes before weighting: the piece (standard mode, MIX = 0) or its mix (mixed mode,
// MIX = 1). The one replaceable step; MIX is a template parameter so the standard kernels compile as before.
template <int MIX> KVC_HD uint64_t kvc_piece_value(uint64_t x) { return MIX ? kvc_feistel3(x) : x; }

// One load's contribution to a unit's running sums, the same in every loop: A sums the load's piece values over the
// tokens so far, T sums A (the token weights, without a multiply), A1 the second piece of a 16-byte load (its index
// is one higher). The piece value is the mode's replaceable step.
template <int VEC, int MIX> KVC_HD void kvc_accumulate(uint64_t x0, uint64_t x1, uint64_t& A, uint64_t& A1, uint64_t& T) {
    const uint64_t y0 = kvc_piece_value<MIX>(x0);
    const uint64_t y1 = VEC == 2 ? kvc_piece_value<MIX>(x1) : 0;
    A += y0 + y1;
    A1 += y1;
    T += A;
}

KVC_HD uint64_t kvc_factor(uint32_t layer, uint32_t head) {
    return 2ull * ((uint64_t)layer * 65536ull + head) + 1ull;
}

KVC_HD uint32_t kvc_pow2_floor(uint32_t x) {
    uint32_t p = 1;
    while (p * 2 <= x) p *= 2;
    return p;
}

KVC_HD uint64_t kvc_udiv(uint64_t a, uint32_t b) {
    // 32-bit division is far cheaper on the GPU; positions fit 32 bits in practice.
    return (a >> 32) == 0 ? (uint64_t)((uint32_t)a / b) : a / b;
}

// Load widths. VEC is the kernels' template parameter: 2 = one aligned 16-byte load (two pieces), 1 = one aligned
// 8-byte load (one piece), 0 = one piece at any byte address, assembled from the (one or two) aligned 8-byte words
// that hold it. A misaligned load is a sticky CUDA_ERROR_MISALIGNED_ADDRESS that kills the engine's context, so
// the host picks the variant from every part's alignment class (SlicePlan.Part.alignmentAt) and the narrower path
// is always correct. Both aligned words of VEC 0 hold at least one byte of the piece, so they lie in the same
// allocation (device allocations are at least 256-byte granular).
#define KVC_PIECES_PER_LOAD(VEC) ((VEC) == 2 ? 2 : 1)
#define KVC_LOAD_BYTES(VEC) (8 * KVC_PIECES_PER_LOAD(VEC))

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ uint64_t kvc_ld8(const char* a) {
    // Read once, never reused: stream it past L1/L2 with evict-first.
    return __ldcs(reinterpret_cast<const unsigned long long*>(a));
}
__device__ __forceinline__ void kvc_ld16(const char* a, uint64_t& x0, uint64_t& x1) {
    ulonglong2 v = __ldcs(reinterpret_cast<const ulonglong2*>(a));
    x0 = v.x;
    x1 = v.y;
}
#else
// The host build traps where the GPU would: an address that is not a multiple of the load width sets the fault flag
// (kvc_emulate turns it into CUDA_ERROR_MISALIGNED_ADDRESS) and loads nothing, so a wrong variant choice fails the
// emulated tests instead of passing through memcpy. x86-64 is little-endian like the GPU.
extern thread_local int kvc_host_fault;
inline uint64_t kvc_ld8(const char* a) {
    uint64_t x = 0;
    if (((uintptr_t)a & 7) != 0) { kvc_host_fault = 1; return 0; }
    __builtin_memcpy(&x, a, 8);
    return x;
}
inline void kvc_ld16(const char* a, uint64_t& x0, uint64_t& x1) {
    if (((uintptr_t)a & 15) != 0) { kvc_host_fault = 1; x0 = x1 = 0; return; }
    __builtin_memcpy(&x0, a, 8);
    __builtin_memcpy(&x1, a + 8, 8);
}
#endif

// One piece at any address from aligned 8-byte words: the low word shifted down, the high word's first bytes on top.
KVC_HD uint64_t kvc_ld8_any(const char* a) {
    const uintptr_t u = (uintptr_t)a;
    const char* w = reinterpret_cast<const char*>(u & ~(uintptr_t)7);
    const uint32_t sh = (uint32_t)(u & 7) * 8;
    const uint64_t lo = kvc_ld8(w);
    if (sh == 0) return lo;  // aligned: the next word may lie past the allocation, never read it
    const uint64_t hi = kvc_ld8(w + 8);
    return (lo >> sh) | (hi << (64 - sh));
}

template <int VEC> KVC_HD void kvc_load(const char* a, uint64_t& x0, uint64_t& x1) {
    if (VEC == 2) {
        kvc_ld16(a, x0, x1);
    } else if (VEC == 1) {
        x0 = kvc_ld8(a);
        x1 = 0;
    } else {
        x0 = kvc_ld8_any(a);
        x1 = 0;
    }
}

// Tokens a lane loads back to back before it consumes the first: 8 independent 16-byte loads in flight per thread
// (kvc_ptx_check in the tests asserts it on the PTX), about 128 bytes x 256 threads x CTAs per SM; see
// docs/gpu-performance.md for what Little's law makes of that.
#define KVC_BATCH 8
#if defined(__CUDA_ARCH__)
#define KVC_UNROLL _Pragma("unroll")
#else
#define KVC_UNROLL
#endif

// log2(page_size) for a power of two, else 32: page lookups become shifts for the usual page sizes.
KVC_HD uint32_t kvc_page_shift(uint32_t page_size) {
    if (page_size == 0 || (page_size & (page_size - 1)) != 0) return 32;
    uint32_t s = 0;
    while ((1u << s) != page_size) ++s;
    return s;
}

// The cell address of request-table index idx (table space: 0 is start_token). `tab` holds the page ids from
// table-space page tab0 on (the CTA's staged copy on the GPU, the whole table on the host).
KVC_HD const char* kvc_cell(uint64_t base, int64_t ps, int64_t ts, const int32_t* tab, uint64_t tab0, uint64_t idx,
                            uint32_t page_size, uint32_t shift) {
    const uint64_t page_idx = shift < 32 ? idx >> shift : kvc_udiv(idx, page_size);
    const uint64_t slot = idx - page_idx * page_size;
    return reinterpret_cast<const char*>(base + (uint64_t)(int64_t)tab[page_idx - tab0] * (uint64_t)ps + slot * (uint64_t)ts);
}

// Unit u of slice s (K units 0..kU-1, then V units): where its bytes start, its part's strides, and its first piece
// in the cell. Inlined into the lane's loop like the expressions it stands for.
template <int VEC>
struct KvcUnit {
    uint64_t base, piece;
    int64_t ps, ts;
    KVC_HD KvcUnit(const KvcSlice& s, uint32_t u, uint32_t kU) {
        const bool isK = u < kU;
        const uint32_t uu = isK ? u : u - kU;
        base = (isK ? s.k_base : s.v_base) + (uint64_t)uu * KVC_LOAD_BYTES(VEC);
        ps = isK ? s.k_page_stride : s.v_page_stride;
        ts = isK ? s.k_token_stride : s.v_token_stride;
        piece = (isK ? 0 : (uint64_t)s.k_pieces) + (uint64_t)uu * KVC_PIECES_PER_LOAD(VEC);
    }
};

// The checksum contribution of one lane (0..31) of the warp that sums slice s over request block `block`.
//
// Lanes form a (token lane, unit lane) grid: unit lanes cover the cell's units (VEC pieces = 8*VEC bytes each,
// K units then V units), token lanes split the block's tokens (a power of two, so a warp reads several short
// cells at once). A lane keeps its unit fixed and visits tokens pos0, pos0+dt, ...: the weight of its pieces
// is then an arithmetic progression, and the weighted sum needs no multiply per piece:
//   sum_k x_k*pos_k = pos0*A + dt*(n*A - T),  A = sum_k x_k,  T = sum_k (x_0 + .. + x_k)
// The steady-state loop takes KVC_BATCH tokens at a time: first all their addresses (page ids from `tab`, which
// the kernel stages in shared memory), then all their loads into separate registers, then the adds, so the memory
// system sees KVC_BATCH independent loads per thread at once instead of one load and its use. The remaining
// tokens (fewer than KVC_BATCH per lane) go one at a time. Tokens past num_tokens are never read.
template <int VEC, int MIX = 0>
KVC_HD uint64_t kvc_lane_slice_sum(const KvcChecksumParams& p, const KvcSlice& s, const int32_t* tab, uint64_t tab0,
                                   uint64_t block, uint32_t lane) {
    const uint64_t bs = block * p.block_size;
    uint64_t be = bs + p.block_size;
    if (be > p.num_tokens) be = p.num_tokens;
    if (be <= bs) return 0;
    const uint32_t ntok = (uint32_t)(be - bs);
    const uint32_t kU = s.k_pieces / KVC_PIECES_PER_LOAD(VEC);
    const uint32_t U = kU + s.v_pieces / KVC_PIECES_PER_LOAD(VEC);
    const uint64_t P = (uint64_t)s.k_pieces + s.v_pieces;
    const uint32_t shift = kvc_page_shift(p.page_size);
    const uint64_t idx0 = bs - p.start_token;  // table-space index of the block's first token
    if (U >= 32) {
        // Wide cells (MLA: 72 or 41 units): the warp's lanes take (unit, batch of KVC_BATCH tokens) items in turn,
        // so lanes stay busy when U is not a multiple of 32 (41 units as 2 x 32 lanes would idle 23 of 64).
        const uint32_t nb = (ntok + KVC_BATCH - 1) / KVC_BATCH;
        uint32_t u = lane, b = 0;
        uint64_t acc = 0;
        for (uint32_t i = lane; i < U * nb; i += 32) {
            const KvcUnit<VEC> c(s, u, kU);
            const uint32_t t0 = b * KVC_BATCH;
            uint64_t A = 0, T = 0, A1 = 0;
            uint32_t n = 0;
            if (t0 + KVC_BATCH <= ntok) {
                const char* a[KVC_BATCH];
                uint64_t x0[KVC_BATCH], x1[KVC_BATCH];
                KVC_UNROLL
                for (int k = 0; k < KVC_BATCH; ++k) a[k] = kvc_cell(c.base, c.ps, c.ts, tab, tab0, idx0 + t0 + k, p.page_size, shift);
                KVC_UNROLL
                for (int k = 0; k < KVC_BATCH; ++k) kvc_load<VEC>(a[k], x0[k], x1[k]);
                KVC_UNROLL
                for (int k = 0; k < KVC_BATCH; ++k) kvc_accumulate<VEC, MIX>(x0[k], x1[k], A, A1, T);
                n = KVC_BATCH;
            } else {
                for (uint32_t t = t0; t < ntok; ++t) {
                    uint64_t x0, x1;
                    kvc_load<VEC>(kvc_cell(c.base, c.ps, c.ts, tab, tab0, idx0 + t, p.page_size, shift), x0, x1);
                    kvc_accumulate<VEC, MIX>(x0, x1, A, A1, T);
                    ++n;
                }
            }
            const uint64_t pos0 = bs + t0;
            acc += 2 * P * (pos0 * A + ((uint64_t)n * A - T)) + (2 * c.piece + 1) * A + 2 * A1;
            u += 32;  // next item: U >= 32, so one wrap at most
            if (u >= U) { u -= U; ++b; }
        }
        return acc;
    }
    const uint32_t unit_lanes = U;
    const uint32_t token_lanes = kvc_pow2_floor(32 / unit_lanes);
    const uint32_t tl = lane / unit_lanes;
    const uint32_t ul = lane - tl * unit_lanes;
    if (tl >= token_lanes) return 0;
    uint64_t acc = 0;
    for (uint32_t u = ul; u < U; u += unit_lanes) {
        const KvcUnit<VEC> c(s, u, kU);
        uint64_t A = 0, T = 0, A1 = 0;
        uint32_t n = 0;
        uint32_t t = tl;
        for (; t + (KVC_BATCH - 1) * token_lanes < ntok; t += KVC_BATCH * token_lanes) {
            const char* a[KVC_BATCH];
            uint64_t x0[KVC_BATCH], x1[KVC_BATCH];
            KVC_UNROLL
            for (int k = 0; k < KVC_BATCH; ++k) a[k] = kvc_cell(c.base, c.ps, c.ts, tab, tab0, idx0 + t + k * token_lanes, p.page_size, shift);
            KVC_UNROLL
            for (int k = 0; k < KVC_BATCH; ++k) kvc_load<VEC>(a[k], x0[k], x1[k]);
            KVC_UNROLL
            for (int k = 0; k < KVC_BATCH; ++k) kvc_accumulate<VEC, MIX>(x0[k], x1[k], A, A1, T);
            n += KVC_BATCH;
        }
        for (; t < ntok; t += token_lanes) {
            uint64_t x0, x1;
            kvc_load<VEC>(kvc_cell(c.base, c.ps, c.ts, tab, tab0, idx0 + t, p.page_size, shift), x0, x1);
            kvc_accumulate<VEC, MIX>(x0, x1, A, A1, T);
            ++n;
        }
        const uint64_t pos0 = bs + tl;
        const uint64_t sxpos = pos0 * A + (uint64_t)token_lanes * ((uint64_t)n * A - T);
        acc += 2 * P * sxpos + (2 * c.piece + 1) * A + 2 * A1;
    }
    return acc;
}

// One thread's share of the fused checksum of slices [i0, i1) of request block `block`: warp `warp` sums slices
// i0 + warp, + KVC_WARPS, ... each weighted by its factor; slice i is sl[i - sl0] (the kernel's shared-memory stage
// of the part's descriptors, or the whole array on the host).
template <int VEC, int MIX = 0>
KVC_HD uint64_t kvc_block_thread_range(const KvcChecksumParams& p, const KvcSlice* sl, uint32_t sl0, uint32_t i0, uint32_t i1,
                                       const int32_t* tab, uint64_t tab0, uint64_t block, uint32_t warp, uint32_t lane) {
    uint64_t acc = 0;
    for (uint32_t i = i0 + warp; i < i1; i += KVC_WARPS) {
        const KvcSlice& s = sl[i - sl0];
        acc += s.factor * kvc_lane_slice_sum<VEC, MIX>(p, s, tab, tab0, block, lane);
    }
    return acc;
}

// The slices of part `by` of the fused kernel: [s0, s1).
KVC_HD void kvc_part_slices(const KvcChecksumParams& p, uint32_t by, uint32_t& s0, uint32_t& s1) {
    s0 = by * p.slices_per_part;
    s1 = s0 + p.slices_per_part;
    if (s1 > p.num_slices) s1 = p.num_slices;
}

// The table-space pages [first, first + count) that request block `block` touches; count 0 for an empty block.
KVC_HD void kvc_block_pages(const KvcChecksumParams& p, uint64_t block, uint64_t& first, uint64_t& count) {
    const uint64_t bs = block * p.block_size;
    uint64_t be = bs + p.block_size;
    if (be > p.num_tokens) be = p.num_tokens;
    if (be <= bs) { first = 0; count = 0; return; }
    const uint32_t shift = kvc_page_shift(p.page_size);
    const uint64_t a = bs - p.start_token, b = be - 1 - p.start_token;
    first = shift < 32 ? a >> shift : kvc_udiv(a, p.page_size);
    count = (shift < 32 ? b >> shift : kvc_udiv(b, p.page_size)) - first + 1;
}

// One thread's share of the fused checksum of CTA (bx, by) read straight from the parameters (the host emulation).
// The CTA's threads' values add up to its partial.
template <int VEC, int MIX = 0>
KVC_HD uint64_t kvc_block_thread(const KvcChecksumParams& p, uint32_t bx, uint32_t by, uint32_t warp, uint32_t lane) {
    uint32_t s0, s1;
    kvc_part_slices(p, by, s0, s1);
    return kvc_block_thread_range<VEC, MIX>(p, p.slices, 0, s0, s1, p.table, 0, p.first_block + bx, warp, lane);
}

// The slice a warp of the slices kernel sums: CTA (bx, by), warp w -> slice by*KVC_WARPS + w, or -1 if none.
KVC_HD int64_t kvc_slice_sums_slice(const KvcChecksumParams& p, uint32_t by, uint32_t warp) {
    const uint64_t i = (uint64_t)by * KVC_WARPS + warp;
    return i < p.num_slices ? (int64_t)i : -1;
}

KVC_HD uint64_t kvc_reduce_one(const KvcReduceParams& p, uint32_t i) {
    uint64_t s = 0;
    const uint64_t* in = p.in + (uint64_t)i * p.parts;
    for (uint32_t k = 0; k < p.parts; ++k) s += in[k];
    return s;
}

KVC_HD uint64_t kvc_splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
