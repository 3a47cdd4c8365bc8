/*
 * The byte-assembling path, for cells whose K or V is not whole 8-byte pieces (docs/definition.md): a piece that
 * straddles K's last bytes and V's first, V's later pieces at offsets that are not multiples of 8 from its base, and
 * cells zero-padded at their end to whole pieces (the padded-cells extension). Appended to kvchecksum.cl when the
 * program is built (its DESC_* words and feistel3 are used here); the whole-piece kernels never see such slices, the
 * host routes them here (SlicePlan.byteCellSlices()).
 *
 * Each piece is assembled from single bytes, so no address needs any alignment. Plain and correct, not tuned: such
 * caches (indexer caches, odd MLA splits) are a small share of a request's bytes.
 */

/* Byte q of a cell whose K and V cells start at k_cell and v_cell: K bytes, then V bytes, then zeros (the padding). */
inline ulong byte_cell_byte(__global const uchar *kv, ulong k_cell, ulong v_cell, uint kb, uint vb, uint q) {
    if (q < kb) {
        return kv[k_cell + q];
    }
    q -= kb;
    return q < vb ? kv[v_cell + q] : 0;
}

/*
 * NDRange (num_blocks, num_slices): work item (b, i) sums slice i over launch block b (of one request: its block
 * first_block + b), every (token, piece) of it, j = t*P + p with P = ceil((K bytes + V bytes) / 8). bytes[2i],
 * bytes[2i+1]: the slice's K and V bytes per cell. weighted != 0: out[b*num_slices + i] = m*s (sum_parts then adds
 * each block's row); else out[i*num_blocks + b] = s (a batch: out[slice_sum_at]).
 */
inline void byte_cell_sums_body(KVC_LAYOUT_ARGS, __global const uint *bytes, uint num_slices, uint num_blocks,
                                uint weighted, __global ulong *out, uint mixed) {
    ulong b = get_global_id(0);
    ulong i = get_global_id(1);
    if (b >= num_blocks || i >= num_slices) {
        return;
    }
    __global const ulong *d = desc + i * DESC_WORDS;
    uint kb = bytes[2 * i];
    uint vb = bytes[2 * i + 1];
    ulong P = (kb + vb + 7) / 8;
    ulong at = i * num_blocks + b;
    if (num_requests > 0) {
        TAKE_REQUEST(q, b);
        at = slice_sum_at(q, num_slices, i, b);
    }
    ulong t0 = (first_block + b) * block_size;
    ulong t1 = min(t0 + block_size, num_tokens);
    ulong s = 0;
    for (ulong t = t0; t < t1; t++) {
        ulong rel = t - start;
        ulong pi = rel / page_size;
        ulong slot = rel - pi * page_size;
        ulong page = (ulong) table[pi];
        ulong k_cell = d[DESC_K_BASE] + page * d[DESC_K_PAGE_STRIDE] + slot * d[DESC_K_TOKEN_STRIDE];
        ulong v_cell = d[DESC_V_BASE] + page * d[DESC_V_PAGE_STRIDE] + slot * d[DESC_V_TOKEN_STRIDE];
        for (ulong p = 0; p < P; p++) {
            ulong x = 0;
            for (int q = 7; q >= 0; q--) {
                x = (x << 8) | byte_cell_byte(kv, k_cell, v_cell, kb, vb, (uint) (8 * p) + (uint) q);
            }
            x = mixed ? feistel3(x) : x;
            s += x * (2 * (t * P + p) + 1);
        }
    }
    if (weighted) {
        out[b * num_slices + i] = d[DESC_FACTOR] * s;
    } else {
        out[at] = s;
    }
}

/* Arguments: KVC_LAYOUT_ARGS, then bytes, num_slices, num_blocks (the launch's), weighted and out, as above. */
#define KVC_BYTE_CELL_ARGS KVC_LAYOUT_ARGS, __global const uint *bytes, uint num_slices, uint num_blocks, uint weighted, \
    __global ulong *out
__kernel void byte_cell_sums(KVC_BYTE_CELL_ARGS) {
    byte_cell_sums_body(KVC_LAYOUT, bytes, num_slices, num_blocks, weighted, out, 0);
}
__kernel void byte_cell_sums_mixed(KVC_BYTE_CELL_ARGS) {
    byte_cell_sums_body(KVC_LAYOUT, bytes, num_slices, num_blocks, weighted, out, 1);
}
