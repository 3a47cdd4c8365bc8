// kvchecksum: the byte-assembling path, for cells whose K or V is not whole 8-byte pieces (docs/definition.md): a
// piece that straddles K's last bytes and V's first, V's later pieces at offsets that are not multiples of 8 from its
// base, and cells zero-padded at their end to whole pieces (the padded-cells extension). The whole-piece kernels of
// kvchecksum.cuh never see such slices: the host routes them here (SlicePlan.byteCellSlices()).
//
// Every piece is assembled from the aligned 8-byte words that hold its K and V bytes, so no address needs any
// alignment; each lane takes (token, piece) items of the block in batches, like the whole-piece kernels: all of a
// batch's loads (128 bytes per thread) are issued before the first is used, and each piece is weighted with a
// multiply. __host__ __device__, so the host test library runs the very same arithmetic over the golden vectors.
#pragma once
#include "kvchecksum.cuh"

// One (layer, global head) slice with byte cells. 64 bytes, the layout of KvcSlice with byte counts in place of
// piece counts (io.kvchecksum.cuda.KernelAbi writes both).
struct KvcByteCellSlice {
    uint64_t factor;          // m = 2*(layer*2^16 + head) + 1
    uint64_t k_base;          // address of this head's K cell in page 0, slot 0
    int64_t k_page_stride;
    int64_t k_token_stride;
    uint64_t v_base;          // as k_base, for V; unused when v_bytes == 0
    int64_t v_page_stride;
    int64_t v_token_stride;
    uint32_t k_bytes;         // K bytes per cell (> 0)
    uint32_t v_bytes;         // V bytes per cell (0: K only); pieces per cell P = ceil((k_bytes + v_bytes) / 8)
};

// A segment of a piece, bytes [a, a + len) of K or of V (len <= 8, 0: none), is read as the aligned 8-byte words that
// hold its bytes: the word w holding byte a (null when there is no segment) and, when the segment reaches into it
// (`spill`), the next. Both hold a byte of the segment, so both lie in the allocation that holds the cache (the
// argument of kvc_ld8_any: allocations start and end on 8-byte boundaries at least): no byte outside the words of the
// cell's own bytes is read.
KVC_HD const char* kvc_segment_word(uint64_t a, uint32_t len) {
    return len != 0 ? reinterpret_cast<const char*>(a & ~(uint64_t)7) : nullptr;
}
KVC_HD uint32_t kvc_segment_spills(uint64_t a, uint32_t len) { return len != 0 && (uint32_t)(a & 7) + len > 8 ? 1 : 0; }

// The words of a segment: lo at w (null: none, lo = 0), hi at w + 8 when spill != 0 (else 0). One predicated pair on
// the GPU, addressed [w] and [w+8], so a batch's loads need one address register per segment and stay one basic block.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void kvc_ld8_pair_if(const char* w, uint32_t spill, uint64_t& lo, uint64_t& hi) {
    asm("{\n\t.reg .pred q, r;\n\t"
        "setp.ne.u64 q, %2, 0;\n\tsetp.ne.and.u32 r, %3, 0, q;\n\t"
        "@q ld.global.cs.u64 %0, [%2];\n\t@r ld.global.cs.u64 %1, [%2+8];\n\t"
        "@!q mov.b64 %0, 0;\n\t@!r mov.b64 %1, 0;\n\t}"
        : "=l"(lo), "=l"(hi) : "l"(w), "r"(spill));
}
#else
inline void kvc_ld8_pair_if(const char* w, uint32_t spill, uint64_t& lo, uint64_t& hi) {
    lo = kvc_ld8_if(w);
    hi = kvc_ld8_if(w != nullptr && spill != 0 ? w + 8 : nullptr);
}
#endif

// The segment's bytes from its words (lo, hi as loaded, 0 where not read), sh = a mod 8: the low len bytes of the
// result, zeros above (the padding of a piece that K and V do not fill).
KVC_HD uint64_t kvc_segment_value(uint64_t lo, uint64_t hi, uint32_t sh, uint32_t len) {
    const uint64_t x = kvc_join8(lo, hi, 8 * sh);
    return len == 0 ? 0 : x & (~0ull >> (64 - 8 * len));
}

// Items (token, piece) a lane loads back to back before it uses the first: in cells with V, two segments (K, V) of up
// to two 8-byte words each per piece, 4 items = 128 bytes of loads per thread per batch; in K-only cells (index-K,
// MLA-like), one segment, 8 items = 128 bytes. PtxEvidenceTest counts them in every data-load block. (8 items with V
// would need about 190 registers: one CTA per SM.)
#define KVC_BYTE_CELL_BATCH(HASV) ((HASV) ? 4 : 8)

