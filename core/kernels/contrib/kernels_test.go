package contrib_test

import (
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	_ "github.com/switchyard-hal/switchyard/core/kernels/all"
)

func run(t *testing.T, domain, op string, attrs map[string]*graph.Attribute, nout int, in ...*graph.Tensor) []*graph.Tensor {
	t.Helper()
	s, ok := kernels.Lookup(domain, op)
	if !ok {
		t.Fatalf("no kernel %s", op)
	}
	n := &graph.Node{Name: "n", OpType: op, Domain: domain, Attrs: attrs}
	for i := 0; i < nout; i++ {
		n.Outputs = append(n.Outputs, "y")
	}
	out, err := s.Kernel(&kernels.Context{Opset: 1}, n, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func near(t *testing.T, what string, got *graph.Tensor, want ...float64) {
	t.Helper()
	for i, w := range want {
		if g := got.Float64At(i); math.Abs(g-w) > 1e-5 {
			t.Errorf("%s[%d] = %g, want %g", what, i, g, w)
		}
	}
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }

// Hand-computed: FastGelu(1) = 0.5·(1+tanh(0.79788456·1.044715)) = 0.841192;
// Gelu(1) = 0.5·(1+erf(1/√2)) = 0.841345.
func TestGelus(t *testing.T) {
	out := run(t, "com.microsoft", "FastGelu", nil, 1, f32([]int{2}, 0.5, 0), f32([]int{2}, 0.5, 0))
	near(t, "FastGelu", out[0], 0.841192, 0)
	out = run(t, "com.microsoft", "Gelu", nil, 1, f32([]int{1}, 1))
	near(t, "Gelu", out[0], 0.841345)
}

// RMS of (3, 4) is √12.5: y = (3, 4)/√(12.5+0)·(1, 2).
func TestSimplifiedNorms(t *testing.T) {
	eps := map[string]*graph.Attribute{"epsilon": {Name: "epsilon", Type: graph.AttrFloat, F: 0}}
	out := run(t, "", "SimplifiedLayerNormalization", eps, 1, f32([]int{1, 2}, 3, 4), f32([]int{2}, 1, 2))
	r := math.Sqrt(12.5)
	near(t, "Y", out[0], 3/r, 8/r)
	// skip + input = (3, 4); sum output is that
	out = run(t, "com.microsoft", "SkipSimplifiedLayerNormalization", eps, 4, f32([]int{1, 2}, 1, 1), f32([]int{1, 2}, 2, 3), f32([]int{2}, 1, 2))
	near(t, "Y", out[0], 3/r, 8/r)
	near(t, "sum", out[3], 3, 4)
	// layer norm of (1, 3): mean 2, var 1 → (-1, 1)·γ + β
	out = run(t, "com.microsoft", "SkipLayerNormalization", eps, 1, f32([]int{1, 2}, 0, 2), f32([]int{1, 2}, 1, 1), f32([]int{2}, 2, 2), f32([]int{2}, 1, 1))
	near(t, "Y", out[0], -1, 3)
}

// One head, two keys with equal scores: the output is the mean of the
// values; with unidirectional the first query sees only the first key.
func TestMultiHeadAttention(t *testing.T) {
	heads := map[string]*graph.Attribute{"num_heads": {Name: "num_heads", Type: graph.AttrInt, I: 1}}
	q := f32([]int{1, 2, 2}, 0, 0, 0, 0)
	k := f32([]int{1, 2, 2}, 1, 0, 0, 1)
	v := f32([]int{1, 2, 2}, 2, 4, 6, 8)
	out := run(t, "com.microsoft", "MultiHeadAttention", heads, 1, q, k, v)
	near(t, "out", out[0], 4, 6, 4, 6)
	heads["unidirectional"] = &graph.Attribute{Name: "unidirectional", Type: graph.AttrInt, I: 1}
	out = run(t, "com.microsoft", "MultiHeadAttention", heads, 1, q, k, v)
	near(t, "causal out", out[0], 2, 4, 4, 6)
}

// Rotation by 90°: cos 0, sin 1 maps (x1, x2) to (-x2, x1).
func TestRotaryEmbedding(t *testing.T) {
	out := run(t, "com.microsoft", "RotaryEmbedding", nil, 1, f32([]int{1, 1, 2}, 1, 2),
		graph.MustFromSlice([]int{1, 1}, []int64{0}), f32([]int{1, 1}, 0), f32([]int{1, 1}, 1))
	near(t, "y", out[0], -2, 1)
}
