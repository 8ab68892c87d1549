# Vulkan backend (plugins/vulkan): the loader, Mesa's lavapipe (a CPU
# Vulkan driver, so the backend's tests run on machines without a GPU) and
# the shader tools its tests use to check the committed SPIR-V
# (glslangValidator, spirv-val). Sourced by .ci/run with
# `set -euo pipefail`; idempotent and quiet.
vulkan_pkgs="libvulkan1 mesa-vulkan-drivers glslang-tools spirv-tools"
vulkan_missing=""
for p in $vulkan_pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || vulkan_missing="$vulkan_missing $p"
done
if [ -n "$vulkan_missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq $vulkan_missing >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq $vulkan_missing >/dev/null
  fi
fi
unset vulkan_pkgs vulkan_missing p
# Not yet required (SWITCHYARD_REQUIRE_BACKENDS): the lead adds vulkan
# there once the tests have passed reliably in CI.
