#!/usr/bin/env bash
# Prepares what kernels-cuda/device-check.sh needs on a GPU machine that has no JDK and no Maven.
# Run on a build machine (JDK 25, Maven, nvcc), from anywhere. Produces, in the repository root:
#   .device/jre   a jlinked Java runtime (only the modules the check uses)
#   .device/lib   the kernels-cuda jar (with the fatbin), its test classes, and every dependency; the golden
#                 vectors are left out of the golden jar, because golden/src/main/resources travels with the tree
# .device/ is git-ignored; pass it to the device tool with carry: [".device"]. Keep it under ~40 MiB: the working
# tree (with the 14 MiB of golden vectors) and the carried paths share a 64 MiB limit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
export PATH=$JAVA_HOME/bin:$PATH

mvn -q -pl kernels-cuda install -DskipTests
rm -rf .device/lib .device/jre
mkdir -p .device/lib
mvn -q -pl kernels-cuda dependency:copy-dependencies -DincludeScope=test -DexcludeArtifactIds=junit-jupiter,junit-jupiter-engine,junit-platform-engine,junit-jupiter-params \
  -DoutputDirectory="$root/.device/lib"
cp kernels-cuda/target/kvchecksum-kernels-cuda-*.jar .device/lib/
# the OpenCL backend too, so the device script also runs the golden suite on the GPU's OpenCL driver
mvn -q -pl kernels-opencl install -DskipTests
cp kernels-opencl/target/kvchecksum-kernels-opencl-*.jar kernels-opencl/target/lib/jocl-*.jar .device/lib/
jar --create --file .device/lib/kvchecksum-kernels-opencl-device-check.jar -C kernels-opencl/target/test-classes io/kvchecksum/opencl
jar --create --file .device/lib/kvchecksum-kernels-cuda-device-check.jar -C kernels-cuda/target/test-classes .

# the golden classes without the vectors (those come from golden/src/main/resources on the device)
g=$(ls "$root"/.device/lib/kvchecksum-golden-*.jar)
tmp=$(mktemp -d)
(cd "$tmp" && jar --extract --file "$g" && rm -rf vectors)
rm "$g"
jar --create --file "$g" -C "$tmp" .
rm -rf "$tmp"

jlink --add-modules java.base,java.logging,jdk.unsupported,jdk.incubator.vector \
  --strip-debug --no-header-files --no-man-pages --compress=zip-9 --output .device/jre
# jlink keeps libjvm's symbol tables (~5 MiB); the check needs none of them
strip --strip-unneeded .device/jre/lib/server/libjvm.so
du -sh .device/jre .device/lib .device
