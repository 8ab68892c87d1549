package attention

import (
	"errors"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func TestShrink(t *testing.T) {
	x := f32([]int{5}, -2, -1, 0, 1, 2)
	tests := []struct {
		name  string
		attrs map[string]*graph.Attribute
		in    *graph.Tensor
		want  []float64
		wantI []int64 // exact expectations for int64
	}{
		{"hard", attrs(af("lambd", 1.5)), x, []float64{-2, 0, 0, 0, 2}, nil},
		{"soft", attrs(af("lambd", 1.5), af("bias", 1.5)), x, []float64{-0.5, 0, 0, 0, 0.5}, nil},
		{"defaults", nil, f32([]int{3}, -0.75, 0.5, 0.75), []float64{-0.75, 0, 0.75}, nil},
		{"nan", nil, f32([]int{1}, float32(math.NaN())), []float64{math.NaN()}, nil},
		// integers: -3+1.5 = -1.5 truncates to -1; 3-1.5 = 1.5 to 1
		{"int8 fractional bias", attrs(af("lambd", 1), af("bias", 1.5)), graph.MustFromSlice([]int{3}, []int8{-3, 1, 3}), []float64{-1, 0, 1}, nil},
		{"int64 exact", attrs(af("lambd", 0), af("bias", 1)), graph.MustFromSlice([]int{2}, []int64{1 << 60, -(1 << 60)}), nil, []int64{1<<60 - 1, -(1<<60 - 1)}},
		{"uint8", attrs(af("lambd", 1), af("bias", 2)), graph.MustFromSlice([]int{3}, []uint8{1, 2, 200}), []float64{0, 0, 198}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "Shrink", 9, tc.attrs, nil, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if out[0].DType != tc.in.DType {
				t.Fatalf("dtype %v, want %v", out[0].DType, tc.in.DType)
			}
			if tc.wantI != nil {
				for i, w := range tc.wantI {
					if out[0].Int64At(i) != w {
						t.Fatalf("element %d = %d, want %d", i, out[0].Int64At(i), w)
					}
				}
				return
			}
			near(t, "Y", out[0], tc.in.Shape, tc.want...)
		})
	}
}

func TestSwishSwiGLU(t *testing.T) {
	out, err := run(t, "Swish", 24, nil, nil, f32([]int{3}, 0, 1, -1))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "Swish", out[0], []int{3}, 0, e1, -(1 - e1))
	out, err = run(t, "Swish", 24, attrs(af("alpha", 2)), nil, f32([]int{1}, -1))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "Swish alpha", out[0], []int{1}, -1/(1+math.Exp(2)))
	if _, err := run(t, "Swish", 23, nil, nil, f32([]int{1}, 1)); !errors.Is(err, kernels.ErrUnsupported) {
		t.Errorf("Swish at opset 23: err = %v, want ErrUnsupported", err)
	}

	out, err = run(t, "SwiGLU", 28, nil, nil, f32([]int{2}, 1, 0), f32([]int{2}, 2, 5))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "SwiGLU", out[0], []int{2}, 2*e1, 0)
	out, err = run(t, "SwiGLU", 28, attrs(af("alpha", 0)), nil, f32([]int{1}, 4), f32([]int{1}, 3))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "SwiGLU alpha=0", out[0], []int{1}, 4*0.5*3)
	if _, err := run(t, "SwiGLU", 28, nil, nil, f32([]int{2}, 1, 0), f32([]int{1}, 2)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("SwiGLU shape mismatch: err = %v, want ErrInvalid", err)
	}
}

func TestRMSNormalization(t *testing.T) {
	// rows [3 4] and [0 0]: rms(3,4) = sqrt(12.5)
	x := f32([]int{2, 2}, 3, 4, 0, 0)
	r := math.Sqrt(12.5)
	tests := []struct {
		name  string
		attrs map[string]*graph.Attribute
		scale *graph.Tensor
		want  []float64
	}{
		{"last axis", attrs(af("epsilon", 0)), f32([]int{2}, 1, 2), []float64{3 / r, 8 / r, math.NaN(), math.NaN()}},
		{"epsilon", attrs(af("epsilon", 1)), f32([]int{1}, 1), []float64{3 / math.Sqrt(13.5), 4 / math.Sqrt(13.5), 0, 0}},
		// axis 0: one group of all four values, mean square 25/4
		{"axis 0", attrs(ai("axis", 0), af("epsilon", 0)), f32([]int{2, 2}, 1, 1, 1, 1), []float64{1.2, 1.6, 0, 0}},
		{"axis -2", attrs(ai("axis", -2), af("epsilon", 0)), f32([]int{2}, 1, 10), []float64{1.2, 16, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "RMSNormalization", 23, tc.attrs, nil, x, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "Y", out[0], []int{2, 2}, tc.want...)
		})
	}
	if _, err := run(t, "RMSNormalization", 23, attrs(ai("axis", 2)), nil, x, f32([]int{1}, 1)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad axis: err = %v", err)
	}
	if _, err := run(t, "RMSNormalization", 23, nil, nil, x, f32([]int{3}, 1, 1, 1)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad scale: err = %v", err)
	}
}

