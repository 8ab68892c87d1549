package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGGMLDotsAssembly: the AVX-512 dot products give the Go forms'
// bits (the fused multiply-adds emulated exactly there).
func TestGGMLDotsAssembly(t *testing.T) {
	if !hasGGMLDot512 {
		t.Skip("no AVX-512 here")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 16, 48, 64, 80, 128, 256, 1024, 1040} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*float64(1+i%7))
		}
		fast16, fastG := dot16(x, y), dotGGML(x, y)
		hasGGMLDot512 = false
		slow16, slowG := dot16(x, y), dotGGML(x, y)
		hasGGMLDot512 = true
		if math.Float32bits(fast16) != math.Float32bits(slow16) || math.Float32bits(fastG) != math.Float32bits(slowG) {
			t.Errorf("n %d: dot16 %v (Go %v), dotGGML %v (Go %v)", n, fast16, slow16, fastG, slowG)
		}
	}
}
