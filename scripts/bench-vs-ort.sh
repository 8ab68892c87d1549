#!/usr/bin/env bash
# Compare `switchyard bench` with ONNX Runtime (../shared/peers/ort) on the
# same model directory, same thread count, alternating the programs ROUNDS
# times (the machine is shared and noisy), and print each median and the
# ratio of the medians of the medians (switchyard / ort).
#
#   scripts/bench-vs-ort.sh [-t THREADS] [-r ROUNDS] [-n RUNS] [-s median|min|cpu] [-b BACKENDS]... DIR...
#
# -s min compares each program's fastest run instead of its median run (the
# median of ROUNDS minima). -s cpu compares the process CPU time per run
# (all threads together: at one thread it is the run's time without the
# time other processes held the core, the steadiest figure on a loaded
# machine; at more threads it is work, not latency). ORT is then timed by
# a small driver written here (the peer's bench.js reports wall time only).
#
# -b may be given several times (e.g. -b default -b native,cpu): every
# backend set and ORT then run in turn within each round, and the line
# gives one median and one ratio per set. "default" (or no -b) means the
# default backends.
set -euo pipefail
threads=1 rounds=5 runs=30 stat=median sets=()
while getopts "t:r:n:s:b:" o; do
  case $o in
    t) threads=$OPTARG ;; r) rounds=$OPTARG ;; n) runs=$OPTARG ;; b) sets+=("$OPTARG") ;; s) stat=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ ${#sets[@]} -eq 0 ] && sets=(default)
case $stat in
  median) syf=median_ms ortf=p50_ms ;;
  min) syf=min_ms ortf=min_ms ;;
  cpu) syf=cpu_ms_per_run ortf=cpu_ms_per_run ;;
  *) echo "-s median, min or cpu" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")/.." && pwd)"
peer="$here/../shared/peers/ort"
[ -d "$peer/node_modules/onnxruntime-node" ] || "$peer/setup.sh" >/dev/null
bin="${SWITCHYARD_BIN:-}"
if [ -z "$bin" ]; then
  bin="$(mktemp -d)/switchyard"
  (cd "$here" && go build -o "$bin" ./cmd/switchyard)
fi
ortbench="$peer/bench.js"
if [ "$stat" = cpu ]; then
  # the peer's bench.js with process.cpuUsage() around the timed runs
  ortbench="$(mktemp -d)/ortcpu.js"
  cat >"$ortbench" <<JS
'use strict';
const path = require('path');
const ort = require('$peer/node_modules/onnxruntime-node');
const { testSets, readSet } = require('$peer/tensors.js');
const a = process.argv.slice(2);
let threads = 1, warmup = 5, runs = 30, dir = '';
for (let i = 0; i < a.length; i++) {
  if (a[i] === '--threads') threads = +a[++i]; else if (a[i] === '--warmup') warmup = +a[++i];
  else if (a[i] === '--runs') runs = +a[++i]; else dir = a[i];
}
(async () => {
  const s = await ort.InferenceSession.create(path.join(dir, 'model.onnx'),
    { intraOpNumThreads: threads, interOpNumThreads: 1, logSeverityLevel: 3 });
  const feeds = {};
  readSet(testSets(dir)[0], 'input_').forEach((t, k) => { feeds[t.name || s.inputNames[k]] = t.tensor; });
  for (let i = 0; i < warmup; i++) await s.run(feeds);
  const c0 = process.cpuUsage();
  for (let i = 0; i < runs; i++) await s.run(feeds);
  const c = process.cpuUsage(c0);
  console.log(JSON.stringify({ threads, runs, cpu_ms_per_run: (c.user + c.system) / 1000 / runs }));
})().catch((e) => { console.error(e.message); process.exit(1); });
JS
fi
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for dir in "$@"; do
  declare -A sy=()
  ort=()
  for ((i = 0; i < rounds; i++)); do
    for s in "${sets[@]}"; do
      extra=()
      [ "$s" != default ] && extra=(--backends "$s")
      sy[$s]+="$(GOMAXPROCS=$threads "$bin" bench "$dir" --runs "$runs" --warmup 5 --json "${extra[@]}" | sed -E "s/.*\"$syf\":([0-9.eE+-]+).*/\\1/") "
    done
    ort+=("$(node "$ortbench" --threads "$threads" --runs "$runs" --warmup 5 "$dir" | sed -E "s/.*\"$ortf\":([0-9.eE+-]+).*/\\1/")")
  done
  o=$(printf '%s\n' "${ort[@]}" | median)
  line="$(basename "$dir") threads=$threads stat=$stat ort_ms=$o"
  for s in "${sets[@]}"; do
    m=$(echo ${sy[$s]} | tr ' ' '\n' | median)
    line+=" [$s] ms=$m ratio=$(printf '%.2f' "$(echo "$m / $o" | bc -l)") rounds=[${sy[$s]% }]"
  done
  echo "$line ort_rounds=[${ort[*]}] load: $(cut -d' ' -f1-3 /proc/loadavg)"
  unset sy
done
