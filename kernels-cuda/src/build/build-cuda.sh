#!/usr/bin/env bash
# Compiles the CUDA sources at build time (Maven generate-resources, see pom.xml):
#   1. the kernels into a fatbin (sm_80 and sm_90 machine code, compute_90 PTX) shipped in the jar;
#   2. the host test library (src/test/cuda: the kernels' shared arithmetic, run on the CPU by the tests; not shipped);
#   3. static evidence for the tests, next to the host library (PtxEvidenceTest reads it; docs/gpu-performance.md):
#      the compute_90 PTX, the sm_90 ptxas -v report (registers, spills) and, when cuobjdump is there, the sm_90 SASS.
# nvcc needs no GPU. Usage: build-cuda.sh <kernel sources> <host test sources> <fatbin out> <host library out>
# nvcc is $CUDA_HOME/bin/nvcc (Maven property cuda.home, default /usr/local/cuda), else the one on PATH.
set -euo pipefail
src=$1 testsrc=$2 fatbin=$3 hostlib=$4

nvcc=
if [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]]; then
  nvcc=$CUDA_HOME/bin/nvcc
elif command -v nvcc >/dev/null 2>&1; then
  nvcc=$(command -v nvcc)
fi
if [[ -z "$nvcc" ]]; then
  echo "ERROR: kvchecksum-kernels-cuda needs nvcc (CUDA 12.4 or newer) to compile its kernels, and found none:" >&2
  echo "  not at \$CUDA_HOME/bin/nvcc (CUDA_HOME='${CUDA_HOME:-}', set with -Dcuda.home=/path/to/cuda) nor on PATH." >&2
  echo "  Install the CUDA toolkit, or build without the CUDA kernels: mvn ... -Dkvchecksum.skipCuda=true" >&2
  echo "  (the jar then carries no kernels and the backend reports itself unavailable)." >&2
  exit 1
fi

newer() {  # true if $1 is missing or older than any source
  [[ ! -f "$1" ]] && return 0
  [[ -n "$(find "$src" "$testsrc" "$0" -newer "$1" -print -quit)" ]]
}

mkdir -p "$(dirname "$fatbin")" "$(dirname "$hostlib")"
# nvcc's and ptxas' reports go to a log, so `mvn -q` stays quiet; a failure prints the log's tail on stderr.
log="$(dirname "$hostlib")/build-cuda.log"
: >"$log"
run() {
  if ! "$@" >>"$log" 2>&1; then
    echo "ERROR: nvcc failed; the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}
# Maven's exec plugin prints a script's stdout even under -q: everything below goes to the log
exec >>"$log"
echo "kvchecksum: nvcc is $nvcc ($("$nvcc" --version | tail -n 2 | head -n 1))"
if newer "$fatbin"; then
  echo "kvchecksum: compiling kernels into $fatbin (register and spill report in the log)"
  # -no-compress: nvcc compresses a large fatbin by default (this one passed the threshold with the copy kernels); left
  # plain, its kernel names stay checkable (FatbinResourceTest), the driver loads it without inflating it, and the
  # device carry's xz packs it to 1.7 MiB against 2.9 for nvcc's compressed form.
  run "$nvcc" -fatbin -no-compress -O3 -std=c++17 -lineinfo \
    -gencode arch=compute_80,code=sm_80 \
    -gencode arch=compute_90,code=sm_90 \
    -gencode arch=compute_90,code=compute_90 \
    -Xptxas -v -o "$fatbin.tmp" "$src/kvchecksum_kernels.cu"
  mv "$fatbin.tmp" "$fatbin"
else
  echo "kvchecksum: $fatbin is up to date"
fi
evidence=$(dirname "$hostlib")
if newer "$evidence/ptxas_sm90.txt"; then
  echo "kvchecksum: writing PTX, ptxas report and SASS for sm_90 into $evidence"
  run "$nvcc" -ptx -O3 -std=c++17 -arch=compute_90 -o "$evidence/kvchecksum_sm90.ptx" "$src/kvchecksum_kernels.cu"
  if ! "$nvcc" -cubin -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o "$evidence/kvchecksum_sm90.cubin" \
    "$src/kvchecksum_kernels.cu" > "$evidence/ptxas_sm90.tmp" 2>&1; then
    echo "ERROR: nvcc -cubin failed:" >&2
    tail -n 40 "$evidence/ptxas_sm90.tmp" >&2
    exit 1
  fi
  cuobjdump=$(dirname "$nvcc")/cuobjdump
  if [[ -x "$cuobjdump" ]]; then
    "$cuobjdump" -sass "$evidence/kvchecksum_sm90.cubin" > "$evidence/kvchecksum_sm90.sass"
  else
    rm -f "$evidence/kvchecksum_sm90.sass"
  fi
  mv "$evidence/ptxas_sm90.tmp" "$evidence/ptxas_sm90.txt"
fi
if newer "$hostlib"; then
  echo "kvchecksum: compiling host test library $hostlib"
  run "$nvcc" -shared -Xcompiler -fPIC -cudart static -O2 -std=c++17 \
    -gencode arch=compute_80,code=sm_80 -I "$src" -o "$hostlib.tmp" "$testsrc/kvchecksum_host.cu"
  mv "$hostlib.tmp" "$hostlib"
else
  echo "kvchecksum: $hostlib is up to date"
fi
