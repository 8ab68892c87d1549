package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/runtime"
)

// resizeNHWCModel is x [n, c, h, w] → Resize to sizes → Transpose by
// [0 2 3 1].
func resizeNHWCModel(n, c, h, w, oh, ow int, mode, ctm string) *graph.Model {
	attrs := map[string]*graph.Attribute{
		"mode":                           {Name: "mode", Type: graph.AttrString, S: mode},
		"coordinate_transformation_mode": {Name: "coordinate_transformation_mode", Type: graph.AttrString, S: ctm},
	}
	g := &graph.Graph{
		Name: "resize-nhwc",
		Inputs: []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32,
			Shape: graph.StaticShape(n, c, h, w)}}},
		Initializers: map[string]*graph.Tensor{"sz": graph.MustFromSlice([]int{4}, []int64{int64(n), int64(c), int64(oh), int64(ow)})},
		Nodes: []*graph.Node{
			{Name: "resize", OpType: "Resize", Inputs: []string{"x", "", "", "sz"}, Outputs: []string{"r"}, Attrs: attrs},
			{Name: "nhwc", OpType: "Transpose", Inputs: []string{"r"}, Outputs: []string{"y"},
				Attrs: map[string]*graph.Attribute{"perm": {Name: "perm", Type: graph.AttrInts, Ints: []int64{0, 2, 3, 1}}}},
		},
		Outputs: []graph.ValueInfo{{Name: "y"}},
	}
	return &graph.Model{Graph: g, Opsets: []graph.Opset{{Version: 13}}}
}

// A Resize and the Transpose to channels-last after it are one node
// (fuse's graph has one node, with f.nhwc), and its output is bit for bit
// the two nodes' apart: linear and nearest, up and down, short rows, rows
// over the direct path's scratch (the transposed fallback), batches, 1
// and 2 threads, and NaN/Inf inputs.
func TestResizeNHWCFusion(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		n, c, h, w, oh, ow int
		mode, ctm          string
	}{
		{1, 21, 33, 33, 257, 257, "linear", "asymmetric"},
		{1, 21, 33, 33, 257, 257, "linear", "half_pixel"},
		{2, 5, 9, 40, 20, 80, "linear", "align_corners"},
		{1, 7, 12, 12, 30, 30, "linear", "pytorch_half_pixel"},
		{1, 16, 30, 40, 15, 20, "linear", "half_pixel"},
		{2, 3, 10, 11, 23, 37, "nearest", "asymmetric"},
		{1, 80, 8, 200, 16, 400, "linear", "half_pixel"},
		{1, 4, 40, 40, 20, 20, "nearest", "half_pixel"}, // downsampling: resized, then transposed
		{1, 1, 5, 5, 10, 10, "linear", "half_pixel"},
		{1, 6, 20, 40, 40, 80, "linear", "half_pixel"}, // by 2: resize.go's upsample2 runs apart
		{1, 20, 20, 40, 40, 80, "linear", "asymmetric"},
	} {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("%d_%dx%dx%dto%dx%d_%s_%s_t%d", c.n, c.c, c.h, c.w, c.oh, c.ow, c.mode, c.ctm, threads)
			t.Run(name, func(t *testing.T) {
				m := resizeNHWCModel(c.n, c.c, c.h, c.w, c.oh, c.ow, c.mode, c.ctm)
				v := make([]float32, c.n*c.c*c.h*c.w)
				for i := range v {
					v[i] = rng.Float32()*4 - 2
				}
				v[len(v)/3] = float32(math.NaN())
				v[len(v)/2] = float32(math.Inf(1))
				feeds := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{c.n, c.c, c.h, c.w}, v)}
				fg, fused := fuse(typedSubgraph(m))
				if len(fg.Nodes) != 1 || fused[fg.Nodes[0]] == nil || !fused[fg.Nodes[0]].nhwc {
					t.Fatalf("fused graph has %d nodes: want one channels-last Resize", len(fg.Nodes))
				}
				var outs [2]*graph.Tensor
				for i, noFuse := range []bool{true, false} {
					b := New(Options{Threads: threads})
					b.noFuse = noFuse
					dev, err := hal.NewDevice(b, hal.LoadLinked)
					if err != nil {
						t.Fatal(err)
					}
					defer dev.Close()
					rm, err := runtime.Prepare(context.Background(), m, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
					if err != nil {
						t.Fatal(err)
					}
					defer rm.Close()
					for range 2 { // the second run on recycled buffers
						got, err := rm.Run(context.Background(), feeds)
						if err != nil {
							t.Fatal(err)
						}
						outs[i] = got["y"]
					}
				}
				want, got := outs[0], outs[1]
				if !graph.SameShape(got.Shape, want.Shape) || !graph.SameShape(want.Shape, []int{c.n, c.oh, c.ow, c.c}) {
					t.Fatalf("shape %v, apart %v", got.Shape, want.Shape)
				}
				gv, wv := graph.Data[float32](got), graph.Data[float32](want)
				for i := range wv {
					if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) && !(gv[i] != gv[i] && wv[i] != wv[i]) {
						t.Fatalf("y[%d] = %v, apart %v", i, gv[i], wv[i])
					}
				}
			})
		}
	}
}
