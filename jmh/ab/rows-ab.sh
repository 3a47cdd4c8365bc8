#!/usr/bin/env bash
# The row pass against the head-by-head loops it replaced, in one JVM per case (jmh/ab/RowsAb.java), with the project's
# read bound alongside: docs/bench-cpu.md, "Side-by-side heads from memory". Builds jmh/target/benchmarks.jar when
# missing or stale. Threads: all processors (as the backend ships); extra JVM flags follow the rounds, e.g. -XX:UseAVX=2.
#
#   jmh/ab/rows-ab.sh [rounds] [jvm flags...]      # default 41 rounds: llama3-8b-tp1 at 1MiB, 256MiB and 1GiB
#   SIZES=1GiB jmh/ab/rows-ab.sh 41                # only some of the sizes
#   SHAPE=deepseek-mla-bf16 SIZES=1GiB jmh/ab/rows-ab.sh 41 -Drowsab.reads=mread1,mread2,mone   # MLA's block streams
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-41}
shift || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/RowsAb.java"
threads=$(nproc)
for size in ${SIZES:-1MiB 256MiB 1GiB}; do
    uptime
    "$java_home/bin/java" -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
        -cp "$out:$jar" io.kvchecksum.internal.RowsAb "${SHAPE:-llama3-8b-tp1}" "$size" "$threads" "$rounds" 2>&1 | grep -v '^WARNING'
done
