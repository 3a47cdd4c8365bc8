/*
 * SGLang's page digest, OpenCL C 1.2: Adler-32 parts of the stream's pieces (io.kvchecksum.PageDigestPlan).
 * A program of its own (the checksum kernels live in kvchecksum.cl).
 *
 * Work-group g digests piece g: `len[g]` bytes (at most the host's piece size, 4096) at byte `off[g]` of `data`.
 * Work-item i of L takes the piece's bytes i, i+L, i+2L, ... (adjacent items read adjacent bytes), summing
 * s = sum x and w = sum (n - k) x over its bytes k; the group adds them up (tree reduction, L a power of two)
 * and item 0 writes the piece's Adler-32 = ((n + w) mod 65521) << 16 | ((1 + s) mod 65521) to out[base + g].
 * The host joins the pieces in stream order with Adler32Parts.combine. For n <= 4096 a byte adds at most
 * 255*4096 to w, and the whole piece at most 255*4096*4097/2 < 2^31: no reduction is needed before the end.
 */
__kernel void page_digest_parts(__global const uchar *data, __global const ulong *off, __global const uint *len,
                                uint base, __global uint *out, __local uint *ls, __local uint *lw) {
    uint g = get_group_id(0);
    uint i = get_local_id(0);
    uint L = get_local_size(0);
    __global const uchar *p = data + off[g];
    uint n = len[g];
    uint s = 0;
    uint w = 0;
    for (uint k = i; k < n; k += L) {
        uint x = p[k];
        s += x;
        w += (n - k) * x;
    }
    ls[i] = s;
    lw[i] = w;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = L >> 1; h > 0; h >>= 1) {
        if (i < h) {
            ls[i] += ls[i + h];
            lw[i] += lw[i + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i == 0) {
        out[base + g] = ((n + lw[0]) % 65521u) << 16 | ((1u + ls[0]) % 65521u);
    }
}

/*
 * The same parts with one work-item per piece (global id g < count), for CPU devices: no barriers, and the loop
 * runs on 16-byte vectors (vload16 needs no alignment beyond a byte's). Lane l of the accumulators holds the bytes
 * at k = 16u + l: vs sums them, vw sums (n - k) x_k; the tail past the last whole vector is added byte by byte.
 * Bounds as above: n <= 4096, so every lane and the totals stay below 2^31.
 */
__kernel void page_digest_serial(__global const uchar *data, __global const ulong *off, __global const uint *len,
                                 uint base, uint count, __global uint *out) {
    uint g = get_global_id(0);
    if (g >= count) {
        return;
    }
    __global const uchar *p = data + off[g];
    uint n = len[g];
    const uint16 ramp = (uint16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    uint16 vs = (uint16)(0);
    uint16 vw = (uint16)(0);
    uint k = 0;
    for (; k + 16 <= n; k += 16) {
        uint16 x = convert_uint16(vload16(0, p + k));
        vs += x;
        vw += x * ((uint16)(n - k) - ramp);
    }
    uint8 s8 = vs.lo + vs.hi;
    uint4 s4 = s8.lo + s8.hi;
    uint2 s2 = s4.lo + s4.hi;
    uint s = s2.x + s2.y;
    uint8 w8 = vw.lo + vw.hi;
    uint4 w4 = w8.lo + w8.hi;
    uint2 w2 = w4.lo + w4.hi;
    uint w = w2.x + w2.y;
    for (; k < n; k++) {
        uint x = p[k];
        s += x;
        w += (n - k) * x;
    }
    out[base + g] = ((n + w) % 65521u) << 16 | ((1u + s) % 65521u);
}
