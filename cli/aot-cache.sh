#!/usr/bin/env bash
# Writes JDK 25's AOT cache for the launcher's one-shot commands next to the jar (run by `mvn package`, cli/pom.xml):
# picocli's classes rewritten as Java 8 class files first (below), a training run of `sum` on a small dump records
# which classes load and link (JEP 483, 514, 515), a second JVM writes
# the cache from that record. Usage: cli/aot-cache.sh JAVA JAR TRAINING_DUMP
# Leaves JAR's directory with kvchecksum.aot and kvchecksum.aot.jdk (the JDK that wrote it: cli/kvchecksum uses the
# cache only with that JDK), or neither. Exit 0 either way: without a cache the launcher starts a little slower, which
# is no reason to fail a build; what went wrong is in this script's output (target/kvchecksum-aot.log under Maven).
set -uo pipefail
java=$1 jar=$2 dump=$3
dir=$(cd "$(dirname "$jar")" && pwd)
jar=$dir/$(basename "$jar")
aot=$dir/kvchecksum.aot
conf=$dir/kvchecksum.aotconf
rm -f "$aot" "$aot.jdk" "$conf"
# The flags of cli/kvchecksum for one-shot commands: a cache maps only into a JVM started with the same class path,
# garbage collector and modules. Crash reports of the JVM (a JDK bug) go here, not into the working directory.
flags=(-XX:+UseSerialGC -XX:Tier4BackEdgeThreshold=1000000 -XX:ErrorFile="$dir/hs_err_aot_%p.log" -Dkvchecksum.reexec=false)
# picocli's class files are version 49 (Java 5): the cache leaves such classes out, and loading and verifying them is
# most of a one-shot command's start-up. cli/UpgradeClassFiles.java rewrites them as version 52 with stack maps (the
# same code; each one verified by the JVM, or put back) in a copy of the jar, which replaces the jar only when it
# prints the same as the jar for a `sum` (one picocli reads: --verbose) and for `--help`.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
copy=$dir/kvchecksum-upgrading.jar
cp -p "$jar" "$copy"
if "$java" "$here/UpgradeClassFiles.java" "$copy" /picocli \
   && [[ "$("$java" "${flags[@]}" -jar "$copy" sum "$dump" --block-size 16 --verbose 2>&1)" \
         == "$("$java" "${flags[@]}" -jar "$jar" sum "$dump" --block-size 16 --verbose 2>&1)" ]] \
   && [[ "$("$java" "${flags[@]}" -jar "$copy" --help 2>&1)" == "$("$java" "${flags[@]}" -jar "$jar" --help 2>&1)" ]]; then
  mv -f "$copy" "$jar"
else
  echo "aot-cache.sh: picocli's classes stay as they were"
  rm -f "$copy"
fi
# --verbose: a command line QuickSum leaves to picocli, so that the cache holds picocli's classes for every other
# command too (QuickSum's own few classes load either way: it is asked first).
if ! "$java" -XX:AOTMode=record -XX:AOTConfiguration="$conf" "${flags[@]}" -jar "$jar" sum "$dump" --block-size 16 -q \
     --verbose; then
  echo "aot-cache.sh: the training run failed; no AOT cache"
  rm -f "$conf"
  exit 0
fi
if ! "$java" -XX:AOTMode=create -XX:AOTConfiguration="$conf" -XX:AOTCache="$aot" "${flags[@]}" -cp "$jar" \
    || [[ ! -s "$aot" ]]; then
  echo "aot-cache.sh: this JDK did not write the AOT cache; the launcher runs without it"
  rm -f "$aot" "$conf"
  exit 0
fi
rm -f "$conf"
# The JDK that wrote it, as cli/kvchecksum names the JDK it found: its home and its runtime version.
home=$(dirname "$(dirname "$(readlink -f "$java")")")
echo "$home $(sed -n 's/^JAVA_RUNTIME_VERSION="\(.*\)"/\1/p' "$home/release" 2>/dev/null)" > "$aot.jdk"
echo "aot-cache.sh: wrote $aot for $(cat "$aot.jdk")"
