package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"math"
	"math/rand/v2"
	"testing"
)

// verf against math.Erf: within 3e-7 absolute and 2e-6 relative over the
// whole range (tails, the switch points, ±0, ±Inf, NaN), on lengths that
// cross the block.
func TestVErf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-8, 0.5, 0.999999, 1, -1, 1.000001, 3.99999, 4, -4, 10, -30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for len(x) < 3*erfBlock+7 {
		x = append(x, float32(rng.NormFloat64()*2), float32(rng.Float64()*10-5))
	}
	y := make([]float32, len(x))
	verf(y, x)
	for i, v := range x {
		want := math.Erf(float64(v))
		got := float64(y[i])
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("erf(%v) = %v, want NaN", v, got)
			}
			continue
		}
		if d := math.Abs(got - want); d > 3e-7 && d > 2e-6*math.Abs(want) {
			t.Fatalf("erf(%v) = %v, want %v (|Δ| %.3g)", v, got, want, d)
		}
		if v == 0 && math.Signbit(float64(v)) != math.Signbit(got) {
			t.Fatalf("erf(%v) = %v: sign of zero lost", v, got)
		}
	}
}

func BenchmarkVErf(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i-2048) / 512
	}
	y := make([]float32, len(x))
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		verf(y, x)
	}
}

func BenchmarkMathErf(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i-2048) / 512
	}
	y := make([]float32, len(x))
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		for i, v := range x {
			y[i] = float32(math.Erf(float64(v)))
		}
	}
}

// An Erf node builds erf.go's kernel (a node left to the reference kernel
// builds none); TestVectorOpsAgainstReference checks its values.
func TestErfNodeKernel(t *testing.T) {
	if k, err := build(&buildCtx{}, &graph.Node{OpType: "Erf", Inputs: []string{"x"}, Outputs: []string{"y"}}, nil); err != nil || k == nil {
		t.Fatalf("Erf builds no fast kernel: %v", err)
	}
}

// vgelu and vfastGelu against their formulas in float64.
func TestVGelu(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := []float32{0, -0, 1, -1, 3, -3, 6, -6, 20, -20}
	for len(x) < 2*erfBlock+9 {
		x = append(x, float32(rng.NormFloat64()*3))
	}
	y, z := make([]float32, len(x)), make([]float32, len(x))
	vgelu(y, x)
	vfastGelu(z, x)
	for i, v := range x {
		f := float64(v)
		want := f * (1 + math.Erf(f/math.Sqrt2)) / 2
		if d := math.Abs(float64(y[i]) - want); d > 1e-6*(1+math.Abs(want)) {
			t.Fatalf("gelu(%v) = %v, want %v", v, y[i], want)
		}
		wantF := f * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(f+0.044715*f*f*f))) / 2
		if d := math.Abs(float64(z[i]) - wantF); d > 2e-6*(1+math.Abs(wantF)) {
			t.Fatalf("fast gelu(%v) = %v, want %v", v, z[i], wantF)
		}
	}
}
