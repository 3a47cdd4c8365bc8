#!/usr/bin/env bash
# Compiles the device check's reference kernels (src/test/cuda/kvchecksum_bench.cu: the read bound over a page
# table, also the decode-like load) into a fatbin among the test classes, so prepare-device.sh carries it in the
# device-check jar; the shipped kernels' fatbin is build-cuda.sh's. Same targets as the kernels (sm_80, sm_90 code,
# compute_90 PTX). Run by Maven (pom.xml, after build-cuda.sh), skipped with -Dkvchecksum.skipCuda=true.
# Usage: build-bench.sh <kernel sources (headers)> <test cuda sources> <fatbin out>
set -euo pipefail
src=$1 testsrc=$2 fatbin=$3
if [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]]; then
  nvcc=$CUDA_HOME/bin/nvcc
else
  nvcc=$(command -v nvcc) || { echo "ERROR: build-bench.sh: no nvcc (see build-cuda.sh)" >&2; exit 1; }
fi
if [[ -f "$fatbin" && -z "$(find "$src" "$testsrc" "$0" -newer "$fatbin" -print -quit)" ]]; then
  exit 0
fi
mkdir -p "$(dirname "$fatbin")"
log=$(mktemp)
if ! "$nvcc" -fatbin -O3 -std=c++17 -I "$src" \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -o "$fatbin.tmp" "$testsrc/kvchecksum_bench.cu" >"$log" 2>&1; then
  echo "ERROR: nvcc failed on $testsrc/kvchecksum_bench.cu:" >&2
  tail -n 40 "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
mv "$fatbin.tmp" "$fatbin"
