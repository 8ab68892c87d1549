# Jinja2 (Debian's python3-jinja2), the reference the chat-template test
# (llm TestChatTemplatesMatchJinja2) renders real templates with to compare
# ours byte for byte. Sourced by .ci/run (set -euo pipefail); idempotent.
if ! python3 -c 'import jinja2' >/dev/null 2>&1; then
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jinja2 >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jinja2 >/dev/null
  fi
fi
# With Jinja2 present the comparison must run, not skip.
export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}jinja2"
