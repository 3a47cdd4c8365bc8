#!/usr/bin/env bash
# The CUDA backend's device check, for a lent GPU machine (H100/H200) with a driver but no JDK or Maven.
# Prepare on a build machine first: kernels-cuda/prepare-device.sh (writes .device/device.tar.xz, carried to the device).
#
# Usage: kernels-cuda/device-check.sh [--quick] [--dry-run]
#   A full run takes at most 4 minutes, --quick at most 2: every stage runs under `timeout` with its own budget (the
#   table below; a stage never runs past the run's total either), so one hung stage cannot eat the run. --dry-run runs
#   the same program on the CPU-simulated driver (CI; timings meaningless).
# Stages: preflight (no JVM: the carried runtime is there, it can be unpacked, and the driver can run the fatbin:
# CUDA 13 driver, a GPU of compute capability 8.0+; where it cannot, the run stops within seconds with one line
# "device-check: CANNOT RUN: <why>" and exit 2); unpack (the runtime, with xz or Python's tarfile/lzma); golden (the
# golden suite and the page-digest vectors through the real backend, host and device memory); random (layouts
# against the reference); recorded (an enqueue on the real driver, every call recorded: no synchronizing call);
# sweep (per shape, 656-byte fp8_ds_mla included, and size up to 16x the L2: the fused kernel alone from a reused
# plan, engine calls with a reused plan and with a new page table each, the read bound over the same page tables, a
# contiguous read, a copy and the verifying copy of the same pages (issue 29), and the staged in-place verifying copy
# of the copied pages onto themselves; CUDA events around 20 launches per
# sample, a warm-up, 5 samples, median and minimum,
# every result checked against the host; enqueue time, synchronizing calls per enqueue, launches per call; each
# occupancy variant the backend offers); interference (a decode-like kernel on the engine's stream and the checksum on
# a least-priority stream: the decode kernel's slowdown); full mode only: opencl (the golden
# suite on the GPU's OpenCL driver) and readbound (torch/cupy, when Python has one). Each stage's time is printed.
# Files, in $OUT (device tool) or else kernels-cuda/results/: device-check-<UTC date>.txt (the log), .json (schema:
# kernels-cuda/device-check.schema.json) and .md (stage times and the table), the .json and .md rewritten after every
# stage, so a run stopped from outside still returns everything measured until then.
# Exit: 0 every gating stage passed; 1 a stage failed or timed out; 2 cannot run here (the line says why); 64 usage.
# Test hooks: KVCHECKSUM_DEVICE_DIR (default .device), KVCHECKSUM_LIBCUDA (the driver library the preflight loads),
# KVCHECKSUM_BUDGET (lower budgets, e.g. golden:3) and KVCHECKSUM_UNPACK (xz or python): ci-device-dry-run.sh checks
# the CANNOT RUN lines, a timed-out stage and the unpacking without xz with them.
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
# Cuda.MIN_DRIVER_VERSION: the fatbin is built with CUDA 13 (ci-device-dry-run.sh checks that the two agree)
MIN_DRIVER=13000
devdir=${KVCHECKSUM_DEVICE_DIR:-.device}
archive=$devdir/device.tar.xz

# Stage budgets in seconds (the expected time is well inside each: preflight 1-3 s, unpack 1-3 s, golden 5-15 s,
# JVM start and CUDA context ~2 s per JVM stage). They add up to the run's budget; with the machine's start (~1-2
# minutes) a full run leaves room for a rerun within 15 minutes of device time.
if [[ $quick -eq 1 ]]; then
  total=120
  plan=(preflight:10 unpack:15 golden:30 random:10 recorded:10 sweep:35 interference:10)
else
  total=240
  # opencl: three builds of the GPU path (1, 2, 4 rows in flight) over 512 MiB each besides its goldens
  plan=(preflight:10 unpack:15 golden:40 random:20 recorded:10 sweep:75 interference:25 opencl:30 readbound:15)
