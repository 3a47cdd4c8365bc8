#!/usr/bin/env bash
# Regenerates the golden vectors into a temporary folder and compares them with the committed ones
# (golden/src/main/resources/vectors, the mixed-mode values in vectors-mixed, the state-row digests in
# vectors-state, the page-digest vectors in vectors-digest), then re-verifies the committed files with verify.py,
# and runs the detection campaign's short run (docs/detection.md).
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

# The SGLang dumps (cli/src/test/resources/sglang-dumps: page digests from zlib.adler32, layout signatures) likewise.
sglang="$root/cli/src/test/resources/sglang-dumps"
"$py" "$here/sglang_dumps.py" --out "$tmp/sglang-dumps" > /dev/null
if ! diff -r "$sglang" "$tmp/sglang-dumps" > "$tmp/sglang-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed SGLang test dumps differ from what golden/generator/sglang_dumps.py produces:" >&2
    head -n 40 "$tmp/sglang-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/sglang_dumps.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed SGLang test dumps match a fresh regeneration"
# The command line's cell dumps (index-K, straddling pieces, padded cells) come from dumps_cells.py the same way.
celldumps="$root/cli/src/test/resources/dumps-cells"
"$py" "$here/dumps_cells.py" --out "$tmp/dumps-cells" > /dev/null
if ! diff -r "$celldumps" "$tmp/dumps-cells" > "$tmp/dumps-cells-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed CLI cell dumps differ from what golden/generator/dumps_cells.py produces:" >&2
    head -n 40 "$tmp/dumps-cells-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/dumps_cells.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed CLI cell dumps match a fresh regeneration"

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

# Cell vectors (vectors-cells: straddling pieces, index-K, padded cells) come from generate_cells.py the same way.
cellvec="$root/golden/src/main/resources/vectors-cells"
"$py" "$here/generate_cells.py" --out "$tmp/vectors-cells" > /dev/null
if ! diff -r "$cellvec" "$tmp/vectors-cells" > "$tmp/cells-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed cell vectors differ from what golden/generator/generate_cells.py produces:" >&2
    head -n 40 "$tmp/cells-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/generate_cells.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed cell vectors match a fresh regeneration"
# State-row digests (vectors-state/) come from generate_state.py the same way.
state="$root/golden/src/main/resources/vectors-state"
"$py" "$here/generate_state.py" --out "$tmp/vectors-state" > /dev/null
if ! diff -r "$state" "$tmp/vectors-state" > "$tmp/state-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed state-row digests differ from what golden/generator/generate_state.py produces:" >&2
    head -n 40 "$tmp/state-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/generate_state.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed state-row digests match a fresh regeneration"
# SGLang's page digest vectors (vectors-digest/: zlib.adler32 over the stream) come from generate_digest.py.
digest="$root/golden/src/main/resources/vectors-digest"
"$py" "$here/generate_digest.py" --out "$tmp/vectors-digest" > /dev/null
if ! diff -r "$digest" "$tmp/vectors-digest" > "$tmp/digest-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed page-digest vectors differ from what golden/generator/generate_digest.py produces:" >&2
    head -n 40 "$tmp/digest-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/generate_digest.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed page-digest vectors match a fresh regeneration"

# Detection campaign, short run (fixed seeds, a few seconds): fails if the mixed mode's mixer misses any fault
# or a proved property of the standard mode (single changes always caught, its bit-63 blind spot) does not hold.
if ! "$py" "$here/detection.py" --short --quiet > "$tmp/detection.txt"; then
    cat "$tmp/detection.txt" >&2
    echo "check.sh: FAILED: detection campaign (golden/generator/detection.py --short); see docs/detection.md" >&2
    exit 1
fi
tail -n 1 "$tmp/detection.txt"

# The wire format's interop payloads (engine/src/test/resources/interop) come from payloads.py with Python's msgpack
# (Debian python3-msgpack, installed by .ci/run): required under CI, skipped with a note elsewhere.
interop="$root/engine/src/test/resources/interop"
# The interpreter that runs the NumPy generators may lack msgpack (a pyenv build); Debian's python3 has it.
pymsg=""
for cand in "${PYTHON:-}" python3 /usr/bin/python3; do
    if [ -n "$cand" ] && "$cand" -c 'import msgpack, numpy' 2>/dev/null; then pymsg="$cand"; break; fi
done
if [ -z "$pymsg" ]; then
    if [ -n "${CI:-}" ] && [ "${CI}" != "false" ]; then
        echo "check.sh: FAILED: no python3 here can import msgpack and numpy (Debian: apt-get install python3-msgpack python3-numpy)" >&2
        exit 2
    fi
    echo "check.sh: SKIPPED the interop payloads: no python3 can import msgpack (Debian: python3-msgpack; PYTHON=... to pick)"
    exit 0
fi
"$pymsg" "$here/payloads.py" --out "$tmp/interop"
if ! diff -r "$interop" "$tmp/interop" > "$tmp/interop-diff.txt" 2>&1; then
    echo "check.sh: FAILED: the committed interop payloads differ from what golden/generator/payloads.py produces:" >&2
    head -n 40 "$tmp/interop-diff.txt" >&2
    echo "check.sh: regenerate them with 'python3 golden/generator/payloads.py' and commit the result." >&2
    exit 1
fi
echo "check.sh: OK: committed interop payloads match a fresh regeneration with Python's msgpack"
