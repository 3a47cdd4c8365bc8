/*
 * KV checksum kernels, OpenCL C 1.2, full profile, no extensions.
 *
 * All arithmetic is unsigned 64-bit (ulong) and wraps modulo 2^64, exactly as the Java reference.
 * Piece p of the token at request position t of a cell of P pieces has index j = t*P + p and weight 2j+1;
 * a slice sum is s = sum x_j*(2j+1); a block checksum is c = sum m*s with m the factor the host computes (io.kvchecksum.Definition).
 *
 * The kernels read one buffer `kv` (host memory in place, an engine's cl_mem, or a packed copy of the host spans);
 * the host describes every (layer, head) slice by DESC_WORDS ulongs (byte addresses are relative to `kv`):
 *   [0] m          the slice's odd factor
 *   [1] P          pieces per cell (K then V)
 *   [2] PK         pieces of the K part; pieces PK..P-1 come from the V part
 *   [3] k_base     byte address of (page 0, slot 0) of this head's K cells
 *   [4] k_page     K page stride in bytes
 *   [5] k_token    K slot stride in bytes
 *   [6] v_base     as [3..5] for the V part (unused when PK == P)
 *   [7] v_page
 *   [8] v_token
 *   [9] flags      bit 0: every K address is a multiple of 8; bit 1: the same for V
 * `table` [pages] holds the physical page of each page-sized run of tokens from `start`; in the CPU build
 * (KVC_CONTIGUOUS_UNITS) it is followed by the order in which to visit the blocks (block indices, by address).
 * A batched launch (num_requests > 0: several requests of one engine step over the same slices, one kernel launch)
 * reads `table` as the requests' page tables one after the other (then, CPU build, the order of all their blocks)
 * and finds each request's fields in `requests` (REQ_*): its blocks are the requests' blocks one after the other, its
 * values each request's values in their own layout one after the other; start, first_block and num_tokens are unused.
 * Work-group reductions assume a power-of-two local size (the host guarantees it).
 */

/* Word offsets of the descriptor fields; io.kvchecksum.opencl.Descriptors writes them (DescriptorAbiTest). */
#define DESC_FACTOR 0
#define DESC_PIECES 1
#define DESC_K_PIECES 2
#define DESC_K_BASE 3
#define DESC_K_PAGE_STRIDE 4
#define DESC_K_TOKEN_STRIDE 5
#define DESC_V_BASE 6
#define DESC_V_PAGE_STRIDE 7
#define DESC_V_TOKEN_STRIDE 8
#define DESC_FLAGS 9
#define DESC_WORDS 10
#define DESC_K_ALIGNED 1u
#define DESC_V_ALIGNED 2u

/*
 * Word offsets of a batched launch's request fields; io.kvchecksum.opencl.Descriptors writes them (DescriptorAbiTest).
 * Per request in batch order: what start, first_block and num_tokens would be for it alone, the launch block of its
 * first block (ascending) and the entries of `table` before its page ids; then one entry more whose REQ_BLOCK_BEGIN
 * and REQ_TABLE_OFFSET are the launch's blocks and table entries.
 */
#define REQ_START_TOKEN 0
#define REQ_FIRST_BLOCK 1
#define REQ_NUM_TOKENS 2
#define REQ_BLOCK_BEGIN 3
#define REQ_TABLE_OFFSET 4
#define REQ_WORDS 5

/*
 * The ten arguments every checksum kernel starts with (ChecksumKernels.setLayoutArgs), and their names to pass on.
 * num_requests == 0: one request, given by start, first_block and num_tokens (requests may be NULL); else a batch.
 */
#define KVC_LAYOUT_ARGS __global const uchar *kv, __global const ulong *desc, __global const int *table, ulong start, \
    ulong page_size, ulong first_block, ulong block_size, ulong num_tokens, __global const ulong *requests, \
    uint num_requests
#define KVC_LAYOUT kv, desc, table, start, page_size, first_block, block_size, num_tokens, requests, num_requests

/* A request of a launch: where its page ids start in `table`, its fields, and its blocks among the launch's. */
typedef struct {
    ulong table, start, first_block, num_tokens, begin, num_blocks;
} kvc_request;

/*
 * The request of launch block b: in a batch, the last whose REQ_BLOCK_BEGIN is at most b; else the launch's own, of
 * num_blocks blocks (whose fields are the arguments, in the scope of KVC_LAYOUT_ARGS through REQUEST_OF).
 */
