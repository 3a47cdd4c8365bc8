#!/usr/bin/env bash
# The mixer from memory in one, two or four streams of each 32 KiB block (jmh/ab/MixedStreamsAb.java): docs/bench-cpu.md,
# "On Intel (Emerald Rapids): the mixer". Builds jmh/target/benchmarks.jar when missing or stale. Extra JVM flags follow.
#
#   jmh/ab/mixed-streams-ab.sh [MiB] [rounds] [threads] [jvm flags...]     # default 1024 MiB, 11 rounds, 1 thread
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
mib=${1:-1024}
rounds=${2:-11}
threads=${3:-1}
shift 3 || shift $# || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/MixedStreamsAb.java"
"$java_home/bin/java" -Xmx2g --add-modules jdk.incubator.vector "$@" \
    -cp "$out:$jar" io.kvchecksum.internal.MixedStreamsAb "$mib" "$rounds" "$threads" 2>&1 | grep -v '^WARNING'
