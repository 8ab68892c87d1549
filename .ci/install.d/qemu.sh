# The native backend's portable (non-amd64) path is tested on arm64 under
# user-mode qemu (.ci/run: GOARCH=arm64 go test -exec qemu-aarch64-static).
# Sourced by .ci/run with `set -euo pipefail`; idempotent and quiet.
if ! command -v qemu-aarch64-static >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq qemu-user-static >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq qemu-user-static >/dev/null
  fi
fi