inline kvc_request request_of(ulong start, ulong first_block, ulong num_tokens, ulong num_blocks,
                              __global const ulong *requests, uint num_requests, ulong b) {
    kvc_request q = {0, start, first_block, num_tokens, 0, num_blocks};
    if (num_requests > 0) {
        uint lo = 0, hi = num_requests - 1;
        while (lo < hi) {
            uint mid = (lo + hi + 1) / 2;
            if (requests[(ulong) mid * REQ_WORDS + REQ_BLOCK_BEGIN] <= b) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        __global const ulong *r = requests + (ulong) lo * REQ_WORDS;
        q.table = r[REQ_TABLE_OFFSET];
        q.start = r[REQ_START_TOKEN];
        q.first_block = r[REQ_FIRST_BLOCK];
        q.num_tokens = r[REQ_NUM_TOKENS];
        q.begin = r[REQ_BLOCK_BEGIN];
        q.num_blocks = r[REQ_WORDS + REQ_BLOCK_BEGIN] - q.begin;
    }
    return q;
}
#define REQUEST_OF(num_blocks, b) request_of(start, first_block, num_tokens, (num_blocks), requests, num_requests, (b))

/*
 * In the scope of KVC_LAYOUT_ARGS, in a batch: q, the request of launch block b, and the arguments made its own, as
 * a launch of that request alone whose blocks keep their launch indices: its table, start and tokens, first_block
 * shifted by its first launch block (wrapping, like every position) so that first_block + b is its block. The kernels
 * with a work item per block (GPU build, byte cells) run their one-request code after it.
 */
#define TAKE_REQUEST(q, b) \
    kvc_request q = REQUEST_OF(0, (b)); \
    table += q.table; \
    start = q.start; \
    first_block = q.first_block - q.begin; \
    num_tokens = q.num_tokens

/* The first request position of launch block b of request q. */
inline ulong block_t0(kvc_request q, ulong b, ulong block_size) {
    return (q.first_block + b - q.begin) * block_size;
}

/* Where the slice sum of slice i and launch block b of request q goes: each request's slices x blocks, slice-major. */
inline ulong slice_sum_at(kvc_request q, ulong num_slices, ulong i, ulong b) {
    return num_slices * q.begin + i * q.num_blocks + (b - q.begin);
}

/* The mixed mode's mixer, exactly Definition.feistel3 (docs/detection.md): three Feistel rounds on the 32-bit halves. */
inline ulong feistel3(ulong x) {
    uint hi = (uint) (x >> 32);
    uint lo = (uint) x;
    ulong p = (ulong) lo * 0x9E3779B9UL;
    hi ^= (uint) (p ^ (p >> 32));
    p = (ulong) hi * 0x85EBCA6BUL;
    lo ^= (uint) (p ^ (p >> 32));
    p = (ulong) lo * 0xC2B2AE35UL;
    hi ^= (uint) (p ^ (p >> 32));
    return ((ulong) hi << 32) | lo;
}

/* The same on a vector of pieces (the whole-vector paths): mix_ulong8, mix_ulong16. */
#define KVC_MIX_VECTOR(VT) \
    inline VT mix_##VT(VT x) { \
        VT m = (VT) 0xFFFFFFFFUL; \
        VT hi = x >> 32; \
        VT lo = x & m; \
        VT p = lo * 0x9E3779B9UL; \
        hi ^= (p ^ (p >> 32)) & m; \
        p = hi * 0x85EBCA6BUL; \
        lo ^= (p ^ (p >> 32)) & m; \
        p = lo * 0xC2B2AE35UL; \
        hi ^= (p ^ (p >> 32)) & m; \
        return (hi << 32) | lo; \
    }
KVC_MIX_VECTOR(ulong8)
KVC_MIX_VECTOR(ulong16)

/*
 * The one replaceable per-piece step: the piece (standard mode) or its mix (mixed mode). `mixed` is a constant in
 * every kernel entry point, so after inlining each kernel has one branch-free form. PIECE_VALUE_V is the same for a
 * loaded vector of type VT, in the scope of a `mixed` variable.
 */
inline ulong piece_value(ulong x, uint mixed) {
    return mixed ? feistel3(x) : x;
}
#define PIECE_VALUE_V(VT, x) (mixed ? mix_##VT(x) : (x))

/* One little-endian piece; byte-wise when the address may be unaligned (devices are checked little-endian). */
inline ulong load_piece(__global const uchar *kv, ulong addr, uint aligned) {
    if (aligned) {
        return ((__global const ulong *) kv)[addr >> 3];
    }
    return as_ulong(vload8(0, kv + addr));
}

/*
 * This work item's share of one slice's sum over request tokens [t0, t1): items idx = first, first+step, ...
 * of the (token, piece) pairs, piece fastest, so neighbouring work items read neighbouring bytes. The (token, piece)
 * position is stepped, not divided out, and the page lookup is redone only when the token changes.
 */
inline ulong slice_partial(__global const uchar *kv, __global const ulong *d, __global const int *table,
                           ulong start, ulong page_size, ulong t0, ulong t1, ulong first, ulong step, uint mixed) {
    ulong P = d[DESC_PIECES];
    ulong pk = d[DESC_K_PIECES];
    uint flags = (uint) d[DESC_FLAGS];
    ulong items = (t1 - t0) * P;
    ulong s = 0;
    if (first >= items) {
        return s;
    }
    ulong tt = first / P;
    ulong p = first - tt * P;
    ulong dq = step / P;
    ulong dr = step - dq * P;
    ulong cur = ~(ulong) 0;
    ulong k_cell = 0;
    ulong v_cell = 0;
    ulong j0 = 0;
    for (ulong idx = first; idx < items; idx += step) {
        if (tt != cur) {
            cur = tt;
            ulong t = t0 + tt;
            ulong rel = t - start;
            ulong pi = rel / page_size;
            ulong slot = rel - pi * page_size;
            ulong page = (ulong) table[pi];
            k_cell = d[DESC_K_BASE] + page * d[DESC_K_PAGE_STRIDE] + slot * d[DESC_K_TOKEN_STRIDE];
            v_cell = d[DESC_V_BASE] + page * d[DESC_V_PAGE_STRIDE] + slot * d[DESC_V_TOKEN_STRIDE];
            j0 = t * P;
        }
        ulong x = p < pk ? load_piece(kv, k_cell + 8 * p, flags & DESC_K_ALIGNED)
                         : load_piece(kv, v_cell + 8 * (p - pk), flags & DESC_V_ALIGNED);
        x = piece_value(x, mixed);
        ulong j = j0 + p;
        s += x * (2 * j + 1);
        p += dr;
        tt += dq;
        if (p >= P) {
            p -= P;
            tt++;
        }
    }
    return s;
}

