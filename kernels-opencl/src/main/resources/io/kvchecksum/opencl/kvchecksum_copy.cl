/*
 * The verifying copy (io.kvchecksum.CopyPlan): KV moved from a source cache to a destination cache in one pass, the
 * destination's block checksums computed from the bytes as they pass. Appended to kvchecksum.cl when the program is
 * built (its DESC_* words, feistel3, load_piece and group_sum are used here).
 *
 * Each copied (layer, head) slice is a pair of descriptors, sdesc[i] (where its cells are read, relative to `src`)
 * and ddesc[i] (where they are written, relative to `dst`), DESC_WORDS each; the factor, pieces and K pieces are the
 * destination's (equal on both sides: the plan refused other geometries). Request position t lies in the source at
 * page stable[(t-start)/src_page], slot (t-start)%src_page, and in the destination at page dtable[(t-start)/dst_page],
 * slot (t-start)%dst_page. The kernels iterate the destination's blocks and positions, so every value is weighted by the
 * destination's coordinates (t, and the destination's factor) while it is read from the source: a corrupted source
 * byte, a source page paired with the wrong destination page and a wrong head range all change the sums.
 *
 * `src` and `dst` may be the same buffer (one window over host memory, or one engine cl_mem). copy_pieces and
 * copy_byte_cells run plans whose bytes read and bytes written never overlap, so neither pointer is restrict and the
 * order of the stores does not matter; a staged plan (source and destination memory overlap, CopyPlan.staged(): vLLM's
 * in-place rearrangement) runs copy_staged, which reads each staging unit whole into local memory before writing it.
 */

/* The arguments every copy kernel starts with (CopyKernels.setLayoutArgs). */
#define KVC_COPY_ARGS __global const uchar *src, __global uchar *dst, __global const ulong *sdesc, \
    __global const ulong *ddesc, __global const int *stable, __global const int *dtable, ulong start, ulong src_page, \
    ulong dst_page, ulong first_block, ulong block_size, ulong num_tokens, uint num_pairs, uint stride, uint offset, \
    __global ulong *partials
#define KVC_COPY src, dst, sdesc, ddesc, stable, dtable, start, src_page, dst_page, first_block, block_size, \
    num_tokens, num_pairs, stride, offset, partials

/* One little-endian piece stored; byte-wise when the address may be unaligned (devices are checked little-endian). */
inline void store_piece(__global uchar *dst, ulong addr, ulong x, uint aligned) {
    if (aligned) {
        ((__global ulong *) dst)[addr >> 3] = x;
    } else {
        vstore8(as_uchar8(x), 0, dst + addr);
    }
}

/* The byte offset of cell (page, slot) of part `base_word` (DESC_K_BASE or DESC_V_BASE) of descriptor d. */
inline ulong cell_at(__global const ulong *d, uint base_word, ulong page, ulong slot) {
    return d[base_word] + page * d[base_word + 1] + slot * d[base_word + 2];
}

/*
 * Whole pieces. NDRange (local*parts, num_blocks), local (local, 1): work item k of block b's column (k = g*local +
 * lid) takes pieces k, k + parts*local, ... of the block's (pair, piece) sequence, so neighbouring work items load and
 * store neighbouring pieces of a cell (coalesced), and walks the block's tokens with each: page run by page run (both
 * tables read and the position divided once per run, where neither page changes), COPY_ROWS tokens' pieces loaded
 * before the first is stored (src and dst may be one buffer, so no compiler may hoist a load above a store itself).
 * Work-group g writes partials[b*stride + offset + g].
 */
