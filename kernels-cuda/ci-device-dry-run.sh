#!/usr/bin/env bash
# CI hook for the device check (called from .ci/run after the README check's fresh-clone build, so CI pays for one
# build): in a fresh clone,
#   1. prepare-device.sh from an EMPTY Maven repository (its phases timed), and the carry (tracked files + .device)
#      at most 44 MiB (kernels-cuda/carry-size.sh);
#   2. the preflight's CANNOT RUN lines, each within seconds and with a schema-valid JSON: carried runtime missing,
#      no NVIDIA driver, a driver older than the fatbin needs, no GPU (the last two through a stub libcuda);
#   3. device-check.sh --dry-run --quick on the CPU-simulated driver: it must pass within its 2-minute budget, every
#      stage inside its own budget, and leave .txt, .json and .md; the JSON is checked against
#      kernels-cuda/device-check.schema.json (standard-library Python) and must hold every kind of row;
#   4. the full mode, the runtime unpacked by Python (no xz binary on the device), the golden stage's budget cut to
#      3 s: that stage times out, the run goes on and the JSON says so (what a hung stage on the device leaves);
# then prints each stage's time and the carry size.
# Usage: kernels-cuda/ci-device-dry-run.sh [CLONE_DIR]   (CLONE_DIR: an existing fresh clone, e.g. the one
# .ci/readme-check.sh kept; default: a new clone of this checkout's HEAD in a temporary directory, removed after)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/kvchecksum-device-dry-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [[ $# -ge 1 ]]; then
  clone=$(cd "$1" && pwd)
else
  clone=$tmp/clone
  git clone -q "$root" "$clone"
