#!/usr/bin/env bash
# Whether the mixed kernel's 2 KiB row passes compile at every tier (jmh/ab/MixerCompileCheck.java): runs the check with
# -XX:+PrintCompilation and the JVM flags given (e.g. -XX:TieredStopAtLevel=3, -XX:-TieredCompilation), prints the
# compiles of the row passes and every COMPILE SKIPPED line. docs/bench-cpu.md, "On Intel (Emerald Rapids): two
# streams every tier compiles".
#
#   [FORMS=012] jmh/ab/mixer-compile-check.sh [seconds per phase] [jvm flags...]   # FORMS: 0 rowTwo, 1 the A/B copy
#   MixerTouchKernel.rowTwo, 2 rowRegs, 3 MixerTouchKernel.rowFour (16 mixers), 4 rowFourHalves (four streams, 8 mixers), 5 the shipped
#   MixedVectorSliceKernel.rowFour (the same body as 4), 6 MixerTouchKernel.rowFourRegs
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
seconds=${1:-4}
shift || true
source "$root/jmh/benchmarks-jar.sh"
out=$root/jmh/target/ab
mkdir -p "$out"
compile_ab "$out" "$root/jmh/ab/MixerCompileCheck.java" "$root/jmh/ab/MixerTouchKernel.java"
log=$("$java_home/bin/java" --add-modules jdk.incubator.vector -XX:+PrintCompilation "$@" -cp "$out:$jar" \
    io.kvchecksum.internal.MixerCompileCheck "$seconds" "${FORMS:-012}" 2>&1 | grep -v '^WARNING')
echo "flags: $* forms: ${FORMS:-012}"
echo "$log" | grep -E "::row(Two|Regs|Four|FourHalves|FourRegs) " || true
echo "$log" | grep -v '::' | grep -v '^ ' || true
echo "COMPILE SKIPPED lines: $(echo "$log" | grep -c 'COMPILE SKIPPED' || true)"
echo "$log" | grep 'COMPILE SKIPPED' || true
