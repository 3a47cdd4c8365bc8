#!/usr/bin/env bash
# The CUDA backend's device check, for a lent GPU machine (H100/H200) with a driver but no JDK or Maven.
# Prepare on a build machine first: kernels-cuda/prepare-device.sh (writes .device/, carried to the device).
#
# Usage: kernels-cuda/device-check.sh [--quick] [--dry-run]
#   full check at most 5 minutes, --quick at most 2; every step has its own timeout, and the report is written line
#   by line from the first second into $OUT (device tool) or else kernels-cuda/results/, so a timeout still returns
#   everything measured so far. --dry-run runs the same program on the CPU-simulated driver (CI: timings meaningless).
# Steps: golden suite through the real CUDA backend (host and device memory); random layouts against the reference;
# a recorded enqueue on the real driver (no synchronizing call); the sweep of the fused kernel per shape and size
# against a read kernel of the same bytes and cudaMemcpy device-to-device, with the host time of one enqueue and the
# synchronizing calls it made; the interference with a memory-bound kernel on another stream; the OpenCL golden
# suite on the GPU's OpenCL driver (full mode); an independent torch/cupy read bound when python has one (full mode).
# Writes device-check-<UTC date>.txt (the log), .json (GPU, driver, clocks and every measurement) and .md (the table).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=0 dry=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    --dry-run) dry=1 ;;
    *) echo "device-check: unknown argument $a (use --quick, --dry-run)" >&2; exit 64 ;;
  esac
done
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
dir=${OUT:-kernels-cuda/results}
mkdir -p "$dir"
base=$dir/device-check-$stamp
report=$base.txt
say() { echo "$*" | tee -a "$report"; }
say "# kvchecksum CUDA device check $stamp (quick=$quick, dry-run=$dry); $(git rev-parse --short HEAD 2>/dev/null || echo 'no git')"
java=.device/jre/bin/java
if [[ ! -x $java && -f .device/jre.tar.xz ]]; then  # prepare-device.sh carries the runtime compressed
  jre=${TMPDIR:-/tmp}/kvchecksum-jre-$(cksum < .device/jre.tar.xz | cut -d' ' -f1)
  # without an xz binary (tar -J needs one), Python's tarfile reads the .xz itself (its lzma module)
  if [[ ! -x $jre/jre/bin/java ]]; then
    mkdir -p "$jre"
    if command -v xz >/dev/null 2>&1; then
      tar -C "$jre" -xJf .device/jre.tar.xz
    else
      python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1], "r:xz")
