# Headless Chromium for serve's TestChatPageInBrowser (driven with
# github.com/chromedp/chromedp). Sourced by .ci/run with
# `set -euo pipefail`; idempotent and quiet.
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
fi
# installed: the browser test must run, not skip
export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}chromium"