#define COPY_ROWS 4
inline void copy_pieces_body(KVC_COPY_ARGS, uint parts, __local ulong *scratch, uint mixed) {
    uint g = get_group_id(0);
    ulong b = get_global_id(1);
    ulong step = (ulong) parts * get_local_size(0);
    ulong t0 = (first_block + b) * block_size;
    ulong t1 = min(t0 + block_size, num_tokens);
    ulong c = 0;
    uint i = 0;
    ulong u = (ulong) g * get_local_size(0) + get_local_id(0);
    while (t1 > t0 && i < num_pairs) {
        __global const ulong *dd = ddesc + (ulong) i * DESC_WORDS;
        ulong P = dd[DESC_PIECES];
        if (u >= P) {
            u -= P;
            i++;
            continue;
        }
        __global const ulong *sd = sdesc + (ulong) i * DESC_WORDS;
        ulong pk = dd[DESC_K_PIECES];
        uint k_part = u < pk;
        uint word = k_part ? DESC_K_BASE : DESC_V_BASE;
        ulong off = 8 * (k_part ? u : u - pk);
        uint bit = k_part ? DESC_K_ALIGNED : DESC_V_ALIGNED;
        uint sal = (uint) sd[DESC_FLAGS] & bit;
        uint dal = (uint) dd[DESC_FLAGS] & bit;
        ulong sts = sd[word + 2];
        ulong dts = dd[word + 2];
        ulong s = 0;
        for (ulong t = t0; t < t1;) {
            ulong rel = t - start;
            ulong spi = rel / src_page;
            ulong sslot = rel - spi * src_page;
            ulong dpi = rel / dst_page;
            ulong dslot = rel - dpi * dst_page;
            ulong run = min(t1 - t, min(src_page - sslot, dst_page - dslot));
            ulong sa = cell_at(sd, word, (ulong) stable[spi], sslot) + off;
            ulong da = cell_at(dd, word, (ulong) dtable[dpi], dslot) + off;
            ulong w = 2 * (t * P + u) + 1;
            ulong r = 0;
            for (; r + COPY_ROWS <= run; r += COPY_ROWS) {
                ulong x[COPY_ROWS];
                for (uint q = 0; q < COPY_ROWS; q++) {
                    x[q] = load_piece(src, sa + q * sts, sal);
                }
                for (uint q = 0; q < COPY_ROWS; q++) {
                    store_piece(dst, da + q * dts, x[q], dal);
                    s += piece_value(x[q], mixed) * w;
                    w += 2 * P;
                }
                sa += COPY_ROWS * sts;
                da += COPY_ROWS * dts;
            }
            for (; r < run; r++) {
                ulong x = load_piece(src, sa, sal);
                store_piece(dst, da, x, dal);
                s += piece_value(x, mixed) * w;
                w += 2 * P;
                sa += sts;
                da += dts;
            }
            t += run;
        }
        c += dd[DESC_FACTOR] * s;
        u += step;
    }
    c = group_sum(scratch, c);
    if (get_local_id(0) == 0) {
        partials[b * stride + offset + g] = c;
    }
}

/*
 * Byte cells (K or V not whole pieces: a piece straddling K's end and V's start, or a zero-padded last piece). NDRange
 * (num_blocks, num_pairs): work item (b, i) copies pair i's cells of block b byte by byte (no address needs any
 * alignment) and assembles its pieces from the bytes copied, K bytes then V bytes then zeros; it writes m*s to
 * partials[b*stride + offset + i]. bytes[2i], bytes[2i+1]: the pair's K and V bytes per cell. Plain and correct, not
 * tuned, like byte_cell_sums.
 */
inline void copy_byte_cells_body(KVC_COPY_ARGS, __global const uint *bytes, uint mixed) {
    ulong b = get_global_id(0);
    ulong i = get_global_id(1);
    if (i >= num_pairs) {
        return;
    }
    __global const ulong *sd = sdesc + i * DESC_WORDS;
    __global const ulong *dd = ddesc + i * DESC_WORDS;
    uint kb = bytes[2 * i];
    uint vb = bytes[2 * i + 1];
    uint cell = kb + vb;
    ulong P = (cell + 7) / 8;
    ulong t0 = (first_block + b) * block_size;
    ulong t1 = min(t0 + block_size, num_tokens);
    ulong s = 0;
    for (ulong t = t0; t < t1; t++) {
        ulong rel = t - start;
        ulong spi = rel / src_page;
        ulong sslot = rel - spi * src_page;
        ulong dpi = rel / dst_page;
        ulong dslot = rel - dpi * dst_page;
        ulong spage = (ulong) stable[spi];
        ulong dpage = (ulong) dtable[dpi];
        ulong sk = cell_at(sd, DESC_K_BASE, spage, sslot);
        ulong sv = cell_at(sd, DESC_V_BASE, spage, sslot);
        ulong dk = cell_at(dd, DESC_K_BASE, dpage, dslot);
        ulong dv = cell_at(dd, DESC_V_BASE, dpage, dslot);
        for (ulong p = 0; p < P; p++) {
            ulong x = 0;
            for (uint q = 0; q < 8; q++) {
                uint at = (uint) (8 * p) + q;
                ulong byte = 0;
                if (at < kb) {
                    uchar v = src[sk + at];
                    dst[dk + at] = v;
                    byte = v;
                } else if (at < cell) {
                    uchar v = src[sv + (at - kb)];
                    dst[dv + (at - kb)] = v;
                    byte = v;
                }
                x |= byte << (8 * q);
            }
            s += piece_value(x, mixed) * (2 * (t * P + p) + 1);
        }
    }
    partials[b * stride + offset + i] = dd[DESC_FACTOR] * s;
}

