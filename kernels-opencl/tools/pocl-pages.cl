/* Kernels of pocl-pages.c (a diagnostic). Arguments: kv, words, perm (shuffled page ids), npages, out. */
/* contiguous chunk per work item */
__kernel void seq(__global const ulong *kv, ulong words, __global const int *perm, uint npages, __global ulong *out){
  size_t g=get_global_id(0), n=get_global_size(0);
  ulong a=words*g/n, b=words*(g+1)/n; ulong8 s=0;
  for(ulong i=a;i<b;i+=8) s+=vload8(0,kv+i);
  out[g]=s.s0+s.s1+s.s2+s.s3+s.s4+s.s5+s.s6+s.s7;
}
/* shuffled 4 KiB pages, contiguous run of pages per work item */
__kernel void pages(__global const ulong *kv, ulong words, __global const int *perm, uint npages, __global ulong *out){
  size_t g=get_global_id(0), n=get_global_size(0);
  ulong a=(ulong)npages*g/n, b=(ulong)npages*(g+1)/n; ulong8 s=0;
  for(ulong p=a;p<b;p++){ __global const ulong*pg=kv+(ulong)perm[p]*512; for(int i=0;i<512;i+=8) s+=vload8(0,pg+i);}
  out[g]=s.s0+s.s1+s.s2+s.s3+s.s4+s.s5+s.s6+s.s7;
}
/* two pages at once */
__kernel void pages2(__global const ulong *kv, ulong words, __global const int *perm, uint npages, __global ulong *out){
  size_t g=get_global_id(0), n=get_global_size(0);
  ulong a=(ulong)npages*g/n, b=(ulong)npages*(g+1)/n; ulong8 s=0,t=0;
  ulong p=a;
  for(;p+1<b;p+=2){ __global const ulong*p0=kv+(ulong)perm[p]*512; __global const ulong*p1=kv+(ulong)perm[p+1]*512; for(int i=0;i<512;i+=8){ s+=vload8(0,p0+i); t+=vload8(0,p1+i);} }
  for(;p<b;p++){ __global const ulong*pg=kv+(ulong)perm[p]*512; for(int i=0;i<512;i+=8) s+=vload8(0,pg+i);}
  s+=t; out[g]=s.s0+s.s1+s.s2+s.s3+s.s4+s.s5+s.s6+s.s7;
}
