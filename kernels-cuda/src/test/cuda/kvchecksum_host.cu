// The host test library: runs the kernels' shared __host__ __device__ arithmetic (../../main/cuda/kvchecksum.cuh) on
// the CPU, so machines without a GPU (CI) test it over the golden vectors. It lives with the tests: built with
//   nvcc -shared -Xcompiler -fPIC -cudart static   (never -cudart none: the JVM then dies on load)
// and loaded by the tests through JNA. It is not shipped in the jar.
//
// kvc_emulate() plays one cuLaunchKernel: it visits every CTA, warp and lane of the grid in turn, computes each
// thread's value with exactly the functions the kernel calls, and sums them where the kernel would shuffle and
// reduce through shared memory (wrapping adds: any order gives the same bits). "Device" pointers in the
// parameters are plain host addresses.
#include "kvchecksum.cuh"
#include "kvchecksum_byte_cells.cuh"
#include "kvchecksum_digest.cuh"
#include "kvchecksum_bench.cuh"
#include "kvchecksum_copy.cuh"
#include <string.h>
#include <atomic>
#include <vector>

static_assert(sizeof(KvcSlice) == 64, "KvcSlice ABI");
static_assert(sizeof(KvcChecksumParams) == 96, "KvcChecksumParams ABI");
static_assert(sizeof(KvcRequest) == 40, "KvcRequest ABI");
static_assert(sizeof(KvcCopyParams) == 88, "KvcCopyParams ABI");

// Set by the host build of the load functions on a misaligned address (see kvc_ld8 in kvchecksum.cuh).
thread_local int kvc_host_fault = 0;

// What the emulated kernels counted (KVC_HOST_COUNT in kvchecksum.cuh): [0] page ids and [1] descriptor words the
// staging phases copied, [2] loads (byte cells: items) that were on in the lanes' batches of the whole-piece and byte-cell
// walks and [3] those batches.
static std::atomic<unsigned long long> kvc_host_counts[4];
void kvc_host_count(int which, uint64_t n) { kvc_host_counts[which] += n; }