// The contribution of one lane (0..31) of the warp that sums byte-cell slice s over request block `block`: items
// i = lane, lane + 32, ... of the block's (token, piece) pairs, item i = t*P + p, each piece weighted by 2j+1,
// j = bs*P + i. Piece p of a cell is bytes 8p .. 8p+7 of K then V then zeros: a K segment (bytes of K from 8p) and a
// V segment (the V bytes that follow; for the piece that straddles K's end, V's first bytes), each read as the aligned
// 8-byte words that hold it. In batches of KVC_BYTE_CELL_BATCH items, as the whole-piece kernels do
// (kvc_lane_slices_sum): first every address (null: off, past the block's items or no such segment), then all the
// loads, one predicated instruction each, then the joins and the adds. HASV: the slice has V bytes (v_bytes > 0).
template <int MIX, bool HASV>
KVC_HD uint64_t kvc_byte_cell_lane_sum_batched(const KvcChecksumParams& p, const KvcByteCellSlice& s, uint64_t bs,
                                              uint64_t be, uint32_t lane) {
    const uint32_t kb = s.k_bytes, vb = s.v_bytes;
    const uint64_t kbase = s.k_base, vbase = s.v_base;
    const uint64_t kps = (uint64_t)s.k_page_stride, kts = (uint64_t)s.k_token_stride;
    const uint64_t vps = (uint64_t)s.v_page_stride, vts = (uint64_t)s.v_token_stride;
    const uint32_t P = (kb + vb + 7) / 8;
    const uint32_t ntok = (uint32_t)(be - bs);
    const uint64_t items = (uint64_t)ntok * P;
    const uint32_t shift = kvc_page_shift(p.page_size);
    const uint64_t idx0 = bs - p.start_token;  // table index of the block's first token
    const uint32_t dq = 32 / P, dr = 32 - dq * P;  // 32 items = dq tokens and dr pieces
    constexpr int N = KVC_BYTE_CELL_BATCH(HASV);
    uint32_t t = lane / P, piece = lane - (lane / P) * P;  // the lane's next item
    uint64_t i = lane;
    uint64_t w = 2 * (bs * P + lane) + 1;  // its weight; 64 more per item of the lane
    uint64_t acc = 0;
    while (i < items) {
        const char* kw[N]; const char* vw[N];  // the segments' first words
        uint32_t geo[N];  // K and V segments' a mod 8, len and whether they spill into the next word, 4 bits each
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const bool on = i + 32ull * k < items;
            // An item past the block is off; its address is the last token's, so the page-id read stays in the table.
            const uint64_t idx = idx0 + (t < ntok ? t : ntok - 1);
            const uint64_t page_idx = shift < 32 ? idx >> shift : kvc_udiv(idx, p.page_size);
            const uint64_t slot = idx - page_idx * p.page_size;
            const uint64_t page = (uint64_t)(int64_t)kvc_page_id(p.table, page_idx);
            const uint32_t q = 8 * piece;
            const uint32_t klen = !on || q >= kb ? 0 : (kb - q < 8 ? kb - q : 8);
            const uint32_t voff = q + klen - kb;  // the V bytes after K's: wraps (unused) when klen == 8
            const uint32_t vlen = !HASV || !on || klen == 8 || voff >= vb ? 0 : (vb - voff < 8 - klen ? vb - voff : 8 - klen);
            const uint64_t ka = kbase + page * kps + slot * kts + q;
            const uint64_t va = vbase + page * vps + slot * vts + voff;
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
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            const uint32_t g = geo[k], klen = (g >> 4) & 15;
            const uint64_t kx = kvc_segment_value(xk0[k], xk1[k], g & 7, klen);
            const uint64_t vx = kvc_segment_value(xv0[k], xv1[k], (g >> 12) & 7, (g >> 16) & 15);
            const uint64_t x = kx | ((vx << (4 * klen)) << (4 * klen));  // V's bytes after K's (klen 8: none)
            // An off item is the zero piece, which adds nothing: kvc_piece_value(0) == 0 in both modes.
            acc += kvc_piece_value<MIX>(x) * (w + 64ull * k);
        }
        i += 32ull * N;
        w += 64ull * N;
    }
    return acc;
}

// The contribution of one lane (0..31) of the warp that sums byte-cell slice s over request block `block`
// (kvc_byte_cell_lane_sum_batched, for cells with and without V).
template <int MIX>
KVC_HD uint64_t kvc_byte_cell_lane_sum(const KvcChecksumParams& p, const KvcByteCellSlice& s, uint64_t block, uint32_t lane) {
    const uint64_t bs = block * p.block_size;
    uint64_t be = bs + p.block_size;
    if (be > p.num_tokens) be = p.num_tokens;
    if (be <= bs) return 0;
    return s.v_bytes != 0 ? kvc_byte_cell_lane_sum_batched<MIX, true>(p, s, bs, be, lane)
                          : kvc_byte_cell_lane_sum_batched<MIX, false>(p, s, bs, be, lane);
}

// The slice a warp of the byte-cell kernels sums: CTA (bx, by), warp w -> slice by*KVC_WARPS + w, or -1 if none.
KVC_HD int64_t kvc_byte_cell_slice(const KvcChecksumParams& p, uint32_t by, uint32_t warp) {
    const uint64_t i = (uint64_t)by * KVC_WARPS + warp;
    return i < p.num_slices ? (int64_t)i : -1;
}
