#!/usr/bin/env bash
# One-shot `kvchecksum sum` against a NumPy memmap sum of the same dump, both timed as whole processes (start-up
# included), side by side, on a warm page cache. Usage: cli/bench/sum-vs-numpy.sh [GiB] [runs]   (defaults 2, 5)
# Needs the jar (JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 mvn -q -DskipTests package) and python3 with NumPy.
# Prints the best of the runs for each, in GB/s of KV, and the ratio to NumPy.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gib=${1:-2} runs=${2:-5}
dump=${KVCHECKSUM_BENCH_DUMP:-/tmp/kvchecksum-bench-${gib}g.safetensors}
[[ -f "$dump" ]] || python3 "$here/make_dump.py" "$dump" "$gib"
bytes=$(python3 -c "import json,struct,sys; f=open(sys.argv[1],'rb'); n=struct.unpack('<Q',f.read(8))[0]; h=json.loads(f.read(n)); print(sum(v['data_offsets'][1]-v['data_offsets'][0] for k,v in h.items() if k!='__metadata__'))" "$dump")
cat "$dump" >/dev/null  # warm the page cache

best() {  # best wall time in seconds of "$@" over $runs runs, output discarded
  local b=999 t s e
  for ((i = 0; i < runs; i++)); do
    s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc -l)
    b=$(echo "if ($t < $b) $t else $b" | bc -l)
  done
  echo "$b"
}
row() {  # name seconds
  printf "%-44s %7.3f s %6.2f GB/s %6.2f\n" "$1" "$2" "$(echo "$bytes / $2 / 1000000000" | bc -l)" "$(echo "$np / $2" | bc -l)"
}
np=$(best python3 "$here/numpy_sum.py" "$dump")
echo "dump: $dump, $(echo "$bytes / 2^30" | bc -l | cut -c1-5) GiB of KV; best of $runs whole-process runs; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf "%-44s %9s %11s  %s\n" "command" "time" "rate" "NumPy time / this time"
row "cat > /dev/null" "$(best cat "$dump")"
row "numpy memmap sum (cli/bench/numpy_sum.py)" "$np"
row "cli/kvchecksum sum (scalar loop)" "$(best "$here/../kvchecksum" sum "$dump" --block-size 16 -q)"
row "cli/kvchecksum sum, KVCHECKSUM_VECTOR=1" "$(best env KVCHECKSUM_VECTOR=1 "$here/../kvchecksum" sum "$dump" --block-size 16 -q)"
