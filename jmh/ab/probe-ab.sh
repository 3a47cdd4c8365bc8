#!/usr/bin/env bash
# The page probe's host loop against the full pass, its own variants and a plain read of exactly its windows in the
# same order, in one JVM per case (jmh/ab/ProbeAb.java): docs/bench-cpu.md, "Page probe cost". Builds
# jmh/target/benchmarks.jar when missing or stale. Extra arguments after the sides: `huge` (madvise the cache
# MADV_HUGEPAGE before filling it), then JVM flags.
#
#   jmh/ab/probe-ab.sh [rounds] [sides] [huge|nohuge] [jvm flags...]
#       default: 41 rounds, full,ship,onePage,bound; vllm-flash-16 and sglang-1 at 256MiB
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-41}
sides=${2:-full,ship,onePage,bound}
huge=${3:-nohuge}
shift 3 || shift $#
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab-probe
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/ProbeAb.java"
for layout in ${LAYOUTS:-vllm-flash-16 sglang-1}; do
    uptime
    "$java_home/bin/java" -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
        -cp "$out:$jar" io.kvchecksum.ProbeAb "$layout" "${SIZE:-256MiB}" "$rounds" "$sides" "$huge" 2>&1 | grep -v '^WARNING'
done
