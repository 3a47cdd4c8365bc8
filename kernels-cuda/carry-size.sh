#!/usr/bin/env bash
# What a device run carries from this checkout, against the 44 MiB budget: the tracked files, the untracked files
# git does not ignore (the device tool sends both) and .device (carry: [".device"]). Prints one line; exits 1 over
# the budget, naming the largest parts, so prepare-device.sh and the CI dry run fail there, not on the device tool.
# Usage: kernels-cuda/carry-size.sh [BUDGET_MIB]   (default 44; the device tool's own limit is 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
budget=$(( ${1:-44} * 1024 * 1024 ))
bytes() { xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
tracked=$(git ls-files -z | bytes)
untracked=$(git ls-files -z --others --exclude-standard | bytes)
device=0
[[ -d .device ]] && device=$(find .device -type f -print0 | bytes)
total=$((tracked + untracked + device))
awk -v t="$tracked" -v u="$untracked" -v d="$device" -v b="$budget" 'BEGIN {
  m = 1048576; printf "carry: tracked %.1f MiB + untracked %.1f MiB + .device %.1f MiB = %.1f MiB (budget %d MiB)\n",
  t / m, u / m, d / m, (t + u + d) / m, b / m }'
if [[ $total -gt $budget ]]; then
  echo "carry: FAILED: $total bytes, over the $budget-byte budget; largest:" >&2
  { git ls-files -z; git ls-files -z --others --exclude-standard; [[ -d .device ]] && find .device -type f -print0; } \
    | xargs -0 -r stat -c '%s %n' 2>/dev/null | sort -rn | head -n 8 >&2
  exit 1
fi
