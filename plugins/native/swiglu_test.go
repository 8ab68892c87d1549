package native

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
)

// TestSwiGLUSameBits: the AVX-512 SwiGLU gives the reference kernel's
// bits on every value, the out-of-range ones included (large gates, NaN,
// infinities, zeros, subnormals).
func TestSwiGLUSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 27))
	const n = 16*4096 + 5
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		switch i % 8 {
		case 0:
			a[i] = float32(rng.NormFloat64() * 100)
		case 1:
			a[i] = float32(rng.NormFloat64() * 1e-3)
		default:
			a[i] = float32(rng.NormFloat64() * 3)
		}
		b[i] = float32(rng.NormFloat64())
	}
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1e-40, -1e-40, 88, -88, 89, -89, 103, -103, 104, -104, 133, -133, 140, -140, 1e30, -1e30}
	copy(a, special)
	want, got := make([]float32, n), make([]float32, n)
	blockquant.SwiGLU(want, a, b)
	d := swiglu16(got, a, b)
	if hasSwiGLU512 && d != n&^15 {
		t.Fatalf("the assembly did %d of %d", d, n)
	}
	if d == 0 {
		t.Skip("no AVX-512 here: the reference kernel runs")
	}
	blockquant.SwiGLU(got[d:], a[d:], b[d:])
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(want[i] != want[i] && got[i] != got[i]) {
			if bad++; bad < 10 {
				t.Errorf("silu(%v)·%v: %v (%08x), the reference %v (%08x)", a[i], b[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d values differ", bad, n)
	}
}

// TestExpSubSameBits: the AVX-512 exponential of the softmax gives the
// reference's ExpGGML bits.
func TestExpSubSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 27))
	x := make([]float32, 16*512+3)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 30)
	}
	x[0], x[1], x[2] = float32(math.Inf(-1)), 200, -200
	const m = 1.5
	got := make([]float32, len(x))
	d := expSub16(got, x, m)
	if d == 0 {
		t.Skip("no AVX-512 here")
	}
	for i := range x[:d] {
		if want := blockquant.ExpGGML(x[i] - m); math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("exp(%v − %v) = %v, reference %v", x[i], m, got[i], want)
		}
	}
}
