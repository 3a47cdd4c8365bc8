#!/usr/bin/env bash
# The README's first set-up command, taken from the README itself and run verbatim in a clean environment
# (env -i, the default PATH) on a fresh clone of this repository's committed HEAD, so the README cannot drift from
# what works. The second set-up command is .ci/run's own test command: it is compared with .ci/run, not run here.
# Usage: .ci/readme-check.sh [CLONE_DIR]   (CLONE_DIR is kept afterwards, so a later check can reuse the build;
# default: a temporary directory, removed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# the code block right after the "## Set-up" heading: first line = build and demo, second = the test command
mapfile -t cmds < <(awk '/^## Set-up/ {s = 1; next} s && /^```/ {if (b) exit; b = 1; next} b' "$root/README.md")
if [[ ${#cmds[@]} -lt 2 ]]; then
  echo "readme-check: README.md has no two-command block after '## Set-up'" >&2
  exit 1
fi
first=${cmds[0]} second=${cmds[1]}
# (the first mvn line of .ci/run: the Javadoc guard that follows it is a separate check, not the test command)
ci_test=$(grep -E '^mvn ' "$root/.ci/run" | head -n 1)
if [[ "$second" != *"; $ci_test" ]]; then
  echo "readme-check: the README's second command '$second' is not .ci/run's test command '$ci_test'" >&2
  exit 1
fi

if [[ $# -ge 1 ]]; then
  work=$1
  rm -rf "$work"
else
  work=$(mktemp -d /tmp/kvchecksum-readme-XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
git clone -q "$root" "$work"
echo "readme-check: running in a fresh clone ($work, $(git -C "$work" rev-parse --short HEAD)), env -i:"
echo "  $first"
cd "$work"
set +e
timeout 1800 env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin bash -c "$first" >"$work.out" 2>"$work.err"
rc=$?
set -e
out=$(cat "$work.out") err=$(cat "$work.err")
rm -f "$work.out" "$work.err"
fail() {
  echo "readme-check: FAILED: $1" >&2
  echo "--- stdout (last 30 lines)" >&2; tail -n 30 <<<"$out" >&2
  echo "--- stderr (last 30 lines)" >&2; tail -n 30 <<<"$err" >&2
  exit 1
}
[[ $rc -eq 0 ]] || fail "exit status $rc"
grep -q "4 of 4 faults detected at the injected blocks" <<<"$out" || fail "the demo did not report its result"
# quiet: nothing on stderr but the JVM's incubator notice (Maven 3.8's jansi may leave bare colour resets)
noise=$(sed -e 's/\x1b\[0m//g' <<<"$err" | grep -v -x 'WARNING: Using incubator modules: jdk.incubator.vector' | grep -v '^\s*$' || true)
[[ -z "$noise" ]] || fail "unexpected output on stderr: $(head -n 3 <<<"$noise")"
echo "readme-check: OK ($(grep -c . <<<"$out") lines of demo output, stderr clean)"
