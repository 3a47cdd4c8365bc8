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

// Loads that may be switched off (a null address: no allocation is at 0): off, they read nothing and give 0 (a zero piece adds nothing to any sum, and
// kvc_feistel3(0) == 0). On the GPU one predicated instruction each, so a batch of them stays one basic block with
// every load issued before any is used (PtxEvidenceTest counts them); the outputs are written only after the address
// is read, so the compiler may give an output the address's register.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void kvc_ld16_if(const char* a, uint64_t& x0, uint64_t& x1) {
    asm("{\n\t.reg .pred q;\n\tsetp.ne.u64 q, %2, 0;\n\t@q ld.global.cs.v2.u64 {%0, %1}, [%2];\n\t"
        "@!q mov.b64 %0, 0;\n\t@!q mov.b64 %1, 0;\n\t}"
        : "=l"(x0), "=l"(x1) : "l"(a));
}
__device__ __forceinline__ uint64_t kvc_ld8_if(const char* a) {
    uint64_t x;
    asm("{\n\t.reg .pred q;\n\tsetp.ne.u64 q, %1, 0;\n\t@q ld.global.cs.u64 %0, [%1];\n\t@!q mov.b64 %0, 0;\n\t}"
        : "=l"(x) : "l"(a));
    return x;
}
#else
inline void kvc_ld16_if(const char* a, uint64_t& x0, uint64_t& x1) {
    if (a != nullptr) {
        kvc_ld16(a, x0, x1);
    } else {
        x0 = x1 = 0;
    }
}
inline uint64_t kvc_ld8_if(const char* a) { return a != nullptr ? kvc_ld8(a) : 0; }
#endif

// The aligned words of the 8 bytes at a (any address; null: off): lo holds a, hi the next word, read only when a is
// not aligned (the next word may then lie past the allocation); 0 where not read. One predicated pair on the GPU.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void kvc_ld8_words_if(const char* a, uint64_t& lo, uint64_t& hi) {
    asm("{\n\t.reg .pred q, r;\n\t.reg .b64 w, m;\n\t"
        "and.b64 w, %2, -8;\n\tand.b64 m, %2, 7;\n\t"
        "setp.ne.u64 q, %2, 0;\n\tsetp.ne.and.u64 r, m, 0, q;\n\t"
        "@q ld.global.cs.u64 %0, [w];\n\t@r ld.global.cs.u64 %1, [w+8];\n\t"
        "@!q mov.b64 %0, 0;\n\t@!r mov.b64 %1, 0;\n\t}"
        : "=l"(lo), "=l"(hi) : "l"(a));
}
#else
inline void kvc_ld8_words_if(const char* a, uint64_t& lo, uint64_t& hi) {
    const uintptr_t u = (uintptr_t)a;
    const char* w = reinterpret_cast<const char*>(u & ~(uintptr_t)7);
    lo = kvc_ld8_if(a != nullptr ? w : nullptr);
    hi = kvc_ld8_if(a != nullptr && (u & 7) != 0 ? w + 8 : nullptr);
}
#endif

// The 8 bytes at a (any address) from the aligned words lo (holding a) and hi (the next; 0 when a is aligned),
// sh = 8 * (a mod 8). Without a branch (hi shifted in two steps, so sh == 0 shifts it out): a branch here would end
// the batch's basic block after its first load.
KVC_HD uint64_t kvc_join8(uint64_t lo, uint64_t hi, uint32_t sh) {
    return (lo >> sh) | ((hi << 1) << (63 - sh));
}

// One load of width VEC (see above) that may be off (a null). VEC 0 reads the aligned word holding the piece's first byte and,
// when the piece is not aligned, the next one: both hold a byte of the piece, so both lie in its allocation.
template <int VEC> KVC_HD void kvc_load_if(const char* a, uint64_t& x0, uint64_t& x1) {
    if (VEC == 2) {
        kvc_ld16_if(a, x0, x1);
    } else if (VEC == 1) {
        x0 = kvc_ld8_if(a);
        x1 = 0;
    } else {
        kvc_ld8_words_if(a, x0, x1);  // the words: kvc_loaded joins them once the whole batch is issued
    }
}

