//go:build !arm64

package native

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// fma32 is a·b+c rounded once to float32, with the common case inline:
// a·b is exact in float64, and the float64 sum rounded to float32 is the
// single correct rounding unless it sits on a float32 midpoint (or is
// subnormal in float32), where ggml.FMA32 decides.
func fma32(a, b, c float32) float32 {
	s := float64(a)*float64(b) + float64(c)
	if u := math.Float64bits(s); u&(1<<29-1) != 1<<28 && math.Abs(s) >= 0x1p-126 {
		return float32(s)
	}
	return ggml.FMA32(a, b, c)
}
