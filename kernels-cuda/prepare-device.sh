#!/usr/bin/env bash
# Prepares what kernels-cuda/device-check.sh needs on a GPU machine that has no JDK and no Maven.
# Run on a build machine (JDK 25, Maven, nvcc) in a checkout, from anywhere:
#   kernels-cuda/prepare-device.sh [MAVEN ARGS...]      e.g. -Dmaven.repo.local=/tmp/empty-m2 (works from empty), -o
# One reactor build (bindings, golden, kernels-cuda, kernels-opencl with -am; nothing is installed into any Maven
# repository, so a clean or empty one works), then, in the repository root:
#   .device/jre.tar.xz  a jlinked Java runtime (only the modules the check uses), xz-compressed to fit the carry
#   .device/lib   the kernels jars (with the fatbin), their test classes, and every dependency; the golden vectors are
#                 left out of the golden jar, because golden/src/main/resources travels with the tree
# .device/ is git-ignored; pass it to the device tool with carry: [".device"]. The script fails if .device and the
# tracked files together reach 48 MiB (the device tool's limit is 64 MiB; the margin is for what a run brings back).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
export PATH=$JAVA_HOME/bin:$PATH:${CUDA_HOME:-/usr/local/cuda}/bin
limit=$((48 * 1024 * 1024))

rm -rf .device/lib .device/jre .device/jre.tar.xz
mkdir -p .device/lib
# package (not install) and copy the dependencies in the same reactor: sibling modules resolve from their target/.
# copy-dependencies runs for every module of the reactor, so test-only tools of the others (the fuzzer) are excluded.
mvn -B -ntp -q "$@" -pl kernels-cuda,kernels-opencl -am package -DskipTests \
  dependency:copy-dependencies -DincludeScope=test -Dmdep.useRepositoryLayout=false \
  -DexcludeArtifactIds=junit-jupiter,junit-jupiter-engine,junit-platform-engine,junit-jupiter-params,jazzer,jazzer-api,jazzer-junit \
  -DoutputDirectory="$root/.device/lib"
# the reactor's own artifacts (bindings and golden were copied as dependencies)
cp kernels-cuda/target/kvchecksum-kernels-cuda-*.jar kernels-opencl/target/kvchecksum-kernels-opencl-*.jar .device/lib/
rm -f .device/lib/*-tests.jar
jar --create --file .device/lib/kvchecksum-kernels-cuda-device-check.jar -C kernels-cuda/target/test-classes .
jar --create --file .device/lib/kvchecksum-kernels-opencl-device-check.jar -C kernels-opencl/target/test-classes io/kvchecksum/opencl

# the golden classes without the vectors (those come from golden/src/main/resources on the device)
for g in .device/lib/kvchecksum-golden-*.jar; do
  tmp=$(mktemp -d)
  (cd "$tmp" && jar --extract --file "$root/$g" && rm -rf vectors)
  rm "$g"
  jar --create --file "$g" -C "$tmp" .
  rm -rf "$tmp"
done

jlink --add-modules java.base,java.logging,jdk.unsupported,jdk.incubator.vector \
  --strip-debug --no-header-files --no-man-pages --compress=zip-9 --output .device/jre
# jlink keeps libjvm's symbol tables (~5 MiB); the check needs none of them
strip --strip-unneeded .device/jre/lib/server/libjvm.so

# JNA's jar carries its native library for ~30 platforms; the device is linux-x86-64
for j in .device/lib/jna-*.jar; do
  tmp=$(mktemp -d)
  # platform directories are named os-arch (linux-x86-64, win32-x86, darwin-aarch64); packages have no dash
  (cd "$tmp" && jar --extract --file "$root/$j" && find com/sun/jna -mindepth 1 -maxdepth 1 -type d -name '*-*' \
    ! -name linux-x86-64 -exec rm -rf {} +)
  rm "$j"
  jar --create --file "$j" --manifest "$tmp/META-INF/MANIFEST.MF" -C "$tmp" . 2>/dev/null || jar --create --file "$j" -C "$tmp" .
  rm -rf "$tmp"
done
# libjvm.so alone is ~24 MiB: carry the runtime as one xz archive (~3x smaller); device-check.sh unpacks it.
tar -C .device -cJf .device/jre.tar.xz jre
rm -rf .device/jre

carried=$(du -sb .device | cut -f1)
tracked=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total=$((carried + tracked))
awk -v c="$carried" -v t="$tracked" -v l="$limit" 'BEGIN {
  printf "prepare-device: .device %.1f MiB + tracked files %.1f MiB = %.1f MiB (budget %d MiB)\n", c / 1048576, t / 1048576, (c + t) / 1048576, l / 1048576 }'
if [[ $total -ge $limit ]]; then
  echo "prepare-device: FAILED: .device and the tracked files come to $total bytes, over the $limit-byte budget" >&2
  du -sh .device/jre .device/lib >&2
  exit 1
fi
