# Chat templates of the model families issue #27 names (Llama 3.1/3.2,
# Qwen 2.5, Qwen 3, Gemma 3, Phi-4-mini, SmolLM2) for llm's
# TestChatTemplateFamiliesMatchJinja2: other projects' files, so never in
# the repository. They come with the npm package @huggingface/ollama-utils
# (MIT; src/chat-template-automap.ts holds each model's GGUF chat_template),
# fetched with `npm pack` (the registry checks its integrity; the tarball's
# SHA-256 is pinned here, each template's in the test) and unpacked into
# ~/.cache/switchyard/chat-templates. Needs npm and tar.
# Sourced by .ci/run with set -euo pipefail; idempotent and quiet.
export SWITCHYARD_CHAT_TEMPLATE_CACHE="${HOME}/.cache/switchyard/chat-templates"
(
  set -euo pipefail
  dir="$SWITCHYARD_CHAT_TEMPLATE_CACHE"
  pkg="$dir/ollama-utils-0.0.18"
  [ -f "$pkg/package/src/chat-template-automap.ts" ] && exit 0
  mkdir -p "$dir"
  tgz="$(cd "$dir" && npm pack --silent --loglevel=error --no-update-notifier @huggingface/ollama-utils@0.0.18 | tail -n 1)"
  echo "3d8beba35ea5d634970e29090ab45234e54a3db8d9263cf72e0031c1cc44f8d5  $dir/$tgz" | sha256sum -c --quiet -
  rm -rf "$pkg.tmp" && mkdir -p "$pkg.tmp"
  tar -xzf "$dir/$tgz" -C "$pkg.tmp"
  rm -f "$dir/$tgz"
  rm -rf "$pkg" && mv "$pkg.tmp" "$pkg"
)
# installed: the test must run, not skip
export SWITCHYARD_REQUIRE_BACKENDS="${SWITCHYARD_REQUIRE_BACKENDS:+$SWITCHYARD_REQUIRE_BACKENDS,}chat-templates"