/* The sum of v over the work-group; every work item returns it. */
inline ulong group_sum(__local ulong *scratch, ulong v) {
    uint lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint width = get_local_size(0) >> 1; width > 0; width >>= 1) {
        if (lid < width) {
            scratch[lid] += scratch[lid + width];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

/*
 * Units of a part: runs of up to UNIT_PIECES pieces, the fixed amount one work item reads per token: 8 (64 bytes, one
 * ulong8) by default (the GPU tuning); 32 (256 bytes, two ulong16: four adjacent cache lines per row, a whole 128-dim
 * bf16 head) with KVC_UNIT32 (the CPU tuning).
 */
#if defined(KVC_UNIT32)
#define UNIT_PIECES 32
typedef ulong16 unit_vec;
#define mix_unit_vec mix_ulong16
#define unit_load(p) vload16(0, (p))
#define UNIT_LANES ((ulong16) (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
inline ulong unit_hsum(ulong16 v) {
    ulong8 a = v.lo + v.hi;
    ulong4 b = a.lo + a.hi;
    ulong2 c = b.lo + b.hi;
    return c.s0 + c.s1;
}
#else
#define UNIT_PIECES 8
typedef ulong8 unit_vec;
#define mix_unit_vec mix_ulong8
#define unit_load(p) vload8(0, (p))
#define UNIT_LANES ((ulong8) (0, 1, 2, 3, 4, 5, 6, 7))
inline ulong unit_hsum(ulong8 v) {
    ulong4 b = v.lo + v.hi;
    ulong2 c = b.lo + b.hi;
    return c.s0 + c.s1;
}
#endif

/* Units of slice d: its K part's, then its V part's. */
inline ulong slice_units(__global const ulong *d) {
    ulong pk = d[DESC_K_PIECES];
    ulong pv = d[DESC_PIECES] - pk;
    return (pk + UNIT_PIECES - 1) / UNIT_PIECES + (pv + UNIT_PIECES - 1) / UNIT_PIECES;
}

inline ulong hsum8(ulong8 v) {
    ulong4 b = v.lo + v.hi;
    ulong2 c = b.lo + b.hi;
    return c.s0 + c.s1;
}
#define load8(p) vload8(0, (p))
#define LANES8 ((ulong8) (0, 1, 2, 3, 4, 5, 6, 7))
inline ulong hsum16(ulong16 v) {
    return hsum8(v.lo + v.hi);
}
#define load16(p) vload16(0, (p))
#define LANES16 ((ulong16) (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))

/*
 * In unit_sum's scope: the unit's rows over the block's tokens [t0, t0 + ntok), page run by page run (the page table
 * read and the position divided once per run), the statements given run with addr = the row's byte offset in kv.
 */
#define UNIT_ROWS(...) \
    for (ulong t = 0; t < ntok;) { \
        ulong rel = t0 + t - start; \
        ulong pi = rel / page_size; \
        ulong slot = rel - pi * page_size; \
        ulong run = min(ntok - t, page_size - slot); \
        ulong addr = base + (ulong) table[pi] * ps + slot * ts; \
        for (ulong r = 0; r < run; r++, addr += ts) { \
            __VA_ARGS__ \
        } \
        t += run; \
    }

/* As VECTOR_UNIT for a unit of two vectors side by side (lanes 0..n-1 and n..2n-1 of the unit). */
#define VECTOR_UNIT2(VT, LOAD, LANES, HSUM) \
    do { \
        VT A0 = 0, T0 = 0, A1 = 0, T1 = 0; \
        UNIT_ROWS( \
            __global const ulong *row = (__global const ulong *) (kv + addr); \
            A0 += PIECE_VALUE_V(VT, LOAD(row)); \
            A1 += PIECE_VALUE_V(VT, LOAD(row + sizeof(VT) / 8)); \
            T0 += A0; \
            T1 += A1; \
        ); \
        ulong sa = HSUM(A0) + HSUM(A1); \
        ulong st = HSUM(T0) + HSUM(T1); \
        ulong sl = HSUM(A0 * LANES) + HSUM(A1 * (LANES + (ulong) (sizeof(VT) / 8))); \
        s = 2 * P * (t0 * sa + ntok * sa - st) + (2 * q + 1) * sa + 2 * sl; \
    } while (0)

/*
 * The whole-vector path of one unit (VT: its vector type, LOAD/LANES/HSUM: load, lane indices, horizontal sum), in
 * block_checksums' scope: sums the unit's pieces over the block's tokens into s, each loaded vector through
 * PIECE_VALUE_V (the mixer, lane by lane, in the mixed mode).
 */
#define VECTOR_UNIT(VT, LOAD, LANES, HSUM) \
    do { \
        VT A = 0, T = 0; \
        UNIT_ROWS( \
            A += PIECE_VALUE_V(VT, LOAD((__global const ulong *) (kv + addr))); \
            T += A; \
        ); \
        ulong sa = HSUM(A); \
        ulong st = HSUM(T); \
        ulong sl = HSUM(A * LANES); \
        s = 2 * P * (t0 * sa + ntok * sa - st) + (2 * q + 1) * sa + 2 * sl; \
    } while (0)

#if defined(KVC_ROWS_IN_FLIGHT) && !defined(KVC_UNIT32)
/*
 * The GPU build's whole-unit path (KVC_ROWS_IN_FLIGHT = R, set by the GPU tuning): the unit's rows of R tokens are
 * all loaded before the first is added, so each work item has R x 64 bytes of loads in flight (R = 2: eight 16-byte
 * loads, 128 bytes) where VECTOR_UNIT has one row's. A row whose address is a multiple of 16 for every token
 * (kv starts at least 16-aligned: a buffer's or a window's start) is read as four aligned ulong2 loads, the widest
 * a GPU issues per work item (vload8 promises only 8-byte alignment, so it may become eight 8-byte loads); an 8-byte
 * aligned one by vload8. The sums are the same additions in the same order as VECTOR_UNIT (wrapping, so any order
 * would give the same bits).
 */
#define LOAD_UNIT16(a) ((ulong8) (*(__global const ulong2 *) (kv + (a)), *(__global const ulong2 *) (kv + (a) + 16), \
                                  *(__global const ulong2 *) (kv + (a) + 32), *(__global const ulong2 *) (kv + (a) + 48)))
#define LOAD_UNIT8(a) vload8(0, (__global const ulong *) (kv + (a)))

