#!/usr/bin/env bash
# Regenerates the golden vectors into a temporary folder and compares them with the committed ones
# (golden/src/main/resources/vectors), then re-verifies the committed files with verify.py.
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

# The wire format's interop payloads (engine/src/test/resources/interop) come from payloads.py with Python's msgpack
# (Debian python3-msgpack, installed by .ci/run): required under CI, skipped with a note elsewhere.
interop="$root/engine/src/test/resources/interop"
if ! "$py" -c 'import msgpack' 2>/dev/null; then
    if [ -n "${CI:-}" ] && [ "${CI}" != "false" ]; then
        echo "check.sh: FAILED: $py cannot import msgpack (Debian: apt-get install python3-msgpack)" >&2
        exit 2
    fi
    echo "check.sh: SKIPPED the interop payloads: $py cannot import msgpack (Debian: python3-msgpack; PYTHON=... to pick)"
    exit 0
fi
"$py" "$here/payloads.py" --out "$tmp/interop"
if ! diff -r "$interop" "$tmp/interop" > "$tmp/interop-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed interop payloads differ from what golden/generator/payloads.py produces:" >&2
    head -n 40 "$tmp/interop-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/payloads.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed interop payloads match a fresh regeneration with Python's msgpack"
