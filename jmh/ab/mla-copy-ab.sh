#!/usr/bin/env bash
# The verifying copy's MLA stream loop from memory against plain copies of the same pages, and candidate forms, in one
# JVM (jmh/ab/MlaCopyAb.java): docs/bench-cpu.md, "On Intel (Emerald Rapids): the copy's last cells". Builds
# jmh/target/benchmarks.jar when missing or stale. Extra JVM flags follow the rounds, e.g. -XX:UseAVX=2
# -Dab.threads=1 -Dab.candidates=NAME,NAME.
#
#   jmh/ab/mla-copy-ab.sh [MiB] [rounds] [jvm flags...]      # default 1024 MiB, 15 rounds, 2 threads
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
mib=${1:-1024}
rounds=${2:-15}
shift 2 || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab-mla-copy
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/MlaCopyAb.java"
uptime
"$java_home/bin/java" -Xmx1g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
    -cp "$out:$jar" io.kvchecksum.internal.MlaCopyAb "$mib" "$rounds" 2>&1 | grep -v '^WARNING'
uptime
