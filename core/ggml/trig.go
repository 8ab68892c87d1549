package ggml

import (
	"encoding/hex"
	"math"
)

// Sinf and Cosf are the float32 sine and cosine that llama.cpp's CPU
// backend gets from the C library when it fills its rotary tables
// (ggml_rope_cache_init: cosf(θ)·mscale, sinf(θ)·mscale): glibc's
// single-precision routines (from Arm's optimized-routines) as x86-64
// runs them on a CPU with FMA and AVX2, where glibc picks the variants
// compiled with -mfma, in which every a + b·c of the argument reduction
// and of the polynomials is one fused multiply-add. They are not
// correctly rounded: about one angle in a hundred of a rotary table
// differs from float32(math.Sin(θ)) by one unit in the last place, and
// one such unit in a rotated query or key moves a Q8_0 activation a step
// somewhere downstream (the Qwen2.5-0.5B-shape Q8_0 model parted from
// llama.cpp at position 60 of 64 that way).
//
// The arithmetic, as the C library does it: the argument in float64;
// below about π/4 (compared on the top 12 bits) the polynomial directly,
// and below 2^-12 the argument itself (sine) or 1 (cosine); below about
// 120 the quadrant n = round(x·2/π) from a truncating conversion of
// x·(2/π·2^24) and the reduced argument x − n·π/2 (one fused step);
// beyond, a fixed-point product with 192 bits of 4/π. Then the sine
// polynomial x + x³·s1 + x⁵·(s2 + x²·s3) or the cosine polynomial
// c0 + x²·c1 + x⁴·c2 + x⁶·(c3 + x²·c4), chosen and signed by the
// quadrant, each a + b·c fused, the float64 result rounded to float32.
func Sinf(y float32) float32 { return sincosf(y, false) }

// Cosf is the cosine of Sinf's definition.
func Cosf(y float32) float32 { return sincosf(y, true) }

// The constants of glibc's sincosf tables (sincosf_data.c), as values.
const (
	trigTwoByPi24 = 0x1.45F306DC9C883p+23 // 2/π·2^24: the quadrant lands in bits 24 and up
	trigPiBy2     = 0x1.921FB54442D18p0   // π/2
	trigPi63      = 0x1.921FB54442D18p-62 // 2π·2^-64: the fixed-point residue's scale
	trigS1        = -0x1.555545995a603p-3
	trigS2        = 0x1.1107605230bc4p-7
	trigS3        = -0x1.994eb3774cf24p-13
)

// trigCos is the cosine polynomial c0..c4; glibc's second table negates
// it (quadrants 2 and 3 take −cos for free).
var trigCos = [2][5]float64{
	{0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16},
	{-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16},
}

// trigSign is the sign of the reduced argument by quadrant.
var trigSign = [4]float64{1, -1, -1, 1}

// trigInvPio4 holds 4/π (0.a2f9836e… in hexadecimal, 192 bits) as
// glibc's __inv_pio4 does: entry i is the 32 bits ending at the i-th
// byte, so that each entry adds 8 new bits.
var trigInvPio4 = func() (t [24]uint32) {
	b, err := hex.DecodeString("a2f9836e4e441529fc2757d1f534ddc0db6295993c439041")
	if err != nil {
		panic(err)
	}
	for i := range t {
		for j := max(0, i-3); j <= i; j++ {
			t[i] = t[i]<<8 | uint32(b[j])
		}
	}
	return t
}()

// top12 is the sign-less exponent and top three mantissa bits of x, what
// glibc compares its thresholds on.
func top12(x float32) uint32 { return math.Float32bits(x) >> 20 & 0x7ff }

var (
	top12PiBy4 = top12(0x1.921FB6p-1)
	top12Tiny  = top12(0x1p-12)
	top12Fast  = top12(120)
	top12Inf   = top12(float32(math.Inf(1)))
)

func sincosf(y float32, cos bool) float32 {
	x := float64(y)
	t := top12(y)
	odd := 0 // 1: the cosine polynomial
	if cos {
		odd = 1
	}
	switch {
	case t < top12PiBy4:
		if t < top12Tiny {
			if cos {
				return 1
			}
			return y
		}
		return trigPoly(x, float64(x*x), 0, odd)
	case t < top12Fast:
		// n = round(x·2/π) by truncating x·2/π·2^24 + 2^23, then >> 24
		n := (int32(float64(x*trigTwoByPi24)) + 0x800000) >> 24
		r := math.FMA(-float64(n), trigPiBy2, x)
		return trigPoly(float64(r*trigSign[n&3]), float64(r*r), int(n>>1&1), int(n&1)^odd)
	case t < top12Inf:
		xi := math.Float32bits(y)
		r, n := reduceLarge(xi)
		q := n + int(xi>>31)
		return trigPoly(float64(r*trigSign[q&3]), float64(r*r), q>>1&1, n&1^odd)
	}
	return (y - y) / (y - y) // NaN for ±Inf and NaN
}

// reduceLarge is x mod π/2 and the quadrant for |x| ≥ 120, in 64-bit
// fixed point: the 24-bit mantissa times the 96 bits of 4/π that matter
// at its exponent.
func reduceLarge(xi uint32) (float64, int) {
	arr := trigInvPio4[xi>>26&15:]
	m := (xi&0xffffff | 0x800000) << (xi >> 23 & 7)
	hi := uint64(m * arr[0]) // the product's low 32 bits
	mid := uint64(m) * uint64(arr[4])
	lo := uint64(m) * uint64(arr[8])
	r := (lo>>32 | hi<<32) + mid
	n := (r + 1<<61) >> 62
	r -= n << 62
	return float64(int64(r)) * trigPi63, int(n)
}

// trigPoly is glibc's sinf_poly: the sine polynomial of x (x2 its square)
// where odd is 0, the cosine polynomial of table neg where it is 1, each
// a + b·c one fused multiply-add (explicit float64 conversions keep the
// plain products unfused on every architecture).
func trigPoly(x, x2 float64, neg, odd int) float32 {
	if odd == 0 {
		x3 := float64(x * x2)
		s1 := math.FMA(x2, trigS3, trigS2)
		x7 := float64(x3 * x2)
		s := math.FMA(x3, trigS1, x)
		return float32(math.FMA(x7, s1, s))
	}
	c := &trigCos[neg]
	x4 := float64(x2 * x2)
	c2 := math.FMA(x2, c[4], c[3])
	c1 := math.FMA(x2, c[1], c[0])
	x6 := float64(x4 * x2)
	s := math.FMA(x4, c[2], c1)
	return float32(math.FMA(x6, c2, s))
}
