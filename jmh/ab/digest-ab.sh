#!/usr/bin/env bash
# SGLang's page digest loops against the same-order page read (readPages), in one JVM per case, interleaved
# (jmh/ab/DigestAb.java): docs/bench-cpu.md, "SGLang's page digest". Builds jmh/target/benchmarks.jar when missing or
# stale. Extra JVM flags follow the arguments, e.g. -XX:UseAVX=2.
#
#   jmh/ab/digest-ab.sh [rounds] [loops] [sizes] [page size] [jvm flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
rounds=${1:-41}
loops=${2:-ship,stub,vec}
sizes=${3:-1MiB,256MiB}
page=${4:-1}
shift 4 || shift $#
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab-digest
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/DigestAb.java" "$root/jmh/ab/VectorAdler32Old.java" "$root/jmh/ab/VectorAdler32Five.java" \
    "$root/jmh/ab/VectorAdler32Prev.java" ${EXTRA_SRC:-}
for size in ${sizes//,/ }; do
    uptime
    "$java_home/bin/java" -Xmx2g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "$@" \
        -cp "$out:$jar" io.kvchecksum.internal.DigestAb "$size" "$page" "$rounds" "$loops" 2>&1 | grep -v '^WARNING'
done
