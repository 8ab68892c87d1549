#!/usr/bin/env bash
# Compare `switchyard bench` with ONNX Runtime (../shared/peers/ort) on the
# same model directory, same thread count, alternating the two programs
# ROUNDS times (the machine is shared and noisy), and print each median and
# the ratio of the medians of the medians (switchyard / ort).
#
#   scripts/bench-vs-ort.sh [-t THREADS] [-r ROUNDS] [-n RUNS] [-b BACKENDS] DIR...
set -euo pipefail
threads=1 rounds=5 runs=30 backends=""
while getopts "t:r:n:b:" o; do
  case $o in
    t) threads=$OPTARG ;; r) rounds=$OPTARG ;; n) runs=$OPTARG ;; b) backends=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
here="$(cd "$(dirname "$0")/.." && pwd)"
peer="$here/../shared/peers/ort"
[ -d "$peer/node_modules/onnxruntime-node" ] || "$peer/setup.sh" >/dev/null
bin="$(mktemp -d)/switchyard"
(cd "$here" && go build -o "$bin" ./cmd/switchyard)
extra=()
[ -n "$backends" ] && extra=(--backends "$backends")
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for dir in "$@"; do
  sy=() ort=()
  for ((i = 0; i < rounds; i++)); do
    sy+=("$(GOMAXPROCS=$threads "$bin" bench "$dir" --runs "$runs" --warmup 5 --json "${extra[@]}" | sed -E 's/.*"median_ms":([0-9.eE+-]+).*/\1/')")
    ort+=("$(node "$peer/bench.js" --threads "$threads" --runs "$runs" --warmup 5 "$dir" | sed -E 's/.*"p50_ms":([0-9.eE+-]+).*/\1/')")
  done
  s=$(printf '%s\n' "${sy[@]}" | median)
  o=$(printf '%s\n' "${ort[@]}" | median)
  printf '%s threads=%s switchyard_median_ms=%s ort_median_ms=%s ratio=%.2f rounds: sy[%s] ort[%s] load: %s\n' \
    "$(basename "$dir")" "$threads" "$s" "$o" "$(echo "$s / $o" | bc -l)" "${sy[*]}" "${ort[*]}" "$(cut -d' ' -f1-3 /proc/loadavg)"
done