namespace {

// CUresult values the emulation returns, as the driver would.
const int KVC_SUCCESS = 0;
const int KVC_INVALID_VALUE = 1;
const int KVC_NOT_FOUND = 500;
const int KVC_MISALIGNED_ADDRESS = 716;

// The parameters CTA column bx works with, as the kernels' entry points choose them: a batched launch's request.
KvcChecksumParams cta_params(const KvcChecksumParams& p, uint32_t bx) {
    return p.num_requests == 0 ? p : kvc_request_params(p, bx);
}

// Fills a stage with a pattern before its phase, so a compute phase that read it without the staging would fail.
template <class T, size_t N> void poison(T (&a)[N]) { memset(a, 0xA5, sizeof(a)); }

// A CTA of the fused kernel, phase by phase as its barriers separate them: per chunk of descriptors every thread's
// staging phase (the first with the table), then every thread's sum over the staged copies.
template <int VEC, int MIX = 0>
int block_checksums(uint32_t gx, uint32_t gy, const KvcChecksumParams& p) {
    if (gx != p.num_blocks || gy != p.num_parts || p.slices_per_part == 0) return KVC_INVALID_VALUE;
    KvcSlice stage_slices[KVC_SLICE_CHUNK];
    int32_t stage_table[KVC_TABLE_STAGE];
    for (uint32_t by = 0; by < gy; ++by) {
        for (uint32_t bx = 0; bx < gx; ++bx) {
            const KvcChecksumParams q = cta_params(p, bx);
            const uint64_t block = q.first_block + bx;
            poison(stage_table);
            const int32_t* tab;
            uint64_t tab0;
            kvc_table_view(q, block, stage_table, tab, tab0);
            uint32_t s0, s1;
            kvc_part_slices(q, by, s0, s1);
            uint64_t s = 0;
            for (uint32_t c0 = s0; c0 < s1; c0 += KVC_SLICE_CHUNK) {
                const uint32_t c1 = c0 + KVC_SLICE_CHUNK < s1 ? c0 + KVC_SLICE_CHUNK : s1;
                poison(stage_slices);
                for (uint32_t tid = 0; tid < KVC_THREADS; ++tid) kvc_stage_phase(q, block, c0 == s0, c0, c1, tid, stage_table, stage_slices);
                for (uint32_t w = 0; w < KVC_WARPS; ++w)
                    for (uint32_t l = 0; l < 32; ++l)
                        s += kvc_block_thread_range<VEC, MIX>(q, stage_slices, c0, c0, c1, tab, tab0, block, w, l);
            }
            q.out[bx] += s;  // the kernel's atomicAdd into the output the host zeroed
        }
    }
    return KVC_SUCCESS;
}

// The host twin of the slices kernels' emit (KvcSliceSumsEmit): lanes run one after another, so the warp's shuffle
// reduction becomes lane 0's write of its share to the slice's output word (row i, column bx) and every later lane's add.
struct HostSliceSumsEmit {
    static constexpr bool writes = true;
    uint64_t* out;
    uint64_t stride;
    uint32_t bx, lane;
    void operator()(uint32_t i, uint64_t v) {
        uint64_t& o = out[(uint64_t)i * stride + bx];
        o = lane == 0 ? v : o + v;
    }
};

// A CTA of the slices kernels: the same staging phases (the block's page ids, the CTA's descriptors), then its warps,
// each walking its slices (the planner's slices per warp) lane by lane.
template <int VEC, int MIX = 0>
int slice_sums(uint32_t gx, uint32_t gy, const KvcChecksumParams& p) {
    if (gx != p.num_blocks || p.slices_per_part > KVC_SLICE_SUMS_MAX_SPW
        || (uint64_t)gy * KVC_WARPS * kvc_slice_sums_spw(p) < p.num_slices) {
        return KVC_INVALID_VALUE;
    }
    KvcSlice stage_slices[KVC_WARPS * KVC_SLICE_SUMS_MAX_SPW];
    int32_t stage_table[KVC_TABLE_STAGE];
    for (uint32_t by = 0; by < gy; ++by) {
        for (uint32_t bx = 0; bx < gx; ++bx) {
            const KvcChecksumParams q = cta_params(p, bx);
            const uint64_t block = q.first_block + bx;
            uint32_t c0, c1;
            kvc_slice_sums_chunk(q, by, c0, c1);
            poison(stage_table);
            poison(stage_slices);
            for (uint32_t tid = 0; tid < KVC_THREADS; ++tid) kvc_stage_phase(q, block, true, c0, c1, tid, stage_table, stage_slices);
            const int32_t* tab;
            uint64_t tab0;
            kvc_table_view(q, block, stage_table, tab, tab0);
            for (uint32_t w = 0; w < KVC_WARPS; ++w) {
                uint32_t i0, i1;
                kvc_slice_sums_warp_slices(q, by, w, i0, i1);
                if (i0 >= i1) continue;
                for (uint32_t l = 0; l < 32; ++l) {
                    HostSliceSumsEmit emit{q.out, q.out_stride, bx, l};
                    kvc_lane_slice_sums<VEC, MIX>(q, stage_slices, c0, i0, i1, tab, tab0, block, l, emit);
                }
            }
        }
    }
    return KVC_SUCCESS;
}

// The byte-cell kernels (kvchecksum_byte_cells_kernels.cuh): warp w of CTA (bx, by) walks its slices
// (kvc_slice_sums_warp_slices: the planner's slices per warp) lane by lane, each slice's share handed over as the walk
// leaves it: written to its row (slice sums) or, times its factor, added to the block's word (the kernel's atomicAdd).
template <int MIX>
int byte_cells(uint32_t gx, uint32_t gy, const KvcChecksumParams& p, bool slices) {
    if (gx != p.num_blocks || (uint64_t)gy * KVC_WARPS * kvc_slice_sums_spw(p) < p.num_slices) return KVC_INVALID_VALUE;
    const KvcByteCellSlice* sl = reinterpret_cast<const KvcByteCellSlice*>(p.slices);
    for (uint32_t by = 0; by < gy; ++by) {
        for (uint32_t bx = 0; bx < gx; ++bx) {
            const KvcChecksumParams q = cta_params(p, bx);
            for (uint32_t w = 0; w < KVC_WARPS; ++w) {
                uint32_t i0, i1;
                kvc_slice_sums_warp_slices(q, by, w, i0, i1);
                if (i0 >= i1) continue;
                for (uint32_t l = 0; l < 32; ++l) {
                    if (slices) {
                        HostSliceSumsEmit emit{q.out, q.out_stride, bx, l};
                        kvc_byte_cell_lane_slices<MIX>(q, sl, i0, i1, q.first_block + bx, l, emit);
                    } else {
                        KvcByteCellFactorEmit e{sl, 0};
                        kvc_byte_cell_lane_slices<MIX>(q, sl, i0, i1, q.first_block + bx, l, e);
                        q.out[bx] += e.acc;  // the kernel's atomicAdd of the warp's sum
                    }
                }
            }
        }
    }
    return KVC_SUCCESS;
}

// The verifying copy's kernels (kvchecksum_copy.cuh): warp w of CTA (bx, by) copies pair by*KVC_WARPS + w over block
// first_block + bx, lane after lane (source and destination never overlap, so the order of the stores is free), and
// adds factor * its lanes' sum into out[bx] (the kernel's atomicAdd). W: 16, 8 (whole pieces) or 0 (byte cells).
template <int W, int MIX>
int copy_kernel(uint32_t gx, uint32_t gy, const KvcCopyParams& p) {
    if (gx != p.num_blocks || (uint64_t)gy * KVC_WARPS < p.num_pairs) return KVC_INVALID_VALUE;
    for (uint32_t by = 0; by < gy; ++by) {
        for (uint32_t bx = 0; bx < gx; ++bx) {
            const uint64_t block = p.first_block + bx;
            for (uint32_t w = 0; w < KVC_WARPS; ++w) {
                const int64_t i = kvc_copy_pair(p, by, w);
                if (i < 0) continue;
                uint64_t s = 0;
                for (uint32_t l = 0; l < 32; ++l) {
                    s += W == 0 ? kvc_copy_byte_cell_lane_sum<MIX>(p, (uint32_t)i, block, l)
                                : kvc_copy_whole_lane_sum<W == 0 ? 8 : W, MIX>(p, (uint32_t)i, block, l);
                }
                p.out[bx] += kvc_copy_factor(p, (uint32_t)i) * s;
            }
        }
    }
    return KVC_SUCCESS;
}

// The staged copy (kvc_copy_staged): CTA bx is staging unit bx. Phase 1 per out block the unit meets: every thread's
// items of the block's slots read into the unit's stage (the CTA's dynamic shared memory: the fake driver checks the
// launch's size against the kernel's opt-in) and its share of the block's value; the warps' shuffles and the one
// atomicAdd per (CTA, block) become the sum over the threads added into out. Then, after the CTA's barrier, every
// thread's phase 2 (the writes). The stage is poisoned first: a word phase 2 stores that phase 1 did not load shows.
template <int MIX>
int copy_staged_kernel(uint32_t gx, uint32_t gy, const KvcCopyParams& p) {
    if (gy != 1 || gx != p.num_blocks) return KVC_INVALID_VALUE;
    for (uint32_t bx = 0; bx < gx; ++bx) {
        const uint64_t n = kvc_staged_tokens(p, bx);
        std::vector<uint64_t> stage(kvc_staged_words(p, n) + (uint64_t)KVC_STAGED_SPANS * KVC_WARPS, 0xA5A5A5A5A5A5A5A5ull);
        uint64_t b0, nb;
        kvc_staged_blocks(p, bx, n, b0, nb);
        for (uint64_t r = 0; r < nb; ++r) {
            uint64_t lo, hi;
            kvc_staged_block_slots(p, bx, n, b0 + r, lo, hi);
            uint64_t v = 0;
            for (uint32_t tid = 0; tid < KVC_THREADS; ++tid) v += kvc_staged_read<MIX>(p, bx, n, lo, hi, tid, KVC_THREADS, stage.data());
            p.out[b0 + r] += v;  // the kernel's atomicAdd (per CTA and block, or per warp past KVC_STAGED_SPANS)
        }
        for (uint32_t tid = 0; tid < KVC_THREADS; ++tid) kvc_staged_write(p, bx, n, tid, KVC_THREADS, stage.data());
    }
    return KVC_SUCCESS;
}

}  // namespace

