// kvchecksum: the verifying copy (issue 29, io.kvchecksum.CopyPlan): KV cells moved from a source cache to a
// destination cache in one pass, the destination's block checksums computed from the bytes as they pass.
//
// The lowering (CopyPlan.Launch): pairs of (source slice, destination slice) of one (layer, global head), both page
// tables, Ps, Pd, B, S, N. Every value is weighted by the DESTINATION's coordinates: the kernels iterate the
// destination's blocks and positions, find the destination cell from the destination's table and the source cell from
// the source's, load from the source, store to the destination and add the piece's weighted value exactly as the
// checksum kernels do (kvchecksum.cuh: piece j = t*P + p weighs 2j+1, slice sum times the destination's factor), all
// modulo 2^64. So a corrupted source byte, a source page paired with the wrong destination page and a wrong head
// range all change the sum; what happens to the destination after the copy is not covered.
//
// Grid (num_blocks, ceil(num_pairs / KVC_WARPS)), KVC_THREADS threads: warp w of CTA (bx, by) copies pair
// by*KVC_WARPS + w over block first_block + bx and adds factor * sum into out[bx] atomically (the host zeroes out on
// the same stream first; the whole-piece and byte-cell launches of one copy add into the same words). Each lane takes
// items (token, unit) lane, lane + 32, ... of the block, in batches whose loads (128 bytes per thread) are all issued
// before the first is used or stored (PtxEvidenceTest counts them), like the checksum kernels. Page ids come through
// the read-only path (__ldg): nothing writes the tables while a copy runs. __host__ __device__ (the stores aside), so
// the host test library runs the same arithmetic over the golden copy vectors.
#pragma once
#include "kvchecksum.cuh"
#include "kvchecksum_byte_cells.cuh"

// The parameters of kvc_copy_checksums_{16b,8b}[_mixed] and kvc_copy_byte_cells[_mixed], by value. 88 bytes.
// Whole-piece launches: src and dst hold KvcSlices (piece counts); byte-cell launches KvcByteCellSlices (byte
// counts), the layout KernelAbi writes for both. src[i] and dst[i] are pair i: the same (layer, head), the same cell
// geometry; the factor is dst[i]'s.
struct KvcCopyParams {
    const KvcSlice* src;          // [num_pairs], device: the source sides
    const KvcSlice* dst;          // [num_pairs], device: the destination sides
    const int32_t* src_table;     // source page ids: entry i holds positions start_token + i*src_page_size ..
    const int32_t* dst_table;     // destination page ids: entry i holds positions start_token + i*dst_page_size ..
    uint64_t* out;                // [num_blocks]: zeroed by the host, every warp adds factor * its pair's sum
    uint64_t start_token;         // S: the first copied position (the destination request's firstBlock * B)
    uint64_t first_block;         // destination block position of this launch's block 0 (blockIdx.x == 0)
    uint64_t num_tokens;          // N: positions S .. N-1 are copied; clips the last block
    uint32_t block_size;          // B, the destination request's: the output's
    uint32_t src_page_size;       // Ps
    uint32_t dst_page_size;       // Pd
    uint32_t num_pairs;
    uint32_t num_blocks;          // blocks in this launch (gridDim.x)
    uint32_t reserved;
};

// Stores of the copy. A null address stores nothing (an item past the block's tokens). Plain stores (write-back):
// the engine reads the destination soon after, so it may as well stay in L2.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void kvc_st16_if(char* a, uint64_t x0, uint64_t x1) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u64 q, %0, 0;\n\t@q st.global.v2.u64 [%0], {%1, %2};\n\t}"
                 :: "l"(a), "l"(x0), "l"(x1) : "memory");
}
__device__ __forceinline__ void kvc_st8_if(char* a, uint64_t x) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u64 q, %0, 0;\n\t@q st.global.u64 [%0], %1;\n\t}" :: "l"(a), "l"(x) : "memory");
}
__device__ __forceinline__ void kvc_st1(char* a, uint8_t x) {
    *reinterpret_cast<volatile uint8_t*>(a) = x;
}
#else
// The host build traps a misaligned store as the GPU would (kvc_host_fault, see kvc_ld8).
inline void kvc_st16_if(char* a, uint64_t x0, uint64_t x1) {
    if (a == nullptr) return;
    if (((uintptr_t)a & 15) != 0) { kvc_host_fault = 1; return; }
    __builtin_memcpy(a, &x0, 8);
    __builtin_memcpy(a + 8, &x1, 8);
}
inline void kvc_st8_if(char* a, uint64_t x) {
    if (a == nullptr) return;
    if (((uintptr_t)a & 7) != 0) { kvc_host_fault = 1; return; }
    __builtin_memcpy(a, &x, 8);
}
inline void kvc_st1(char* a, uint8_t x) { *a = (char)x; }
#endif

// The destination block's bounds: [bs, be) of request positions, be <= N; false for an empty block.
KVC_HD bool kvc_copy_block(const KvcCopyParams& p, uint64_t block, uint64_t& bs, uint64_t& be) {
    bs = block * p.block_size;
    be = bs + p.block_size;
    if (be > p.num_tokens) be = p.num_tokens;
    return be > bs;
}