/*
 * In ROWS_UNIT's scope: the byte address of the next token's row into a, stepping to the next page (one table
 * read) only when a token needs it, so a block's last page run never reads past the request's page table.
 */
#define NEXT_ROW(a) \
    if (slot == page_size) { \
        slot = 0; \
        pi++; \
        row = base + (ulong) table[pi] * ps; \
    } \
    a = row; \
    row += ts; \
    slot++

/* M(r, L) for r = 0 .. n-1 (n: 1 to 8, a literal), statements written out, no loop and no array (a loop over an array
 * of rows that the compiler keeps rolled, e.g. around the mixed mode's mixer, would put the rows in local memory). */
#define KVC_EACH1(M, L) M(0, L)
#define KVC_EACH2(M, L) KVC_EACH1(M, L) M(1, L)
#define KVC_EACH3(M, L) KVC_EACH2(M, L) M(2, L)
#define KVC_EACH4(M, L) KVC_EACH3(M, L) M(3, L)
#define KVC_EACH5(M, L) KVC_EACH4(M, L) M(4, L)
#define KVC_EACH6(M, L) KVC_EACH5(M, L) M(5, L)
#define KVC_EACH7(M, L) KVC_EACH6(M, L) M(6, L)
#define KVC_EACH8(M, L) KVC_EACH7(M, L) M(7, L)
#define KVC_EACH_(n, M, L) KVC_EACH##n(M, L)
#define KVC_EACH(n, M, L) KVC_EACH_(n, M, L)
#define ROW_ADDR(r, LOAD) ulong at##r; NEXT_ROW(at##r);
#define ROW_LOAD(r, LOAD) ulong8 x##r = LOAD(at##r);
#define ROW_ADD(r, LOAD) A += PIECE_VALUE_V(ulong8, x##r); T += A;

/* As VECTOR_UNIT for a whole unit of 8 pieces, KVC_ROWS_IN_FLIGHT tokens' rows loaded (LOAD) before any is added. */
#define ROWS_UNIT(LOAD) \
    do { \
        ulong8 A = 0, T = 0; \
        ulong rel = t0 - start; \
        ulong pi = rel / page_size; \
        ulong slot = rel - pi * page_size; \
        ulong row = base + (ulong) table[pi] * ps + slot * ts; \
        ulong t = 0; \
        for (; t + KVC_ROWS_IN_FLIGHT <= ntok; t += KVC_ROWS_IN_FLIGHT) { \
            KVC_EACH(KVC_ROWS_IN_FLIGHT, ROW_ADDR, LOAD) \
            KVC_EACH(KVC_ROWS_IN_FLIGHT, ROW_LOAD, LOAD) \
            KVC_EACH(KVC_ROWS_IN_FLIGHT, ROW_ADD, LOAD) \
        } \
        for (; t < ntok; t++) { \
            ROW_ADDR(0, LOAD) \
            ROW_LOAD(0, LOAD) \
            ROW_ADD(0, LOAD) \
        } \
        ulong sa = hsum8(A); \
        ulong st = hsum8(T); \
        ulong sl = hsum8(A * LANES8); \
        s = 2 * P * (t0 * sa + ntok * sa - st) + (2 * q + 1) * sa + 2 * sl; \
    } while (0)
#endif

/*
 * Unit u of slice d summed over one block's tokens [t0, t0 + ntok): sum x * (2j+1) over the unit's pieces, without the
 * slice factor. One vector load per token where the unit is whole (or a half unit) and 8-byte aligned, else piece by
 * piece. The weights of a piece's tokens form an arithmetic progression, so the loop only adds (A += x; T += A) and
 * the weighted sum is recovered once per unit:
 *   sum_t x_t * (2*((t0 + t)*P + q) + 1) = 2P*(t0*A + n*A - T) + (2q + 1)*A,   T = sum_t (x_0 + .. + x_t).
 * The page table is read and the position divided once per page run, never per piece.
 */
inline ulong unit_sum(__global const uchar *kv, __global const ulong *d, __global const int *table, ulong start,
                      ulong page_size, ulong t0, ulong ntok, ulong u, uint mixed) {
    ulong P = d[DESC_PIECES];
    ulong pk = d[DESC_K_PIECES];
    ulong ku = (pk + UNIT_PIECES - 1) / UNIT_PIECES;
    uint flags = (uint) d[DESC_FLAGS];
    int isK = u < ku;
    ulong q = isK ? u * UNIT_PIECES : pk + (u - ku) * UNIT_PIECES;          /* first piece of the unit in the cell */
    ulong part_end = isK ? pk : P;
    ulong n = min((ulong) UNIT_PIECES, part_end - q);                        /* pieces in this unit */
    ulong base = isK ? d[DESC_K_BASE] + 8 * q : d[DESC_V_BASE] + 8 * (q - pk);
    ulong ps = isK ? d[DESC_K_PAGE_STRIDE] : d[DESC_V_PAGE_STRIDE];
    ulong ts = isK ? d[DESC_K_TOKEN_STRIDE] : d[DESC_V_TOKEN_STRIDE];
    uint aligned = flags & (isK ? DESC_K_ALIGNED : DESC_V_ALIGNED);
    ulong s;
    if (n == UNIT_PIECES && aligned) {
#ifdef KVC_UNIT32
        VECTOR_UNIT2(ulong16, load16, LANES16, hsum16);
    } else if (n == 16 && aligned) {
        VECTOR_UNIT(ulong16, load16, LANES16, hsum16);
#elif defined(KVC_ROWS_IN_FLIGHT)
        if (((base | ps | ts) & 15) == 0) {
            ROWS_UNIT(LOAD_UNIT16);
        } else {
            ROWS_UNIT(LOAD_UNIT8);
        }
#else
        VECTOR_UNIT(unit_vec, unit_load, UNIT_LANES, unit_hsum);
#endif
#if defined(KVC_UNIT32)
    } else if (n == 8 && aligned) {
        /* a half unit (e.g. the last 64 bytes of a 576-byte MLA fp8 cell): one ulong8 per token */
        VECTOR_UNIT(ulong8, load8, LANES8, hsum8);
#endif
    } else {
        ulong A[UNIT_PIECES], T[UNIT_PIECES];
        for (ulong l = 0; l < UNIT_PIECES; l++) {
            A[l] = 0;
            T[l] = 0;
        }
        UNIT_ROWS(
            for (ulong l = 0; l < n; l++) {
                A[l] += piece_value(load_piece(kv, addr + 8 * l, aligned), mixed);
                T[l] += A[l];
            }
        );
        s = 0;
        for (ulong l = 0; l < n; l++) {
            s += 2 * P * (t0 * A[l] + ntok * A[l] - T[l]) + (2 * (q + l) + 1) * A[l];
        }
    }
    return s;
}

