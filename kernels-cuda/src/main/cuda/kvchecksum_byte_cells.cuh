// kvchecksum: the byte-assembling path, for cells whose K or V is not whole 8-byte pieces (docs/definition.md): a
// piece that straddles K's last bytes and V's first, V's later pieces at offsets that are not multiples of 8 from its
// base, and cells zero-padded at their end to whole pieces (the padded-cells extension). The whole-piece kernels of
// kvchecksum.cuh never see such slices: the host routes them here (SlicePlan.byteCellSlices()).
//
// Every piece is assembled from single-byte loads, so no address needs any alignment; each lane takes (token, piece)
// items of the block in turn and weights its piece with a multiply. Plain and correct, not tuned: such caches
// (indexer caches, odd MLA splits) are a small share of a request's bytes. __host__ __device__, so the host test
// library runs the very same arithmetic over the golden vectors.
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

// Byte q of the cell at table index idx: K bytes, then V bytes, then zeros (the padding).
KVC_HD uint64_t kvc_cell_byte(const KvcByteCellSlice& s, const int32_t* table, uint64_t idx, uint32_t page_size, uint32_t q) {
    const uint64_t page_idx = idx / page_size;
    const uint64_t slot = idx - page_idx * page_size;
    const uint64_t page = (uint64_t)(int64_t)table[page_idx];
    if (q < s.k_bytes) {
        return *reinterpret_cast<const unsigned char*>(s.k_base + page * (uint64_t)s.k_page_stride + slot * (uint64_t)s.k_token_stride + q);
    }
    q -= s.k_bytes;
    if (q < s.v_bytes) {
        return *reinterpret_cast<const unsigned char*>(s.v_base + page * (uint64_t)s.v_page_stride + slot * (uint64_t)s.v_token_stride + q);
    }
    return 0;
}

// The contribution of one lane (0..31) of the warp that sums byte-cell slice s over request block `block`: items
// i = lane, lane + 32, ... of the block's (token, piece) pairs, each piece weighted by 2j+1, j = pos*P + p.
template <int MIX>
KVC_HD uint64_t kvc_byte_cell_lane_sum(const KvcChecksumParams& p, const KvcByteCellSlice& s, uint64_t block, uint32_t lane) {
    const uint64_t bs = block * p.block_size;
    uint64_t be = bs + p.block_size;
    if (be > p.num_tokens) be = p.num_tokens;
    if (be <= bs) return 0;
    const uint32_t P = (s.k_bytes + s.v_bytes + 7) / 8;
    const uint64_t items = (be - bs) * P;
    uint64_t acc = 0;
    for (uint64_t i = lane; i < items; i += 32) {
        const uint64_t t = i / P;
        const uint32_t piece = (uint32_t)(i - t * P);
        const uint64_t pos = bs + t;
        const uint64_t idx = pos - p.start_token;
        uint64_t x = 0;
        for (int b = 7; b >= 0; --b) x = (x << 8) | kvc_cell_byte(s, p.table, idx, p.page_size, 8 * piece + (uint32_t)b);
        acc += kvc_piece_value<MIX>(x) * (2 * (pos * P + piece) + 1);
    }
    return acc;
}

// The slice a warp of the byte-cell kernels sums: CTA (bx, by), warp w -> slice by*KVC_WARPS + w, or -1 if none.
KVC_HD int64_t kvc_byte_cell_slice(const KvcChecksumParams& p, uint32_t by, uint32_t warp) {
    const uint64_t i = (uint64_t)by * KVC_WARPS + warp;
    return i < p.num_slices ? (int64_t)i : -1;
}