// The address of byte `off` of a cell of slice side (base, page stride, token stride) at table index idx (0 is S).
KVC_HD uint64_t kvc_copy_cell(uint64_t base, uint64_t ps, uint64_t ts, const int32_t* tab, uint64_t idx, uint32_t page_size,
                              uint32_t shift) {
    const uint64_t page_idx = shift < 32 ? idx >> shift : kvc_udiv(idx, page_size);
    const uint64_t slot = idx - page_idx * page_size;
    return base + (uint64_t)(int64_t)kvc_page_id(tab, page_idx) * ps + slot * ts;
}

// A 16-byte unit (two pieces) loaded or stored as one 16-byte access (W 16: 16-byte aligned) or as two 8-byte ones
// (W 8: 8-byte aligned), predicated on a non-null address; on the GPU one basic block per batch.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void kvc_ld8x2_if(const char* a, uint64_t& x0, uint64_t& x1) {
    asm("{\n\t.reg .pred q;\n\tsetp.ne.u64 q, %2, 0;\n\t@q ld.global.cs.u64 %0, [%2];\n\t@q ld.global.cs.u64 %1, [%2+8];\n\t"
        "@!q mov.b64 %0, 0;\n\t@!q mov.b64 %1, 0;\n\t}"
        : "=l"(x0), "=l"(x1) : "l"(a));
}
#else
inline void kvc_ld8x2_if(const char* a, uint64_t& x0, uint64_t& x1) {
    x0 = kvc_ld8_if(a);
    x1 = kvc_ld8_if(a != nullptr ? a + 8 : nullptr);
}
#endif
template <int W> KVC_HD void kvc_copy_load_unit(const char* a, uint64_t& x0, uint64_t& x1) {
    if (W == 16) kvc_ld16_if(a, x0, x1); else kvc_ld8x2_if(a, x0, x1);
}
template <int W> KVC_HD void kvc_copy_store_unit(char* a, uint64_t x0, uint64_t x1) {
    if (W == 16) {
        kvc_st16_if(a, x0, x1);
    } else {
        kvc_st8_if(a, x0);
        kvc_st8_if(a != nullptr ? a + 8 : nullptr, x1);
    }
}

// The contribution (before the factor) of one lane of the warp that copies whole-piece pair (s, d) over the block
// [bs, be): items i = lane, lane + 32, ... of the block's (token, unit) pairs, i = t*U + u (U 16-byte units: K's, then
// V's; both piece counts even), the unit's pieces j = bs*P + 2i and 2i + 1 weighing 2j+1. In batches of KVC_BATCH
// items (128 bytes of loads per thread): first every source address (null: off, past the block's items), then all the
// loads (predicated, one basic block), then per item the destination's address, the store and the add. The
// destination's addresses come after the loads (the same items walked again): fewer registers live across the loads,
// so the batch fits the launch bounds.
template <int W, int MIX>
KVC_HD uint64_t kvc_copy_lane_sum(const KvcCopyParams& p, const KvcSlice& s, const KvcSlice& d, uint64_t bs, uint64_t be,
                                  uint32_t lane) {
    const uint32_t kU = s.k_pieces / 2;
    const uint32_t U = kU + s.v_pieces / 2;
    const uint64_t P = (uint64_t)s.k_pieces + s.v_pieces;
    const uint32_t ntok = (uint32_t)(be - bs);
    const uint64_t items = (uint64_t)ntok * U;
    const uint32_t sshift = kvc_page_shift(p.src_page_size), dshift = kvc_page_shift(p.dst_page_size);
    const uint64_t idx0 = bs - p.start_token;  // table index of the block's first position (both tables start at S)
    const uint32_t dq = 32 / U, dr = 32 - dq * U;  // 32 items = dq tokens and dr units
    constexpr int N = KVC_BATCH;
    uint32_t t = lane / U, u = lane - (lane / U) * U;
    uint64_t i = lane;
    const uint64_t w0 = 2 * bs * P + 1;  // item i's first piece weighs w0 + 4i
    // The descriptors' fields as locals: read once (the stores' memory clobbers would otherwise reload them per item).
    const uint64_t skb = s.k_base, svb = s.v_base, skp = (uint64_t)s.k_page_stride, svp = (uint64_t)s.v_page_stride;
    const uint64_t skt = (uint64_t)s.k_token_stride, svt = (uint64_t)s.v_token_stride;
    const int32_t* const stab = p.src_table;
    const int32_t* const dtab = p.dst_table;
    const uint32_t sps = p.src_page_size, dps = p.dst_page_size;
    uint64_t acc = 0;
    while (i < items) {
        const char* a[N];
        const uint32_t t0 = t, u0 = u;
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const bool on = i + 32ull * k < items;
            const uint64_t idx = idx0 + (on ? t : 0);  // off: the block's first position, so the page ids read stay in the tables
            const bool isK = u < kU;
            const uint64_t off = (uint64_t)(isK ? u : u - kU) * 16;
            const uint64_t sa = kvc_copy_cell(isK ? skb : svb, isK ? skp : svp, isK ? skt : svt, stab, idx, sps, sshift);
            a[k] = on ? reinterpret_cast<const char*>(sa + off) : nullptr;
            u += dr;
            t += dq;
            if (u >= U) {
                u -= U;
                ++t;
            }
        }
        uint64_t x0[N], x1[N];
        KVC_UNROLL
        for (int k = 0; k < N; ++k) kvc_copy_load_unit<W>(a[k], x0[k], x1[k]);
        uint32_t tt = t0, uu = u0;
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const bool on = i + 32ull * k < items;
            const bool isK = uu < kU;
            const uint64_t off = (uint64_t)(isK ? uu : uu - kU) * 16;
            // The destination's fields are read where needed (L1 hits after the first), not held across the loads.
            const uint64_t da = kvc_copy_cell(isK ? d.k_base : d.v_base, (uint64_t)(isK ? d.k_page_stride : d.v_page_stride),
                                              (uint64_t)(isK ? d.k_token_stride : d.v_token_stride), dtab, idx0 + (on ? tt : 0),
                                              dps, dshift);
            uu += dr;
            tt += dq;
            if (uu >= U) {
                uu -= U;
                ++tt;
            }
            kvc_copy_store_unit<W>(on ? reinterpret_cast<char*>(da + off) : nullptr, x0[k], x1[k]);
            // An off slot loaded zeros: it adds nothing (kvc_piece_value(0) == 0 in both modes).
            const uint64_t wk = w0 + 4 * (i + 32ull * k);
            acc += kvc_piece_value<MIX>(x0[k]) * wk + kvc_piece_value<MIX>(x1[k]) * (wk + 2);
        }
        i += 32ull * N;
    }
    return acc;
}

