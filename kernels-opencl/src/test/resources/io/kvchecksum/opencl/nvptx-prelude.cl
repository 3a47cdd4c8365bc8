/*
 * Compile-only stand-ins for the OpenCL built-ins the kernels call, for clang's nvptx64-nvidia-nvcl target, which has
 * no built-in library here (libclc is not installed): GpuLoadEvidenceTest prepends this to kvchecksum.cl so the PTX is
 * complete (ptxas can compile it) and vload8 (vstore8: the copy kernels) appears as the loads (stores) it is, not as a
 * call. Never run.
 */
#define KVC_SREG(n, d) ((d) == 0 ? __nvvm_read_ptx_sreg_##n##_x() : (d) == 1 ? __nvvm_read_ptx_sreg_##n##_y() \
                                                                  : __nvvm_read_ptx_sreg_##n##_z())
size_t __attribute__((overloadable)) get_local_id(uint d) { return KVC_SREG(tid, d); }
size_t __attribute__((overloadable)) get_local_size(uint d) { return KVC_SREG(ntid, d); }
size_t __attribute__((overloadable)) get_group_id(uint d) { return KVC_SREG(ctaid, d); }
size_t __attribute__((overloadable)) get_global_id(uint d) { return get_group_id(d) * get_local_size(d) + get_local_id(d); }
size_t __attribute__((overloadable)) get_global_size(uint d) { return KVC_SREG(nctaid, d) * get_local_size(d); }
void __attribute__((overloadable)) barrier(cl_mem_fence_flags f) { __syncthreads(); }
ulong __attribute__((overloadable)) min(ulong a, ulong b) { return a < b ? a : b; }
ulong __attribute__((overloadable)) max(ulong a, ulong b) { return a > b ? a : b; }
ulong8 __attribute__((overloadable)) vload8(size_t i, const __global ulong *p) {
    p += 8 * i;
    return (ulong8) (p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
}
uchar8 __attribute__((overloadable)) vload8(size_t i, const __global uchar *p) {
    p += 8 * i;
    return (uchar8) (p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
}
void __attribute__((overloadable)) vstore8(uchar8 v, size_t i, __global uchar *p) {
    p += 8 * i;
    p[0] = v.s0; p[1] = v.s1; p[2] = v.s2; p[3] = v.s3; p[4] = v.s4; p[5] = v.s5; p[6] = v.s6; p[7] = v.s7;
}
