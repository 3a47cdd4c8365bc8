#!/usr/bin/env bash
# Exact forms of the mixed mode's mixer in L1, one JVM, the forms in rotating turns (jmh/ab/MixerFormsAb.java):
# docs/bench-cpu.md, "Mixed mode cost". Builds jmh/target/benchmarks.jar when missing or stale. Extra JVM flags follow
# the arguments, e.g. -XX:UseAVX=2.
#
#   [FORMS="prev shipped r3rot r3shl r3split r3early halves2 two"] jmh/ab/mixer-forms-ab.sh [rounds] [passes] [jvm flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-2001}
passes=${2:-20}
shift 2 || shift $# || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/MixerFormsAb.java" "$root/jmh/ab/MixerPrevKernel.java"
"$java_home/bin/java" -Xmx1g --add-modules jdk.incubator.vector ${FORMS:+-Dforms="$FORMS"} "$@" \
    -cp "$out:$jar" io.kvchecksum.internal.MixerFormsAb "$rounds" "$passes" 2>&1 | grep -v '^WARNING'
