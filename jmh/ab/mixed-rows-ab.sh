#!/usr/bin/env bash
# The mixed mode's row pass against the head-by-head loops it replaced, with the standard mode and the project's read
# bound's readers alongside (the bound: the fastest of them), and the mixed mode as it ships, in one JVM per case (jmh/ab/MixedRowsAb.java; ratios of wall time and of CPU time per call):
# docs/bench-cpu.md, "Mixed mode cost". Builds jmh/target/benchmarks.jar when missing or stale. Threads: all processors (as the backend ships); extra JVM flags follow the rounds, e.g. -XX:UseAVX=2.
#
#   [TURNS="mixed streams2"] [SIZES="1MiB 128MiB"] jmh/ab/mixed-rows-ab.sh [rounds] [jvm flags...]   # default 41 rounds: llama3-8b-tp1, 1MiB and
#   128MiB (4x the 32 MiB LLC of the development VM)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-41}
shift || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/MixedRowsAb.java" "$root/jmh/ab/MixerPrevKernel.java" "$root/jmh/ab/MixerTwoKernel.java" \
    "$root/jmh/ab/MixerTouchKernel.java"
threads=$(nproc)
for size in ${SIZES:-1MiB 128MiB}; do
    uptime
    "$java_home/bin/java" -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED ${TURNS:+-Dturns="$TURNS"} "$@" \
        -cp "$out:$jar" io.kvchecksum.internal.MixedRowsAb llama3-8b-tp1 "$size" "$threads" "$rounds" 2>&1 | grep -v '^WARNING'
done
