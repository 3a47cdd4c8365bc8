#!/usr/bin/env bash
# CI hook for the device check (called from the README check after its fresh-clone build, so CI pays for one build):
# in a fresh clone, prepare-device.sh from an EMPTY Maven repository, then device-check.sh --dry-run --quick on the
# CPU-simulated driver, which must pass within its 2-minute budget and leave the .txt, .json and .md report files.
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
echo "ci-device-dry-run: prepare-device.sh in $clone with an empty Maven repository ($tmp/m2)"
s=$SECONDS
kernels-cuda/prepare-device.sh -Dmaven.repo.local="$tmp/m2"
echo "ci-device-dry-run: prepared in $((SECONDS - s))s"
mkdir -p "$tmp/out"
s=$SECONDS
set +e
OUT=$tmp/out timeout 150 kernels-cuda/device-check.sh --dry-run --quick
rc=$?
set -e
took=$((SECONDS - s))
ls -l "$tmp/out"
fail() { echo "ci-device-dry-run: FAILED: $1" >&2; cat "$tmp"/out/*.txt >&2 || true; exit 1; }
[[ $rc -eq 0 ]] || fail "device-check.sh --dry-run --quick exited $rc"
[[ $took -le 120 ]] || fail "the quick check took ${took}s, over its 2-minute budget"
for ext in txt json md; do
  ls "$tmp"/out/device-check-*."$ext" >/dev/null 2>&1 || fail "no .$ext report"
done
grep -q '"kind":"sweep"' "$tmp"/out/device-check-*.json || fail "the JSON report has no sweep rows"
grep -q '"kind":"interference"' "$tmp"/out/device-check-*.json || fail "the JSON report has no interference row"
grep -q '^| llama3-8b-tp1 |' "$tmp"/out/device-check-*.md || fail "the markdown table has no rows"
echo "ci-device-dry-run: OK (quick dry run ${took}s, report files: $(cd "$tmp/out" && ls | tr '\n' ' '))"