fi
cd "$clone"
schema=kernels-cuda/device-check.schema.json
checker=kernels-cuda/src/build/check_device_json.py
fail() { echo "ci-device-dry-run: FAILED: $1" >&2; [[ -n ${2:-} ]] && cat "$2"/*.txt >&2; exit 1; }

# the script's driver floor is the Java backend's
java_min=$(sed -n 's/.*static final int MIN_DRIVER_VERSION = \([0-9]*\);.*/\1/p' kernels-cuda/src/main/java/io/kvchecksum/cuda/Cuda.java)
script_min=$(sed -n 's/^MIN_DRIVER=\([0-9]*\)$/\1/p' kernels-cuda/device-check.sh)
[[ -n $java_min && $java_min == "$script_min" ]] \
  || fail "device-check.sh MIN_DRIVER=$script_min differs from Cuda.MIN_DRIVER_VERSION=$java_min"

echo "ci-device-dry-run: prepare-device.sh in $clone with an empty Maven repository ($tmp/m2)"
s=$SECONDS
kernels-cuda/prepare-device.sh -Dmaven.repo.local="$tmp/m2"
prepared=$((SECONDS - s))
echo "ci-device-dry-run: prepared in ${prepared}s"
carry=$(kernels-cuda/carry-size.sh) || fail "the carry is over its budget: $carry"

# 2. where the check cannot work, it says so within seconds: one line, exit 2, a valid JSON
cannot() {  # NAME EXPECTED-LINE-PREFIX ENV... -- ARGS...
  local name=$1 want=$2 rc; shift 2
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  local out=$tmp/cannot-$name s=$SECONDS
  mkdir -p "$out"
  set +e
  env "${envs[@]}" OUT="$out" timeout 30 kernels-cuda/device-check.sh "$@" > "$out/stdout" 2>&1
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "$name: exit $rc, expected 2 (cannot run)" "$out"
  grep -q "^device-check: CANNOT RUN: $want" "$out/stdout" || fail "$name: no line 'device-check: CANNOT RUN: $want'" "$out"
  [[ $((SECONDS - s)) -le 10 ]] || fail "$name: took $((SECONDS - s))s to refuse, over 10s" "$out"
  python3 "$checker" "$schema" "$out"/device-check-*.json >/dev/null || fail "$name: $(python3 "$checker" "$schema" "$out"/device-check-*.json)"
  grep -q '"complete":1,"cannotRun":"' "$out"/device-check-*.json || fail "$name: the JSON does not say cannotRun" "$out"
  echo "ci-device-dry-run: $name refused in $((SECONDS - s))s: $(grep '^device-check: CANNOT RUN' "$out/stdout")"
}
cannot runtime-missing "carried runtime missing" KVCHECKSUM_DEVICE_DIR="$tmp/no-device" -- --dry-run --quick
cc -shared -fPIC -o "$tmp/libcuda-stub.so" kernels-cuda/src/build/libcuda_stub.c || fail "cannot build the stub libcuda (cc)"
cannot no-driver "no NVIDIA driver" KVCHECKSUM_LIBCUDA="$tmp/no-such-libcuda.so.1" -- --quick
cannot old-driver "driver too old" KVCHECKSUM_LIBCUDA="$tmp/libcuda-stub.so" KVC_STUB_DRIVER=12080 KVC_STUB_DEVICES=1 -- --quick
cannot no-gpu "no GPU" KVCHECKSUM_LIBCUDA="$tmp/libcuda-stub.so" KVC_STUB_DRIVER=13000 KVC_STUB_DEVICES=0 -- --quick

# 3. the quick dry run, as a lent machine would run it
mkdir -p "$tmp/out"
s=$SECONDS
set +e
OUT=$tmp/out timeout 150 kernels-cuda/device-check.sh --dry-run --quick
rc=$?
set -e
took=$((SECONDS - s))
ls -l "$tmp/out"
[[ $rc -eq 0 ]] || fail "device-check.sh --dry-run --quick exited $rc" "$tmp/out"
[[ $took -le 120 ]] || fail "the quick check took ${took}s, over its 2-minute budget" "$tmp/out"
for ext in txt json md; do
  ls "$tmp"/out/device-check-*."$ext" >/dev/null 2>&1 || fail "no .$ext report" "$tmp/out"
done
json=$(ls "$tmp"/out/device-check-*.json)
python3 "$checker" "$schema" "$json" --complete --kinds run,golden,random,unaligned,recorded,device,sweep,interference,result \
  --stages preflight,unpack,golden,random,recorded,sweep,interference || fail "the JSON report does not conform" "$tmp/out"
grep -q '^| llama3-8b-tp1 |' "$tmp"/out/device-check-*.md || fail "the markdown table has no rows" "$tmp/out"
# every layout row there (vLLM's 656-byte fp8_ds_mla cell too), each size's results checked against the host, no
# synchronizing call in an enqueue, one launch per call; both interference configurations, checked
python3 - "$json" <<'PY' || fail "the sweep or interference rows" "$tmp/out"
import json, sys
d = json.load(open(sys.argv[1]))
sweep = [r for r in d["rows"] if r["kind"] == "sweep"]
inter = [r for r in d["rows"] if r["kind"] == "interference"]
shapes = {r["shape"].split(" ")[0] for r in sweep}
want = {"llama3-8b-tp1", "llama3-70b-tp8", "deepseek-v3-mla-bf16", "deepseek-v3-mla-fp8", "deepseek-v3-fp8_ds_mla"}
problems = [f"no sweep row for {s}" for s in sorted(want - shapes)]
problems += [f"{r['shape']} {r['tokens']} tokens: exact {r['exact']}, syncs per enqueue {r['syncsPerEnqueue']}, launches per call "
             f"{r['launchesPerCall']}" for r in sweep if r["exact"] != 1 or r["syncsPerEnqueue"] != 0 or r["launchesPerCall"] != 1]
problems += [f"sweep {r['shape']} {r['tokens']}: {k} is null" for r in sweep for k in ("fusedGBs", "fusedNewTableGBs", "readGBs",
             "readIdentityGBs", "readContiguousGBs", "copyGBs", "fusedOverRead", "enqueueUsReused", "enqueueUsNewTable") if r[k] is None]
problems += [f"interference {r['config']}: exact {r['exact']}" for r in inter if r["exact"] != 1]
if len(inter) != 2:
    problems.append(f"{len(inter)} interference rows, expected 2 (decode at the greatest and at the default priority)")
print("sweep rows:", len(sweep), "shapes:", sorted(shapes), "interference rows:", len(inter))
for p in problems:
    print("PROBLEM:", p)
sys.exit(1 if problems else 0)
PY
# the checker can fail: a report without its stages, and one with a row that is not flat, are refused
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["stages"]; json.dump(d, open(sys.argv[2], "w"))' \
  "$json" "$tmp/bad1.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["rows"][0]["x"] = [1]; json.dump(d, open(sys.argv[2], "w"))' \
  "$json" "$tmp/bad2.json"
for bad in bad1 bad2; do
  ! python3 "$checker" "$schema" "$tmp/$bad.json" >/dev/null || fail "the schema check accepted $bad.json"
done

# 4. a stage that hangs: stopped at its budget, the others still run, the JSON records the timeout
mkdir -p "$tmp/out-timeout"
s=$SECONDS
set +e
mkdir -p "$tmp/fresh"  # a fresh unpack, by Python's tarfile/lzma as on a device without xz
OUT=$tmp/out-timeout TMPDIR=$tmp/fresh KVCHECKSUM_UNPACK=python KVCHECKSUM_BUDGET=golden:3 timeout 270 kernels-cuda/device-check.sh --dry-run > "$tmp/out-timeout/stdout" 2>&1
rc=$?
set -e
full=$((SECONDS - s))
[[ $rc -eq 1 ]] || fail "the full dry run with golden cut to 3s exited $rc, expected 1" "$tmp/out-timeout"
python3 "$checker" "$schema" "$tmp"/out-timeout/device-check-*.json \
  --stages preflight,unpack,golden,random,recorded,sweep,interference,opencl,readbound || fail "the timed-out run's JSON" "$tmp/out-timeout"
python3 - "$tmp"/out-timeout/device-check-*.json <<'PY' || fail "the timed-out run's stages" "$tmp/out-timeout"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
ok = (d["complete"] == 1 and d["failedStages"] == 1 and st["golden"]["status"] == "timeout" and st["golden"]["seconds"] <= 4
      and all(st[n]["status"] == "pass" for n in ("preflight", "unpack", "random", "recorded", "sweep", "interference"))
      and st["unpack"]["note"].endswith("with python")
      and st["readbound"]["status"] == "skipped")
print("timed-out run:", {n: (s["status"], s["seconds"]) for n, s in st.items()})
sys.exit(0 if ok else 1)
PY

echo "ci-device-dry-run: stage times (quick dry run; timings on the simulated driver, not a GPU's):"
echo "  prepare ${prepared}s (from an empty Maven repository)"
python3 - "$json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["stages"]:
    print(f"  {s['name']:<13} {s['seconds']:>5}s of {s['budgetSeconds']}s  {s['status']}")
print(f"  total         {d['seconds']:>5}s of {d['budgetSeconds']}s")
PY
echo "ci-device-dry-run: full dry run with a timed-out stage ${full}s; $carry"
echo "ci-device-dry-run: OK (quick dry run ${took}s, report files: $(cd "$tmp/out" && ls | tr '\n' ' '))"
