# Tools to regenerate hal/wire's gRPC code (hal/wire's generate test checks
# the committed code is current). Sourced by .ci/run with set -euo pipefail.
# protoc-gen-go is pinned to the google.golang.org/protobuf version in
# go.mod; protoc-gen-go-grpc v1.6.0 generated the committed code.
if ! command -v protoc >/dev/null 2>&1; then
  if ! apt-get install -y -qq protobuf-compiler >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq protobuf-compiler >/dev/null
  fi
fi
_pb_version="$(go list -m -f '{{.Version}}' google.golang.org/protobuf)"
if ! command -v protoc-gen-go >/dev/null 2>&1 || ! protoc-gen-go --version 2>/dev/null | grep -q "${_pb_version}"; then
  GOFLAGS= go install "google.golang.org/protobuf/cmd/protoc-gen-go@${_pb_version}"
fi
if ! command -v protoc-gen-go-grpc >/dev/null 2>&1 || ! protoc-gen-go-grpc --version 2>/dev/null | grep -q "1.6.0"; then
  GOFLAGS= go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
fi
unset _pb_version
