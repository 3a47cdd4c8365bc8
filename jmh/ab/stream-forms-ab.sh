#!/usr/bin/env bash
# Forms of a contiguous stream's loop alone in cache, one thread, in turn in one JVM (jmh/ab/StreamFormsAb.java):
# docs/bench-cpu.md, "On Intel (Emerald Rapids): the fused pass". Builds jmh/target/benchmarks.jar when missing or
# stale. Extra JVM flags follow the calls, e.g. -XX:UseAVX=2.
#
#   jmh/ab/stream-forms-ab.sh [bytes] [rounds] [calls] [jvm flags...]   # default 1048576 bytes, 3001 rounds, 1 call
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
bytes=${1:-1048576}
rounds=${2:-3001}
calls=${3:-1}
shift 3 || shift $#
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/StreamFormsAb.java"
uptime
"$java_home/bin/java" -Xmx1g --add-modules jdk.incubator.vector "$@" -cp "$out:$jar" io.kvchecksum.internal.StreamFormsAb \
    "$bytes" "$rounds" "$calls" 2>&1 | grep -v '^WARNING'
