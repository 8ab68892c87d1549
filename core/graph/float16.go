package graph

import (
	"math"

	"github.com/x448/float16"
)

// F16 is an IEEE 754 half-precision value stored as its bit pattern.
type F16 uint16

// BF16 is a bfloat16 value stored as its bit pattern (the top 16 bits of a float32).
type BF16 uint16

// F16FromFloat32 rounds to nearest even.
func F16FromFloat32(f float32) F16 { return F16(float16.Fromfloat32(f)) }

// Float32 widens exactly.
func (h F16) Float32() float32 { return float16.Frombits(uint16(h)).Float32() }

// F16FromFloat64 rounds a float64 to half precision (via float32; double
// rounding differs from direct rounding only in rare tie cases).
func F16FromFloat64(f float64) F16 { return F16FromFloat32(float32(f)) }

// BF16FromFloat32 rounds to nearest even; NaN stays NaN.
func BF16FromFloat32(f float32) BF16 {
	b := math.Float32bits(f)
	if f != f {
		return BF16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// Float32 widens exactly.
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }
