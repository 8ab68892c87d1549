package native_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// vmCases are the vector math ops, SiLU fused two ways, and PRelu with
// every slope layout, on sizes that leave vector tails.
func vmCases() []opCase {
	silu := func(x, y string) []*graph.Node {
		return []*graph.Node{node("Sigmoid", []string{x}, y+"_s", nil), node("Mul", []string{x, y + "_s"}, y, nil)}
	}
	return []opCase{
		{name: "sigmoid", nodes: []*graph.Node{node("Sigmoid", []string{"x"}, "y", nil)}, inputs: map[string][]int{"x": {3, 37}}, out: "y"},
		{name: "tanh", nodes: []*graph.Node{node("Tanh", []string{"x"}, "y", nil)}, inputs: map[string][]int{"x": {5, 19}}, out: "y"},
		{name: "erf", nodes: []*graph.Node{node("Erf", []string{"x"}, "y", nil)}, inputs: map[string][]int{"x": {3, 301}}, out: "y"},
		{name: "exp", nodes: []*graph.Node{node("Exp", []string{"x"}, "y", nil)}, inputs: map[string][]int{"x": {2, 53}}, out: "y"},
		{name: "silu-standalone", nodes: silu("x", "y"), inputs: map[string][]int{"x": {2, 3, 7, 5}}, out: "y"},
		{name: "silu-mul-swapped", nodes: []*graph.Node{node("Sigmoid", []string{"x"}, "s", nil), node("Mul", []string{"s", "x"}, "y", nil)},
			inputs: map[string][]int{"x": {77}}, out: "y"},
		{name: "conv-silu-chain", nodes: append([]*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrs("pads", []int64{1, 1, 1, 1}))}, silu("c", "y")...),
			inputs: map[string][]int{"x": {1, 3, 9, 11}}, consts: map[string][]int{"w": {8, 3, 3, 3}, "b": {8}}, out: "y"},
		{name: "conv-tanh-chain", nodes: []*graph.Node{node("Conv", []string{"x", "w"}, "c", nil), node("Tanh", []string{"c"}, "y", nil)},
			inputs: map[string][]int{"x": {1, 4, 6, 7}}, consts: map[string][]int{"w": {5, 4, 1, 1}}, out: "y"},
		{name: "prelu-nhwc-1-1-C", nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, "y", nil)},
			inputs: map[string][]int{"x": {1, 5, 6, 21}}, consts: map[string][]int{"s": {1, 1, 21}}, out: "y"},
		{name: "prelu-nchw-C-1-1", nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, "y", nil)},
			inputs: map[string][]int{"x": {2, 7, 5, 3}}, consts: map[string][]int{"s": {7, 1, 1}}, out: "y"},
		{name: "prelu-nchw-1-C-1-1", nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, "y", nil)},
			inputs: map[string][]int{"x": {1, 9, 4, 4}}, consts: map[string][]int{"s": {1, 9, 1, 1}}, out: "y"},
		{name: "prelu-scalar", nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, "y", nil)},
			inputs: map[string][]int{"x": {3, 35}}, consts: map[string][]int{"s": {1}}, out: "y"},
		{name: "prelu-full", nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, "y", nil)},
			inputs: map[string][]int{"x": {4, 9}, "s": {4, 9}}, out: "y"},
		{name: "prelu-general-broadcast", nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, "y", nil)},
			inputs: map[string][]int{"x": {2, 3, 4, 5}}, consts: map[string][]int{"s": {3, 1, 5}}, out: "y"},
		{name: "prelu-rank2-slope-C", nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, "y", nil)},
			inputs: map[string][]int{"x": {6, 17}}, consts: map[string][]int{"s": {17}}, out: "y"},
		{name: "resize-linear-half-pixel-sizes", nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, "y", attrs("mode", "linear"))},
			inputs: map[string][]int{"x": {2, 3, 5, 7}}, fixed: map[string]*graph.Tensor{"sz": i64s(2, 3, 9, 4)}, out: "y"},
		{name: "resize-linear-asymmetric-scales", nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, "y", attrs("mode", "linear", "coordinate_transformation_mode", "asymmetric"))},
			inputs: map[string][]int{"x": {1, 4, 6, 5}}, fixed: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2.5})}, out: "y"},
		{name: "resize-linear-align-corners", nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, "y", attrs("mode", "linear", "coordinate_transformation_mode", "align_corners"))},
			inputs: map[string][]int{"x": {1, 2, 4, 5}}, fixed: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 1.7, 0.6})}, out: "y"},
		{name: "resize-linear-pytorch", nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, "y", attrs("mode", "linear", "coordinate_transformation_mode", "pytorch_half_pixel"))},
			inputs: map[string][]int{"x": {1, 2, 4, 5}}, fixed: map[string]*graph.Tensor{"sz": i64s(1, 2, 1, 9)}, out: "y"},
		{name: "resize-nearest-default", nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, "y", nil)},
			inputs: map[string][]int{"x": {1, 3, 5, 4}}, fixed: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 3})}, out: "y"},
		{name: "resize-nearest-floor-asymmetric", nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, "y", attrs("nearest_mode", "floor", "coordinate_transformation_mode", "asymmetric"))},
			inputs: map[string][]int{"x": {1, 3, 5, 4}}, fixed: map[string]*graph.Tensor{"sz": i64s(1, 3, 7, 11)}, out: "y"},
		{name: "resize-nearest-ceil-half-pixel", nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, "y", attrs("nearest_mode", "ceil"))},
			inputs: map[string][]int{"x": {1, 2, 6, 6}}, fixed: map[string]*graph.Tensor{"sz": i64s(1, 2, 4, 9)}, out: "y"},
		{name: "resize-nearest-prefer-ceil-align", nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, "y", attrs("nearest_mode", "round_prefer_ceil", "coordinate_transformation_mode", "align_corners"))},
			inputs: map[string][]int{"x": {1, 2, 5, 3}}, fixed: map[string]*graph.Tensor{"sz": i64s(1, 2, 9, 8)}, out: "y"},
		// by 2 over rows of many vectors (upsample2 and lerp, layout.go):
		// half-pixel, asymmetric, align-corners (no by-2 run: generic)
		{name: "resize-linear-2x-half-pixel-wide", nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, "y", attrs("mode", "linear"))},
			inputs: map[string][]int{"x": {1, 3, 6, 45}}, fixed: map[string]*graph.Tensor{"sz": i64s(1, 3, 12, 90)}, out: "y"},
		{name: "resize-linear-2x-asymmetric-wide", nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, "y", attrs("mode", "linear", "coordinate_transformation_mode", "asymmetric"))},
			inputs: map[string][]int{"x": {2, 2, 5, 37}}, fixed: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2})}, out: "y"},
		{name: "resize-linear-2x-align-corners-wide", nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, "y", attrs("mode", "linear", "coordinate_transformation_mode", "align_corners"))},
			inputs: map[string][]int{"x": {1, 2, 4, 40}}, fixed: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2})}, out: "y"},
		{name: "resize-cubic-reference", nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, "y", attrs("mode", "cubic"))},
			inputs: map[string][]int{"x": {1, 2, 4, 4}}, fixed: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2})}, out: "y"},
	}
}

func i64s(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }

// The vector math, PRelu and Resize kernels against the reference kernels.
func TestVectorOpsAgainstReference(t *testing.T) { testOps(t, vmCases()) }
