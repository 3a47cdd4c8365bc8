#!/usr/bin/env bash
# The CUDA backend's device check, for a lent GPU machine (H100/H200) with a driver but no JDK or Maven.
# Prepare on a build machine first: kernels-cuda/prepare-device.sh (writes .device/, carried to the device).
# Runs, in at most ~8 minutes: the golden suite through the real CUDA backend (host and device memory), random
# layouts against the reference backend, a recorded enqueue on the real driver (no synchronizing call), and a
# throughput sweep of the fused kernel (Llama-3-8B TP1, Llama-3-70B TP8, DeepSeek MLA bf16/fp8; 16 to 131072
# tokens) against a plain reduction and a device-to-device copy of the same bytes, with the host time of one
# enqueue. Then the golden suite through the OpenCL backend on the GPU's OpenCL driver (or a plain statement that
# there is none), and, if torch or cupy is installed, an independent read-bandwidth reference.
# The report goes to kernels-cuda/results/device-check-<UTC date>.txt and, when $OUT is set (device tool), to $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
java=.device/jre/bin/java
if [[ ! -x $java ]]; then
  echo "device-check: $java is missing: run kernels-cuda/prepare-device.sh on a build machine and carry .device" >&2
  exit 2
fi
mkdir -p kernels-cuda/results
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
report=kernels-cuda/results/device-check-$stamp.txt
{
  echo "# nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv 2>&1 || echo "(nvidia-smi unavailable)"
} > "$report.smi"
timeout 420 "$java" --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -Xmx8g \
  -cp "golden/src/main/resources:.device/lib/*" io.kvchecksum.cuda.DeviceCheck "$report" "$@"
rc=$?
cat "$report.smi" >> "$report" && rm -f "$report.smi"
# The OpenCL backend on this machine's OpenCL driver, when there is one; it says so plainly when there is none.
{
  echo; echo "# OpenCL backend (golden suite on the local OpenCL driver)"
  JAVA=$java KVCHECKSUM_OPENCL_CP="golden/src/main/resources:.device/lib/*" timeout 120 sh kernels-opencl/device-check.sh 2>&1
  echo "(opencl device check exit $?: 0 passed, 1 a vector failed, 2 no OpenCL here, 3 set-up failed)"
} >> "$report"
if command -v python3 >/dev/null; then
  timeout 60 python3 kernels-cuda/src/build/readbound.py >> "$report" 2>&1 || echo "(python read bound: failed or unavailable)" >> "$report"
fi
if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then
  cp "$report" "$OUT/"
fi
echo "device-check: report in $report (exit $rc)"
exit $rc
