// SGLang's page digest: Adler-32 parts of the pieces of one request's stream (io.kvchecksum.PageDigestPlan), as
// __host__ __device__ functions shared by the kernel (kvc_page_digest in kvchecksum_kernels.cu) and the host test
// library (src/test/cuda), which runs them on the CPU in CI.
//
// The host cuts the stream into pieces of at most KVC_DIGEST_PIECE bytes; warp w of CTA b digests piece
// b*KVC_WARPS + w. Lane l takes the piece's 16-byte units l, l+32, ... (16-byte loads when the piece's address is
// 16-byte aligned; the tail, or a misaligned piece, byte by byte at l, l+32, ...), summing s = sum x_k and
// w = sum (n - k) x_k over its bytes k; the warp adds them up and lane 0 writes the piece's Adler-32,
// ((n + w) mod 65521) << 16 | ((1 + s) mod 65521). The host joins the pieces in stream order (Adler32Parts.combine).
// For n <= 8192 a lane's w is below 2^30 (256 bytes of weight <= 8192), so 32-bit lane sums are exact; the warp's
// totals are added in 64 bits.
#pragma once
#include "kvchecksum.cuh"

#define KVC_DIGEST_PIECE 8192
#define KVC_ADLER_MOD 65521u

struct KvcDigestPiece {
    uint64_t addr;      // device address of the piece's first byte
    uint32_t len;       // 1 .. KVC_DIGEST_PIECE
    uint32_t reserved;
};

struct KvcDigestParams {
    const KvcDigestPiece* pieces;
    uint64_t* out;        // out[i]: piece i's Adler-32
    uint32_t num_pieces;
    uint32_t reserved;
};

// Lane `lane`'s sums over piece bytes p[0 .. n).
KVC_HD void kvc_digest_lane(const char* p, uint32_t n, uint32_t lane, uint32_t& s, uint32_t& w) {
    s = 0;
    w = 0;
    uint32_t tail = 0;
    if (((uintptr_t)p & 15) == 0) {
        const uint32_t units = n / 16;
        for (uint32_t c = lane; c < units; c += 32) {
            uint64_t x0, x1;
            kvc_ld16(p + 16 * c, x0, x1);
            uint32_t bs = 0, bw = 0;  // the unit's byte sum and sum of i * x_i, i = 0..15
#pragma unroll
            for (uint32_t i = 0; i < 8; ++i) {
                const uint32_t a = (uint32_t)(x0 >> (8 * i)) & 0xffu, b = (uint32_t)(x1 >> (8 * i)) & 0xffu;
                bs += a + b;
                bw += i * a + (8 + i) * b;
            }
            s += bs;
            w += (n - 16 * c) * bs - bw;  // sum (n - 16c - i) x_i: every weight is at least 1
        }
        tail = units * 16;
    }
    for (uint32_t k = tail + lane; k < n; k += 32) {
        const uint32_t x = (uint8_t)p[k];
        s += x;
        w += (n - k) * x;
    }
}

// The piece's Adler-32 from the warp's totals.
KVC_HD uint64_t kvc_digest_finish(uint64_t s, uint64_t w, uint32_t n) {
    const uint64_t a = (1 + s % KVC_ADLER_MOD) % KVC_ADLER_MOD;
    const uint64_t b = (n + w) % KVC_ADLER_MOD;
    return b << 16 | a;
}
