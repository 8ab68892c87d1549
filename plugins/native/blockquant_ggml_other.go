//go:build !amd64

package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// archBQKKernel: no typed integer-path assembly for this GOARCH.
func archBQKKernel(ggml.Type, string) *bqkKernel { return nil }
