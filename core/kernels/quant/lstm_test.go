package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

type lstmCase struct {
	B, T, I, N int
	x          []int8
	W, R       []int8
	ws         []float32
	bias       []int32
	xs, hs     float32
	xz, hz     int8
}

func (c lstmCase) inputs() []*graph.Tensor {
	h0 := make([]int8, c.B*c.N)
	for i := range h0 {
		h0[i] = c.hz
	}
	return []*graph.Tensor{
		graph.MustFromSlice([]int{c.B, c.T, c.I}, c.x),
		graph.MustFromSlice([]int{}, []float32{c.xs}), graph.MustFromSlice([]int{}, []int8{c.xz}),
		graph.MustFromSlice([]int{4, c.N, c.I}, c.W), graph.MustFromSlice([]int{4, c.N, c.N}, c.R),
		graph.MustFromSlice([]int{8}, c.ws), graph.MustFromSlice([]int{4, c.N}, c.bias),
		graph.MustFromSlice([]int{c.B, c.N}, h0),
		graph.MustFromSlice([]int{}, []float32{c.hs}), graph.MustFromSlice([]int{}, []int8{c.hz}),
		graph.MustFromSlice([]int{c.B, c.N}, make([]int16, c.B*c.N)),
	}
}

func lstmNode(cellScale int64) *graph.Node {
	return node("LSTM", &graph.Attribute{Name: "cell_scale", Type: graph.AttrInt, I: cellScale},
		&graph.Attribute{Name: "hidden_scale", Type: graph.AttrFloat, F: 1.0 / 128},
		&graph.Attribute{Name: "hidden_zero_point", Type: graph.AttrInt, I: 3})
}

// TestLSTMAgainstFloat: a random integer LSTM over 2 sequences of 4 steps
// agrees with the real-valued LSTM on the dequantised weights and inputs
// (σ gates i, f, o, tanh cell gate, c = f·c + i·g, h = o·tanh c; gate
// order input, forget, cell, output) within 3 output steps at every step:
// the gate mapping, the zero-point folding and the state carried across
// steps and batches are right (the 16-bit gates and 8-bit state round).
func TestLSTMAgainstFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	c := lstmCase{B: 2, T: 4, I: 6, N: 5, xs: 0.05, hs: 1.0 / 128, xz: -20, hz: 3}
	c.x = make([]int8, c.B*c.T*c.I)
	for i := range c.x {
		c.x[i] = int8(rng.IntN(256) - 128)
	}
	c.W, c.R = make([]int8, 4*c.N*c.I), make([]int8, 4*c.N*c.N)
	for i := range c.W {
		c.W[i] = int8(rng.IntN(255) - 127)
	}
	for i := range c.R {
		c.R[i] = int8(rng.IntN(255) - 127)
	}
	c.ws = []float32{0.01, 0.012, 0.008, 0.011, 0.02, 0.015, 0.018, 0.01}
	c.bias = make([]int32, 4*c.N)
	for i := range c.bias {
		c.bias[i] = int32(rng.IntN(2001) - 1000)
	}
	const cellScale = -11
	got := runK(t, lstmNode(cellScale), c.inputs()...)
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	worst := 0.0
	for b := 0; b < c.B; b++ {
		h := make([]float64, c.N)
		for i := range h {
			h[i] = 0 // h0 = the zero point: real 0
		}
		cell := make([]float64, c.N)
		for s := 0; s < c.T; s++ {
			var g [4][]float64
			for k := 0; k < 4; k++ {
				g[k] = make([]float64, c.N)
				for r := 0; r < c.N; r++ {
					row := k*c.N + r
					v := float64(c.bias[row]) * float64(c.ws[k]) * float64(c.xs)
					for j := 0; j < c.I; j++ {
						v += float64(c.ws[k]) * float64(c.W[row*c.I+j]) * float64(c.xs) * float64(int(c.x[(b*c.T+s)*c.I+j])-int(c.xz))
					}
					for j := 0; j < c.N; j++ {
						v += float64(c.ws[4+k]) * float64(c.R[row*c.N+j]) * h[j]
					}
					v = max(min(v, 8), -8) // Q3.12 saturates
					if k == 2 {
						g[k][r] = math.Tanh(v)
					} else {
						g[k][r] = sig(v)
					}
				}
			}
			for r := 0; r < c.N; r++ {
				cell[r] = g[1][r]*cell[r] + g[0][r]*g[2][r]
				h[r] = g[3][r] * math.Tanh(cell[r])
				q := int(got[(b*c.T+s)*c.N+r])
				e := math.Abs(float64(q-int(c.hz))*float64(c.hs) - h[r])
				worst = max(worst, e/float64(c.hs))
				h[r] = float64(q-int(c.hz)) * float64(c.hs) // carry the kernel's own rounded state
			}
		}
	}
	t.Logf("max |int8 LSTM − float LSTM| over 2×4 steps: %.2f output steps", worst)
	if worst > 3 {
		t.Errorf("integer LSTM %.2f steps from the float one", worst)
	}
}