// A loaded slot's pieces: VEC 0's two words joined into its piece (after all the batch's loads, so no load waits on
// an earlier one's data), the others as loaded.
template <int VEC> KVC_HD void kvc_loaded(const char* a, uint64_t& x0, uint64_t& x1) {
    if (VEC == 0) {
        x0 = kvc_join8(x0, x1, (uint32_t)((uintptr_t)a & 7) * 8);
        x1 = 0;
    }
}

// Loads a lane issues back to back before it consumes the first: KVC_BATCH of them, 128 bytes per thread for 16-byte
// loads, 8-byte loads and the two words of VEC 0 alike (PtxEvidenceTest counts the bytes in the PTX of every kernel);
// about 128 bytes x 256 threads x CTAs per SM in flight; see docs/gpu-performance.md for what Little's law makes of it.
#define KVC_BATCH 8
#define KVC_BATCH_SLOTS(VEC) ((VEC) == 1 ? 2 * KVC_BATCH : KVC_BATCH)
#if defined(__CUDA_ARCH__)
#define KVC_UNROLL _Pragma("unroll")
#else
#define KVC_UNROLL
#endif

// What the host emulation counts (kvc_stage_counts, kvc_batch_counts of the host library): page ids and descriptor words
// the staging copied, and the loads on per batch of the walk. Nothing on the GPU.
#if defined(__CUDA_ARCH__)
#define KVC_HOST_COUNT(which, n)
#else
extern void kvc_host_count(int which, uint64_t n);
#define KVC_HOST_COUNT(which, n) kvc_host_count(which, n)
#endif

// log2(page_size) for a power of two, else 32: page lookups become shifts for the usual page sizes.
KVC_HD uint32_t kvc_page_shift(uint32_t page_size) {
    if (page_size == 0 || (page_size & (page_size - 1)) != 0) return 32;
    uint32_t s = 0;
    while ((1u << s) != page_size) ++s;
    return s;
}

// Entry i of a page table: the CTA's staged copy in shared memory, or the table itself in global memory, which nothing
// writes while a kernel runs, read through the read-only (non-coherent) path.
KVC_HD int32_t kvc_page_id(const int32_t* tab, uint64_t i) {
#if defined(__CUDA_ARCH__)
    return __isShared(tab) ? tab[i] : __ldg(tab + i);
#else
    return tab[i];
#endif
}

// The cell address of request-table index idx (table space: 0 is start_token). `tab` holds the page ids from
// table-space page tab0 on (the CTA's staged copy, or the table).
KVC_HD const char* kvc_cell(uint64_t base, int64_t ps, int64_t ts, const int32_t* tab, uint64_t tab0, uint64_t idx,
                            uint32_t page_size, uint32_t shift) {
    const uint64_t page_idx = shift < 32 ? idx >> shift : kvc_udiv(idx, page_size);
    const uint64_t slot = idx - page_idx * page_size;
    return reinterpret_cast<const char*>(base + (uint64_t)(int64_t)kvc_page_id(tab, page_idx - tab0) * (uint64_t)ps + slot * (uint64_t)ts);
}

