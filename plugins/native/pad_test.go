package native_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// The Pad kernel against the reference kernel: channel and spatial pads
// of NCHW tensors (enough planes for two threads to split), a fill value,
// pads on every dim, an empty padded dim,
// and the shapes it leaves to the reference kernel (crops, edge mode).
func TestPadAgainstReference(t *testing.T) {
	pad := func(name string, x []int, pads []int64, value *graph.Tensor, a map[string]*graph.Attribute) opCase {
		ins := []string{"x", "p"}
		fixed := map[string]*graph.Tensor{"p": i64s(pads...)}
		if value != nil {
			ins = append(ins, "v")
			fixed["v"] = value
		}
		return opCase{name: name, nodes: []*graph.Node{node("Pad", ins, "y", a)}, inputs: map[string][]int{"x": x}, fixed: fixed, out: "y"}
	}
	testOps(t, []opCase{
		pad("channels-nchw", []int{1, 5, 6, 7}, []int64{0, 0, 0, 0, 0, 3, 0, 0}, nil, nil),
		pad("spatial-nchw", []int{2, 3, 6, 7}, []int64{0, 0, 1, 2, 0, 0, 2, 1}, nil, nil),
		// planes enough for the two threads to split them
		pad("spatial-nchw-split", []int{2, 40, 14, 15}, []int64{0, 0, 1, 0, 0, 0, 1, 2}, graph.MustFromSlice([]int{}, []float32{0.5}), nil),
		pad("every-dim-value", []int{2, 3, 4}, []int64{1, 2, 3, 2, 1, 0}, graph.MustFromSlice([]int{}, []float32{-1.5}), nil),
		pad("last-dim-only", []int{3, 17}, []int64{0, 4, 0, 5}, nil, nil),
		pad("no-pads", []int{2, 3}, []int64{0, 0, 0, 0}, nil, nil),
		pad("crop-reference", []int{2, 5}, []int64{0, -1, 0, 2}, nil, nil),
		pad("edge-reference", []int{2, 5}, []int64{1, 1, 1, 1}, nil, attrs("mode", "edge")),
	})
}

// The linear Resize's cached row pairs (resize.go's hrows) over several
// planes, upsampling (pairs shared by successive rows), downsampling
// (rows skipped) and one row, against the reference kernel.
func TestResizeRowCacheAgainstReference(t *testing.T) {
	rs := func(name string, x []int, sizes ...int64) opCase {
		return opCase{name: name, nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, "y", attrs("mode", "linear"))},
			inputs: map[string][]int{"x": x}, fixed: map[string]*graph.Tensor{"sz": i64s(sizes...)}, out: "y"}
	}
	testOps(t, []opCase{
		rs("up2-planes", []int{2, 5, 6, 7}, 2, 5, 12, 14),
		rs("up3-odd", []int{1, 3, 5, 4}, 1, 3, 15, 13),
		rs("down-rows", []int{1, 4, 11, 9}, 1, 4, 4, 5),
		rs("up-rows-down-cols", []int{1, 2, 7, 20}, 1, 2, 16, 6),
		rs("one-row", []int{1, 3, 1, 5}, 1, 3, 1, 11),
		rs("to-one-row", []int{1, 3, 6, 5}, 1, 3, 1, 11),
	})
}
