#!/usr/bin/env bash
# Compare `switchyard generate` with llama.cpp (npm node-llama-cpp 3.21.1,
# its prebuilt CPU binary; installed with --ignore-scripts into
# ~/.cache/switchyard/llamacpp on first use, ~100 MB, not in CI) on the same
# GGUF model, greedy from BOS + the golden prompt's tokens to 64 positions,
# THREADS threads, alternating the two programs ROUNDS times. Prints each
# round's decode ms/token and prefill ms, then the medians and the ratio of
# the decode medians (switchyard / llama.cpp).
#
#   scripts/bench-vs-llamacpp.sh [-t THREADS] [-r ROUNDS] [-b BACKENDS] [MODEL.gguf]
set -euo pipefail
threads=1 rounds=5 backends=""
while getopts "t:r:b:" o; do
  case $o in
    t) threads=$OPTARG ;; r) rounds=$OPTARG ;; b) backends=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
here="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:-$here/../shared/testdata/llm/stories260K/stories260K_f32.gguf}"
cache="${HOME}/.cache/switchyard/llamacpp"
if [ ! -d "$cache/node_modules/node-llama-cpp" ]; then
  mkdir -p "$cache"
  echo '{"private": true, "type": "module"}' >"$cache/package.json"
  npm install --prefix "$cache" --no-audit --no-fund --loglevel=error --ignore-scripts node-llama-cpp@3.21.1 >&2
fi
cat >"$cache/gen.mjs" <<'JS'
// One greedy generation on llama.cpp: BOS + the prompt tokens, then argmax
// tokens to 64 positions; prints {prefill_ms, ms_per_token, tokens}.
import {getLlama} from "node-llama-cpp";
const [modelPath, threads] = [process.argv[2], Number(process.argv[3])];
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const prompt = [1, 403, 407, 261, 378]; // BOS, "Once upon a time"
const context = await model.createContext({contextSize: 512, threads, batchSize: 64, sequences: 1});
const out = [];
const t0 = performance.now();
let tFirst = 0;
for await (const tok of context.getSequence().evaluate(prompt, {temperature: 0})) {
  if (out.length === 0) tFirst = performance.now();
  out.push(tok);
  if (prompt.length + out.length >= 65) break;
}
const t1 = performance.now();
console.log(JSON.stringify({prefill_ms: tFirst - t0, ms_per_token: (t1 - tFirst) / (out.length - 1), tokens: out}));
JS
bin="$(mktemp -d)/switchyard"
(cd "$here" && go build -o "$bin" ./cmd/switchyard)
extra=()
[ -n "$backends" ] && extra=(--backends "$backends")
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
sy=() syp=() lc=() lcp=()
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < rounds; i++)); do
  line="$(GOMAXPROCS=$threads "$bin" generate "$model" --prompt "Once upon a time" --steps 64 --temperature 0 "${extra[@]}" 2>&1 | grep '^prefill:')"
  sy+=("$(sed -E 's/.* ([0-9.]+) ms\/token.*/\1/' <<<"$line")")
  syp+=("$(sed -E 's/^prefill: [0-9]+ tokens in ([0-9.]+) ms.*/\1/' <<<"$line")")
  j="$(node "$cache/gen.mjs" "$model" "$threads")"
  lc+=("$(sed -E 's/.*"ms_per_token":([0-9.eE+-]+).*/\1/' <<<"$j")")
  lcp+=("$(sed -E 's/.*"prefill_ms":([0-9.eE+-]+).*/\1/' <<<"$j")")
  echo "round $i: switchyard ${sy[i]} ms/token (prefill ${syp[i]} ms), llama.cpp ${lc[i]} ms/token (prefill ${lcp[i]} ms)"
done
s="$(printf '%s\n' "${sy[@]}" | median)" l="$(printf '%s\n' "${lc[@]}" | median)"
echo "median decode: switchyard $s ms/token, llama.cpp $l ms/token, ratio $(awk -v a="$s" -v b="$l" 'BEGIN {printf "%.2f", a/b}')"
echo "median prefill: switchyard $(printf '%s\n' "${syp[@]}" | median) ms, llama.cpp $(printf '%s\n' "${lcp[@]}" | median) ms"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