/* Steps (slice i, unit u) forward until u is a unit of slice i (or i reaches num_slices). */
inline void next_unit(__global const ulong *desc, uint num_slices, uint *i, ulong *u) {
    while (*i < num_slices && *u >= slice_units(desc + (ulong) *i * DESC_WORDS)) {
        *u -= slice_units(desc + (ulong) *i * DESC_WORDS);
        (*i)++;
    }
}

#ifdef KVC_CONTIGUOUS_UNITS
/* Units a CPU work item reads side by side, token by token (chunk_sum). */
#define ROW_CHUNK 16

/*
 * In the scope of the row arrays (fb .. fnv) and t0: unit u of slice d as row unit nf with factor m, if it is whole
 * aligned vectors (1, else 0: nothing recorded). See chunk_sum for the weights.
 */
inline uint row_unit(__global const ulong *d, ulong u, ulong m, ulong t0, __private ulong *fb, __private ulong *fd,
                     __private ulong *fm, __private ulong *fbase, __private ulong *fps, __private ulong *fts,
                     __private uint *fnv) {
    ulong P = d[DESC_PIECES];
    ulong pk = d[DESC_K_PIECES];
    ulong ku = (pk + UNIT_PIECES - 1) / UNIT_PIECES;
    int isK = u < ku;
    ulong q = isK ? u * UNIT_PIECES : pk + (u - ku) * UNIT_PIECES;
    ulong n = min((ulong) UNIT_PIECES, (isK ? pk : P) - q);
    uint aligned = (uint) d[DESC_FLAGS] & (isK ? DESC_K_ALIGNED : DESC_V_ALIGNED);
    if (!aligned || n % 8 != 0) {
        return 0;
    }
    *fb = m * (2 * (t0 * P + q) + 1);
    *fd = 2 * m * P;
    *fm = m;
    *fbase = isK ? d[DESC_K_BASE] + 8 * q : d[DESC_V_BASE] + 8 * (q - pk);
    *fps = isK ? d[DESC_K_PAGE_STRIDE] : d[DESC_V_PAGE_STRIDE];
    *fts = isK ? d[DESC_K_TOKEN_STRIDE] : d[DESC_V_TOKEN_STRIDE];
    *fnv = (uint) (n / 8);
    return 1;
}
#define ROW_UNIT(d, u, m) row_unit((d), (u), (m), t0, fb + nf, fd + nf, fm + nf, fbase + nf, fps + nf, fts + nf, fnv + nf)

/* Row streams a chunk of units may span: e.g. a layer's K row and V row. */
#define ROW_STREAMS 2
/* Where each stream of a chunk ends (the address after its last unit) and its page and token strides. */
typedef struct {
    ulong end[ROW_STREAMS], ps[ROW_STREAMS], ts[ROW_STREAMS];
    uint n;
} row_streams;

/*
 * Adds unit u of slice d to the chunk whose streams are *st if it is whole aligned vectors and continues one of them
 * (it starts where that stream's last unit ends, same strides) or a stream is still free; 1 if added, else 0. So a
 * chunk's units lie side by side in at most ROW_STREAMS rows, each read front to back per token: the 8 K heads and
 * the 8 V heads of a Llama-3-8B layer, not 8 layers' K and V rows of Llama-3-70B TP8 (16 streams).
 */
inline uint row_stream_add(__global const ulong *d, ulong u, __private row_streams *st) {
    ulong fb, fd, fm, base, ps, ts;
    uint nv;
    if (!row_unit(d, u, 1, 0, &fb, &fd, &fm, &base, &ps, &ts, &nv)) {
        return 0;
    }
    for (uint k = 0; k < st->n; k++) {
        if (st->end[k] == base && st->ps[k] == ps && st->ts[k] == ts) {
            st->end[k] = base + 64 * (ulong) nv;
            return 1;
        }
    }
    if (st->n == ROW_STREAMS) {
        return 0;
    }
    st->end[st->n] = base + 64 * (ulong) nv;
    st->ps[st->n] = ps;
    st->ts[st->n] = ts;
    st->n++;
    return 1;
}

/*
 * In chunk_sum's scope: the row pass over the block's tokens of the nf row units, adding unit f's two sums to ACC1(f)
 * and ACC2(f) (one pair for all units in block_checksums, a pair per unit for slice sums).
 */
