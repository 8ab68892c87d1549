# llama.cpp peer (../shared/peers/llamacpp): a prebuilt llama.cpp from npm
# that formats/llama's TestLlamaCppPeer runs side by side with Switchyard
# on tiny random GGUFs of every architecture built (tokens and logits).
# Its setup.sh installs node_modules and extracts the vocabularies (the npm
# registry only; idempotent: a second run only prints versions). Needs
# node, npm, git and python3. Sourced by .ci/run with set -euo pipefail.
if [ -x ../shared/peers/llamacpp/setup.sh ]; then
  (cd ../shared/peers/llamacpp && ./setup.sh >/dev/null)
  # set up: the peer tests must run, not skip
  export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}llamacpp"
fi