// Stores `len` bytes (the low bytes of x) at a: one 8-byte store when a is aligned and len is 8, else byte by byte
// (byte stores never touch a neighbour's bytes, so no read-modify-write of a shared word).
KVC_HD void kvc_copy_store_bytes(uint64_t a, uint64_t x, uint32_t len) {
    if (len == 8 && (a & 7) == 0) {
        kvc_st8_if(reinterpret_cast<char*>(a), x);
        return;
    }
    for (uint32_t k = 0; k < len; ++k) kvc_st1(reinterpret_cast<char*>(a + k), (uint8_t)(x >> (8 * k)));
}

// The contribution of one lane of the warp that copies byte-cell pair (s, d) (KvcByteCellSlices: byte counts) over the
// block [bs, be): items (token, piece) as kvc_byte_cell_lane_sum_batched reads them (K bytes of the piece, then the V
// bytes that follow, zero-padded), each segment read as the aligned words that hold it, in batches of
// KVC_BYTE_CELL_BATCH items (128 bytes of loads per thread); the segments are stored at the same byte offsets of the
// destination's cell. The destination's addresses are computed after the batch's loads are issued (its geometry is
// the source's: the same offsets within the cell), which keeps the registers of the batch within the launch bounds.
template <int MIX, bool HASV>
KVC_HD uint64_t kvc_copy_byte_cell_lane_sum_batched(const KvcCopyParams& p, const KvcByteCellSlice& s,
                                                    const KvcByteCellSlice& d, uint64_t bs, uint64_t be, uint32_t lane) {
    const uint32_t kb = s.k_bytes, vb = s.v_bytes;
    const uint32_t P = (kb + vb + 7) / 8;
    const uint32_t ntok = (uint32_t)(be - bs);
    const uint64_t items = (uint64_t)ntok * P;
    const uint32_t sshift = kvc_page_shift(p.src_page_size), dshift = kvc_page_shift(p.dst_page_size);
    const uint64_t idx0 = bs - p.start_token;
    const uint32_t dq = 32 / P, dr = 32 - dq * P;
    constexpr int N = KVC_BYTE_CELL_BATCH(HASV);
    uint32_t t = lane / P, piece = lane - (lane / P) * P;
    uint64_t i = lane;
    uint64_t w = 2 * (bs * P + lane) + 1;
    uint64_t acc = 0;
    while (i < items) {
        const char* kw[N]; const char* vw[N];
        uint32_t geo[N];  // as kvc_byte_cell_lane_sum_batched: K and V segments' a mod 8, len, spill, 4 bits each
        const uint32_t t0 = t, piece0 = piece;
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const bool on = i + 32ull * k < items;
            const uint64_t idx = idx0 + (on ? t : 0);
            const uint32_t q = 8 * piece;
            const uint32_t klen = !on || q >= kb ? 0 : (kb - q < 8 ? kb - q : 8);
            const uint32_t voff = q + klen - kb;
            const uint32_t vlen = !HASV || !on || klen == 8 || voff >= vb ? 0 : (vb - voff < 8 - klen ? vb - voff : 8 - klen);
            const uint64_t ka = kvc_copy_cell(s.k_base, s.k_page_stride, s.k_token_stride, p.src_table, idx, p.src_page_size, sshift) + q;
            const uint64_t va = HASV ? kvc_copy_cell(s.v_base, s.v_page_stride, s.v_token_stride, p.src_table, idx, p.src_page_size, sshift) + voff : 0;
            kw[k] = kvc_segment_word(ka, klen);
            vw[k] = kvc_segment_word(va, vlen);
            geo[k] = (uint32_t)(ka & 7) | klen << 4 | kvc_segment_spills(ka, klen) << 8
                   | (uint32_t)(va & 7) << 12 | vlen << 16 | kvc_segment_spills(va, vlen) << 20;
            piece += dr;
            t += dq;
            if (piece >= P) {
                piece -= P;
                ++t;
            }
        }
        uint64_t xk0[N], xk1[N], xv0[N], xv1[N];
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            kvc_ld8_pair_if(kw[k], geo[k] & (1u << 8), xk0[k], xk1[k]);
            if (HASV) {
                kvc_ld8_pair_if(vw[k], geo[k] & (1u << 20), xv0[k], xv1[k]);
            } else {
                xv0[k] = xv1[k] = 0;
            }
        }
        uint32_t tt = t0, pp = piece0;
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const uint32_t g = geo[k], klen = (g >> 4) & 15, vlen = (g >> 16) & 15;
            const uint64_t kx = kvc_segment_value(xk0[k], xk1[k], g & 7, klen);
            const uint64_t vx = kvc_segment_value(xv0[k], xv1[k], (g >> 12) & 7, vlen);
            if (klen + vlen != 0) {
                const uint64_t idx = idx0 + tt;
                const uint32_t q = 8 * pp;
                if (klen != 0) {
                    kvc_copy_store_bytes(kvc_copy_cell(d.k_base, d.k_page_stride, d.k_token_stride, p.dst_table, idx,
                                                       p.dst_page_size, dshift) + q, kx, klen);
                }
                if (HASV && vlen != 0) {
                    kvc_copy_store_bytes(kvc_copy_cell(d.v_base, d.v_page_stride, d.v_token_stride, p.dst_table, idx,
                                                       p.dst_page_size, dshift) + (q + klen - kb), vx, vlen);
                }
            }
            const uint64_t x = kx | ((vx << (4 * klen)) << (4 * klen));
            acc += kvc_piece_value<MIX>(x) * (w + 64ull * k);
            pp += dr;
            tt += dq;
            if (pp >= P) {
                pp -= P;
                ++tt;
            }
        }
        i += 32ull * N;
        w += 64ull * N;
    }
    return acc;
}