t.extractall(sys.argv[2], **({"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}))' \
        .device/jre.tar.xz "$jre"
    fi
  fi
  java=$jre/jre/bin/java
  say "java runtime unpacked from .device/jre.tar.xz into $jre ($((SECONDS))s)"
fi
if [[ ! -x $java ]]; then
  say "device-check: no Java runtime in .device: run kernels-cuda/prepare-device.sh on a build machine and carry .device"
  exit 2
fi
t0=$SECONDS
gpu="(dry run: no GPU)" smi="" drv="" clocks=""
if [[ $dry -eq 0 ]]; then
  smi=$(timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.memory,clocks.sm,clocks.mem \
    --format=csv,noheader 2>&1 | head -n 1) || smi="(nvidia-smi unavailable)"
  say "nvidia-smi: $smi"
  IFS=, read -r gpu drv _ c1 c2 c3 c4 <<<"$smi"
  clocks="max sm$c1, max mem$c2, now sm$c3, now mem$c4"
fi
jvm=("$java" --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -Xmx8g -cp "golden/src/main/resources:.device/lib/*")
if [[ $dry -eq 1 ]]; then
  jvm+=(-Dkvchecksum.deviceCheck.fake=kernels-cuda/target/native/libkvchecksum_host.so -Dkvchecksum.deviceCheck.maxTokens=512)
fi
qflag=() ; [[ $quick -eq 1 ]] && qflag=(--quick)
failed=0
step() {  # name timeout-seconds
  local name=$1 limit=$2 s=$SECONDS rc
  say ""
  say "## step $name (timeout ${limit}s, $((SECONDS - t0))s into the check)"
  timeout -k 5 "$limit" "${jvm[@]}" io.kvchecksum.cuda.DeviceCheck "$report" "$name" "${qflag[@]}" >/dev/null 2>>"$base.err"
  rc=$?
  say "step $name: exit $rc$([[ $rc -eq 124 || $rc -eq 137 ]] && echo ' (TIMED OUT)') after $((SECONDS - s))s"
  [[ $rc -eq 0 ]] || failed=$((failed + 1))
}
if [[ $quick -eq 1 ]]; then
  step golden 40; step random 10; step recorded 10; step sweep 45; step interference 15
else
  step golden 75; step random 30; step recorded 20; step sweep 110; step interference 30
  say ""
  say "## step opencl (timeout 20s): the golden suite through the OpenCL backend on this machine's OpenCL driver"
  JAVA=$java KVCHECKSUM_OPENCL_CP="golden/src/main/resources:.device/lib/*" timeout -k 5 20 sh kernels-opencl/device-check.sh >>"$report" 2>&1
  say "step opencl: exit $? (0 passed, 1 a vector failed, 2 no OpenCL here, 3 set-up failed, 124 timed out)"
  if [[ $dry -eq 0 ]] && command -v python3 >/dev/null; then
    say "## step python read bound (timeout 15s)"
    timeout -k 5 15 python3 kernels-cuda/src/build/readbound.py >>"$report" 2>&1 || say "(python read bound: failed or unavailable)"
  fi
fi

# The dated JSON and markdown, from the rows the steps appended.
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^ *//')"; }
{
  printf '{"date":%s,"gpu":%s,"driver":%s,"clocks":%s,"nvidiaSmi":%s,"quick":%d,"dryRun":%d,"failedSteps":%d,"seconds":%d,"rows":[\n' \
    "$(json_str "$stamp")" "$(json_str "$gpu")" "$(json_str "$drv")" "$(json_str "$clocks")" "$(json_str "$smi")" \
    "$quick" "$dry" "$failed" "$((SECONDS - t0))"
  [[ -f $base.jsonl ]] && paste -sd, "$base.jsonl"
  printf ']}\n'
} > "$base.json"
{
  echo "# kvchecksum CUDA device check, $stamp"
  echo
  echo "GPU: $gpu; driver: $drv; clocks: $clocks$([[ $dry -eq 1 ]] && echo ' (DRY RUN on the CPU-simulated driver: timings meaningless)')"
  echo
  echo "| shape | tokens | KV | fused us | fused GB/s | read GB/s | copy GB/s (r+w) | fused/read | fused/copy | enqueue us | enqueue us (reused plan) | sync calls in enqueues |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  [[ -f $base.md.rows ]] && cat "$base.md.rows"
  echo
  grep -E '^(golden suite|random layouts|recorded enqueue|engine kernel|checksum: |step .*: exit|RESULT)' "$report" | sed 's/^/    /'
} > "$base.md"
rm -f "$base.jsonl" "$base.md.rows"
# stderr of the steps, less the JVM's notice about the incubator module
if [[ -f $base.err ]]; then
  grep -v -x 'WARNING: Using incubator modules: jdk.incubator.vector' "$base.err" > "$base.err.tmp" || true
  mv "$base.err.tmp" "$base.err"
  [[ -s $base.err ]] || rm -f "$base.err"
fi
if [[ -n "${OUT:-}" ]]; then
  say "device-check: results in \$OUT; copy them into kernels-cuda/results/ of the repository"
fi
say "device-check: $failed failed step(s), $((SECONDS - t0))s; report $report, $base.json, $base.md"
[[ $failed -eq 0 ]]