#define ROW_PASS(ACC1, ACC2) \
    for (ulong t = 0; t < ntok;) { \
        ulong rel = t0 + t - start; \
        ulong pi = rel / page_size; \
        ulong slot = rel - pi * page_size; \
        ulong run = min(ntok - t, page_size - slot); \
        ulong page = (ulong) table[pi]; \
        for (uint f = 0; f < nf; f++) { \
            faddr[f] = fbase[f] + page * fps[f] + slot * fts[f]; \
        } \
        for (ulong r = 0; r < run; r++) { \
            for (uint f = 0; f < nf; f++) { \
                __global const ulong *row = (__global const ulong *) (kv + faddr[f]); \
                ulong w = fb[f]; \
                ulong8 m = (ulong8) fm[f]; \
                ulong m16 = 16 * fm[f]; \
                if (fnv[f] == 4) { \
                    ulong8 x0 = PIECE_VALUE_V(ulong8, vload8(0, row)); \
                    ulong8 x1 = PIECE_VALUE_V(ulong8, vload8(1, row)); \
                    ulong8 x2 = PIECE_VALUE_V(ulong8, vload8(2, row)); \
                    ulong8 x3 = PIECE_VALUE_V(ulong8, vload8(3, row)); \
                    ACC1(f) += x0 * w + x1 * (w + m16) + x2 * (w + 2 * m16) + x3 * (w + 3 * m16); \
                    ACC2(f) += (x0 + x1 + x2 + x3) * m; \
                } else { \
                    for (uint v = 0; v < fnv[f]; v++, w += m16) { \
                        ulong8 x = PIECE_VALUE_V(ulong8, vload8(v, row)); \
                        ACC1(f) += x * w; \
                        ACC2(f) += x * m; \
                    } \
                } \
                faddr[f] += fts[f]; \
                fb[f] += fd[f]; \
            } \
        } \
        t += run; \
    }
#define ONE_C1(f) C1
#define ONE_C2(f) C2

/*
 * m * unit_sum summed over `cnt` consecutive units from (slice i, unit u), for one block, CPU build. Whole aligned
 * units of 8, 16, .. pieces (every unit of the usual layouts) are read row by row: for each token, every such unit's
 * vectors, so each region (a layer's K or V page) is read front to back, as a plain read would, where unit by unit
 * a row of side-by-side heads would be read in one strided pass per head. A token's row holds units of different
 * slices (factors m) and weights, so pieces are multiplied by their weights directly (the CPU has cycles to spare
 * while it waits for memory): piece l of vector v of unit f at request position t0 + t has the weight
 *   m*(2*((t0 + t)*P + q + 8v + l) + 1) = B_f + 16*m*v + 2*m*l,   B_f = m*(2*((t0 + t)*P + q) + 1),
 * so C1 += x * (B_f + 16*m*v) and C2 += x * m, and the sum is hsum(C1) + 2*hsum(C2 * lane). Other units (partial,
 * unaligned) go through unit_sum. With weighted == 0, m = 1 for every unit (a slice sum).
 */
inline ulong chunk_sum(__global const uchar *kv, __global const ulong *desc, __global const int *table, ulong start,
                       ulong page_size, ulong t0, ulong ntok, uint i, ulong u, ulong cnt, uint num_slices,
                       uint weighted, uint mixed) {
    ulong fb[ROW_CHUNK], fd[ROW_CHUNK], fm[ROW_CHUNK], fbase[ROW_CHUNK], fps[ROW_CHUNK], fts[ROW_CHUNK],
        faddr[ROW_CHUNK];
    uint fnv[ROW_CHUNK];
    uint nf = 0;
    ulong c = 0;
    for (ulong k = 0; k < cnt && i < num_slices; k++) {
        __global const ulong *d = desc + (ulong) i * DESC_WORDS;
        ulong m = weighted ? d[DESC_FACTOR] : 1;
        if (ROW_UNIT(d, u, m)) {
            nf++;
        } else {
            c += m * unit_sum(kv, d, table, start, page_size, t0, ntok, u, mixed);
        }
        u++;
        next_unit(desc, num_slices, &i, &u);
    }
    if (nf == 0) {
        return c;
    }
    ulong8 C1 = 0, C2 = 0;
    ROW_PASS(ONE_C1, ONE_C2)
    return c + hsum8(C1) + 2 * hsum8(C2 * LANES8);
}

/* The order in which the CPU build visits the blocks: after the page table (a batch's: after all its requests'). */
inline __global const int *block_order(KVC_LAYOUT_ARGS) {
    return table + (num_requests > 0 ? requests[(ulong) num_requests * REQ_WORDS + REQ_TABLE_OFFSET]
                                     : (num_tokens - start + page_size - 1) / page_size);
}

/*
 * The fused single pass, CPU build. NDRange (items), any local size: work item g takes the same contiguous run of
 * units, [total*g/items, total*(g+1)/items) of the (slice, unit) sequence, in every block, in chunks of ROW_CHUNK
 * units read row by row (chunk_sum), and visits the blocks in the order the host lists after the page table
 * (table[pages ..], pages = ceil((num_tokens - start)/page_size)): the blocks sorted by the page id of their first
 * token, i.e. by address in every layer's pages. So each core reads each region front to back, one page after the
 * next, where the table's order (shuffled in an engine whose free list has churned) would jump to a random page, TLB
 * entry and prefetch stream at every block. It writes partials[b*items + g] for every block b (parts == items);
 * sum_parts adds them.
 */
inline void block_checksums_body(KVC_LAYOUT_ARGS, uint num_slices, uint parts, __global ulong *partials,
                                 __local ulong *scratch, uint mixed) {
    ulong g = get_global_id(0);
    ulong nb = num_requests > 0 ? requests[(ulong) num_requests * REQ_WORDS + REQ_BLOCK_BEGIN]
                                : (num_tokens + block_size - 1) / block_size - first_block;
    __global const int *order = block_order(KVC_LAYOUT);
    ulong total = 0;
    for (uint k = 0; k < num_slices; k++) {
        total += slice_units(desc + (ulong) k * DESC_WORDS);
    }
    ulong first = total * g / parts;
    ulong end = total * (g + 1) / parts;
    for (ulong k = 0; k < nb; k++) {
        partials[(ulong) order[k] * parts + g] = 0;
    }
    uint i = 0;
    ulong u = first;
    next_unit(desc, num_slices, &i, &u);
    for (ulong at = first; at < end && i < num_slices; ) {
        /* the chunk: the next units that fit ROW_STREAMS rows (at most ROW_CHUNK; an irregular unit alone) */
        row_streams st;
        st.n = 0;
        ulong cnt = 0;
        uint ci = i;
        ulong cu = u;
        while (at + cnt < end && ci < num_slices && cnt < ROW_CHUNK
               && row_stream_add(desc + (ulong) ci * DESC_WORDS, cu, &st)) {
            cnt++;
            cu++;
            next_unit(desc, num_slices, &ci, &cu);
        }
        cnt = max(cnt, (ulong) 1);
        for (ulong k = 0; k < nb; k++) {
            ulong b = (ulong) order[k];
            kvc_request q = REQUEST_OF(nb, b);
            ulong t0 = block_t0(q, b, block_size);
            ulong t1 = min(t0 + block_size, q.num_tokens);
            if (t1 > t0) {
                partials[b * parts + g] += chunk_sum(kv, desc, table + q.table, q.start, page_size, t0, t1 - t0, i, u,
                                                     cnt, num_slices, 1, mixed);
            }
        }
        at += cnt;
        u += cnt;
        next_unit(desc, num_slices, &i, &u);
    }
}