// One lane's share (before the factor) of byte-cell pair i over block `block`.
template <int MIX>
KVC_HD uint64_t kvc_copy_byte_cell_lane_sum(const KvcCopyParams& p, uint32_t i, uint64_t block, uint32_t lane) {
    const KvcByteCellSlice& s = reinterpret_cast<const KvcByteCellSlice*>(p.src)[i];
    const KvcByteCellSlice& d = reinterpret_cast<const KvcByteCellSlice*>(p.dst)[i];
    uint64_t bs, be;
    if (!kvc_copy_block(p, block, bs, be)) return 0;
    return s.v_bytes != 0 ? kvc_copy_byte_cell_lane_sum_batched<MIX, true>(p, s, d, bs, be, lane)
                          : kvc_copy_byte_cell_lane_sum_batched<MIX, false>(p, s, d, bs, be, lane);
}

// One lane's share (before the factor) of whole-piece pair i over block `block`.
template <int W, int MIX>
KVC_HD uint64_t kvc_copy_whole_lane_sum(const KvcCopyParams& p, uint32_t i, uint64_t block, uint32_t lane) {
    uint64_t bs, be;
    if (!kvc_copy_block(p, block, bs, be)) return 0;
    return kvc_copy_lane_sum<W, MIX>(p, p.src[i], p.dst[i], bs, be, lane);
}

// The pair a warp copies: CTA row by, warp w -> pair by*KVC_WARPS + w, or -1 if none.
KVC_HD int64_t kvc_copy_pair(const KvcCopyParams& p, uint32_t by, uint32_t warp) {
    const uint64_t i = (uint64_t)by * KVC_WARPS + warp;
    return i < p.num_pairs ? (int64_t)i : -1;
}

// The pair's factor (the destination's coordinates), for both descriptor kinds (same offset).
KVC_HD uint64_t kvc_copy_factor(const KvcCopyParams& p, uint32_t i) {
    return p.dst[i].factor;
}

// The staged copy (in place: source and destination memory overlap, io.kvchecksum.CopyPlan#staged(), vLLM's in-place
// rearrangement). One launch per staging group (the pairs of one layer of a launch: p.src, p.dst point at the group's
// KvcByteCellSlices, p.num_pairs of them), grid (units, 1): CTA bx is staging unit bx, destination table entry bx,
// i.e. positions [S + bx*Pd, min(S + (bx+1)*Pd, N)). The unit's pieces lie in dynamic shared memory in (pair, slot,
// piece) order, then KVC_STAGED_SPANS * KVC_WARPS words of per-warp partial sums (CudaBackend sizes the launch so).
//
// Phase 1, per destination block the unit meets (usually one; several when B < Pd, or when a page straddles a block
// edge): ALL threads of the CTA walk the unit's items of that block's slots, u fastest, so neighbouring threads load
// neighbouring pieces of a cell row (coalesced) and store neighbouring shared words (no bank conflicts beyond a 64-bit
// access's two wavefronts). Where the group's pairs share the cell geometry and the width (every layer's heads in
// practice), one sequence of items (pair, slot, u) over all of them (kvc_staged_read_flat), an item a 16-byte unit
// (two pieces) or an 8-byte piece: kvc_staged_width, from both sides' descriptors, which hold the absolute addresses
// (the check CudaBackend.copyKernel makes from SlicePlan.Part#alignmentAt, made on the addresses themselves). Else
// pair by pair, each piece assembled from the aligned words holding its K and V bytes (kvc_staged_read_bytes: byte
// cells, other alignments). Each item's weighted value goes into a per-thread sum; a warp's sums are reduced by
// shuffles into its partial word of the block. __syncthreads; thread r < blocks adds block r's warp partials into out
// with ONE atomicAdd per (CTA, block) (the host zeroes out first); blocks past KVC_STAGED_SPANS (B < Pd/16) are added
// per warp instead. Phase 2: all threads store the staged items to the destination's cells, coalesced, pair by pair at
// each pair's width (bytes only where a piece is not whole or not aligned). The plan checked that no unit reads bytes
// another unit writes, so CTAs need no order. __host__ __device__ (the stores and shuffles aside): the host test
// library plays each CTA's threads phase by phase through the same functions (kvchecksum_host.cu).
#define KVC_STAGED_SPANS 16
// Items a thread loads before it uses the first: 4 (64 bytes at width 16), 2 on the byte path (up to four words each).
#define KVC_STAGED_BATCH(W) ((W) == 0 ? 2 : 4)

