#!/usr/bin/env bash
# The verifying copy's loops before this change (jmh/ab/VectorCopyLoopOld.java) against the backend's, with
# MemorySegment.copy of the same pages and a plain move of the same cells (no sums), on one thread in cache, in one JVM per conversion (jmh/ab/CopyLoopsAb.java):
# docs/bench-cpu.md, "The verifying copy in cache: bounds checks". Builds jmh/target/benchmarks.jar when missing or
# stale. Extra JVM flags follow the rounds, e.g. -XX:UseAVX=2.
#
#   jmh/ab/copy-loops-ab.sh [rounds] [jvm flags...]      # default 201 rounds: perm and hnd
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-201}
shift || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab-copy
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/CopyLoopsAb.java" "$root/jmh/ab/VectorCopyLoopOld.java"
for conversion in ${CONVERSIONS:-perm hnd}; do
    uptime
    "$java_home/bin/java" -Xmx1g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
        -cp "$out:$jar" io.kvchecksum.internal.CopyLoopsAb "$conversion" "$rounds" 2>&1 | grep -v '^WARNING'
done
