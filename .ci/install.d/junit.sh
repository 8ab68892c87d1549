# A standard JUnit consumer for conformance's TestJUnitReadByStandardConsumer:
# test-results-parser from the npm registry (node is on the machine).
# Sourced by .ci/run with set -euo pipefail; idempotent and quiet.
export SWITCHYARD_JUNIT_PARSER_DIR="${HOME}/.cache/switchyard/junit-consumer"
if [ ! -d "$SWITCHYARD_JUNIT_PARSER_DIR/node_modules/test-results-parser" ]; then
  mkdir -p "$SWITCHYARD_JUNIT_PARSER_DIR"
  if [ ! -f "$SWITCHYARD_JUNIT_PARSER_DIR/package.json" ]; then
    echo '{"private": true}' > "$SWITCHYARD_JUNIT_PARSER_DIR/package.json"
  fi
  npm install --prefix "$SWITCHYARD_JUNIT_PARSER_DIR" --no-audit --no-fund --loglevel=error test-results-parser@0.4.6 >/dev/null
fi
