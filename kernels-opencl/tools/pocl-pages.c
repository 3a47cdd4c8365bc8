/*
 * Diagnostic, not part of the build: how fast PoCL reads 256 MiB of host memory in place (CL_MEM_USE_HOST_PTR) with
 * one kernel of pocl-pages.cl, against a 2-thread C read loop of the same bytes in the same run (best of 8 rounds
 * each, alternating). Kernels: seq (a contiguous chunk per work item), pages (4 KiB pages in a shuffled order, a run
 * of them per work item), pages2 (the same, two pages in flight per work item).
 *
 *   gcc -O3 -march=native -o /tmp/pocl-pages pocl-pages.c -lOpenCL -lpthread
 *   for k in seq pages pages2; do /tmp/pocl-pages pocl-pages.cl $k 16 128; /tmp/pocl-pages pocl-pages.cl $k 1 64; done
 *
 * Arguments: kernel file, kernel name, local size, number of work-groups[, build options].
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
#define N (256ul<<20)
static unsigned long *buf;
typedef struct {size_t a,b; unsigned long s;} arg_t;
static void* rd(void*p){arg_t*a=p;unsigned long s0=0,s1=0,s2=0,s3=0,s4=0,s5=0,s6=0,s7=0;for(size_t i=a->a;i<a->b;i+=8){s0+=buf[i];s1+=buf[i+1];s2+=buf[i+2];s3+=buf[i+3];s4+=buf[i+4];s5+=buf[i+5];s6+=buf[i+6];s7+=buf[i+7];}a->s=s0+s1+s2+s3+s4+s5+s6+s7;return 0;}
static double bound(){pthread_t t[2];arg_t a[2];size_t w=N/8;double t0=now();for(int i=0;i<2;i++){a[i].a=w/2*i;a[i].b=w/2*(i+1);pthread_create(&t[i],0,rd,&a[i]);}for(int i=0;i<2;i++)pthread_join(t[i],0);return now()-t0;}
static char*src;
int main(int argc,char**argv){
  buf=aligned_alloc(4096,N); for(size_t i=0;i<N/8;i++)buf[i]=i*0x9E3779B97F4A7C15ul;
  FILE*f=fopen(argv[1],"r");src=malloc(1<<20);size_t n=fread(src,1,1<<20,f);src[n]=0;
  cl_platform_id pl;clGetPlatformIDs(1,&pl,0);cl_device_id d;clGetDeviceIDs(pl,CL_DEVICE_TYPE_ALL,1,&d,0);
  cl_int e;cl_context c=clCreateContext(0,1,&d,0,0,&e);cl_command_queue q=clCreateCommandQueue(c,d,0,&e);
  cl_program p=clCreateProgramWithSource(c,1,(const char**)&src,0,&e);
  e=clBuildProgram(p,1,&d,argc>5?argv[5]:"",0,0);if(e){char log[20000];clGetProgramBuildInfo(p,d,CL_PROGRAM_BUILD_LOG,20000,log,0);printf("%s\n",log);return 1;}
  cl_mem m=clCreateBuffer(c,CL_MEM_READ_ONLY|CL_MEM_USE_HOST_PTR,N,buf,&e);
  size_t local=atoi(argv[3]), groups=atoi(argv[4]); size_t global=local*groups;
  cl_mem out=clCreateBuffer(c,CL_MEM_READ_WRITE,global*8,0,&e);
  /* page order: shuffled 4 KiB pages */
  size_t np=N/4096; int*perm=malloc(np*4);for(size_t i=0;i<np;i++)perm[i]=i;srand(1);for(size_t i=np-1;i>0;i--){size_t j=rand()%(i+1);int t=perm[i];perm[i]=perm[j];perm[j]=t;}
  cl_mem pm=clCreateBuffer(c,CL_MEM_READ_ONLY|CL_MEM_COPY_HOST_PTR,np*4,perm,&e);
  cl_kernel k=clCreateKernel(p,argv[2],&e);if(e){printf("kernel %d\n",e);return 1;}
  unsigned long words=N/8; unsigned int npages=np;
  clSetKernelArg(k,0,sizeof m,&m);clSetKernelArg(k,1,sizeof words,&words);clSetKernelArg(k,2,sizeof pm,&pm);clSetKernelArg(k,3,sizeof npages,&npages);clSetKernelArg(k,4,sizeof out,&out);
  double bt[9],kt[9];
  for(int r=0;r<9;r++){bt[r]=bound();double t0=now();clEnqueueNDRangeKernel(q,k,1,0,&global,&local,0,0,0);clFinish(q);kt[r]=now()-t0;}
  double bm=1e9,km=1e9;for(int r=1;r<9;r++){if(bt[r]<bm)bm=bt[r];if(kt[r]<km)km=kt[r];}
  printf("%-14s local %3zu groups %4zu: bound %.2f ms kernel %.2f ms ratio %.2f\n",argv[2],local,groups,bm,km,bm/km);
}