extern "C" {

// One launch of kernel `name` with grid (gx, gy, gz) and block (bx, by, bz); `params` points at the kernel's
// single by-value parameter struct. Returns a CUresult-like code.
static int emulate(const char* full, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz,
                const void* params) {
    // The occupancy variants (_occ3) run the same code as the default: only their launch bounds differ.
    char name[128];
    const size_t len = strlen(full);
    if (len >= sizeof(name)) return KVC_NOT_FOUND;
    memcpy(name, full, len + 1);
    if (len > 5 && !strcmp(name + len - 5, "_occ3")) name[len - 5] = 0;
    if (bx != KVC_THREADS || by != 1 || bz != 1 || gz != 1 || gx == 0 || gy == 0) return KVC_INVALID_VALUE;
    const uint64_t threads = (uint64_t)gx * KVC_THREADS;
    if (!strcmp(name, "kvc_block_checksums_16b")) return block_checksums<2>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_block_checksums_8b")) return block_checksums<1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_block_checksums_1b")) return block_checksums<0>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_slice_sums_1b")) return slice_sums<0>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_slice_sums_16b")) return slice_sums<2>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_slice_sums_8b")) return slice_sums<1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_block_checksums_16b_mixed")) return block_checksums<2, 1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_block_checksums_8b_mixed")) return block_checksums<1, 1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_block_checksums_1b_mixed")) return block_checksums<0, 1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_slice_sums_16b_mixed")) return slice_sums<2, 1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_slice_sums_8b_mixed")) return slice_sums<1, 1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_slice_sums_1b_mixed")) return slice_sums<0, 1>(gx, gy, *static_cast<const KvcChecksumParams*>(params));
    if (!strcmp(name, "kvc_byte_cells_block_checksums")) return byte_cells<0>(gx, gy, *static_cast<const KvcChecksumParams*>(params), false);
    if (!strcmp(name, "kvc_byte_cells_slice_sums")) return byte_cells<0>(gx, gy, *static_cast<const KvcChecksumParams*>(params), true);
    if (!strcmp(name, "kvc_byte_cells_block_checksums_mixed")) return byte_cells<1>(gx, gy, *static_cast<const KvcChecksumParams*>(params), false);
    if (!strcmp(name, "kvc_byte_cells_slice_sums_mixed")) return byte_cells<1>(gx, gy, *static_cast<const KvcChecksumParams*>(params), true);
    if (!strncmp(name, "kvc_copy_", 9)) {
        const KvcCopyParams& p = *static_cast<const KvcCopyParams*>(params);
        if (!strcmp(name, "kvc_copy_checksums_16b")) return copy_kernel<16, 0>(gx, gy, p);
        if (!strcmp(name, "kvc_copy_checksums_8b")) return copy_kernel<8, 0>(gx, gy, p);
        if (!strcmp(name, "kvc_copy_byte_cells")) return copy_kernel<0, 0>(gx, gy, p);
        if (!strcmp(name, "kvc_copy_checksums_16b_mixed")) return copy_kernel<16, 1>(gx, gy, p);
        if (!strcmp(name, "kvc_copy_checksums_8b_mixed")) return copy_kernel<8, 1>(gx, gy, p);
        if (!strcmp(name, "kvc_copy_byte_cells_mixed")) return copy_kernel<0, 1>(gx, gy, p);
        if (!strcmp(name, "kvc_copy_staged")) return copy_staged_kernel<0>(gx, gy, p);
        if (!strcmp(name, "kvc_copy_staged_mixed")) return copy_staged_kernel<1>(gx, gy, p);
        return KVC_NOT_FOUND;
    }
    if (gy != 1) return KVC_INVALID_VALUE;
    if (!strcmp(name, "kvc_sum_parts")) {
        const KvcReduceParams& p = *static_cast<const KvcReduceParams*>(params);
        for (uint64_t i = 0; i < threads && i < p.n; ++i) p.out[i] = kvc_reduce_one(p, (uint32_t)i);
        return threads >= p.n ? KVC_SUCCESS : KVC_INVALID_VALUE;
    }
    if (!strcmp(name, "kvc_page_digest")) {
        // warp w of CTA b: piece b*KVC_WARPS + w, its lanes' sums added as the shuffles would
        const KvcDigestParams& p = *static_cast<const KvcDigestParams*>(params);
        if ((uint64_t)gx * KVC_WARPS < p.num_pieces) return KVC_INVALID_VALUE;
        for (uint64_t i = 0; i < p.num_pieces; ++i) {
            const KvcDigestPiece piece = p.pieces[i];
            if (piece.len == 0 || piece.len > KVC_DIGEST_PIECE) return KVC_INVALID_VALUE;
            uint64_t ts = 0, tw = 0;
            for (uint32_t l = 0; l < 32; ++l) {
                uint32_t s, w;
                kvc_digest_lane(reinterpret_cast<const char*>(piece.addr), piece.len, l, s, w);
                ts += s;
                tw += w;
            }
            p.out[i] = kvc_digest_finish(ts, tw, piece.len);
        }
        return KVC_SUCCESS;
    }
    if (!strcmp(name, "kvc_fill_u64")) {
        const KvcFillParams& p = *static_cast<const KvcFillParams*>(params);
        for (uint64_t i = 0; i < p.n; ++i) p.p[i] = kvc_splitmix64(p.seed + i);
        return KVC_SUCCESS;
    }
    if (!strcmp(name, "kvc_sum_u64")) {
        // Partials differ from the GPU's split; only their total is meaningful, and only that is compared.
        const KvcSumParams& p = *static_cast<const KvcSumParams*>(params);
        uint64_t s = 0;
        for (uint64_t i = 0; i < 2 * p.n16; ++i) s += p.p[i];
        for (uint32_t b = 0; b < gx; ++b) p.partials[b] = b == 0 ? s : 0;
        return KVC_SUCCESS;
    }
    if (!strcmp(name, "kvcb_gather_sum")) {
        // The device check's read bound over a page table (kvchecksum_bench.cuh): only the total is meaningful.
        const KvcbGatherParams& p = *static_cast<const KvcbGatherParams*>(params);
        if (p.page_units == 0 || ((p.region_stride | p.page_stride | (uintptr_t)p.base) & 15) != 0) return KVC_INVALID_VALUE;
        uint64_t s = 0;
        for (uint64_t c = 0; c < (uint64_t)p.num_regions * p.num_pages; ++c) {
            const uint64_t* w = kvcb_chunk(p, c);
            for (uint64_t i = 0; i < 2ull * p.page_units; ++i) s += w[i];
        }
        for (uint32_t b = 0; b < gx; ++b) p.partials[b] = b == 0 ? s : 0;
        return KVC_SUCCESS;
    }
    if (!strcmp(name, "kvcb_page_copy")) {
        // The device check's batched page copy (kvchecksum_bench.cuh): every chunk to its table position's page.
        const KvcbGatherParams& p = *static_cast<const KvcbGatherParams*>(params);
        if (p.page_units == 0 || ((p.region_stride | p.page_stride | (uintptr_t)p.base | (uintptr_t)p.partials) & 15) != 0) return KVC_INVALID_VALUE;
        for (uint64_t c = 0; c < (uint64_t)p.num_regions * p.num_pages; ++c) memcpy(kvcb_copy_target(p, c), kvcb_chunk(p, c), 16ull * p.page_units);
        return KVC_SUCCESS;
    }
    return KVC_NOT_FOUND;
}