// A lane's walk over the items of one slice of a block. The slice's items are its (token, unit) pairs in order,
// item = t*U + u (U units of VEC: K units, then V units); lane l takes items l, l + 32, l + 64, ..., so the warp's
// lanes read consecutive units whatever the cell size (short cells: several tokens per warp row; long ones: a row
// per part of a cell), every lane is busy, and each lane has the same number of items, `rem` (the last may lie past
// the block's tokens: then it is off). The piece index of an item is j = bs*P + item*PPL, so a lane's weights 2j+1
// form an arithmetic progression of step 64*PPL whatever U is: the sums need no multiply per piece (see below).
template <int VEC>
struct KvcWalk {
    const KvcSlice* s;    // the slice (its strides and bases are read where an address needs them)
    uint32_t kU, U;       // K units, all units
    uint32_t dq, dr;      // 32 items = dq tokens and dr units
    uint32_t t, u;        // the lane's next item
    uint32_t rem;         // items left to the lane in this slice (warp-uniform)
    KVC_HD void begin(const KvcSlice* sp, uint32_t ntok, uint32_t lane) {
        s = sp;
        kU = sp->k_pieces / KVC_PIECES_PER_LOAD(VEC);
        U = kU + sp->v_pieces / KVC_PIECES_PER_LOAD(VEC);
        dq = 32 / U;
        dr = 32 - dq * U;
        t = lane / U;
        u = lane - t * U;
        rem = (uint32_t)(((uint64_t)ntok * U + 31) / 32);
    }
    KVC_HD void next() {
        u += dr;
        t += dq;
        if (u >= U) {
            u -= U;
            ++t;
        }
        --rem;
    }
    // The address of the next item; of the block's last token for an item past it (read by nobody: its load is off,
    // but the page id read stays within the block's pages).
    KVC_HD const char* address(const int32_t* tab, uint64_t tab0, uint64_t idx0, uint32_t ntok, uint32_t page_size,
                               uint32_t shift) const {
        const bool isK = u < kU;
        const uint32_t tt = t < ntok ? t : ntok - 1;
        const uint64_t base = isK ? s->k_base + (uint64_t)u * KVC_LOAD_BYTES(VEC) : s->v_base + (uint64_t)(u - kU) * KVC_LOAD_BYTES(VEC);
        return kvc_cell(base, isK ? s->k_page_stride : s->v_page_stride, isK ? s->k_token_stride : s->v_token_stride,
                        tab, tab0, idx0 + tt, page_size, shift);
    }
};

// The weight of lane `lane`'s first item of slice s in block start bs: 2j+1 for j = bs*P + lane*PPL.
template <int VEC>
KVC_HD uint64_t kvc_first_weight(const KvcSlice& s, uint64_t bs, uint32_t lane) {
    const uint64_t P = (uint64_t)s.k_pieces + s.v_pieces;
    return 2 * (bs * P + (uint64_t)lane * KVC_PIECES_PER_LOAD(VEC)) + 1;
}

