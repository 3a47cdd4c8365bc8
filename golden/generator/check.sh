#!/usr/bin/env bash
# Regenerates the golden vectors into a temporary folder and compares them with the committed ones
# (golden/src/main/resources/vectors, the mixed-mode values in vectors-mixed, the state-row digests in
# vectors-state, the page-digest vectors in vectors-digest, the combination vectors in vectors-combinations, the
# verifying copy's vectors in vectors-copy), then
# re-verifies the committed files with verify.py, and runs the detection campaign's short run (docs/detection.md).
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

# Every other generated set comes from its own script the same way: regenerate into $tmp, compare with the committed
# folder, fail with the first differences and the command that regenerates it.
#   same_as_committed SCRIPT COMMITTED_FOLDER WHAT [PYTHON]   (PYTHON: the interpreter, by default the NumPy one)
same_as_committed() {
    local script="$1" committed_dir="$2" what="$3" python="${4:-$py}" name
    name="$(basename "$committed_dir")"
    "$python" "$here/$script" --out "$tmp/$name" > /dev/null
    if ! diff -r "$committed_dir" "$tmp/$name" > "$tmp/$name-diff.txt" 2>&1; then
        echo "check.sh: FAILED: the committed $what differ from what golden/generator/$script produces:" >&2
        head -n 40 "$tmp/$name-diff.txt" >&2
        echo "check.sh: regenerate them with 'python3 golden/generator/$script' and commit the result." >&2
        exit 1
    fi
    echo "check.sh: OK: committed $what match a fresh regeneration"
}

# The command line's test dumps: the standard layouts, SGLang's pool (page digests from zlib.adler32, layout
# signatures), and cells that are not whole pieces (index-K, straddling pieces, padded cells).
same_as_committed dumps.py "$root/cli/src/test/resources/dumps" "CLI test dumps"
same_as_committed sglang_dumps.py "$root/cli/src/test/resources/sglang-dumps" "SGLang test dumps"
same_as_committed dumps_cells.py "$root/cli/src/test/resources/dumps-cells" "CLI cell dumps"
# Mixed-mode values of the vectors, cell vectors, state-row digests and SGLang's page-digest vectors.
same_as_committed generate_mixed.py "$root/golden/src/main/resources/vectors-mixed" "mixed-mode values"
same_as_committed generate_cells.py "$root/golden/src/main/resources/vectors-cells" "cell vectors"
same_as_committed generate_state.py "$root/golden/src/main/resources/vectors-state" "state-row digests"
same_as_committed generate_digest.py "$root/golden/src/main/resources/vectors-digest" "page-digest vectors"
# Combinations: padded and straddling cells in segmented caches, mixed mode over both cell kinds, several requests.
same_as_committed generate_combinations.py "$root/golden/src/main/resources/vectors-combinations" "combination vectors"
# The verifying copy: layouts, tables and hashes of the buffers before and after (the bytes come from a fill rule).
same_as_committed generate_copy.py "$root/golden/src/main/resources/vectors-copy" "copy vectors"

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
same_as_committed payloads.py "$interop" "interop payloads (Python's msgpack)" "$pymsg"
