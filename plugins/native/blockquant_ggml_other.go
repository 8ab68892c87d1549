//go:build !amd64 && !arm64

package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// archBQKKernel: no typed integer-path assembly for this GOARCH.
func archBQKKernel(ggml.Type, string) *bqkKernel { return nil }

// archBQKFloat: no typed float-path assembly for this GOARCH.
func archBQKFloat(ggml.Type) func(nb int, w *uint8, x *float32, xs *float32) float32 { return nil }
