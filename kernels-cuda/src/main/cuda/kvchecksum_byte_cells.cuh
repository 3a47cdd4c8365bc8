// kvchecksum: the byte-assembling path, for cells whose K or V is not whole 8-byte pieces (docs/definition.md): a
// piece that straddles K's last bytes and V's first, V's later pieces at offsets that are not multiples of 8 from its
// base, and cells zero-padded at their end to whole pieces (the padded-cells extension). The whole-piece kernels of
// kvchecksum.cuh never see such slices: the host routes them here (SlicePlan.byteCellSlices()).
//
// Every piece is assembled from the aligned 8-byte words that hold its K and V bytes, so no address needs any
// alignment; each lane takes (token, piece) items of its warp's slices of the block in batches that run on from one
// slice into the next, like the whole-piece kernels: all of a
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

// A lane's walk over the items of one byte-cell slice of a block: items i = lane, lane + 32, ... of the block's
// (token, piece) pairs, item i = t*P + piece, `rem` of them (warp-uniform; the last may lie past the block's tokens:
// then it is off). The slice's fields live in registers: the byte-cell kernels stage nothing, and an address needs
// them all.
struct KvcByteCellWalk {
    uint64_t kbase, vbase, kps, kts, vps, vts;
    uint32_t kb, vb, P;
    uint32_t dq, dr;      // 32 items = dq tokens and dr pieces
    uint32_t t, piece;    // the lane's next item as (token, piece)
    uint32_t rem;         // items left to the lane in this slice (warp-uniform)
    KVC_HD void begin(const KvcByteCellSlice& s, uint32_t ntok, uint32_t lane) {
        kb = s.k_bytes;
        vb = s.v_bytes;
        kbase = s.k_base;
        vbase = s.v_base;
        kps = (uint64_t)s.k_page_stride;
        kts = (uint64_t)s.k_token_stride;
        vps = (uint64_t)s.v_page_stride;
        vts = (uint64_t)s.v_token_stride;
        P = (kb + vb + 7) / 8;
        dq = 32 / P;
        dr = 32 - dq * P;
        t = lane / P;
        piece = lane - t * P;
        rem = (uint32_t)(((uint64_t)ntok * P + 31) / 32);
    }
    KVC_HD void next() {
        piece += dr;
        t += dq;
        if (piece >= P) {
            piece -= P;
            ++t;
        }
        --rem;
    }
};