/* Whether every unit of slice d is whole aligned vectors and the slice has at most ROW_CHUNK units. */
inline uint row_slice(__global const ulong *d) {
    ulong P = d[DESC_PIECES];
    ulong pk = d[DESC_K_PIECES];
    uint flags = (uint) d[DESC_FLAGS];
    return pk % 8 == 0 && (P - pk) % 8 == 0 && (pk == 0 || (flags & DESC_K_ALIGNED))
        && (P == pk || (flags & DESC_V_ALIGNED)) && slice_units(d) <= ROW_CHUNK;
}

/*
 * The end of the group of slices that starts at i: the following row slices while their units fit ROW_CHUNK and
 * ROW_STREAMS rows (the heads of a Llama-3-8B layer; a single slice of Llama-3-70B TP8 or MLA).
 */
inline uint slice_group_end(__global const ulong *desc, uint num_slices, uint i) {
    if (!row_slice(desc + (ulong) i * DESC_WORDS)) {
        return i + 1;
    }
    ulong units = 0;
    row_streams st;
    st.n = 0;
    uint j = i;
    while (j < num_slices && row_slice(desc + (ulong) j * DESC_WORDS)) {
        __global const ulong *d = desc + (ulong) j * DESC_WORDS;
        ulong n = slice_units(d);
        row_streams next = st;
        uint fits = units + n <= ROW_CHUNK;
        for (ulong u = 0; u < n && fits; u++) {
            fits = row_stream_add(d, u, &next);
        }
        if (!fits) {
            break;
        }
        st = next;
        units += n;
        j++;
    }
    return max(j, i + 1);
}

/*
 * The slice sums of a group of row slices [i0, i1) for one block, read row by row as in chunk_sum (weights without
 * factors), one pair of sums per unit, added into sums[slice - i0].
 */
inline void group_slice_sums(__global const uchar *kv, __global const ulong *desc, __global const int *table,
                             ulong start, ulong page_size, ulong t0, ulong ntok, uint i0, uint i1, uint mixed,
                             __private ulong *sums) {
    ulong fb[ROW_CHUNK], fd[ROW_CHUNK], fm[ROW_CHUNK], fbase[ROW_CHUNK], fps[ROW_CHUNK], fts[ROW_CHUNK],
        faddr[ROW_CHUNK];
    uint fnv[ROW_CHUNK], fslice[ROW_CHUNK];
    ulong8 S1[ROW_CHUNK], S2[ROW_CHUNK];
    uint nf = 0;
    for (uint i = i0; i < i1; i++) {
        __global const ulong *d = desc + (ulong) i * DESC_WORDS;
        ulong units = slice_units(d);
        for (ulong u = 0; u < units; u++) {
            ROW_UNIT(d, u, 1);      /* always 1: row_slice checked every unit */
            fslice[nf] = i - i0;
            S1[nf] = 0;
            S2[nf] = 0;
            nf++;
        }
        sums[i - i0] = 0;
    }
#define GROUP_S1(f) S1[f]
#define GROUP_S2(f) S2[f]
    ROW_PASS(GROUP_S1, GROUP_S2)
    for (uint f = 0; f < nf; f++) {
        sums[fslice[f]] += hsum8(S1[f]) + 2 * hsum8(S2[f] * LANES8);
    }
}

/*
 * Per-slice weighted sums, CPU build. NDRange (1, 1, num_slices), local (1, 1, 1), parts == 1. The slices fall into
 * groups (slice_group_end, from slice 0): runs of consecutive slices whose units are whole aligned vectors and fit
 * ROW_CHUNK together (e.g. the 8 heads of a Llama-3-8B layer, side by side in 2 KiB rows), else single slices. The
 * work item of a group's first slice sums the group over every block, the blocks in address order (the order after
 * the page table, as in block_checksums), reading the group's rows front to back (group_slice_sums; a single
 * irregular slice through chunk_sum, unweighted); the others return at once. It writes the slice sums,
 * partials[i*num_blocks + b] (a batch: slice_sum_at).
 */