// One lane's (0..31) walk of a warp over slices i0, i0 + di, ... (< i1) of request block `block`: when the walk leaves
// slice i it hands emit(i, v) the lane's share v of the slice's sum, times its factor (weighted) or not; slice i is
// sl[i - sl0] (the CTA's staged descriptors, or the array). Every slice is handed over exactly once, in order, and at
// the same point of every lane's walk (the walk's slice boundaries are warp-uniform), so emit may shuffle across the
// warp: the block checksums add the values up (kvc_lane_slices_sum), the slice sums reduce each over the warp and
// write it (KvcSliceSumsEmit of the kernels, its host twin in the test library).
//
// The lane walks its items slice after slice (KvcWalk) in batches of KVC_BATCH_SLOTS: first the batch's addresses
// (page ids from `tab`), then all its loads into separate registers (off past the block's tokens and past the last
// slice), then the adds. So every thread has 128 bytes of independent loads in flight whatever the cell size: a batch
// runs on into the next slices where one slice holds fewer items per lane (short cells, short or partial blocks).
// Within a slice the lane's weights are w0, w0 + D, w0 + 2D, ... (D = 64*PPL), so its weighted sum is
//   sum_k y_k*(w0 + k*D) = w0*A + D*(n*A - T),  A = sum_k y_k,  T = sum_k (y_0 + .. + y_k)
// plus 2*A1 (the second piece of a 16-byte load weighs 2 more). Items that are off add zeros at the end of a slice's
// run, which leaves n*A - T unchanged. Tokens past num_tokens are never read.
template <int VEC, int MIX, class Emit>
KVC_HD void kvc_lane_slices_walk(const KvcChecksumParams& p, const KvcSlice* sl, uint32_t sl0, uint32_t i0, uint32_t i1,
                                 uint32_t di, bool weighted, const int32_t* tab, uint64_t tab0, uint64_t block,
                                 uint32_t lane, Emit& emit) {
    const uint64_t bs = block * p.block_size;
    uint64_t be = bs + p.block_size;
    if (be > p.num_tokens) be = p.num_tokens;
    if (be <= bs || i0 >= i1) {
        // An empty block: every slice's sum is 0 (written where the emit writes; adding zeros is nothing to do).
        if (Emit::writes) for (uint32_t i = i0; i < i1; i += di) emit(i, 0);
        return;
    }
    const uint32_t ntok = (uint32_t)(be - bs);
    const uint32_t shift = kvc_page_shift(p.page_size);
    const uint64_t idx0 = bs - p.start_token;  // table-space index of the block's first token
    const uint64_t D = 64 * KVC_PIECES_PER_LOAD(VEC);
    constexpr int N = KVC_BATCH_SLOTS(VEC);
    KvcWalk<VEC> w;
    w.begin(&sl[i0 - sl0], ntok, lane);
    uint32_t iw = i0;                     // the walk's slice
    uint32_t ia = i0;                     // the slice the sums A, T, A1 belong to
    uint64_t F = weighted ? sl[i0 - sl0].factor : 1, w0 = kvc_first_weight<VEC>(sl[i0 - sl0], bs, lane);
    uint64_t A = 0, T = 0, A1 = 0;
    uint32_t n = 0;
    bool live = true;
    while (live) {
        const char* a[N];
        uint32_t starts = 0;  // bit k: slot k is the first item of the next slice
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            if (live && w.rem == 0) {
                iw += di;
                if (iw < i1) {
                    w.begin(&sl[iw - sl0], ntok, lane);
                    starts |= 1u << k;
                } else {
                    live = false;
                }
            }
            a[k] = live && w.t < ntok ? w.address(tab, tab0, idx0, ntok, p.page_size, shift) : nullptr;
            if (live) w.next();
        }
        if (live && w.rem == 0 && iw + di >= i1) live = false;
#if !defined(__CUDA_ARCH__)
        // The host emulation counts the batch's loads that are on (kvc_batch_counts): how full batches run.
        uint64_t on = 0;
        for (int k = 0; k < N; ++k) on += a[k] != nullptr;
        KVC_HOST_COUNT(2, on);
        KVC_HOST_COUNT(3, 1);
#endif
        uint64_t x0[N], x1[N];
        KVC_UNROLL
        for (int k = 0; k < N; ++k) kvc_load_if<VEC>(a[k], x0[k], x1[k]);
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            if (starts & (1u << k)) {
                emit(ia, F * (w0 * A + D * ((uint64_t)n * A - T) + 2 * A1));
                A = T = A1 = n = 0;
                ia += di;
                F = weighted ? sl[ia - sl0].factor : 1;
                w0 = kvc_first_weight<VEC>(sl[ia - sl0], bs, lane);
            }
            kvc_loaded<VEC>(a[k], x0[k], x1[k]);
            kvc_accumulate<VEC, MIX>(x0[k], x1[k], A, A1, T);
            ++n;
        }
    }
    emit(ia, F * (w0 * A + D * ((uint64_t)n * A - T) + 2 * A1));
}

// The emit of the block checksums: the lane's values of all its slices added up.
struct KvcAddEmit {
    static constexpr bool writes = false;
    uint64_t acc;
    KVC_HD void operator()(uint32_t, uint64_t v) { acc += v; }
};

// The contribution of one lane of a warp to slices i0, i0 + di, ... (< i1) of request block `block`, as
// kvc_lane_slices_walk hands them over, added up.
template <int VEC, int MIX>
KVC_HD uint64_t kvc_lane_slices_sum(const KvcChecksumParams& p, const KvcSlice* sl, uint32_t sl0, uint32_t i0, uint32_t i1,
                                    uint32_t di, bool weighted, const int32_t* tab, uint64_t tab0, uint64_t block,
                                    uint32_t lane) {
    KvcAddEmit e{0};
    kvc_lane_slices_walk<VEC, MIX>(p, sl, sl0, i0, i1, di, weighted, tab, tab0, block, lane, e);
    return e.acc;
}