// The positions of staging unit `unit`: min(Pd, N - (S + unit*Pd)).
KVC_HD uint64_t kvc_staged_tokens(const KvcCopyParams& p, uint64_t unit) {
    const uint64_t rest = p.num_tokens - (p.start_token + unit * p.dst_page_size);
    return rest < p.dst_page_size ? rest : p.dst_page_size;
}

// The unit's staged words: every pair's pieces for n positions (where the partial sums start).
KVC_HD uint64_t kvc_staged_words(const KvcCopyParams& p, uint64_t n) {
    const KvcByteCellSlice* src = reinterpret_cast<const KvcByteCellSlice*>(p.src);
    uint64_t w = 0;
    for (uint32_t i = 0; i < p.num_pairs; ++i) w += (uint64_t)((src[i].k_bytes + src[i].v_bytes + 7) / 8) * n;
    return w;
}

// The blocks the unit's n positions meet: out indices b0 .. b0 + count - 1.
KVC_HD void kvc_staged_blocks(const KvcCopyParams& p, uint64_t unit, uint64_t n, uint64_t& b0, uint64_t& count) {
    const uint64_t t0 = p.start_token + unit * p.dst_page_size;
    b0 = t0 / p.block_size;
    count = (t0 + n - 1) / p.block_size - b0 + 1;
    b0 -= p.first_block;
}

// The unit's slots [lo, hi) that lie in out block b.
KVC_HD void kvc_staged_block_slots(const KvcCopyParams& p, uint64_t unit, uint64_t n, uint64_t b, uint64_t& lo,
                                   uint64_t& hi) {
    const uint64_t t0 = p.start_token + unit * p.dst_page_size;
    const uint64_t bs = (p.first_block + b) * p.block_size, be = bs + p.block_size;
    lo = bs > t0 ? bs - t0 : 0;
    hi = be - t0 < n ? be - t0 : n;
}

// The width of pair (s, d)'s items: 16 when both sides' K (and V) bases and strides are 16-byte aligned and the cells'
// K and V bytes are multiples of 16, 8 likewise for 8 bytes, else 0 (pieces assembled from aligned words, byte stores).
KVC_HD uint32_t kvc_staged_width(const KvcByteCellSlice& s, const KvcByteCellSlice& d) {
    uint64_t a = s.k_base | (uint64_t)s.k_page_stride | (uint64_t)s.k_token_stride | d.k_base | (uint64_t)d.k_page_stride
               | (uint64_t)d.k_token_stride | s.k_bytes;
    if (s.v_bytes != 0) {
        a |= s.v_base | (uint64_t)s.v_page_stride | (uint64_t)s.v_token_stride | d.v_base | (uint64_t)d.v_page_stride
           | (uint64_t)d.v_token_stride | s.v_bytes;
    }
    return (a & 15) == 0 ? 16 : (a & 7) == 0 ? 8 : 0;
}

// The address of a cell's byte 0: base + page * page stride + slot * token stride.
KVC_HD uint64_t kvc_staged_cell(uint64_t base, int64_t ps, int64_t ts, uint64_t page, uint64_t slot) {
    return base + page * (uint64_t)ps + slot * (uint64_t)ts;
}