fi
declare -A budget
for p in "${plan[@]}"; do budget[${p%%:*}]=${p##*:}; done
# test hook: KVCHECKSUM_BUDGET="golden:3,sweep:5" lowers stages' budgets (ci-device-dry-run.sh times a stage out)
for o in ${KVCHECKSUM_BUDGET:+${KVCHECKSUM_BUDGET//,/ }}; do
  [[ -n ${budget[${o%%:*}]:-} && ${o##*:} =~ ^[0-9]+$ && ${o##*:} -le ${budget[${o%%:*}]} ]] \
    || { echo "device-check: KVCHECKSUM_BUDGET: $o is not a lower budget for a stage of ${plan[*]}" >&2; exit 64; }
  budget[${o%%:*}]=${o##*:}
done
sum=0
for p in "${plan[@]}"; do sum=$((sum + budget[${p%%:*}])); done
if [[ $sum -gt $total ]]; then
  echo "device-check: internal error: the stage budgets add up to ${sum}s, over the run's ${total}s" >&2
  exit 70
fi

stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
dir=${OUT:-kernels-cuda/results}
mkdir -p "$dir"
base=$dir/device-check-$stamp
report=$base.txt
start=$SECONDS
start_ms=$(date +%s%3N)
# seconds since T_MS (milliseconds since the epoch), one decimal
since() { local d=$(( $(date +%s%3N) - $1 )); printf '%d.%d' $((d / 1000)) $((d % 1000 / 100)); }
deadline=$((start + total))
commit=$(git rev-parse --short HEAD 2>/dev/null || echo 'no git')
say() { echo "$*" | tee -a "$report"; }
say "# kvchecksum CUDA device check $stamp (quick=$quick, dry-run=$dry); $commit; budget ${total}s: $(for p in "${plan[@]}"; do printf '%s %ss, ' "${p%%:*}" "${budget[${p%%:*}]}"; done | sed 's/, $//')"

# ---- results, rewritten after every stage ----------------------------------------------------------------------
gpu="" drv="" cudaver=null smi="" clocks="" preflight="" cannot="" complete=0 failed=0
names=() limits=() secs=() exits=() statuses=() gating=() notes=()
# q VALUE: sets $q to VALUE as a JSON string, without a fork (this runs after every stage)
q() {
  local v=$1
  v=${v//\\/\\\\}; v=${v//\"/\\\"}; v=${v//[$'\001'-$'\037']/ }; v=${v#"${v%%[! ]*}"}
  q="\"$v\""
}
write_results() {
  local i
  {
    q "$stamp"; printf '{"schema":"kvchecksum-device-check/2","date":%s,' "$q"
    q "$commit"; printf '"commit":%s,"quick":%d,"dryRun":%d,"budgetSeconds":%d,"complete":%d,' "$q" "$quick" "$dry" "$total" "$complete"
    q "$cannot"; [[ -n $cannot ]] || q=null; printf '"cannotRun":%s,' "$q"
    q "$gpu"; printf '"gpu":%s,' "$q"
    q "$drv"; printf '"driver":%s,"cudaDriverVersion":%s,' "$q" "$cudaver"
    q "$clocks"; printf '"clocks":%s,' "$q"
    q "$smi"; printf '"nvidiaSmi":%s,' "$q"
    q "$preflight"; printf '"preflight":%s,"failedStages":%d,"seconds":%s,"stages":[' "$q" "$failed" "$(since "$start_ms")"
    for i in "${!names[@]}"; do
      [[ $i -gt 0 ]] && printf ','
      q "${notes[$i]}"
      printf '{"name":"%s","budgetSeconds":%d,"limitSeconds":%d,"seconds":%s,"exit":%s,"status":"%s","gating":%d,"note":%s}' \
        "${names[$i]}" "${budget[${names[$i]}]}" "${limits[$i]}" "${secs[$i]}" "${exits[$i]}" "${statuses[$i]}" "${gating[$i]}" "$q"
    done
    printf '],"rows":[\n'
    # whole lines only: a stage stopped by its timeout may leave half a line
    [[ -f $base.jsonl ]] && grep -E '^\{.*\}$' "$base.jsonl" | paste -sd, -
    printf ']}\n'
  } > "$base.json.tmp"
  mv "$base.json.tmp" "$base.json"
  {
    echo "# kvchecksum CUDA device check, $stamp ($commit)"
    echo
    echo "GPU: ${gpu:-?}; driver: ${drv:-?}; clocks: ${clocks:-?}$([[ $dry -eq 1 ]] && echo ' (DRY RUN on the CPU-simulated driver: timings meaningless)')"
    [[ -n $cannot ]] && { echo; echo "**CANNOT RUN: $cannot**"; }
    [[ $complete -eq 1 ]] || { echo; echo "(incomplete: written after stage ${stage:-none}, $((SECONDS - start))s into the run)"; }
    echo
    echo "| stage | budget s | took s | status |"
    echo "|---|---:|---:|---|"
    for i in "${!names[@]}"; do
      echo "| ${names[$i]} | ${budget[${names[$i]}]} | ${secs[$i]} | ${statuses[$i]}${notes[$i]:+: ${notes[$i]}} |"
    done
    echo
    echo "GB/s from the median of 5 samples of 20 launches (CUDA events, after a warm-up); fused: the kernel alone as a reused plan launches it; read: \`kvcb_gather_sum\` over the same scattered page table (identity: both over the identity table); enqueue: host median per call. Bandwidth rows: KV at least 8x L2."
    echo
    echo "| shape | tokens | KV | x L2 | variant | fused GB/s (reused plan) | fused GB/s (new table per call) | read GB/s (same table) | fused/read | fused/read (identity) | read GB/s (contiguous) | copy GB/s (r+w) | page copy GB/s (r+w) | verifying copy GB/s (r+w) | verifying copy / copy | verifying copy / page copy | of spec HBM | enqueue us (reused plan) | enqueue us (new table) | syncs per enqueue | launches per call | exact |"
    echo "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    [[ -f $base.md.rows ]] && cat "$base.md.rows"
    echo
    grep -E '^(golden suite|random layouts|unaligned layouts|recorded enqueue|device: |variants timed|## interference|decode at |RESULT)' "$report" | sed 's/^/    /'
  } > "$base.md.tmp"
  mv "$base.md.tmp" "$base.md"
}

# ---- stages ------------------------------------------------------------------------------------------------------
# begin NAME: prints the header and sets $limit (the stage's budget, or what is left of the run if less; 0: skip)
begin() {
  local left=$((deadline - SECONDS))
  stage=$1 limit=${budget[$1]} t_stage=$(date +%s%3N)
  [[ $left -lt $limit ]] && limit=$left
  [[ $limit -lt 3 ]] && limit=0
  say ""
  say "## stage $stage (budget ${budget[$1]}s, $(since "$start_ms")s into the run)"
}
# end RC [STATUS] [NOTE] [GATING]: records the stage, prints its time, rewrites the results
end() {
  local rc=$1 status=${2:-} note=${3:-} g=${4:-1}
  if [[ -z $status ]]; then
    case $rc in
      0) status=pass ;;
      124 | 137) status=timeout; note=${note:-"stopped at its ${limit}s limit"} ;;
      *) status=fail ;;
    esac
  fi
  names+=("$stage"); limits+=("$limit"); secs+=("$(since "$t_stage")"); gating+=("$g"); notes+=("$note")
  exits+=("$([[ $rc =~ ^[0-9]+$ ]] && echo "$rc" || echo null)"); statuses+=("$status")
  [[ $g -eq 1 && ($status == fail || $status == timeout) ]] && failed=$((failed + 1))
  say "stage $stage: $status$([[ $rc =~ ^[0-9]+$ ]] && echo " (exit $rc)") in ${secs[-1]}s (budget ${budget[$stage]}s)${note:+; $note}"
  write_results
}
# the run cannot work here: one line, the results written, exit 2
cannot_run() {
  cannot=$1
  end 2 fail "$1"
  say "device-check: CANNOT RUN: $1"
  complete=1
  write_results
  exit 2
}
# run a command under the stage's limit (the kill after 2 more seconds is inside the limit)
limited() { timeout -k 2 $((limit - 2)) "$@"; }

# preflight: nothing long, no JVM
begin preflight
command -v timeout >/dev/null || cannot_run "no \`timeout\` command (coreutils): the stages' time limits cannot be enforced"
[[ -s $archive ]] || cannot_run "carried runtime missing: $archive not found (run kernels-cuda/prepare-device.sh on a build machine and carry .device)"
[[ -d golden/src/main/resources/vectors ]] || cannot_run "golden vectors missing: golden/src/main/resources/vectors is not in the tree"
unpacker=${KVCHECKSUM_UNPACK:-}
if [[ -n $unpacker ]]; then
  [[ $unpacker == xz || $unpacker == python ]] || cannot_run "KVCHECKSUM_UNPACK=$unpacker: use xz or python"
elif command -v xz >/dev/null 2>&1; then
  unpacker=xz
elif command -v python3 >/dev/null 2>&1 && python3 -c 'import lzma, tarfile' >/dev/null 2>&1; then
  unpacker=python
else
  cannot_run "cannot unpack $archive: neither an xz binary nor python3 with the lzma module"
fi
if [[ $dry -eq 1 ]]; then
  fake=kernels-cuda/target/native/libkvchecksum_host.so
  [[ -f $fake ]] || cannot_run "dry run: $fake missing (build kernels-cuda first)"
  gpu="(dry run: no GPU)" preflight="dry run: the CPU-simulated driver ($fake)"
else
  if command -v python3 >/dev/null 2>&1; then
    IFS=$'\t' read -r pf_status pf_a pf_b < <(limited python3 kernels-cuda/src/build/device_preflight.py "$MIN_DRIVER" 2>&1 | tail -n 1)
    case ${pf_status:-} in
      ok) cudaver=$pf_a preflight=$pf_b ;;
      fail) cannot_run "$pf_a" ;;
      *) cannot_run "the driver probe (kernels-cuda/src/build/device_preflight.py) failed or hung: ${pf_status:-no output} ${pf_a:-}" ;;
    esac
  else
    preflight="no python3: the driver is probed by the JVM (golden stage)"
  fi
  if command -v nvidia-smi >/dev/null 2>&1; then
    smi=$(timeout 5 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.memory,clocks.sm,clocks.mem \
      --format=csv,noheader 2>&1 | head -n 1) || smi="(nvidia-smi failed)"
    IFS=, read -r gpu drv _ c1 c2 c3 c4 <<<"$smi"
    clocks="max sm$c1, max mem$c2, now sm$c3, now mem$c4"
    say "nvidia-smi: $smi"
  fi
fi
say "preflight: $preflight"
end 0

# unpack the carried runtime once per archive content (a rerun on a warm machine skips it)
begin unpack
rt=${TMPDIR:-/tmp}/kvchecksum-device-$(cksum < "$archive" | cut -d' ' -f1)
note="into $rt with $unpacker"
rc=0
if [[ -x $rt/jre/bin/java ]]; then
  note="already unpacked in $rt"
else
  rm -rf "$rt.part" && mkdir -p "$rt.part"
  if [[ $unpacker == xz ]]; then
    limited tar -C "$rt.part" -xJf "$archive"
  else
    limited python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1], "r:xz")
