#!/usr/bin/env bash
# The read bound's vector loops in cache against a copy of the loop before them, one JVM per case, interleaved
# (jmh/ab/ReadBoundAb.java): docs/bench-cpu.md, "On Intel (Emerald Rapids): the in-cache bound". Builds
# jmh/target/benchmarks.jar when missing or stale. Extra JVM flags follow the sides, e.g. -XX:UseAVX=2.
#
#   jmh/ab/read-bound-ab.sh [rounds] [passes] [sides] [jvm flags...]   # default 2001 rounds of 1 pass, every side
#   SHAPES=deepseek-mla-bf16 jmh/ab/read-bound-ab.sh 2001 1 old,bound
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-2001}
passes=${2:-1}
sides=${3:-}
shift 3 || shift $#
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab-bound
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/ReadBoundAb.java"
for shape in ${SHAPES:-llama3-8b-tp1 deepseek-mla-bf16}; do
    uptime
    "$java_home/bin/java" -Xmx2g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
        -cp "$out:$jar" io.kvchecksum.bench.ReadBoundAb "$shape" "${SIZE:-1MiB}" "$rounds" "$passes" $sides 2>&1 | grep -v '^WARNING'
done