// Phase 1 of one pair on the byte path (byte cells, pieces at other alignments, groups whose pairs differ) for slots
// [lo, hi) of unit `unit`, thread tid of nt: its items tid, tid + nt, ... (item = (slot - lo)*P + piece) loaded
// KVC_STAGED_BATCH(0) at a time as the aligned words holding their K and V bytes, stored to stage (the pair's pieces
// from word `at`: slot*P + piece) and summed with their weights 2(t*P + q) + 1 (t the position, q the piece). Returns
// the thread's sum before the factor.
template <int MIX>
KVC_HD uint64_t kvc_staged_read_bytes(const KvcCopyParams& p, const KvcByteCellSlice& s, uint64_t unit, uint64_t lo,
                                      uint64_t hi, uint32_t tid, uint32_t nt, uint64_t* stage) {
    const uint32_t kb = s.k_bytes, vb = s.v_bytes, P = (kb + vb + 7) / 8;
    const uint32_t U = P;
    const uint32_t items = (uint32_t)(hi - lo) * U;
    const uint64_t rel0 = unit * p.dst_page_size;  // the unit's first position, relative to S (both tables start there)
    const uint32_t sshift = kvc_page_shift(p.src_page_size);
    constexpr int N = KVC_STAGED_BATCH(0);
    uint64_t acc = 0;
    for (uint32_t i0 = tid; i0 < items; i0 += nt * N) {
        uint64_t x0[N], x1[N];
        uint32_t slot[N], q[N];
        // As kvc_copy_byte_cell_lane_sum_batched: piece q's K bytes [8q, min(8q + 8, kb)), then the V bytes that
        // follow, each segment read as the aligned words that hold it.
        const char* kw[N]; const char* vw[N];
        uint32_t geo[N];  // K and V segments' a mod 8, len, spill, 4 bits each
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const uint32_t i = i0 + k * nt;
            const bool on = i < items;
            const uint32_t ii = on ? i : 0;
            slot[k] = (uint32_t)lo + ii / U;
            q[k] = ii - (ii / U) * U;
            const uint64_t rel = rel0 + slot[k];
            const uint64_t spi = sshift < 32 ? rel >> sshift : kvc_udiv(rel, p.src_page_size);
            const uint64_t page = (uint64_t)(int64_t)kvc_page_id(p.src_table, spi);
            const uint64_t ss = rel - spi * p.src_page_size;
            const uint32_t b = 8 * q[k];
            const uint32_t klen = !on || b >= kb ? 0 : (kb - b < 8 ? kb - b : 8);
            const uint32_t voff = b + klen - kb;
            const uint32_t vlen = !on || vb == 0 || klen == 8 || voff >= vb ? 0 : (vb - voff < 8 - klen ? vb - voff : 8 - klen);
            const uint64_t ka = kvc_staged_cell(s.k_base, s.k_page_stride, s.k_token_stride, page, ss) + b;
            const uint64_t va = vb == 0 ? 0 : kvc_staged_cell(s.v_base, s.v_page_stride, s.v_token_stride, page, ss) + voff;
            kw[k] = kvc_segment_word(ka, klen);
            vw[k] = kvc_segment_word(va, vlen);
            geo[k] = (uint32_t)(ka & 7) | klen << 4 | kvc_segment_spills(ka, klen) << 8
                   | (uint32_t)(va & 7) << 12 | vlen << 16 | kvc_segment_spills(va, vlen) << 20;
        }
        uint64_t y0[N], y1[N];
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            kvc_ld8_pair_if(kw[k], geo[k] & (1u << 8), x0[k], x1[k]);
            kvc_ld8_pair_if(vw[k], geo[k] & (1u << 20), y0[k], y1[k]);
        }
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const uint32_t g = geo[k], klen = (g >> 4) & 15;
            if (i0 + k * nt >= items) continue;
            const uint64_t kx = kvc_segment_value(x0[k], x1[k], g & 7, klen);
            const uint64_t vx = kvc_segment_value(y0[k], y1[k], (g >> 12) & 7, (g >> 16) & 15);
            const uint64_t x = kx | ((vx << (4 * klen)) << (4 * klen));  // V's bytes after K's (klen 8: none)
            stage[(uint64_t)slot[k] * P + q[k]] = x;
            acc += kvc_piece_value<MIX>(x) * (2 * ((p.start_token + rel0 + slot[k]) * P + q[k]) + 1);
        }
    }
    return acc;
}

// Phase 1 over all pairs of a group whose pairs share the cell geometry (kb, vb) and width W
// (16 or 8; every layer's heads in practice): one sequence of items (pair, slot, u), so a thread's batches stay full
// across pairs (a Llama-3-8B page has 2 16-byte items per thread per pair, 16 over the layer's 8 pairs). Each item's
// value is weighted by its pair's factor here.
template <int W, int MIX>
KVC_HD uint64_t kvc_staged_read_flat(const KvcCopyParams& p, uint32_t kb, uint32_t vb, uint64_t unit, uint64_t n,
                                     uint64_t lo, uint64_t hi, uint32_t tid, uint32_t nt, uint64_t* stage) {
    const KvcByteCellSlice* src = reinterpret_cast<const KvcByteCellSlice*>(p.src);
    const KvcByteCellSlice* dst = reinterpret_cast<const KvcByteCellSlice*>(p.dst);
    const uint32_t P = (kb + vb) / 8;
    const uint32_t U = W == 16 ? P / 2 : P;
    const uint32_t per = (uint32_t)(hi - lo) * U;  // items of one pair
    const uint32_t items = per * p.num_pairs;
    const uint64_t rel0 = unit * p.dst_page_size;
    const uint32_t sshift = kvc_page_shift(p.src_page_size);
    constexpr int N = KVC_STAGED_BATCH(W);
    uint64_t acc = 0;
    const uint64_t w0 = 2 * (p.start_token + rel0) * P + 1;  // piece (slot, q) weighs w0 + 2*(slot*P + q)
    for (uint32_t i0 = tid; i0 < items; i0 += nt * N) {
        uint64_t x0[N], x1[N];
        uint32_t pair[N], j[N];  // the item's pair and its first piece's index slot*P + q among the pair's staged pieces
        const char* a[N];
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const uint32_t i = i0 + k * nt;
            const bool on = i < items;
            const uint32_t ii = on ? i : 0;
            pair[k] = ii / per;
            const uint32_t rem = ii - pair[k] * per;
            const uint32_t slot = (uint32_t)lo + rem / U;
            const uint32_t u = rem - (rem / U) * U;
            const uint32_t q = W == 16 ? 2 * u : u;
            j[k] = slot * P + q;
            const uint64_t rel = rel0 + slot;
            const uint64_t spi = sshift < 32 ? rel >> sshift : kvc_udiv(rel, p.src_page_size);
            const uint64_t page = (uint64_t)(int64_t)kvc_page_id(p.src_table, spi);
            const uint64_t ss = rel - spi * p.src_page_size;
            const KvcByteCellSlice& s = src[pair[k]];
            const uint32_t b = 8 * q;
            const uint64_t ca = b < kb ? kvc_staged_cell(s.k_base, s.k_page_stride, s.k_token_stride, page, ss) + b
                                       : kvc_staged_cell(s.v_base, s.v_page_stride, s.v_token_stride, page, ss) + (b - kb);
            a[k] = on ? reinterpret_cast<const char*>(ca) : nullptr;
        }
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            if (W == 16) {
                kvc_ld16_if(a[k], x0[k], x1[k]);
            } else {
                x0[k] = kvc_ld8_if(a[k]);
                x1[k] = 0;
            }
        }
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            if (a[k] == nullptr) continue;
            const uint64_t w = w0 + 2 * (uint64_t)j[k];
            uint64_t* st = stage + (uint64_t)pair[k] * n * P + j[k];
            st[0] = x0[k];
            uint64_t v = kvc_piece_value<MIX>(x0[k]) * w;
            if (W == 16) {
                st[1] = x1[k];
                v += kvc_piece_value<MIX>(x1[k]) * (w + 2);
            }
            acc += dst[pair[k]].factor * v;
        }
    }
    return acc;
}

