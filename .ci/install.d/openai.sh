# The official OpenAI client (npm "openai") for serve's TestOpenAINodeClient,
# installed outside the repository (node is on the machine).
# Sourced by .ci/run with set -euo pipefail; idempotent and quiet.
export SWITCHYARD_OPENAI_NODE_DIR="${HOME}/.cache/switchyard/openai-node"
if [ ! -f "$SWITCHYARD_OPENAI_NODE_DIR/node_modules/openai/package.json" ]; then
  mkdir -p "$SWITCHYARD_OPENAI_NODE_DIR"
  if [ ! -f "$SWITCHYARD_OPENAI_NODE_DIR/package.json" ]; then
    echo '{"private": true}' > "$SWITCHYARD_OPENAI_NODE_DIR/package.json"
  fi
  npm install --prefix "$SWITCHYARD_OPENAI_NODE_DIR" --no-audit --no-fund --loglevel=error openai@4.104.0 >/dev/null
fi
# installed: its test must run, not skip
export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}openai-node"
