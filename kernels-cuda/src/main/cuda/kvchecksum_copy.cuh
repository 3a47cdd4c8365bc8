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
// i.e. positions [S + bx*Pd, min(S + (bx+1)*Pd, N)). Phase 1 reads every cell of the unit byte by byte from the
// source, assembles its pieces (K bytes, V bytes, zeros) into shared memory (the unit's pieces in pair, position,
// piece order) and adds each position's factor-weighted sum into out[t/B - first_block] (atomically; the host zeroes
// out first); __syncthreads; phase 2 writes the pieces' bytes to the destination's cells. The plan checked that no
// unit reads bytes another unit writes, so CTAs need no order. Plain and correct, not tuned (byte loads and stores),
// like the byte-cell path of the OpenCL backend. The unit lies in dynamic shared memory, its size given at launch: up to
// the device's opt-in maximum (CudaBackend opts both staged kernels in; 48 KiB without it), CudaBackend's limit.

// The positions of staging unit `unit`: min(Pd, N - (S + unit*Pd)).
KVC_HD uint64_t kvc_staged_tokens(const KvcCopyParams& p, uint64_t unit) {
    const uint64_t rest = p.num_tokens - (p.start_token + unit * p.dst_page_size);
    return rest < p.dst_page_size ? rest : p.dst_page_size;
}

// Phase 1 for slot `slot` of unit `unit` (n positions): the group's cells read into `stage`; returns the position's
// value (every pair's weighted sum times its factor) and sets `block` to its index among out's.
template <int MIX>
KVC_HD uint64_t kvc_staged_read(const KvcCopyParams& p, uint64_t unit, uint64_t slot, uint64_t n, uint64_t* stage,
                                uint64_t& block) {
    const KvcByteCellSlice* src = reinterpret_cast<const KvcByteCellSlice*>(p.src);
    const KvcByteCellSlice* dst = reinterpret_cast<const KvcByteCellSlice*>(p.dst);
    const uint64_t rel = unit * p.dst_page_size + slot;
    const uint64_t t = p.start_token + rel;
    const uint64_t spi = rel / p.src_page_size;
    const uint64_t sslot = rel - spi * p.src_page_size;
    const uint64_t spage = (uint64_t)(int64_t)kvc_page_id(p.src_table, spi);
    uint64_t c = 0, at = 0;
    for (uint32_t i = 0; i < p.num_pairs; ++i) {
        const KvcByteCellSlice& s = src[i];
        const uint32_t kb = s.k_bytes, cell = kb + s.v_bytes, P = (cell + 7) / 8;
        const uint64_t ka = s.k_base + spage * (uint64_t)s.k_page_stride + sslot * (uint64_t)s.k_token_stride;
        const uint64_t va = s.v_base + spage * (uint64_t)s.v_page_stride + sslot * (uint64_t)s.v_token_stride;
        uint64_t sum = 0;
        for (uint32_t q = 0; q < P; ++q) {
            uint64_t x = 0;
            for (uint32_t r = 0; r < 8; ++r) {
                const uint32_t b = 8 * q + r;
                const uint64_t byte = b < kb ? *reinterpret_cast<const uint8_t*>(ka + b)
                                    : b < cell ? *reinterpret_cast<const uint8_t*>(va + (b - kb)) : 0;
                x |= byte << (8 * r);
            }
            stage[at + slot * P + q] = x;
            sum += kvc_piece_value<MIX>(x) * (2 * (t * P + q) + 1);
        }
        c += dst[i].factor * sum;
        at += (uint64_t)P * n;
    }
    block = t / p.block_size - p.first_block;
    return c;
}

// Phase 2 for slot `slot` of unit `unit`: the staged pieces' bytes stored to the destination's cells.
KVC_HD void kvc_staged_write(const KvcCopyParams& p, uint64_t unit, uint64_t slot, uint64_t n, const uint64_t* stage) {
    const KvcByteCellSlice* dst = reinterpret_cast<const KvcByteCellSlice*>(p.dst);
    const uint64_t dpage = (uint64_t)(int64_t)kvc_page_id(p.dst_table, unit);
    uint64_t at = 0;
    for (uint32_t i = 0; i < p.num_pairs; ++i) {
        const KvcByteCellSlice& d = dst[i];
        const uint32_t kb = d.k_bytes, cell = kb + d.v_bytes, P = (cell + 7) / 8;
        const uint64_t ka = d.k_base + dpage * (uint64_t)d.k_page_stride + slot * (uint64_t)d.k_token_stride;
        const uint64_t va = d.v_base + dpage * (uint64_t)d.v_page_stride + slot * (uint64_t)d.v_token_stride;
        for (uint32_t b = 0; b < cell; ++b) {
            const uint8_t v = (uint8_t)(stage[at + slot * P + b / 8] >> (8 * (b % 8)));
            kvc_st1(reinterpret_cast<char*>(b < kb ? ka + b : va + (b - kb)), v);
        }
        at += (uint64_t)P * n;
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

// The staged copy (see kvc_staged_read): kvc_copy_staged[_mixed], a CTA per staging unit, the unit's pieces in the
// launch's dynamic shared memory.
template <int MIX>
__device__ __forceinline__ void kvc_copy_staged_body(const KvcCopyParams& p) {
    extern __shared__ uint64_t stage[];
    const uint64_t unit = blockIdx.x;
    const uint64_t n = kvc_staged_tokens(p, unit);
    for (uint64_t slot = threadIdx.x; slot < n; slot += blockDim.x) {
        uint64_t block;
        const uint64_t c = kvc_staged_read<MIX>(p, unit, slot, n, stage, block);
        atomicAdd(reinterpret_cast<unsigned long long*>(p.out + block), (unsigned long long)c);
    }
    __syncthreads();
    for (uint64_t slot = threadIdx.x; slot < n; slot += blockDim.x) kvc_staged_write(p, unit, slot, n, stage);
}
#define KVC_COPY_STAGED_KERNEL(NAME, MIX) \
    extern "C" __global__ void __launch_bounds__(KVC_THREADS) NAME(const KvcCopyParams p) { kvc_copy_staged_body<MIX>(p); }
KVC_COPY_STAGED_KERNEL(kvc_copy_staged, 0)
KVC_COPY_STAGED_KERNEL(kvc_copy_staged_mixed, 1)
#endif
