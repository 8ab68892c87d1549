//go:build !amd64

package native

import "github.com/switchyard-hal/switchyard/core/graph"

// f16Asm: no assembly conversions here.
var f16Asm = false

func archF16Widen(dst []float32, src []graph.F16) int { return 0 }

func archF16Round(x []float32) int { return 0 }