/*
 * Staged (in place). One work-group per staging unit: group g of the launch's pairs (pairs groups[g] ..
 * groups[g+1]-1, one layer) and destination table entry i = get_global_id(1), i.e. positions [start + i*dst_page,
 * min(start + (i+1)*dst_page, num_tokens)). `stage` (local memory) holds the unit's pieces in pair, position, piece
 * order, then group_sum's scratch (a word per work item, at most 128). No unit reads bytes another unit writes (the
 * plan checked), so work-groups need no order.
 *
 * Phase 1, per destination block the unit meets (usually one): ALL work items walk each pair's pieces of the block's
 * positions, item = (slot, piece) with the piece fastest, so neighbouring work items load neighbouring pieces of a cell
 * row (coalesced); a piece is one aligned 8-byte load where both sides' parts are 8-byte aligned (the descriptors'
 * flags) and the cells whole pieces, else one vload8 where it lies within K or within V, else assembled byte by byte
 * (a piece straddling K and V, or the padded last one). Each piece goes to `stage` and its weighted value into the work
 * item's sum; the work-group's sums are reduced in local memory and the block's value (all pairs, times their factors)
 * written to the column of the unit's first position in the block, partials[b*stride + offset + g*block_size +
 * t%block_size], the columns of its other positions there zeroed. Barrier; phase 2: all work items store the pieces
 * (whole aligned words, or their K and V bytes) to the destination's cells, coalesced. The last unit of each group
 * zeroes its columns past num_tokens, so sum_parts adds every column. bytes[2p], bytes[2p+1]: pair p's K and V bytes.
 */

/* Whether pair p moves whole aligned 8-byte pieces: both sides' parts 8-byte aligned, K and V bytes multiples of 8. */
inline uint staged_aligned(__global const ulong *sd, __global const ulong *dd, uint kb, uint vb) {
    uint need = vb != 0 ? DESC_K_ALIGNED | DESC_V_ALIGNED : DESC_K_ALIGNED;
    return ((uint) sd[DESC_FLAGS] & need) == need && ((uint) dd[DESC_FLAGS] & need) == need && (kb & 7) == 0
           && (vb & 7) == 0;
}

/*
 * Pair p of a staging unit as both phases of copy_staged walk it, declared as locals: its descriptors (sd, dd), K and V
 * bytes, pieces per cell (P), whether it moves whole aligned pieces (al), and the work item's first (slot r, piece q)
 * and its step over the items, nl work items = dq positions and dr pieces (stepped, not divided out per item). A macro
 * rather than a function returning a struct, so that the code stays what it was: with the struct, PoCL's copy_staged
 * read 0.51-0.53 of the out-of-place copy against 0.55-0.56 before (StagedCopyCost 5 2 16, load 5-7).
 */
#define STAGED_PAIR(p)                                                                                                \
    __global const ulong *sd = sdesc + (ulong) (p) * DESC_WORDS;                                                      \
    __global const ulong *dd = ddesc + (ulong) (p) * DESC_WORDS;                                                      \
    uint kb = bytes[2 * (p)];                                                                                         \
    uint vb = bytes[2 * (p) + 1];                                                                                     \
    uint cell = kb + vb;                                                                                              \
    uint P = (cell + 7) / 8;                                                                                          \
    uint al = staged_aligned(sd, dd, kb, vb);                                                                         \
    uint dq = nl / P;                                                                                                 \
    uint dr = nl - dq * P;                                                                                            \
    uint r = lid / P;                                                                                                 \
    uint q = lid - r * P

