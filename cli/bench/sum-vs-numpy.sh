#!/usr/bin/env bash
# One-shot `kvchecksum sum` against a NumPy memmap sum of the same dump, both timed as whole processes (start-up
# included), on a warm page cache, interleaved: each round runs every command once, in the same order, so drift in
# the machine's speed hits all of them alike. Usage: cli/bench/sum-vs-numpy.sh [GiB] [rounds]   (defaults 2, 5)
# Needs the jar (JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 mvn -q -DskipTests package) and python3 with NumPy.
# The dump is written to /tmp (KVCHECKSUM_BENCH_DUMP names another path) and removed at the end unless it was there
# before. Prints each command's median and range of wall times, its GB/s of KV at the median, and NumPy's median
# over its median (the figure the README quotes: 1 means as fast as NumPy).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gib=${1:-2} rounds=${2:-5}
dump=${KVCHECKSUM_BENCH_DUMP:-/tmp/kvchecksum-bench-${gib}g.safetensors}
made=false
if [[ ! -f "$dump" ]]; then
  python3 "$here/make_dump.py" "$dump" "$gib" >/dev/null
  made=true
fi
cleanup() { if $made; then rm -f "$dump"; fi; }
trap cleanup EXIT
bytes=$(python3 -c "import json,struct,sys; f=open(sys.argv[1],'rb'); n=struct.unpack('<Q',f.read(8))[0]; h=json.loads(f.read(n)); print(sum(v['data_offsets'][1]-v['data_offsets'][0] for k,v in h.items() if k!='__metadata__'))" "$dump")
cat "$dump" >/dev/null  # warm the page cache
kv=$here/../kvchecksum

names=("cat > /dev/null"
       "numpy memmap sum (cli/bench/numpy_sum.py)"
       "cli/kvchecksum sum"
       "cli/kvchecksum sum, KVCHECKSUM_AOT=0"
       "cli/kvchecksum sum, KVCHECKSUM_VECTOR=1")
run() {  # run command number $1 once, output discarded
  case $1 in
    0) cat "$dump" ;;
    1) python3 "$here/numpy_sum.py" "$dump" ;;
    2) "$kv" sum "$dump" --block-size 16 -q ;;
    3) KVCHECKSUM_AOT=0 "$kv" sum "$dump" --block-size 16 -q ;;
    4) KVCHECKSUM_VECTOR=1 "$kv" sum "$dump" --block-size 16 -q ;;
  esac >/dev/null 2>&1
}
declare -a times
for c in "${!names[@]}"; do run "$c"; done  # one warm-up each (the class-data archive of KVCHECKSUM_AOT=0, too)
load0=$(cut -d' ' -f1 /proc/loadavg)
for ((r = 0; r < rounds; r++)); do
  for c in "${!names[@]}"; do
    s=$(date +%s%N); run "$c"; e=$(date +%s%N)
    times[$c]+="$(( (e - s) / 1000 )) "
  done
done
stats() {  # median min max of the microsecond times given, in seconds
  printf '%s\n' "$@" | sort -n | awk '{t[NR]=$1} END {m = NR % 2 ? t[(NR+1)/2] : (t[NR/2] + t[NR/2+1]) / 2; printf "%.3f %.3f %.3f", m/1e6, t[1]/1e6, t[NR]/1e6}'
}
read -r np _ _ <<<"$(stats ${times[1]})"
echo "dump: $dump, $(awk -v b="$bytes" 'BEGIN {printf "%.2f", b / 2^30}') GiB of KV; $rounds interleaved rounds of whole-process runs after one warm-up; $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)), load average $load0 before, $(cut -d' ' -f1 /proc/loadavg) after"
printf "%-42s %8s %17s %7s  %s\n" "command" "median" "range" "GB/s" "NumPy median / this median"
for c in "${!names[@]}"; do
  read -r m lo hi <<<"$(stats ${times[$c]})"
  printf "%-42s %7.3fs %7.3f-%7.3fs %7.2f  %.2f\n" "${names[$c]}" "$m" "$lo" "$hi" \
    "$(awk -v b="$bytes" -v t="$m" 'BEGIN {print b / t / 1e9}')" "$(awk -v n="$np" -v t="$m" 'BEGIN {print n / t}')"
done
