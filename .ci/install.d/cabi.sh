# C-ABI delegates (plugins/cabi): the tests build the example delegate in
# sdk/c and the broken libraries of sdk/c/testdata with gcc, then load them
# with purego. Sourced by .ci/run (set -euo pipefail); idempotent and quiet.
if ! command -v gcc >/dev/null 2>&1; then
  if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v '^lock$' || true)" ]; then
    apt-get update -qq >/dev/null
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev make >/dev/null
fi
# With gcc present the cabi tests must run, not skip.
export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}cabi"
