package blockquant_test

import (
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
)

// TestExpGGML: ggml's exponential stays within 2.5 ulp of e^x (ggml: 1.45 ulp plus the rounding) over its
// range, reaches 0 and +Inf where ggml's does, and SwiGLU is silu(a)·b.
func TestExpGGML(t *testing.T) {
	for x := float32(-87); x < 88; x += 0.0137 {
		got, want := float64(blockquant.ExpGGML(x)), math.Exp(float64(x))
		ulp := math.Abs(float64(math.Nextafter32(float32(want), float32(math.Inf(1))))-float64(float32(want))) + 1e-45
		if math.Abs(got-want) > 2.5*ulp {
			t.Fatalf("ExpGGML(%v) = %v, e^x = %v (%.2f ulp)", x, got, want, math.Abs(got-want)/ulp)
		}
	}
	if e := blockquant.ExpGGML(-200); e != 0 {
		t.Errorf("ExpGGML(-200) = %v, want 0", e)
	}
	if e := blockquant.ExpGGML(200); !math.IsInf(float64(e), 1) {
		t.Errorf("ExpGGML(200) = %v, want +Inf", e)
	}
	if e := blockquant.ExpGGML(0); e != 1 {
		t.Errorf("ExpGGML(0) = %v, want 1", e)
	}
	y := make([]float32, 3)
	blockquant.SwiGLU(y, []float32{0, 2, -30}, []float32{5, 3, 1})
	for i, want := range []float64{0, 3 * 2 / (1 + math.Exp(-2)), -30 / (1 + math.Exp(30))} {
		if math.Abs(float64(y[i])-want) > 1e-6*math.Abs(want)+1e-30 {
			t.Errorf("SwiGLU %d: %v, want %v", i, y[i], want)
		}
	}
}
