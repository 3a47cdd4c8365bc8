#!/usr/bin/env bash
# The in-cache path before issue 28's in-cache work (old) against the backend as it ships (fused), with the project's
# read bound alongside, one JVM per case (jmh/ab/FusedCacheAb.java): docs/bench-cpu.md, "What limits the ratios".
# Builds jmh/target/benchmarks.jar when missing or stale. Extra JVM flags follow the rounds, e.g. -XX:UseAVX=2.
#
#   jmh/ab/fused-cache-ab.sh [rounds] [jvm flags...]   # default 2001 rounds: llama3-8b-tp1, deepseek-mla-bf16 at 1MiB
#   SHAPES=llama3-8b-tp1 jmh/ab/fused-cache-ab.sh 2001 -XX:UseAVX=2   # one shape, at AVX2 width
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-2001}
shift || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/FusedCacheAb.java"
for shape in ${SHAPES:-llama3-8b-tp1 deepseek-mla-bf16}; do
    uptime
    "$java_home/bin/java" -Xmx2g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
        -cp "$out:$jar" io.kvchecksum.internal.FusedCacheAb "$shape" 1MiB "$rounds" 2>&1 | grep -v '^WARNING'
done
