#!/usr/bin/env bash
# Loop shapes for the prepared plans' in-cache calls against the loops before them and the project's read bound, one JVM
# per shape, interleaved (jmh/ab/KernelShapesAb.java: Llama-3-8B TP1; jmh/ab/MlaShapesAb.java: DeepSeek MLA bf16; both
# at 1MiB; with -XX:UseAVX=2 also jmh/ab/EightQuadsAb.java: Llama-3-8B's eight-vector cells four heads per iteration):
# docs/bench-cpu.md, "What the loops do, and what each was worth". Builds jmh/target/benchmarks.jar when
# missing or stale. Extra JVM flags follow the rounds, e.g. -XX:UseAVX=2.
#
#   jmh/ab/in-cache-shapes-ab.sh [rounds] [jvm flags...]   # default 2001 rounds
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-2001}
shift || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab-shapes
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/KernelShapesAb.java" "$root/jmh/ab/MlaShapesAb.java" "$root/jmh/ab/EightQuadsAb.java"
classes="KernelShapesAb MlaShapesAb"
[[ " $* " == *" -XX:UseAVX=2 "* ]] && classes="$classes EightQuadsAb"
for cls in $classes; do
    uptime
    "$java_home/bin/java" -Xmx2g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
        -cp "$out:$jar" "io.kvchecksum.internal.$cls" "$rounds" 2>&1 | grep -v '^WARNING'
done
