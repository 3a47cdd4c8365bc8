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