func TestLpNormalization(t *testing.T) {
	x := f32([]int{2, 2}, 3, -4, 0, 0)
	tests := []struct {
		name  string
		attrs map[string]*graph.Attribute
		want  []float64
	}{
		{"l2", nil, []float64{0.6, -0.8, 0, 0}},
		{"l1", attrs(ai("p", 1)), []float64{3.0 / 7, -4.0 / 7, 0, 0}},
		{"axis 0", attrs(ai("axis", 0)), []float64{1, -1, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "LpNormalization", 22, tc.attrs, nil, x)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "Y", out[0], []int{2, 2}, tc.want...)
		})
	}
	if _, err := run(t, "LpNormalization", 22, attrs(ai("p", 3)), nil, x); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("p=3: err = %v", err)
	}
}

func TestMeanVarianceNormalization(t *testing.T) {
	// default axes [0,2,3]: per channel; channel 0 = {1,3}, channel 1 = {5,5}
	x := f32([]int{1, 2, 1, 2}, 1, 3, 5, 5)
	out, err := run(t, "MeanVarianceNormalization", 13, nil, nil, x)
	if err != nil {
		t.Fatal(err)
	}
	d := 1 + mvnEpsilon
	near(t, "default axes", out[0], []int{1, 2, 1, 2}, -1/d, 1/d, 0, 0)
	out, err = run(t, "MeanVarianceNormalization", 13, attrs(&graph.Attribute{Name: "axes", Type: graph.AttrInts, Ints: []int64{-1}}), nil, x)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "axes [-1]", out[0], []int{1, 2, 1, 2}, -1/d, 1/d, 0, 0)
	if _, err := run(t, "MeanVarianceNormalization", 13, nil, nil, f32([]int{2}, 1, 2)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("rank-1 input with default axes: err = %v", err)
	}
}

func TestRotaryEmbedding(t *testing.T) {
	// one head of size 4, x = [1 2 3 4]; cos = [0 1], sin = [1 0]
	x := f32([]int{1, 1, 1, 4}, 1, 2, 3, 4)
	cos2, sin2 := f32([]int{1, 2}, 0, 1), f32([]int{1, 2}, 1, 0)
	pos := graph.MustFromSlice([]int{1, 1}, []int64{0})
	tests := []struct {
		name  string
		attrs map[string]*graph.Attribute
		in    []*graph.Tensor
		shape []int
		want  []float64
	}{
		// halves: x1=[1 2], x2=[3 4] → [c·x1 - s·x2, s·x1 + c·x2]
		{"halves", nil, []*graph.Tensor{x, cos2, sin2, pos}, []int{1, 1, 1, 4}, []float64{-3, 2, 1, 4}},
		// pairs (1,2), (3,4)
		{"interleaved", attrs(ai("interleaved", 1)), []*graph.Tensor{x, cos2, sin2, pos}, []int{1, 1, 1, 4}, []float64{-2, 1, 3, 4}},
		{"no position ids", nil, []*graph.Tensor{x, f32([]int{1, 1, 2}, 0, 1), f32([]int{1, 1, 2}, 1, 0)}, []int{1, 1, 1, 4}, []float64{-3, 2, 1, 4}},
		// only the first 2 features rotate
		{"rotary dim", attrs(ai("rotary_embedding_dim", 2)), []*graph.Tensor{x, f32([]int{1, 1}, 0), f32([]int{1, 1}, 1), pos}, []int{1, 1, 1, 4}, []float64{-2, 1, 3, 4}},
		// 3-D, two heads of size 2
		{"3d", attrs(ai("num_heads", 2)), []*graph.Tensor{f32([]int{1, 1, 4}, 1, 2, 3, 4), f32([]int{1, 1}, 0), f32([]int{1, 1}, 1), pos}, []int{1, 1, 4}, []float64{-2, 1, -4, 3}},
		// position 1 picks the second cache row (identity rotation)
		{"position", nil, []*graph.Tensor{x, f32([]int{2, 2}, 0, 0, 1, 1), f32([]int{2, 2}, 1, 1, 0, 0), graph.MustFromSlice([]int{1, 1}, []int64{1})}, []int{1, 1, 1, 4}, []float64{1, 2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "RotaryEmbedding", 23, tc.attrs, nil, tc.in...)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "Y", out[0], tc.shape, tc.want...)
		})
	}
	bad := []struct {
		name  string
		attrs map[string]*graph.Attribute
		in    []*graph.Tensor
	}{
		{"position out of range", nil, []*graph.Tensor{x, cos2, sin2, graph.MustFromSlice([]int{1, 1}, []int64{1})}},
		{"3d without num_heads", nil, []*graph.Tensor{f32([]int{1, 1, 4}, 1, 2, 3, 4), cos2, sin2, pos}},
		{"odd rotary dim", attrs(ai("rotary_embedding_dim", 3)), []*graph.Tensor{x, cos2, sin2, pos}},
		{"cache too narrow", nil, []*graph.Tensor{x, f32([]int{1, 1}, 0), f32([]int{1, 1}, 1), pos}},
		{"3-D cache with position ids", nil, []*graph.Tensor{x, f32([]int{1, 1, 2}, 0, 1), f32([]int{1, 1, 2}, 1, 0), pos}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := run(t, "RotaryEmbedding", 23, tc.attrs, nil, tc.in...); !errors.Is(err, kernels.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}