// Phase 1 of thread tid (of nt) for the unit's slots [lo, hi) (one out block): every pair's items, each pair at its
// width (all pairs in one sequence where they share geometry and width: kvc_staged_read_flat); returns the thread's
// share of the block's value (each pair's sum times its factor).
template <int MIX>
KVC_HD uint64_t kvc_staged_read(const KvcCopyParams& p, uint64_t unit, uint64_t n, uint64_t lo, uint64_t hi, uint32_t tid,
                                uint32_t nt, uint64_t* stage) {
    const KvcByteCellSlice* src = reinterpret_cast<const KvcByteCellSlice*>(p.src);
    const KvcByteCellSlice* dst = reinterpret_cast<const KvcByteCellSlice*>(p.dst);
    const uint32_t kb0 = src[0].k_bytes, vb0 = src[0].v_bytes;
    uint32_t w0 = kvc_staged_width(src[0], dst[0]);
    for (uint32_t i = 1; i < p.num_pairs && w0 != 0; ++i) {
        if (src[i].k_bytes != kb0 || src[i].v_bytes != vb0 || kvc_staged_width(src[i], dst[i]) != w0) w0 = 0;
    }
    if (w0 == 16) return kvc_staged_read_flat<16, MIX>(p, kb0, vb0, unit, n, lo, hi, tid, nt, stage);
    if (w0 == 8) return kvc_staged_read_flat<8, MIX>(p, kb0, vb0, unit, n, lo, hi, tid, nt, stage);
    uint64_t c = 0, at = 0;
    for (uint32_t i = 0; i < p.num_pairs; ++i) {
        const KvcByteCellSlice& s = src[i];
        const uint64_t sum = kvc_staged_read_bytes<MIX>(p, s, unit, lo, hi, tid, nt, stage + at);
        c += dst[i].factor * sum;
        at += (uint64_t)((s.k_bytes + s.v_bytes + 7) / 8) * n;
    }
    return c;
}

// Phase 2 of one pair at width W: thread tid's items of the unit's n slots stored from the stage to the destination's
// cells (W 0: each piece's K and V bytes, a whole aligned word where it can, kvc_copy_store_bytes).
template <int W>
KVC_HD void kvc_staged_write_pair(const KvcCopyParams& p, const KvcByteCellSlice& d, uint64_t dpage, uint64_t n,
                                  uint32_t tid, uint32_t nt, const uint64_t* stage) {
    const uint32_t kb = d.k_bytes, vb = d.v_bytes, P = (kb + vb + 7) / 8;
    const uint32_t U = W == 16 ? P / 2 : P;
    const uint32_t items = (uint32_t)n * U;
    for (uint32_t i = tid; i < items; i += nt) {
        const uint32_t slot = i / U, u = i - (i / U) * U;
        const uint32_t q = W == 16 ? 2 * u : u;
        const uint32_t b = 8 * q;
        const uint64_t* st = stage + (uint64_t)slot * P + q;
        const uint64_t ka = kvc_staged_cell(d.k_base, d.k_page_stride, d.k_token_stride, dpage, slot);
        if (W != 0) {
            const uint64_t a = b < kb ? ka + b
                                      : kvc_staged_cell(d.v_base, d.v_page_stride, d.v_token_stride, dpage, slot) + (b - kb);
            if (W == 16) kvc_st16_if(reinterpret_cast<char*>(a), st[0], st[1]);
            else kvc_st8_if(reinterpret_cast<char*>(a), st[0]);
        } else {
            const uint64_t x = st[0];
            const uint32_t klen = b >= kb ? 0 : (kb - b < 8 ? kb - b : 8);
            const uint32_t voff = b + klen - kb;
            const uint32_t vlen = vb == 0 || klen == 8 || voff >= vb ? 0 : (vb - voff < 8 - klen ? vb - voff : 8 - klen);
            if (klen != 0) kvc_copy_store_bytes(ka + b, x, klen);
            if (vlen != 0) {
                kvc_copy_store_bytes(kvc_staged_cell(d.v_base, d.v_page_stride, d.v_token_stride, dpage, slot) + voff,
                                     (x >> (4 * klen)) >> (4 * klen), vlen);
            }
        }
    }
}