// TestLSTMRejectsBadInputs: shapes that do not fit, a cell scale TFLite's
// kernel cannot take and bad scales are errors, not panics.
func TestLSTMRejectsBadInputs(t *testing.T) {
	s, _ := kernels.Lookup("switchyard.quant", "LSTM")
	c := lstmCase{B: 1, T: 1, I: 2, N: 2, xs: 0.1, hs: 0.1, x: []int8{1, 2}, W: make([]int8, 16), R: make([]int8, 16),
		ws: []float32{1, 1, 1, 1, 1, 1, 1, 1}, bias: make([]int32, 8)}
	if _, err := s.Kernel(&kernels.Context{Opset: 1}, lstmNode(-11), c.inputs()); err != nil {
		t.Fatalf("a well-formed LSTM fails: %v", err)
	}
	for name, mut := range map[string]func(in []*graph.Tensor, n *graph.Node){
		"W rows": func(in []*graph.Tensor, n *graph.Node) { in[3] = graph.MustFromSlice([]int{4, 3, 2}, make([]int8, 24)) },
		"R not int8": func(in []*graph.Tensor, n *graph.Node) {
			in[4] = graph.MustFromSlice([]int{4, 2, 2}, make([]float32, 16))
		},
		"7 scales":    func(in []*graph.Tensor, n *graph.Node) { in[5] = graph.MustFromSlice([]int{7}, make([]float32, 7)) },
		"zero scale":  func(in []*graph.Tensor, n *graph.Node) { in[5] = graph.MustFromSlice([]int{8}, make([]float32, 8)) },
		"bias length": func(in []*graph.Tensor, n *graph.Node) { in[6] = graph.MustFromSlice([]int{3}, make([]int32, 3)) },
		"c0 int8":     func(in []*graph.Tensor, n *graph.Node) { in[10] = graph.MustFromSlice([]int{1, 2}, make([]int8, 2)) },
		"2-D x":       func(in []*graph.Tensor, n *graph.Node) { in[0] = graph.MustFromSlice([]int{1, 2}, []int8{1, 2}) },
		"cell 2^-8":   func(in []*graph.Tensor, n *graph.Node) { n.Attrs["cell_scale"].I = -8 },
		"hidden 0":    func(in []*graph.Tensor, n *graph.Node) { n.Attrs["hidden_scale"].F = 0 },
	} {
		in, n := c.inputs(), lstmNode(-11)
		mut(in, n)
		if _, err := s.Kernel(&kernels.Context{Opset: 1}, n, in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestHalfUpRounding: the two requantisation rules differ exactly where
// the final shift meets a tie of a negative value (half_up one more), and
// agree everywhere else, over random values, multipliers and shifts.
func TestHalfUpRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ties := 0
	for i := 0; i < 200000; i++ {
		m := math.Exp(rng.Float64()*14 - 12)
		q, sh := quantizeMultiplier(m)
		x := int32(rng.IntN(1<<20) - 1<<19)
		away, up := mulByQuantizedMultiplier(x, q, sh), mulByQuantizedMultiplierHalfUp(x, q, sh)
		want := away
		if sh < 0 {
			r := -sh
			v := srdhm(x, q)
			if v < 0 && v&(int32(1)<<r-1) == int32(1)<<(r-1) {
				want, ties = away+1, ties+1
			}
		}
		if up != want {
			t.Fatalf("x=%d m=%g: away %d, half_up %d, want %d", x, m, away, up, want)
		}
	}
	if ties == 0 {
		t.Fatal("no tie met: the test does not test")
	}
	t.Logf("%d negative ties in 200000 cases", ties)
}