inline void copy_staged_body(KVC_COPY_ARGS, __global const uint *bytes, __global const uint *groups,
                             __local ulong *stage, uint mixed) {
    uint g = get_group_id(0);
    ulong i = get_global_id(1);
    uint lid = (uint) get_local_id(0);
    uint nl = (uint) get_local_size(0);
    uint p0 = groups[g];
    uint p1 = groups[g + 1];
    ulong first = start + i * dst_page;
    ulong n = min(dst_page, num_tokens - first);
    ulong dpage = (ulong) dtable[i];
    ulong words = 0;
    for (uint p = p0; p < p1; p++) {
        words += (ulong) ((bytes[2 * p] + bytes[2 * p + 1] + 7) / 8) * n;
    }
    __local ulong *scratch = stage + words;
    ulong b0 = first / block_size;
    ulong b1 = (first + n - 1) / block_size;
    for (ulong b = b0; b <= b1; b++) {
        ulong lo = b * block_size > first ? b * block_size - first : 0;
        ulong hi = min(n, (b + 1) * block_size - first);
        ulong c = 0;
        ulong at = 0;
        for (uint p = p0; p < p1; p++) {
            STAGED_PAIR(p);
            uint items = (uint) (hi - lo) * P;
            ulong s = 0;
            for (uint it = lid; it < items; it += nl) {
                ulong slot = lo + r;
                ulong t = first + slot;
                ulong rel = t - start;
                ulong spi = rel < 0xffffffffUL && src_page < 0xffffffffUL ? (ulong) ((uint) rel / (uint) src_page)
                                                                         : rel / src_page;
                ulong sslot = rel - spi * src_page;
                ulong spage = (ulong) stable[spi];
                uint b8 = 8 * q;
                ulong x;
                if (b8 + 8 <= kb) {
                    x = load_piece(src, cell_at(sd, DESC_K_BASE, spage, sslot) + b8, al);
                } else if (b8 >= kb && b8 + 8 <= cell) {
                    x = load_piece(src, cell_at(sd, DESC_V_BASE, spage, sslot) + (b8 - kb), al);
                } else {
                    ulong sk = cell_at(sd, DESC_K_BASE, spage, sslot);
                    ulong sv = cell_at(sd, DESC_V_BASE, spage, sslot);
                    x = 0;
                    for (uint e = 0; e < 8; e++) {
                        uint bb = b8 + e;
                        ulong byte = bb < kb ? src[sk + bb] : bb < cell ? src[sv + (bb - kb)] : 0;
                        x |= byte << (8 * e);
                    }
                }
                stage[at + slot * P + q] = x;
                s += piece_value(x, mixed) * (2 * (t * P + q) + 1);
                q += dr;
                r += dq;
                if (q >= P) {
                    q -= P;
                    r++;
                }
            }
            c += dd[DESC_FACTOR] * s;
            at += (ulong) P * n;
        }
        // the work-group's sum (a power of two of at most 128 work items: CopyKernels.stagedLocalSize)
        c = group_sum(scratch, c);
        ulong col = (ulong) g * block_size;
        ulong base = (b - first_block) * stride + offset + col - b * block_size;  // + t for position t of block b
        for (ulong t = first + lo + lid; t < first + hi; t += nl) {
            partials[base + t] = t == first + lo ? c : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // every work item read scratch[0] before the next block's sums overwrite it
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    ulong at = 0;
    for (uint p = p0; p < p1; p++) {
        STAGED_PAIR(p);
        uint slot = r;
        uint items = (uint) n * P;
        for (uint it = lid; it < items; it += nl, q += dr, slot += dq) {
            if (q >= P) {
                q -= P;
                slot++;
            }
            uint b8 = 8 * q;
            ulong x = stage[at + it];
            if (b8 + 8 <= kb) {
                store_piece(dst, cell_at(dd, DESC_K_BASE, dpage, slot) + b8, x, al);
            } else if (b8 >= kb && b8 + 8 <= cell) {
                store_piece(dst, cell_at(dd, DESC_V_BASE, dpage, slot) + (b8 - kb), x, al);
            } else {
                ulong dk = cell_at(dd, DESC_K_BASE, dpage, slot);
                ulong dv = cell_at(dd, DESC_V_BASE, dpage, slot);
                for (uint e = 0; e < 8 && b8 + e < cell; e++) {
                    uint bb = b8 + e;
                    uchar v = (uchar) (x >> (8 * e));
                    if (bb < kb) {
                        dst[dk + bb] = v;
                    } else {
                        dst[dv + (bb - kb)] = v;
                    }
                }
            }
        }
        at += (ulong) P * n;
    }
    if (i + 1 == get_global_size(1)) {
        ulong last = (num_tokens - 1) / block_size;
        for (ulong col = num_tokens - last * block_size + lid; col < block_size; col += nl) {
            partials[(last - first_block) * stride + offset + (ulong) g * block_size + col] = 0;
        }
    }
}

/*
 * The kernels: each body in the standard mode and, as *_mixed, in the mixed mode (every piece through feistel3).
 * Arguments: KVC_COPY_ARGS, then parts and local scratch [local size] (copy_pieces), or bytes (copy_byte_cells), or
 * bytes, groups and local stage [the largest unit's pieces] (copy_staged).
 */
__kernel void copy_pieces(KVC_COPY_ARGS, uint parts, __local ulong *scratch) {
    copy_pieces_body(KVC_COPY, parts, scratch, 0);
}
__kernel void copy_pieces_mixed(KVC_COPY_ARGS, uint parts, __local ulong *scratch) {
    copy_pieces_body(KVC_COPY, parts, scratch, 1);
}
__kernel void copy_byte_cells(KVC_COPY_ARGS, __global const uint *bytes) {
    copy_byte_cells_body(KVC_COPY, bytes, 0);
}
__kernel void copy_byte_cells_mixed(KVC_COPY_ARGS, __global const uint *bytes) {
    copy_byte_cells_body(KVC_COPY, bytes, 1);
}
__kernel void copy_staged(KVC_COPY_ARGS, __global const uint *bytes, __global const uint *groups,
                          __local ulong *stage) {
    copy_staged_body(KVC_COPY, bytes, groups, stage, 0);
}
__kernel void copy_staged_mixed(KVC_COPY_ARGS, __global const uint *bytes, __global const uint *groups,
                                __local ulong *stage) {
    copy_staged_body(KVC_COPY, bytes, groups, stage, 1);
}