// Phase 2 of thread tid (of nt): every pair's staged items written to the destination page of unit `unit`.
KVC_HD void kvc_staged_write(const KvcCopyParams& p, uint64_t unit, uint64_t n, uint32_t tid, uint32_t nt,
                             const uint64_t* stage) {
    const KvcByteCellSlice* src = reinterpret_cast<const KvcByteCellSlice*>(p.src);
    const KvcByteCellSlice* dst = reinterpret_cast<const KvcByteCellSlice*>(p.dst);
    const uint64_t dpage = (uint64_t)(int64_t)kvc_page_id(p.dst_table, unit);
    uint64_t at = 0;
    for (uint32_t i = 0; i < p.num_pairs; ++i) {
        const KvcByteCellSlice& d = dst[i];
        const uint32_t w = kvc_staged_width(src[i], d);
        if (w == 16) kvc_staged_write_pair<16>(p, d, dpage, n, tid, nt, stage + at);
        else if (w == 8) kvc_staged_write_pair<8>(p, d, dpage, n, tid, nt, stage + at);
        else kvc_staged_write_pair<0>(p, d, dpage, n, tid, nt, stage + at);
        at += (uint64_t)((d.k_bytes + d.v_bytes + 7) / 8) * n;
    }
}
#if defined(__CUDACC__) && defined(KVC_COPY_KERNELS)
__device__ __forceinline__ uint64_t kvc_copy_warp_sum(uint64_t v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Whole pieces (W 16: 16-byte loads and stores, W 8: 8-byte) or byte cells (W 0).
template <int W, int MIX>
__device__ __forceinline__ void kvc_copy_body(const KvcCopyParams& p) {
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t i = kvc_copy_pair(p, blockIdx.y, warp);
    if (i < 0) return;  // the whole warp leaves together: the shuffles below stay full-warp
    const uint64_t block = p.first_block + blockIdx.x;
    const uint64_t s = W == 0 ? kvc_copy_byte_cell_lane_sum<MIX>(p, (uint32_t)i, block, lane)
                              : kvc_copy_whole_lane_sum<W == 0 ? 8 : W, MIX>(p, (uint32_t)i, block, lane);
    const uint64_t v = kvc_copy_warp_sum(s);
    if (lane == 0) atomicAdd(reinterpret_cast<unsigned long long*>(p.out + blockIdx.x), (unsigned long long)(kvc_copy_factor(p, (uint32_t)i) * v));
}

// Six kernels: kvc_copy_checksums_{16b,8b}[_mixed] (whole pieces, both sides' bases and strides 16- or 8-byte aligned)
// and kvc_copy_byte_cells[_mixed] (byte cells, and whole pieces at any other alignment: the same pieces, assembled
// from aligned words and stored byte by byte). Launch bounds (256, 2) like the checksum kernels: a batch's 128 bytes of
// loads per thread without spills (PtxEvidenceTest).
#define KVC_COPY_KERNEL(NAME, W, MIX) \
    extern "C" __global__ void __launch_bounds__(KVC_THREADS, 2) NAME(const KvcCopyParams p) { kvc_copy_body<W, MIX>(p); }
KVC_COPY_KERNEL(kvc_copy_checksums_16b, 16, 0)
KVC_COPY_KERNEL(kvc_copy_checksums_8b, 8, 0)
KVC_COPY_KERNEL(kvc_copy_byte_cells, 0, 0)
KVC_COPY_KERNEL(kvc_copy_checksums_16b_mixed, 16, 1)
KVC_COPY_KERNEL(kvc_copy_checksums_8b_mixed, 8, 1)
KVC_COPY_KERNEL(kvc_copy_byte_cells_mixed, 0, 1)

// The staged copy (see kvc_staged_read): kvc_copy_staged[_mixed], a CTA per staging unit, the unit's pieces and the
// warps' partial sums in the launch's dynamic shared memory.
template <int MIX>
__device__ __forceinline__ void kvc_copy_staged_body(const KvcCopyParams& p) {
    extern __shared__ uint64_t stage[];
    const uint64_t unit = blockIdx.x;
    const uint64_t n = kvc_staged_tokens(p, unit);
    const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    uint64_t* const part = stage + kvc_staged_words(p, n);
    uint64_t b0, nb;
    kvc_staged_blocks(p, unit, n, b0, nb);
    for (uint64_t r = 0; r < nb; ++r) {
        uint64_t lo, hi;
        kvc_staged_block_slots(p, unit, n, b0 + r, lo, hi);
        const uint64_t v = kvc_copy_warp_sum(kvc_staged_read<MIX>(p, unit, n, lo, hi, threadIdx.x, blockDim.x, stage));
        if (lane == 0) {
            if (r < KVC_STAGED_SPANS) part[r * KVC_WARPS + warp] = v;
            else atomicAdd(reinterpret_cast<unsigned long long*>(p.out + b0 + r), (unsigned long long)v);
        }
    }
    __syncthreads();
    if (threadIdx.x < nb && threadIdx.x < KVC_STAGED_SPANS) {
        uint64_t v = 0;
#pragma unroll
        for (int w = 0; w < KVC_WARPS; ++w) v += part[threadIdx.x * KVC_WARPS + w];
        atomicAdd(reinterpret_cast<unsigned long long*>(p.out + b0 + threadIdx.x), (unsigned long long)v);
    }
    kvc_staged_write(p, unit, n, threadIdx.x, blockDim.x, stage);
}
#define KVC_COPY_STAGED_KERNEL(NAME, MIX) \
    extern "C" __global__ void __launch_bounds__(KVC_THREADS, 2) NAME(const KvcCopyParams p) { kvc_copy_staged_body<MIX>(p); }
KVC_COPY_STAGED_KERNEL(kvc_copy_staged, 0)
KVC_COPY_STAGED_KERNEL(kvc_copy_staged_mixed, 1)
#endif
