# TensorFlow Lite itself as the peer of formats/tflite's TestInt8MatchesTFLite
# and BenchmarkTFLitePeer (internal/tflitepeer opens it with purego): the
# TFLite 2.9 C library that npm's tfjs-tflite-node@0.0.2 ships, unpacked
# into the cache. linux/amd64 only. Sourced by .ci/run with
# set -euo pipefail; idempotent and quiet.
if [ "$(uname -m)" = "x86_64" ] && command -v npm >/dev/null; then
  _tfl_dir="${HOME}/.cache/switchyard/tflite-peer"
  if [ ! -f "$_tfl_dir/libtensorflowlite_c.so" ]; then
    mkdir -p "$_tfl_dir"
    _tfl_tmp="$(mktemp -d)"
    (cd "$_tfl_tmp" && npm pack --silent tfjs-tflite-node@0.0.2 >/dev/null &&
      tar xzf tfjs-tflite-node-0.0.2.tgz package/cc_deps/linux_amd64/libtensorflowlite_c.so &&
      mv package/cc_deps/linux_amd64/libtensorflowlite_c.so "$_tfl_dir/")
    rm -rf "$_tfl_tmp"
    unset _tfl_tmp
  fi
  export SWITCHYARD_TFLITE_PEER="$_tfl_dir/libtensorflowlite_c.so"
  export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}tflite"
  unset _tfl_dir
fi
