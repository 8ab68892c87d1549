//go:build !amd64

package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// x16bArchGemv: no assembly x16 kernels for Q5_0 and Q6_K here.
func x16bArchGemv(ggml.Type, []byte, int, int, *ggml.Act, int, int, []float32, int) bool {
	return false
}
