#!/usr/bin/env bash
# CopyTurns (the verifying copy against MemorySegment.copy and a vector copy of the same page runs) with two builds, in
# interleaved whole processes, native and -XX:UseAVX=2, one thread timed by its CPU time (a loaded machine's
# descheduling does not count): docs/bench-cpu.md, "The verifying copy in cache: bounds checks". Prints each run's
# copy/baseline ratios (mins, medians) under a header naming round, width, build and load.
#
# Build the jar of the commit before a change apart from the worktree, e.g.
#   git archive 3cc9601 | tar -x -C /tmp/old && (cd /tmp/old && mvn -o -q -pl jmh -am package -DskipTests \
#       -Dkvchecksum.skipCuda=true -Dexec.skip=true)
#   jmh/ab/copy-turns-ab.sh /tmp/old/jmh/target/benchmarks.jar jmh/target/benchmarks.jar [rounds] [sizes] [reps]
# (defaults: 3 rounds, 1MiB,256MiB, 21 repetitions; shapes llama3-8b-tp1 and deepseek-mla-bf16, perm and hnd).
# Environment: SHAPES, CONVERSIONS (perm,hnd), WIDTHS ("native avx2"), THREADS (1: CPU time of the calling thread;
# more: that many threads on the wall clock, as the README's numbers of record), OLD_FLAGS / NEW_FLAGS (JVM flags of
# one side only, e.g. a -D switch when both sides are one jar).
set -euo pipefail
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
old=$1
new=$2
rounds=${3:-3}
sizes=${4:-1MiB,256MiB}
reps=${5:-21}
for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then order="old new"; else order="new old"; fi
    for width in ${WIDTHS:-native avx2}; do
        for v in $order; do
            flags=()
            [[ $width == avx2 ]] && flags=(-XX:UseAVX=2)
            jar=$old
            side=${OLD_FLAGS:-}
            [[ $v == new ]] && jar=$new && side=${NEW_FLAGS:-}
            threads=${THREADS:-1}
            clock=(-Dcopy.threads="$threads")
            (( threads == 1 )) && clock+=(-Dcopy.cpuTime=true)
            echo "=== round $r $width $v ${side} threads $threads $(uptime | sed 's/.*load/load/')"
            "$java_home/bin/java" --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector "${flags[@]}" \
                "${clock[@]}" $side -cp "$jar" io.kvchecksum.jmh.CopyTurns \
                "${SHAPES:-llama3-8b-tp1,deepseek-mla-bf16}" "$sizes" "${CONVERSIONS:-perm,hnd}" "$reps" 2>&1 \
                | grep -E 'MB copied|copy/baseline|^cpu|^  (memcopy|vectorcopy|copy) ' || true
        done
    done
done
