# ONNX Runtime as the peer for core/kernels/contrib's TestDecodersMatchORT:
# ../shared/peers/ort's own setup.sh (npm onnxruntime-node, CPU build).
# When ../shared is read-only the peer is set up in a copy under the cache
# and SWITCHYARD_ORT_PEER points the test there. Sourced by .ci/run with
# set -euo pipefail; idempotent.
ort_peer="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/../shared/peers/ort"
if command -v node >/dev/null && [ -d "$ort_peer" ] && [ ! -d "$ort_peer/node_modules/onnxruntime-node" ]; then
  if [ -w "$ort_peer" ]; then
    "$ort_peer/setup.sh" >/dev/null
  else
    export SWITCHYARD_ORT_PEER="${HOME}/.cache/switchyard/ort-peer"
    mkdir -p "$SWITCHYARD_ORT_PEER"
    cp "$ort_peer"/*.js "$ort_peer"/*.json "$ort_peer"/setup.sh "$SWITCHYARD_ORT_PEER"/
    "$SWITCHYARD_ORT_PEER/setup.sh" >/dev/null
  fi
fi
unset ort_peer
