# XNNPACK backend (plugins/xnnpack): Debian 12's libXNNPACK with its thread
# pool, and libffi for the convolution calls purego cannot pass (> 15 args).
# Sourced by .ci/run with `set -euo pipefail`; idempotent and quiet.
xnnpack_pkgs="libxnnpack0 libpthreadpool0 libffi8"
xnnpack_missing=""
for p in $xnnpack_pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || xnnpack_missing="$xnnpack_missing $p"
done
if [ -n "$xnnpack_missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq $xnnpack_missing >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq $xnnpack_missing >/dev/null
  fi
fi
unset xnnpack_pkgs xnnpack_missing p
# Tests of the xnnpack backend fail (instead of skipping) if it is unavailable.
export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}xnnpack"
