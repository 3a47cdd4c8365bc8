#!/usr/bin/env bash
# Regenerates the golden vectors into a temporary folder and compares them with the committed ones
# (golden/src/main/resources/vectors, and the mixed-mode values in vectors-mixed), then re-verifies the
# committed files with verify.py, and runs the detection campaign's short run (docs/detection.md).
# Exits non-zero, with a message, if anything differs.  Needs python3 with numpy (PYTHON=... to override).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
committed="$root/golden/src/main/resources/vectors"
py="${PYTHON:-python3}"

if ! "$py" -c 'import numpy' 2>/dev/null; then
    echo "check.sh: $py cannot import numpy (Debian: apt-get install python3-numpy)" >&2
    exit 2
fi
if [ ! -f "$committed/index.json" ]; then
    echo "check.sh: no committed vectors in $committed" >&2
    exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$py" "$here/generate.py" --out "$tmp/vectors"

if ! diff -r "$committed" "$tmp/vectors" > "$tmp/diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed golden vectors differ from what golden/generator/generate.py produces:" >&2
    head -n 40 "$tmp/diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/generate.py' and commit the result" >&2
    echo "          (or fix the generator if the change was not intended)." >&2
    exit 1
fi

"$py" "$here/verify.py" "$committed"
echo "check.sh: OK: committed golden vectors match a fresh regeneration"

# The command line's test dumps (cli/src/test/resources/dumps) come from dumps.py the same way.
dumps="$root/cli/src/test/resources/dumps"
"$py" "$here/dumps.py" --out "$tmp/dumps" > /dev/null
if ! diff -r "$dumps" "$tmp/dumps" > "$tmp/dumps-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed CLI test dumps differ from what golden/generator/dumps.py produces:" >&2
    head -n 40 "$tmp/dumps-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/dumps.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed CLI test dumps match a fresh regeneration"

# Mixed-mode values of the same vectors (vectors-mixed/mixed.json) come from generate_mixed.py the same way.
mixed="$root/golden/src/main/resources/vectors-mixed"
"$py" "$here/generate_mixed.py" --out "$tmp/vectors-mixed" > /dev/null
if ! diff -r "$mixed" "$tmp/vectors-mixed" > "$tmp/mixed-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed mixed-mode values differ from what golden/generator/generate_mixed.py produces:" >&2
    head -n 40 "$tmp/mixed-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/generate_mixed.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed mixed-mode values match a fresh regeneration"

# Detection campaign, short run (fixed seeds, a few seconds): fails if the mixed mode's mixer misses any fault
# or a proved property of the standard mode (single changes always caught, its bit-63 blind spot) does not hold.
if ! "$py" "$here/detection.py" --short --quiet > "$tmp/detection.txt"; then
    cat "$tmp/detection.txt" >&2
    echo "check.sh: FAILED: detection campaign (golden/generator/detection.py --short); see docs/detection.md" >&2
    exit 1
fi
tail -n 1 "$tmp/detection.txt"
