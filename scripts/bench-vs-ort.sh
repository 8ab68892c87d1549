#!/usr/bin/env bash
# Compare `switchyard bench` with ONNX Runtime (../shared/peers/ort) on the
# same model directory, same thread count, alternating the programs ROUNDS
# times (the machine is shared and noisy), and print each median and the
# ratio of the medians of the medians (switchyard / ort).
#
#   scripts/bench-vs-ort.sh [-t THREADS] [-r ROUNDS] [-n RUNS] [-b BACKENDS]... DIR...
#
# -b may be given several times (e.g. -b default -b native,cpu): every
# backend set and ORT then run in turn within each round, and the line
# gives one median and one ratio per set. "default" (or no -b) means the
# default backends.
set -euo pipefail
threads=1 rounds=5 runs=30 sets=()
while getopts "t:r:n:b:" o; do
  case $o in
    t) threads=$OPTARG ;; r) rounds=$OPTARG ;; n) runs=$OPTARG ;; b) sets+=("$OPTARG") ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ ${#sets[@]} -eq 0 ] && sets=(default)
here="$(cd "$(dirname "$0")/.." && pwd)"
peer="$here/../shared/peers/ort"
[ -d "$peer/node_modules/onnxruntime-node" ] || "$peer/setup.sh" >/dev/null
bin="${SWITCHYARD_BIN:-}"
if [ -z "$bin" ]; then
  bin="$(mktemp -d)/switchyard"
  (cd "$here" && go build -o "$bin" ./cmd/switchyard)
fi
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for dir in "$@"; do
  declare -A sy=()
  ort=()
  for ((i = 0; i < rounds; i++)); do
    for s in "${sets[@]}"; do
      extra=()
      [ "$s" != default ] && extra=(--backends "$s")
      sy[$s]+="$(GOMAXPROCS=$threads "$bin" bench "$dir" --runs "$runs" --warmup 5 --json "${extra[@]}" | sed -E 's/.*"median_ms":([0-9.eE+-]+).*/\1/') "
    done
    ort+=("$(node "$peer/bench.js" --threads "$threads" --runs "$runs" --warmup 5 "$dir" | sed -E 's/.*"p50_ms":([0-9.eE+-]+).*/\1/')")
  done
  o=$(printf '%s\n' "${ort[@]}" | median)
  line="$(basename "$dir") threads=$threads ort_median_ms=$o"
  for s in "${sets[@]}"; do
    m=$(echo ${sy[$s]} | tr ' ' '\n' | median)
    line+=" [$s] median_ms=$m ratio=$(printf '%.2f' "$(echo "$m / $o" | bc -l)") rounds=[${sy[$s]% }]"
  done
  echo "$line ort_rounds=[${ort[*]}] load: $(cut -d' ' -f1-3 /proc/loadavg)"
  unset sy
done
