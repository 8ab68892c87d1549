package native_test

import (
	"fmt"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// handC3Cases are dense 3×3 stride-2 convolutions over few input channels
// (hand_conv3.go): no left padding (TensorFlow's SAME over an even width)
// and one column of it, odd and even widths, a last vector of a few
// columns and whole vectors, top padding and none, output channels in one
// group of 4 to 24 and in several (28, 48), 1 to 4 input channels, Relu6
// fused as a clamp, a batch of 2, rows split over two threads; 5 input
// channels and 26 output channels go the other ways.
func handC3Cases() []opCase {
	var cs []opCase
	for i, c := range []struct {
		cin, cout, h, w int
		at              map[string]*graph.Attribute
	}{
		{3, 24, 40, 46, attrs("strides", []int64{2, 2}, "pads", []int64{0, 0, 1, 1})},
		{3, 24, 41, 45, attrs("strides", []int64{2, 2}, "auto_pad", "SAME_UPPER")},
		{3, 16, 33, 64, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 1, 1})},
		{1, 4, 9, 35, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 0, 0})},
		{2, 8, 12, 32, attrs("strides", []int64{2, 2})},
		{4, 12, 17, 70, attrs("strides", []int64{2, 2}, "pads", []int64{0, 1, 1, 1})},
		{3, 20, 10, 97, attrs("strides", []int64{2, 2}, "pads", []int64{1, 0, 1, 0})},
		{3, 28, 24, 40, attrs("strides", []int64{2, 2}, "pads", []int64{0, 0, 1, 1})},
		{3, 48, 30, 34, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 1, 1})},
		{5, 24, 20, 40, attrs("strides", []int64{2, 2}, "pads", []int64{0, 0, 1, 1})},
		{3, 26, 20, 40, attrs("strides", []int64{2, 2}, "pads", []int64{0, 0, 1, 1})},
		// large enough that two threads split the rows
		{3, 24, 112, 112, attrs("strides", []int64{2, 2}, "pads", []int64{0, 0, 1, 1})},
	} {
		cs = append(cs, opCase{name: fmt.Sprintf("handc3-%d", i),
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", c.at),
				node("Clip", []string{"c", "lo", "hi"}, "y", nil)},
			inputs: map[string][]int{"x": {2, c.cin, c.h, c.w}}, consts: map[string][]int{"w": {c.cout, c.cin, 3, 3}, "b": {c.cout}},
			fixed: map[string]*graph.Tensor{"lo": graph.Scalar(float32(0)), "hi": graph.Scalar(float32(6))}, out: "y"})
	}
	return cs
}

// The direct kernels' cases on native against the reference kernels, and
// again with the kernels off (the GEMM paths on the same shapes).
func TestHandC3OpsAgainstReference(t *testing.T) {
	testOps(t, handC3Cases())
	if native.UseHandC3(false) {
		defer native.UseHandC3(true)
		testOps(t, handC3Cases())
	}
}

// handDWFlatCases are 3×3 and 5×5 depthwise convolutions at stride 1, padding k/2
// over planes the flat kernel takes (hand_dwflat.go): 7×7 and 14×14 as in
// MobileNet-style models, one column, one row, a single position, planes
// whose last vector holds one lane and none spare, batches of 2 and 3,
// channels split over two threads.
func handDWFlatCases() []opCase {
	var cs []opCase
	for i, c := range []struct{ n, ch, h, w, k int }{
		{2, 24, 14, 14, 3}, {2, 40, 7, 7, 3}, {3, 5, 1, 1, 3}, {2, 3, 9, 1, 3}, {2, 4, 1, 12, 3}, {2, 6, 4, 4, 3}, {2, 7, 16, 16, 3}, {2, 3, 11, 13, 3}, {2, 200, 14, 14, 3},
		{2, 24, 14, 14, 5}, {2, 40, 7, 7, 5}, {3, 5, 1, 1, 5}, {2, 3, 9, 2, 5}, {2, 6, 4, 4, 5}, {2, 7, 16, 16, 5}, {2, 3, 11, 13, 5}, {2, 200, 14, 14, 5},
	} {
		r := int64(c.k / 2)
		cs = append(cs, opCase{name: fmt.Sprintf("handdwflat-%d", i),
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrs("group", c.ch, "pads", []int64{r, r, r, r})),
				node("Clip", []string{"c", "lo", "hi"}, "y", nil)},
			inputs: map[string][]int{"x": {c.n, c.ch, c.h, c.w}}, consts: map[string][]int{"w": {c.ch, 1, c.k, c.k}, "b": {c.ch}},
			fixed: map[string]*graph.Tensor{"lo": graph.Scalar(float32(0)), "hi": graph.Scalar(float32(6))}, out: "y"})
	}
	return cs
}

// The flat kernel's cases on native against the reference kernels.
func TestHandDWFlatOpsAgainstReference(t *testing.T) { testOps(t, handDWFlatCases()) }
