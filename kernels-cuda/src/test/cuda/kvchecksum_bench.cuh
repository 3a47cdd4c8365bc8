// Reference kernels for the device check only (io.kvchecksum.cuda.DeviceCheck), never shipped: compiled into
// kvchecksum_bench.fatbin among the test classes by src/build/build-bench.sh, and run on the CPU-simulated driver by
// kvchecksum_host.cu through the same per-chunk function.
//
// kvcb_gather_sum: the read bound over a page table. It reads exactly the bytes the fused checksum reads for a
// request (every region's pages table[0..num_pages), in table order), with nothing but 16-byte streaming loads and
// wrapping adds, so the fused kernel's time over it compares kernel quality on the same access pattern. A region is
// one layer's K or V tensor (vLLM's flash layout) or one layer's latent tensor (MLA): region r starts at
// base + r*region_stride, its page q at + q*page_stride, page_units 16-byte units long. A warp takes one (region,
// page) chunk at a time; one partial per CTA, so the total can be checked against the host's sum of the same words.
// The same kernel over a buffer of its own is the device check's decode-like load (the interference step).
//
// kvcb_page_copy: the batched page copy the verifying copy is compared with (what an engine's block-copy kernel
// does): the same chunks, each copied with 16-byte loads and stores to the page of its table position in a second
// buffer (chunk (r, i) to base2 + r*region_stride + i*page_stride: the pages in table order), 8 loads per lane in
// flight before the first store. Its parameters are KvcbGatherParams with `partials` the destination's base.
#pragma once
#include "kvchecksum.cuh"

struct KvcbGatherParams {
    const uint64_t* base;     // 16-byte aligned
    const uint32_t* table;    // [num_pages] page ids
    uint64_t* partials;       // [gridDim.x]
    uint64_t region_stride;   // bytes, a multiple of 16
    uint64_t page_stride;     // bytes, a multiple of 16
    uint32_t page_units;      // 16-byte units per page of a region
    uint32_t num_pages;
    uint32_t num_regions;
    uint32_t pad;
};

// The first word of chunk c (region c / num_pages, the page table[c % num_pages] of it).
KVC_HD const uint64_t* kvcb_chunk(const KvcbGatherParams& p, uint64_t c) {
    const uint64_t r = c / p.num_pages;
    const uint32_t i = (uint32_t)(c - r * p.num_pages);
    return p.base + (r * p.region_stride + (uint64_t)p.table[i] * p.page_stride) / 8;
}

// The first word of chunk c's destination in kvcb_page_copy: page i (its table position) of region r at `dst`.
KVC_HD uint64_t* kvcb_copy_target(const KvcbGatherParams& p, uint64_t c) {
    const uint64_t r = c / p.num_pages;
    const uint32_t i = (uint32_t)(c - r * p.num_pages);
    return p.partials + (r * p.region_stride + (uint64_t)i * p.page_stride) / 8;
}
