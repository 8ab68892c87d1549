package native_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// pointwiseTCases are 1×1 convolutions over small images with many
// channels, the shapes the transposed path (conv1x1t.go) takes: 7×7, 7×14
// and 13×13 images (row tiles exact, a last partial one), a partial last
// panel of output channels, more input channels than one kc block of the
// GEMM, 5×7 and 6×6 images, each with a Clip fused and a
// BatchNormalization folded in.
func pointwiseTCases() []opCase {
	var cs []opCase
	for i, c := range [][4]int{{256, 128, 7, 7}, {384, 256, 7, 14}, {256, 240, 7, 7}, {260, 64, 7, 7}, {70, 96, 5, 7}, {192, 128, 6, 6}, {512, 256, 13, 13}} {
		cin, cout, h, w := c[0], c[1], c[2], c[3]
		cs = append(cs, opCase{name: fmt.Sprintf("pointwiseT%d", i),
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", nil),
				node("BatchNormalization", []string{"c", "s", "o", "m", "v"}, "n", nil),
				node("Clip", []string{"n", "lo", "hi"}, "y", nil)},
			inputs: map[string][]int{"x": {2, cin, h, w}}, consts: map[string][]int{"b": {cout}, "s": {cout}, "o": {cout}, "m": {cout}},
			fixed: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{cout, cin, 1, 1}, smallWeights(cout*cin, cin)), "v": graph.MustFromSlice([]int{cout}, ones(cout)), "lo": graph.Scalar(float32(-2)), "hi": graph.Scalar(float32(2.5))}, out: "y"})
	}
	return cs
}

// smallWeights are n weights of magnitude about 1/√fan (a sum over fan
// random inputs then stays near 1: the reference's float32 sum, in
// another order, differs within the test's tolerance).
func smallWeights(n, fan int) []float32 {
	w := make([]float32, n)
	s := 1 / math.Sqrt(float64(fan))
	for i := range w {
		w[i] = float32(s * math.Sin(float64(i)*0.7))
	}
	return w
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1 + float32(i%5)*0.25
	}
	return v
}

// The transposed 1×1 path against the reference kernels, and with it
// off (the planar GEMM computes the same cases).
func TestPointwiseTransposed(t *testing.T) {
	if !native.UsePointwiseT(true) {
		t.Skip("no packed-A kernel or 8×8 transpose here: the planar path computes these")
	}
	for _, c := range [][3]int{{128, 256, 49}, {256, 384, 98}, {240, 256, 49}, {64, 260, 49}, {96, 70, 35}, {128, 192, 36}, {256, 512, 169}} {
		if !native.PointwiseTWins(c[0], c[1], c[2]) {
			t.Errorf("cout %d cin %d at %d positions: not taken by the transposed path, which the case is for", c[0], c[1], c[2])
		}
	}
	testOps(t, pointwiseTCases())
	native.UsePointwiseT(false)
	defer native.UsePointwiseT(true)
	testOps(t, pointwiseTCases())
}

// packXT's assembly against its Go loops: whole and partial last tiles,
// a channel range, tiles of 6, 14 and 16 rows.
func TestPackXT(t *testing.T) {
	for _, c := range [][5]int{{5, 49, 14, 0, 5}, {9, 196, 14, 2, 7}, {3, 13, 14, 0, 3}, {4, 35, 6, 1, 4}, {7, 40, 16, 0, 7}, {2, 14, 14, 0, 2}} {
		if !native.PackXTAgrees(c[0], c[1], c[2], c[3], c[4]) {
			t.Errorf("c %d hw %d mr %d channels [%d, %d): assembly and Go differ", c[0], c[1], c[2], c[3], c[4])
		}
	}
}