// One lane's (0..31) walk of a warp over byte-cell slices [i0, i1) of a block (bs: its first token, ntok > 0 tokens):
// when the walk leaves slice i it hands emit(i, v) the lane's share v of the slice's sum (unweighted: the block
// checksums' emit multiplies by the factor), in order and at the same point of every lane's walk (slice boundaries
// are warp-uniform), as the whole-piece walk does (kvc_lane_slices_walk). Piece p of a cell is bytes 8p .. 8p+7 of K
// then V then zeros: a K segment (bytes of K from 8p) and a V segment (the V bytes that follow; for the piece that
// straddles K's end, V's first bytes), each read as the aligned 8-byte words that hold it. In batches of
// KVC_BYTE_CELL_BATCH items that run on into the next slices where a slice gives a lane fewer (short cells, short or
// partial blocks): first every address (null: off, past the block's tokens or the last slice, or no such segment),
// then all the loads, one predicated instruction each, then the joins and the adds. HASV: a slice of the walk has V
// bytes (a K-only slice in such a walk has no V segments). Piece j = bs*P + i of a slice weighs 2j+1, so a lane's
// weights step by 64 within a slice: one running weight, set where a slice starts (a per-item weight would cost the
// registers that keep the batch free of spills).
template <int MIX, bool HASV, class Emit>
KVC_HD void kvc_byte_cell_lane_walk(const KvcChecksumParams& p, const KvcByteCellSlice* sl, uint32_t i0, uint32_t i1,
                                    uint64_t bs, uint32_t ntok, uint32_t lane, Emit& emit) {
    const uint32_t shift = kvc_page_shift(p.page_size);
    const uint64_t idx0 = bs - p.start_token;  // table index of the block's first token
    constexpr int N = KVC_BYTE_CELL_BATCH(HASV);
    KvcByteCellWalk wk;
    wk.begin(sl[i0], ntok, lane);
    uint64_t wr = 2 * (bs * wk.P + lane) + 1;  // the weight of the lane's next item to add
    uint32_t iw = i0;  // the walk's slice
    uint32_t ia = i0;  // the slice acc belongs to
    uint64_t acc = 0;
    bool live = true;
    while (live) {
        const char* kw[N]; const char* vw[N];  // the segments' first words
        uint32_t geo[N];  // K and V segments' a mod 8, len and whether they spill into the next word, 4 bits each
        uint32_t np[N];   // at a slot that starts a slice: its pieces per cell
        uint32_t starts = 0;  // bit k: slot k is the first item of the next slice
        KVC_UNROLL
        for (int k = 0; k < N; ++k) {
            if (live && wk.rem == 0) {
                ++iw;
                if (iw < i1) {
                    wk.begin(sl[iw], ntok, lane);
                    starts |= 1u << k;
                } else {
                    live = false;
                }
            }
            const bool on = live && wk.t < ntok;
            // An item past the block is off; its address is the last token's, so the page-id read stays in the table.
            const uint64_t idx = idx0 + (wk.t < ntok ? wk.t : ntok - 1);
            const uint64_t page_idx = shift < 32 ? idx >> shift : kvc_udiv(idx, p.page_size);
            const uint64_t slot = idx - page_idx * p.page_size;
            const uint64_t page = (uint64_t)(int64_t)kvc_page_id(p.table, page_idx);
            const uint32_t kb = wk.kb, vb = wk.vb;
            const uint32_t q = 8 * wk.piece;
            const uint32_t klen = !on || q >= kb ? 0 : (kb - q < 8 ? kb - q : 8);
            const uint32_t voff = q + klen - kb;  // the V bytes after K's: wraps (unused) when klen == 8
            const uint32_t vlen = !HASV || !on || klen == 8 || voff >= vb ? 0 : (vb - voff < 8 - klen ? vb - voff : 8 - klen);
            const uint64_t ka = wk.kbase + page * wk.kps + slot * wk.kts + q;
            const uint64_t va = wk.vbase + page * wk.vps + slot * wk.vts + voff;
            kw[k] = kvc_segment_word(ka, klen);
            vw[k] = kvc_segment_word(va, vlen);
            geo[k] = (uint32_t)(ka & 7) | klen << 4 | kvc_segment_spills(ka, klen) << 8
                   | (uint32_t)(va & 7) << 12 | vlen << 16 | kvc_segment_spills(va, vlen) << 20;
            np[k] = wk.P;
            if (live) wk.next();
        }
        if (live && wk.rem == 0 && iw + 1 >= i1) live = false;
#if !defined(__CUDA_ARCH__)
        // The host emulation counts the batch's items that are on (kvc_batch_counts), as for the whole-piece walk.
        uint64_t on = 0;
        for (int k = 0; k < N; ++k) on += kw[k] != nullptr || vw[k] != nullptr;
        KVC_HOST_COUNT(2, on);
        KVC_HOST_COUNT(3, 1);
#endif
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
            if (starts & (1u << k)) {
                emit(ia, acc);
                acc = 0;
                ++ia;
                wr = 2 * (bs * np[k] + lane) + 1;
            }
            const uint32_t g = geo[k], klen = (g >> 4) & 15;
            const uint64_t kx = kvc_segment_value(xk0[k], xk1[k], g & 7, klen);
            const uint64_t vx = kvc_segment_value(xv0[k], xv1[k], (g >> 12) & 7, (g >> 16) & 15);
            const uint64_t x = kx | ((vx << (4 * klen)) << (4 * klen));  // V's bytes after K's (klen 8: none)
            // An off item is the zero piece, which adds nothing: kvc_piece_value(0) == 0 in both modes.
            acc += kvc_piece_value<MIX>(x) * wr;
            wr += 64;
        }
    }
    emit(ia, acc);
}

// The emit of the byte-cell block checksums: the lane's shares of its slices, each times its slice's factor, added
// up (the factor read as the walk leaves the slice: once per slice, not per item).
struct KvcByteCellFactorEmit {
    static constexpr bool writes = false;
    const KvcByteCellSlice* sl;
    uint64_t acc;
    KVC_HD void operator()(uint32_t i, uint64_t v) { acc += sl[i].factor * v; }
};

// One lane's (0..31) walk of a warp over byte-cell slices [i0, i1) of request block `block` (kvc_byte_cell_lane_walk,
// in cells with V if any slice of the walk has V bytes, else K-only): each slice's share handed to emit as the walk
// leaves it.
template <int MIX, class Emit>
KVC_HD void kvc_byte_cell_lane_slices(const KvcChecksumParams& p, const KvcByteCellSlice* sl, uint32_t i0, uint32_t i1,
                                      uint64_t block, uint32_t lane, Emit& emit) {
    const uint64_t bs = block * p.block_size;
    uint64_t be = bs + p.block_size;
    if (be > p.num_tokens) be = p.num_tokens;
    if (be <= bs || i0 >= i1) {
        // An empty block: every slice's sum is 0 (written where the emit writes; adding zeros is nothing to do).
        if (Emit::writes) for (uint32_t i = i0; i < i1; ++i) emit(i, 0);
        return;
    }
    bool hasv = false;
    for (uint32_t i = i0; i < i1; ++i) hasv |= sl[i].v_bytes != 0;
    const uint32_t ntok = (uint32_t)(be - bs);
    if (hasv) {
        kvc_byte_cell_lane_walk<MIX, true>(p, sl, i0, i1, bs, ntok, lane, emit);
    } else {
        kvc_byte_cell_lane_walk<MIX, false>(p, sl, i0, i1, bs, ntok, lane, emit);
    }
}
