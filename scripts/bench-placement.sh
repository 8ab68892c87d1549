#!/usr/bin/env bash
# Compare placements of `switchyard bench` on the same model directories:
# --backends cpu, --backends xnnpack,cpu, the default (every available
# backend, cost-aware), and the default placed by node counts alone
# (--ignore-costs, the behaviour before cost estimates). The four are
# alternated ROUNDS times (the machine is shared and noisy), at THREADS
# threads for both Go (GOMAXPROCS) and XNNPACK (SWITCHYARD_XNNPACK_THREADS);
# the script prints each configuration's median of medians, the ratio
# default / min(cpu, xnnpack+cpu) and the load average before and after.
#
#   scripts/bench-placement.sh [-t THREADS] [-r ROUNDS] [-n RUNS] DIR...
set -euo pipefail
threads=1 rounds=5 runs=30
while getopts "t:r:n:" o; do
  case $o in
    t) threads=$OPTARG ;; r) rounds=$OPTARG ;; n) runs=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(mktemp -d)/switchyard"
(cd "$here" && go build -o "$bin" ./cmd/switchyard)
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
bench() {
  GOMAXPROCS=$threads SWITCHYARD_XNNPACK_THREADS=$threads "$bin" bench "$1" --runs "$runs" --warmup 5 --json "${@:2}" |
    sed -E 's/.*"median_ms":([0-9.eE+-]+).*/\1/'
}
for dir in "$@"; do
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  cpu=() xnn=() def=() cnt=()
  for ((i = 0; i < rounds; i++)); do
    cpu+=("$(bench "$dir" --backends cpu)")
    xnn+=("$(bench "$dir" --backends xnnpack,cpu)")
    def+=("$(bench "$dir")")
    cnt+=("$(bench "$dir" --ignore-costs)")
  done
  c=$(printf '%s\n' "${cpu[@]}" | median)
  x=$(printf '%s\n' "${xnn[@]}" | median)
  d=$(printf '%s\n' "${def[@]}" | median)
  n=$(printf '%s\n' "${cnt[@]}" | median)
  best=$(echo "if ($c < $x) $c else $x" | bc -l)
  printf '%s threads=%s cpu=%s xnnpack,cpu=%s default=%s ignore-costs=%s default/min(cpu,xnnpack+cpu)=%.3f rounds: cpu[%s] xnnpack,cpu[%s] default[%s] ignore-costs[%s] load: %s → %s\n' \
    "$(basename "$dir")" "$threads" "$c" "$x" "$d" "$n" "$(echo "$d / $best" | bc -l)" \
    "${cpu[*]}" "${xnn[*]}" "${def[*]}" "${cnt[*]}" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"
done