int kvc_emulate(const char* name, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz,
                const void* params) {
    kvc_host_fault = 0;
    const int rc = emulate(name, gx, gy, gz, bx, by, bz, params);
    // A misaligned load anywhere in the grid fails the launch, as the GPU's sticky error would.
    return kvc_host_fault ? KVC_MISALIGNED_ADDRESS : rc;
}

// The ABI facts Java must agree with: 0..6 the structs' sizes, then the offset of every field Java writes, in
// declaration order: 100+ KvcSlice, 200+ KvcChecksumParams, 250+ KvcRequest (size: 9), 300+ KvcReduceParams, 400+ KvcDigestPiece and
// KvcDigestParams; 7, 8 their sizes (see KernelAbi); 10 the slices kernels' most slices per warp, 11..13 a lane's loads
// per batch for 16-byte, 8-byte and byte-assembled pieces, 14..15 a lane's items per batch of the byte-cell kernels
// (K-only cells, cells with V), 16 the fused kernel's chunk of staged descriptors (LaunchPlanner's copies); 17 and 500+
// KvcCopyParams; -1 for an unknown query.
long long kvc_abi(int which) {
    switch (which) {
        case 0: return sizeof(KvcSlice);
        case 1: return sizeof(KvcChecksumParams);
        case 2: return sizeof(KvcReduceParams);
        case 5: return sizeof(KvcFillParams);
        case 6: return sizeof(KvcSumParams);
        case 7: return sizeof(KvcDigestPiece);
        case 8: return sizeof(KvcDigestParams);
        case 100: return offsetof(KvcSlice, factor);
        case 101: return offsetof(KvcSlice, k_base);
        case 102: return offsetof(KvcSlice, k_page_stride);
        case 103: return offsetof(KvcSlice, k_token_stride);
        case 104: return offsetof(KvcSlice, v_base);
        case 105: return offsetof(KvcSlice, v_page_stride);
        case 106: return offsetof(KvcSlice, v_token_stride);
        case 107: return offsetof(KvcSlice, k_pieces);
        case 108: return offsetof(KvcSlice, v_pieces);
        case 200: return offsetof(KvcChecksumParams, slices);
        case 201: return offsetof(KvcChecksumParams, table);
        case 202: return offsetof(KvcChecksumParams, out);
        case 203: return offsetof(KvcChecksumParams, start_token);
        case 204: return offsetof(KvcChecksumParams, first_block);
        case 205: return offsetof(KvcChecksumParams, num_tokens);
        case 206: return offsetof(KvcChecksumParams, block_size);
        case 207: return offsetof(KvcChecksumParams, page_size);
        case 208: return offsetof(KvcChecksumParams, num_blocks);
        case 209: return offsetof(KvcChecksumParams, num_slices);
        case 210: return offsetof(KvcChecksumParams, slices_per_part);
        case 211: return offsetof(KvcChecksumParams, num_parts);
        case 212: return offsetof(KvcChecksumParams, out_stride);
        case 213: return offsetof(KvcChecksumParams, requests);
        case 214: return offsetof(KvcChecksumParams, num_requests);
        case 9: return sizeof(KvcRequest);
        case 10: return KVC_SLICE_SUMS_MAX_SPW;
        case 11: return KVC_BATCH_SLOTS(2);
        case 12: return KVC_BATCH_SLOTS(1);
        case 13: return KVC_BATCH_SLOTS(0);
        case 14: return KVC_BYTE_CELL_BATCH(false);
        case 15: return KVC_BYTE_CELL_BATCH(true);
        case 16: return KVC_SLICE_CHUNK;
        case 250: return offsetof(KvcRequest, start_token);
        case 251: return offsetof(KvcRequest, first_block);
        case 252: return offsetof(KvcRequest, num_tokens);
        case 253: return offsetof(KvcRequest, block_begin);
        case 254: return offsetof(KvcRequest, table_offset);
        case 255: return offsetof(KvcRequest, num_blocks);
        case 300: return offsetof(KvcReduceParams, in);
        case 301: return offsetof(KvcReduceParams, out);
        case 302: return offsetof(KvcReduceParams, n);
        case 303: return offsetof(KvcReduceParams, parts);
        case 400: return offsetof(KvcDigestPiece, addr);
        case 401: return offsetof(KvcDigestPiece, len);
        case 402: return offsetof(KvcDigestParams, pieces);
        case 403: return offsetof(KvcDigestParams, out);
        case 404: return offsetof(KvcDigestParams, num_pieces);
        case 17: return sizeof(KvcCopyParams);
        case 500: return offsetof(KvcCopyParams, src);
        case 501: return offsetof(KvcCopyParams, dst);
        case 502: return offsetof(KvcCopyParams, src_table);
        case 503: return offsetof(KvcCopyParams, dst_table);
        case 504: return offsetof(KvcCopyParams, out);
        case 505: return offsetof(KvcCopyParams, start_token);
        case 506: return offsetof(KvcCopyParams, first_block);
        case 507: return offsetof(KvcCopyParams, num_tokens);
        case 508: return offsetof(KvcCopyParams, block_size);
        case 509: return offsetof(KvcCopyParams, src_page_size);
        case 510: return offsetof(KvcCopyParams, dst_page_size);
        case 511: return offsetof(KvcCopyParams, num_pairs);
        case 512: return offsetof(KvcCopyParams, num_blocks);
        default: return -1;
    }
}

// The staging phases' copies since the last call (page ids, descriptor words), then reset: the tests show the staging
// ran, and how much of it.
void kvc_stage_counts(long long* out) {
    out[0] = (long long)kvc_host_counts[0].exchange(0);
    out[1] = (long long)kvc_host_counts[1].exchange(0);
}

// The whole-piece walk's batches since the last call (loads on, batches of a lane), then reset: how full a lane's batch
// of loads runs at run time, which the PTX (every slot of a batch, on or off) cannot show.
void kvc_batch_counts(long long* out) {
    out[0] = (long long)kvc_host_counts[2].exchange(0);
    out[1] = (long long)kvc_host_counts[3].exchange(0);
}

// The factor of a (layer, head) slice, as the kernels' descriptors expect (checked against Definition.factor).
unsigned long long kvc_factor_host(unsigned int layer, unsigned int head) { return kvc_factor(layer, head); }

}  // extern "C"
