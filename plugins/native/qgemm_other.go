//go:build !amd64

package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// qgemmKernels: no tile kernels for this GOARCH.
func qgemmKernels(ggml.Type, string) (*[qgemmRows]qgemmFn, *[4]qgemmFn) { return nil, nil }