t.extractall(sys.argv[2], **({"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}))' "$archive" "$rt.part"
  fi
  rc=$?
  [[ $rc -eq 0 ]] && { rm -rf "$rt"; mv "$rt.part" "$rt"; }
fi
java=$rt/jre/bin/java
if [[ $rc -eq 0 ]] && ! limited "$java" -version >/dev/null 2>&1; then
  cannot_run "the carried runtime does not start ($java -version failed): rerun kernels-cuda/prepare-device.sh"
fi
[[ $rc -eq 124 || $rc -eq 137 ]] && cannot_run "unpacking $archive did not finish within ${limit}s"
[[ $rc -eq 0 ]] || cannot_run "unpacking $archive failed (exit $rc)"
end 0 "" "$note"

jvm=("$java" --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -Xmx8g -cp "golden/src/main/resources:$rt/lib/*")
if [[ $dry -eq 1 ]]; then
  # the simulated driver runs kernels thread by thread on the CPU: tiny sizes and 2 launches per sample (5 samples)
  jvm+=(-Dkvchecksum.deviceCheck.fake="$fake" -Dkvchecksum.deviceCheck.maxTokens=32 -Dkvchecksum.deviceCheck.launches=2)
fi
qflag=(); [[ $quick -eq 1 ]] && qflag=(--quick)
# a stage of io.kvchecksum.cuda.DeviceCheck, in its own JVM: whatever it appended stays when it is stopped
step() {
  local said=${TMPDIR:-/tmp}/kvchecksum-device-check-$$.out
  limited "${jvm[@]}" io.kvchecksum.cuda.DeviceCheck "$report" "$1" "${qflag[@]}" >"$said" 2>>"$base.err"
  local rc=$?
  if [[ $rc -eq 2 ]]; then  # DeviceCheck: CUDA unavailable, the reason on its standard output
    cannot_run "$(grep -m 1 'CUDA unavailable' "$said" || echo "DeviceCheck exited 2 (CUDA unavailable)")"
  fi
  rm -f "$said"
  end $rc
}
for p in "${plan[@]}"; do
  name=${p%%:*}
  [[ $name == preflight || $name == unpack ]] && continue
  begin "$name"
  if [[ $limit -eq 0 ]]; then  # only where the stages before overran the slack between them
    end skipped skipped "no time left in the run's ${total}s" "$([[ $name == opencl || $name == readbound ]] && echo 0 || echo 1)"
    continue
  fi
  case $name in
    opencl)
      say "the golden suite through the OpenCL backend on this machine's OpenCL driver (not gating)"
      JAVA=$java KVCHECKSUM_OPENCL_CP="golden/src/main/resources:$rt/lib/*" limited sh kernels-opencl/device-check.sh >>"$report" 2>&1
      rc=$?
      case $rc in
        0) end 0 "" "" 0 ;;
        2) end 2 skipped "no OpenCL on this machine" 0 ;;
        *) end $rc "" "$([[ $rc -eq 124 || $rc -eq 137 ]] || echo 'exit 1: a vector failed; 3: set-up failed')" 0 ;;
      esac ;;
    readbound)
      if [[ $dry -eq 1 ]]; then
        end - skipped "dry run" 0
      elif ! command -v python3 >/dev/null; then
        end - skipped "no python3" 0
      else
        limited python3 kernels-cuda/src/build/readbound.py >>"$report" 2>&1
        end $? "" "torch or cupy read bound (not gating)" 0
      fi ;;
    *) step "$name" ;;
  esac
done

complete=1
write_results
rm -f "$base.jsonl" "$base.md.rows"
# stderr of the steps, less the JVM's notice about the incubator module
if [[ -f $base.err ]]; then
  grep -v -x 'WARNING: Using incubator modules: jdk.incubator.vector' "$base.err" > "$base.err.tmp" || true
  mv "$base.err.tmp" "$base.err"
  [[ -s $base.err ]] || rm -f "$base.err"
fi
times=""
for i in "${!names[@]}"; do times+="${names[$i]} ${secs[$i]}s, "; done
say ""
say "device-check: stage times: ${times%, }"
if [[ -n "${OUT:-}" ]]; then
  say "device-check: results in \$OUT; copy them into kernels-cuda/results/ of the repository"
fi
say "device-check: $failed failed stage(s), $(since "$start_ms")s of ${total}s; report $report, $base.json, $base.md"
[[ $failed -eq 0 ]]