// The slice sums of one lane (0..31) of warp `warp` over request block `block`: its consecutive slices
// (kvc_slice_sums_warp_slices) in one walk, each slice's unweighted sum handed to emit as the walk leaves it. Slice i is
// sl[i - sl0] (the CTA's staged descriptors, or the array).
template <int VEC, int MIX, class Emit>
KVC_HD void kvc_lane_slice_sums(const KvcChecksumParams& p, const KvcSlice* sl, uint32_t sl0, uint32_t i0, uint32_t i1,
                                const int32_t* tab, uint64_t tab0, uint64_t block, uint32_t lane, Emit& emit) {
    kvc_lane_slices_walk<VEC, MIX>(p, sl, sl0, i0, i1, 1, false, tab, tab0, block, lane, emit);
}

// One thread's share of the fused checksum of slices [i0, i1) of request block `block`: warp `warp` sums slices
// i0 + warp, + KVC_WARPS, ... each weighted by its factor; slice i is sl[i - sl0] (the kernel's shared-memory stage
// of the part's descriptors, or the whole array on the host).
template <int VEC, int MIX = 0>
KVC_HD uint64_t kvc_block_thread_range(const KvcChecksumParams& p, const KvcSlice* sl, uint32_t sl0, uint32_t i0, uint32_t i1,
                                       const int32_t* tab, uint64_t tab0, uint64_t block, uint32_t warp, uint32_t lane) {
    return kvc_lane_slices_sum<VEC, MIX>(p, sl, sl0, i0 + warp, i1, KVC_WARPS, true, tab, tab0, block, lane);
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

// The staging of a CTA, as phases that the kernels separate with barriers and the host emulation runs for every
// thread of the CTA in turn, phase after phase (so CI runs the staging too): the block's page ids (up to
// KVC_TABLE_STAGE of them, 1 KiB) and the descriptors of the slices the CTA reads (in chunks of KVC_SLICE_CHUNK,
// 4 KiB, in the fused kernel; KVC_WARPS * KVC_SLICE_SUMS_MAX_SPW at most in the slices kernels) go to shared memory
// once, so the dependent small loads before a slice's first data load are shared-memory reads, not L2 round trips. Both come through the read-only path: nothing writes them while a kernel runs.
#define KVC_SLICE_CHUNK 64
#define KVC_TABLE_STAGE 256

KVC_HD uint64_t kvc_ldg64(const uint64_t* a) {
#if defined(__CUDA_ARCH__)
    return __ldg(reinterpret_cast<const unsigned long long*>(a));
#else
    return *a;
#endif
}

// After the staging phase with the table and a barrier: where the lanes find the page ids (tab[i - tab0] holds
// table-space page i).
KVC_HD void kvc_table_view(const KvcChecksumParams& p, uint64_t block, const int32_t* stage, const int32_t*& tab, uint64_t& tab0) {
    uint64_t first, count;
    kvc_block_pages(p, block, first, count);
    if (count <= KVC_TABLE_STAGE) {
        tab = stage;
        tab0 = first;
    } else {
        tab = p.table;
        tab0 = 0;
    }
}

// Descriptor words a thread copies at most in one staging phase: KVC_WARPS * KVC_SLICE_SUMS_MAX_SPW descriptors (the
// slices kernels' stage; the fused kernel's chunk of KVC_SLICE_CHUNK is half of it) over the CTA's threads.
#define KVC_STAGE_WORDS 4

// Phase "stage" of thread tid: its share of the copy of block `block`'s page ids into table_stage (with_table; none
// when the block spans more than KVC_TABLE_STAGE pages: kvc_table_view then reads the table in global memory) and of
// descriptors [c0, c1) into slice_stage (at most KVC_STAGE_WORDS words a thread). Every load is issued before the
// first store, so a CTA's staging costs one round trip, not one per word: the kernels stage the table with the first
// descriptors, before one barrier.
KVC_HD void kvc_stage_phase(const KvcChecksumParams& p, uint64_t block, bool with_table, uint32_t c0, uint32_t c1, uint32_t tid,
                            int32_t* table_stage, KvcSlice* slice_stage) {
    uint64_t first = 0, count = 0;
    if (with_table) {
        kvc_block_pages(p, block, first, count);
        if (count > KVC_TABLE_STAGE) count = 0;
    }
    const bool id_on = tid < count;  // KVC_TABLE_STAGE == KVC_THREADS: one page id a thread at most
    const int32_t id = id_on ? kvc_page_id(p.table, first + tid) : 0;
    const uint64_t* src = reinterpret_cast<const uint64_t*>(p.slices + c0);
    const uint32_t n = (c1 - c0) * (uint32_t)(sizeof(KvcSlice) / 8);
    uint64_t w[KVC_STAGE_WORDS];
    KVC_UNROLL
    for (int k = 0; k < KVC_STAGE_WORDS; ++k) {
        const uint32_t i = tid + k * KVC_THREADS;
        w[k] = i < n ? kvc_ldg64(src + i) : 0;
    }
    if (id_on) {
        table_stage[tid] = id;
        KVC_HOST_COUNT(0, 1);
    }
    uint64_t* dst = reinterpret_cast<uint64_t*>(slice_stage);
    KVC_UNROLL
    for (int k = 0; k < KVC_STAGE_WORDS; ++k) {
        const uint32_t i = tid + k * KVC_THREADS;
        if (i < n) {
            dst[i] = w[k];
            KVC_HOST_COUNT(1, 1);
        }
    }
}

// Slices per warp of the slices kernels (KvcChecksumParams.slices_per_part; 0 means 1): LaunchPlanner picks enough
// consecutive slices that a lane's batch of loads fills even where a slice holds only a few items per lane (short cells,
// short or partial blocks), at most KVC_SLICE_SUMS_MAX_SPW so that a CTA's descriptors fit its shared-memory stage.
#define KVC_SLICE_SUMS_MAX_SPW 16
static_assert(KVC_WARPS * KVC_SLICE_SUMS_MAX_SPW * (sizeof(KvcSlice) / 8) <= KVC_STAGE_WORDS * KVC_THREADS
              && KVC_SLICE_CHUNK * (sizeof(KvcSlice) / 8) <= KVC_STAGE_WORDS * KVC_THREADS, "a staging phase's words");
static_assert(KVC_TABLE_STAGE == KVC_THREADS, "one staged page id a thread");
KVC_HD uint32_t kvc_slice_sums_spw(const KvcChecksumParams& p) {
    return p.slices_per_part == 0 ? 1 : p.slices_per_part;
}

// The slices CTA row `by` of the slices kernels reads: [by*KVC_WARPS*spw, +KVC_WARPS*spw) clipped to the slices.
KVC_HD void kvc_slice_sums_chunk(const KvcChecksumParams& p, uint32_t by, uint32_t& c0, uint32_t& c1) {
    const uint64_t n = (uint64_t)KVC_WARPS * kvc_slice_sums_spw(p);
    const uint64_t a = (uint64_t)by * n, b = a + n;
    c0 = a < p.num_slices ? (uint32_t)a : p.num_slices;
    c1 = b < p.num_slices ? (uint32_t)b : p.num_slices;
}

// The slices a warp of the slices kernel sums, one after the other in one walk: CTA (bx, by), warp w ->
// [(by*KVC_WARPS + w)*spw, +spw) clipped to the slices (empty: i0 == i1).
KVC_HD void kvc_slice_sums_warp_slices(const KvcChecksumParams& p, uint32_t by, uint32_t warp, uint32_t& i0, uint32_t& i1) {
    const uint64_t spw = kvc_slice_sums_spw(p);
    const uint64_t a = ((uint64_t)by * KVC_WARPS + warp) * spw, b = a + spw;
    i0 = a < p.num_slices ? (uint32_t)a : p.num_slices;
    i1 = b < p.num_slices ? (uint32_t)b : p.num_slices;
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
