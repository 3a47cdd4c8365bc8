#!/usr/bin/env bash
# Prepares what kernels-cuda/device-check.sh needs on a GPU machine that has no JDK and no Maven.
# Run on a build machine (JDK 25, Maven, nvcc, xz) in a checkout, from anywhere:
#   kernels-cuda/prepare-device.sh [MAVEN ARGS...]      e.g. -Dmaven.repo.local=/tmp/empty-m2 (works from empty), -o
# One reactor build (bindings, golden, kernels-cuda, kernels-opencl with -am; nothing is installed into any Maven
# repository, so a clean or empty one works), then, in the repository root, one file:
#   .device/device.tar.xz  jre/: a jlinked Java runtime (only the modules the check uses); lib/: the kernels jars
#                 (with the fatbin), their test classes and every dependency, the golden jar without the vectors
#                 (golden/src/main/resources travels with the tree). Nothing in it is compressed twice: the runtime's
#                 modules and the jars are stored uncompressed, so xz compresses across them (about 16 MiB in all,
#                 against 25 MiB for a zip-compressed runtime and jars).
# .device/ is git-ignored; pass it to the device tool with carry: [".device"]. The carry (tracked files, untracked
# files git does not ignore, and .device) must stay at or under 44 MiB (kernels-cuda/carry-size.sh; the device tool
# takes 64 MiB, the rest is room for new golden vectors): the script fails above that.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
export PATH=$JAVA_HOME/bin:$PATH:${CUDA_HOME:-/usr/local/cuda}/bin
command -v xz >/dev/null || { echo "prepare-device: FAILED: xz is needed on the build machine (apt-get install xz-utils)" >&2; exit 1; }
t=$SECONDS
phase() { echo "prepare-device: $1 in $((SECONDS - t))s"; t=$SECONDS; }

rm -rf .device
stage=.device/stage
mkdir -p "$stage/lib"
# package (not install) and copy the dependencies in the same reactor: sibling modules resolve from their target/.
# copy-dependencies runs for every module of the reactor, so test-only tools of the others (the fuzzer) are excluded.
mvn -B -ntp -q "$@" -pl kernels-cuda,kernels-opencl -am package -DskipTests \
  dependency:copy-dependencies -DincludeScope=test -Dmdep.useRepositoryLayout=false \
  -DexcludeArtifactIds=junit-jupiter,junit-jupiter-engine,junit-platform-engine,junit-jupiter-params,jazzer,jazzer-api,jazzer-junit \
  -DoutputDirectory="$root/$stage/lib"
phase "built (mvn package)"
# the reactor's own artifacts (bindings and golden were copied as dependencies)
cp kernels-cuda/target/kvchecksum-kernels-cuda-*.jar kernels-opencl/target/kvchecksum-kernels-opencl-*.jar "$stage/lib/"
rm -f "$stage"/lib/*-tests.jar
jar --create --file "$stage/lib/kvchecksum-kernels-cuda-device-check.jar" -C kernels-cuda/target/test-classes .
jar --create --file "$stage/lib/kvchecksum-kernels-opencl-device-check.jar" -C kernels-opencl/target/test-classes io/kvchecksum/opencl

# Every jar rewritten uncompressed (xz does better over the raw classes and the fatbin than over deflate's output):
# the golden jar without the vectors (every directory of golden/src/main/resources: the device reads them from the
# tree), JNA's without its native libraries for the ~30 other platforms (the device is linux-x86-64).
for j in "$stage"/lib/*.jar; do
  tmp=$(mktemp -d)
  (cd "$tmp" && jar --extract --file "$root/$j")
  case $(basename "$j") in
    kvchecksum-golden-*)
      for r in golden/src/main/resources/*; do rm -rf "${tmp:?}/$(basename "$r")"; done ;;
    jna-*)  # platform directories are named os-arch (linux-x86-64, win32-x86, darwin-aarch64); packages have no dash
      find "$tmp/com/sun/jna" -mindepth 1 -maxdepth 1 -type d -name '*-*' ! -name linux-x86-64 -exec rm -rf {} + ;;
  esac
  rm "$j"
  if [[ -f $tmp/META-INF/MANIFEST.MF ]]; then
    jar --create --no-compress --file "$j" --manifest "$tmp/META-INF/MANIFEST.MF" -C "$tmp" .
  else
    jar --create --no-compress --file "$j" -C "$tmp" .
  fi
  rm -rf "$tmp"
done
phase "jars repacked"

# zip-0: the modules file uncompressed, for xz (zip-9 then xz: 19 MiB; zip-0 then xz: 12 MiB)
jlink --add-modules java.base,java.logging,jdk.unsupported,jdk.incubator.vector \
  --strip-debug --no-header-files --no-man-pages --compress=zip-0 --output "$stage/jre" 2>&1 \
  | grep -v -x 'WARNING: Using incubator modules: jdk.incubator.vector' || true
# jlink keeps libjvm's symbol tables (~5 MiB); the check needs none of them
strip --strip-unneeded "$stage/jre/lib/server/libjvm.so"
phase "runtime linked (jlink)"
# One archive; device-check.sh unpacks it with xz, or with Python's tarfile/lzma where there is no xz binary.
tar -C "$stage" -cf - jre lib | xz -9 -T1 > .device/device.tar.xz
rm -rf "$stage"
phase "packed (xz -9)"
kernels-cuda/carry-size.sh
