package native_test

import (
	"fmt"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// dw3Cases are 3×3 depthwise convolutions the row kernels take (and
// their neighbours they leave): strides 1 and 2, dilations 2 and 4 with
// as much padding, asymmetric bottom/right padding, odd widths, fused
// Relu, a batch of 2, planes split over two threads; a dilation of 3 and a left padding unlike the
// dilation go the other ways.
func dw3Cases() []opCase {
	var cs []opCase
	for i, c := range []struct {
		ch, h, w int
		at       map[string]*graph.Attribute
	}{
		{5, 17, 45, attrs("pads", []int64{1, 1, 1, 1})},
		{4, 21, 43, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 0, 0})},
		{3, 33, 33, attrs("dilations", []int64{2, 2}, "pads", []int64{2, 2, 2, 2})},
		{3, 33, 35, attrs("dilations", []int64{4, 4}, "pads", []int64{4, 4, 4, 4})},
		{2, 12, 40, attrs("dilations", []int64{3, 3}, "pads", []int64{3, 3, 3, 3})},
		{2, 12, 40, attrs("dilations", []int64{2, 2}, "pads", []int64{1, 2, 1, 2})},
		{3, 9, 64, attrs("pads", []int64{0, 1, 2, 1})},
		{4, 16, 48, attrs("strides", []int64{2, 2}, "pads", []int64{0, 0, 1, 1})},
		{3, 15, 41, attrs("strides", []int64{2, 2}, "auto_pad", "SAME_UPPER")},
		// large enough that two threads split them
		{24, 37, 44, attrs("pads", []int64{1, 1, 1, 1})},
		{16, 66, 64, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 1, 1})},
	} {
		cs = append(cs, opCase{name: fmt.Sprintf("dw3-%d", i),
			nodes:  []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrsWith(c.at, "group", c.ch)), node("Relu", []string{"c"}, "y", nil)},
			inputs: map[string][]int{"x": {2, c.ch, c.h, c.w}}, consts: map[string][]int{"w": {c.ch, 1, 3, 3}, "b": {c.ch}}, out: "y"})
	}
	return cs
}

// The row kernels' cases on native against the reference kernels.
func TestDW3OpsAgainstReference(t *testing.T) { testOps(t, dw3Cases()) }

// The convolutions again with the 3×3 depthwise row kernels off: the
// packed path and the planar tiles compute the planes they would take.
func TestConvWithoutDW3Rows(t *testing.T) {
	if !native.UseDW3Rows(false) {
		t.Skip("no 3×3 depthwise row kernels here: TestOpsAgainstReference ran the others")
	}
	defer native.UseDW3Rows(true)
	cases := append(convCases(), dw3Cases()...)
	testOps(t, cases)
	if native.UsePackedDW(false) {
		defer native.UsePackedDW(true)
		testOps(t, cases)
	}
}
