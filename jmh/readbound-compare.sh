#!/usr/bin/env bash
# The project's read bound and fused CPU pass against an independent C reader (../shared/tools/readbound) at the same
# bytes and threads as ChecksumBench.blockChecksums' cases, interleaved (per case and round: readbound --no-huge
# --streams all, then one short JMH fork whose bound and pass are themselves sampled in turn), best of each over the rounds. Prints
# fused / C and project bound / C per case, flags a project bound below 0.95 of the C reader; exits 1 when flagged.
#
#   jmh/readbound-compare.sh [--shapes llama3-8b-tp1,deepseek-mla-bf16] [--sizes 1MiB,1GiB] [--rounds 2]
#                            [--repeats 15] [--min-ms 25] [--iterations 3] [--jvm-args "-XX:UseAVX=2"]
#
# From a fresh clone: builds jmh/target/benchmarks.jar (offline Maven) and readbound (gcc, into jmh/target/readbound/)
# when missing. KVC_SHARED names the shared directory (default: ../shared beside the repository); JAVA_HOME a JDK 25.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${KVC_SHARED:-$root/../shared}
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
src=$shared/tools/readbound
bin=$root/jmh/target/readbound/readbound
if [[ ! -x $src/build.sh ]]; then
    echo "readbound-compare: no $src/build.sh (set KVC_SHARED to the directory holding tools/readbound)" >&2
    exit 2
fi
if [[ ! -x $bin || $src/readbound.c -nt $bin ]]; then
    echo "readbound-compare: building readbound into $(dirname "$bin")" >&2
    "$src/build.sh" "$(dirname "$bin")" >&2
fi
source "$root/jmh/benchmarks-jar.sh"
cd "$root"
exec "$java_home/bin/java" --enable-native-access=ALL-UNNAMED -cp "$jar" io.kvchecksum.jmh.ReadBoundCompare \
    --readbound "$bin" "$@"
