//go:build !amd64

package native

import "github.com/switchyard-hal/switchyard/core/graph"

// f16Attn: no float16 row kernels here.
var f16Attn = false

// f16DotRows is gqa_cache_amd64.go's assembly path: none here (false).
func f16DotRows(out []float32, K []graph.F16, q []float32) bool { return false }

// f16WeighRows is gqa_cache_amd64.go's assembly path: none here (false).
func f16WeighRows(e []float32, V []graph.F16, o []float32) bool { return false }

// archF16Narrow converts nothing here.
func archF16Narrow(dst []graph.F16, src []float32) int { return 0 }
