#!/usr/bin/env bash
# Row-pass forms for the mixed mode from memory that were measured and not shipped, against the shipped row pass, one
# JVM per variant, the JVMs alternating (jmh/ab/MixedVariantsAb.java): docs/bench-cpu.md, "Mixed mode cost". Builds
# jmh/target/benchmarks.jar when missing or stale. Threads: all processors; extra JVM flags follow, e.g. -XX:UseAVX=2.
#
#   [SIZE=128MiB] [VARIANTS="rows touch pagetouch narrow two regs units halves quarters scratch"] jmh/ab/mixed-variants-ab.sh [reps] [rounds] [jvm flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
reps=${1:-3}
rounds=${2:-15}
shift 2 || shift $# || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/MixedVariantsAb.java"
for r in $(seq "$reps"); do
    for v in ${VARIANTS:-rows touch pagetouch narrow two}; do
        echo -n "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) "
        "$java_home/bin/java" -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Dvariant="$v" "$@" \
            -cp "$out:$jar" io.kvchecksum.internal.MixedVariantsAb llama3-8b-tp1 "${SIZE:-128MiB}" "$(nproc)" "$rounds" 2>&1 \
            | grep -v '^WARNING'
    done
done