inline void slice_sums_body(KVC_LAYOUT_ARGS, uint num_blocks, uint parts, __global ulong *partials,
                            __local ulong *scratch, uint mixed) {
    uint num_slices = (uint) get_global_size(2);
    uint me = (uint) get_global_id(2);
    uint i0 = 0;
    uint i1 = slice_group_end(desc, num_slices, 0);
    while (me >= i1) {
        i0 = i1;
        i1 = slice_group_end(desc, num_slices, i0);
    }
    if (me != i0) {
        return;
    }
    int rows = row_slice(desc + (ulong) i0 * DESC_WORDS);
    ulong units = slice_units(desc + (ulong) i0 * DESC_WORDS);
    __global const int *order = block_order(KVC_LAYOUT);
    ulong sums[ROW_CHUNK];
    for (ulong k = 0; k < num_blocks; k++) {
        ulong b = (ulong) order[k];
        kvc_request q = REQUEST_OF(num_blocks, b);
        ulong t0 = block_t0(q, b, block_size);
        ulong t1 = min(t0 + block_size, q.num_tokens);
        if (rows) {
            group_slice_sums(kv, desc, table + q.table, q.start, page_size, t0, t1 - t0, i0, i1, mixed, sums);
            for (uint i = i0; i < i1; i++) {
                partials[slice_sum_at(q, num_slices, i, b)] = sums[i - i0];
            }
        } else {
            ulong s = 0;
            for (ulong u = 0; u < units; u += ROW_CHUNK) {
                s += chunk_sum(kv, desc, table + q.table, q.start, page_size, t0, t1 - t0, i0, u,
                               min((ulong) ROW_CHUNK, units - u), i0 + 1, 0, mixed);
            }
            partials[slice_sum_at(q, num_slices, i0, b)] = s;
        }
    }
}
#else
/*
 * Per-slice weighted sums. NDRange (local*parts, num_blocks, num_slices), local (local, 1, 1): work-group g of
 * column b of slice i writes partials[(i*num_blocks + b)*parts + g] (a batch: at slice_sum_at instead of
 * i*num_blocks + b); with parts == 1 that is the slice sum. Only the place is live across group_sum's barriers, not
 * the request's fields (PoCL keeps such values per work item: the GPU tuning there ran ~30% slower with them).
 */
inline void slice_sums_body(KVC_LAYOUT_ARGS, uint num_blocks, uint parts, __global ulong *partials,
                            __local ulong *scratch, uint mixed) {
    uint g = get_group_id(0);
    ulong wg = get_local_size(0);
    ulong b = get_global_id(1);
    ulong slice = get_global_id(2);
    ulong at = slice * num_blocks + b;
    if (num_requests > 0) {
        TAKE_REQUEST(q, b);
        at = slice_sum_at(q, get_global_size(2), slice, b);
    }
    ulong t0 = (first_block + b) * block_size;
    ulong t1 = min(t0 + block_size, num_tokens);
    ulong s = slice_partial(kv, desc + slice * DESC_WORDS, table, start, page_size, t0, t1,
                            g * wg + get_local_id(0), parts * wg, mixed);
    s = group_sum(scratch, s);
    if (get_local_id(0) == 0) {
        partials[at * parts + g] = s;
    }
}

/*
 * The fused single pass, GPU build: every KV byte of block b read once, weighted by its slice's factor in registers.
 * NDRange (local*parts, num_blocks), local (local, 1): work-group g of block b writes partials[b*parts + g].
 * Work item k of the column takes units k, k + step, ... of the block's (slice, unit) sequence (neighbouring work
 * items take neighbouring units: coalesced loads) and walks the block's tokens with each (unit_sum).
 */
inline void block_checksums_body(KVC_LAYOUT_ARGS, uint num_slices, uint parts, __global ulong *partials,
                                 __local ulong *scratch, uint mixed) {
    uint g = get_group_id(0);
    ulong wg = get_local_size(0);
    ulong b = get_global_id(1);
    if (num_requests > 0) {
        TAKE_REQUEST(q, b);
    }
    ulong t0 = (first_block + b) * block_size;
    ulong t1 = min(t0 + block_size, num_tokens);
    ulong ntok = t1 > t0 ? t1 - t0 : 0;
    ulong u = g * wg + get_local_id(0);
    ulong step = parts * wg;
    ulong c = 0;
    uint i = 0;
    next_unit(desc, num_slices, &i, &u);
    while (i < num_slices && ntok > 0) {
        __global const ulong *d = desc + (ulong) i * DESC_WORDS;
        c += d[DESC_FACTOR] * unit_sum(kv, d, table, start, page_size, t0, ntok, u, mixed);
        u += step;
        next_unit(desc, num_slices, &i, &u);
    }
    c = group_sum(scratch, c);
    if (get_local_id(0) == 0) {
        partials[b * parts + g] = c;
    }
}
#endif

/*
 * The kernels: each body in the standard mode and, as *_mixed, in the mixed mode (every piece through feistel3).
 * Arguments: KVC_LAYOUT_ARGS, then num_blocks (slice_sums: the launch's blocks) or num_slices (block_checksums),
 * parts, partials [outputs x parts] and local scratch [local size].
 */
#define KVC_SLICE_SUMS_ARGS KVC_LAYOUT_ARGS, uint num_blocks, uint parts, __global ulong *partials, __local ulong *scratch
#define KVC_BLOCK_ARGS KVC_LAYOUT_ARGS, uint num_slices, uint parts, __global ulong *partials, __local ulong *scratch
__kernel void slice_sums(KVC_SLICE_SUMS_ARGS) {
    slice_sums_body(KVC_LAYOUT, num_blocks, parts, partials, scratch, 0);
}
__kernel void slice_sums_mixed(KVC_SLICE_SUMS_ARGS) {
    slice_sums_body(KVC_LAYOUT, num_blocks, parts, partials, scratch, 1);
}
__kernel void block_checksums(KVC_BLOCK_ARGS) {
    block_checksums_body(KVC_LAYOUT, num_slices, parts, partials, scratch, 0);
}
__kernel void block_checksums_mixed(KVC_BLOCK_ARGS) {
    block_checksums_body(KVC_LAYOUT, num_slices, parts, partials, scratch, 1);
}

/* out[i] = sum of partials[i*parts .. i*parts + parts - 1]. NDRange (n). */
__kernel void sum_parts(__global const ulong *partials, uint parts, uint n, __global ulong *out) {
    ulong i = get_global_id(0);
    if (i >= n) {
        return;
    }
    ulong s = 0;
    for (uint g = 0; g < parts; g++) {
        s += partials[i * parts + g];
    }
    out[i] = s;
}
