package resize

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{
		OpType: "Resize", MinOpset: 10, MinInputs: 1, MaxInputs: 4,
		Types: ops.AllTypes, Infer: resizeInfer,
	})
	ops.Register(ops.Schema{
		OpType: "Upsample", MinOpset: 1, MinInputs: 1, MaxInputs: 2,
		Types: ops.AllTypes, Infer: upsampleInfer,
	})
}

// UpsampleAttrs reads Upsample's mode (nearest or linear; Upsample-1 called
// linear "bilinear"); coordinates are asymmetric and nearest rounds down.
func UpsampleAttrs(n *graph.Node) (Attrs, error) {
	a := Attrs{
		Mode:        n.AttrString("mode", ModeNearest),
		Ctm:         CtmAsymmetric,
		NearestMode: "floor",
		CubicA:      -0.75,
		policy:      "stretch",
	}
	if a.Mode == "bilinear" {
		a.Mode = ModeLinear
	}
	return a, checkMode(n, a.Mode, false)
}

// UpsampleScales returns Upsample's scales: the height_scale/width_scale
// attributes (opset 1, NCHW input), the scales attribute (opsets 7–8) or
// the scales input (opset 9 on).
func UpsampleScales(n *graph.Node, opset int64, rank int, scalesIn *graph.Tensor) (*graph.Tensor, error) {
	if scalesIn != nil {
		return scalesIn, nil
	}
	if opset >= 9 {
		return nil, ops.Invalidf(n, "missing input scales")
	}
	if sc := n.AttrFloats("scales", nil); sc != nil {
		v := make([]float32, len(sc))
		copy(v, sc)
		return graph.MustFromSlice([]int{len(v)}, v), nil
	}
	if n.HasAttr("height_scale") || n.HasAttr("width_scale") {
		if rank != 4 {
			return nil, ops.Invalidf(n, "height_scale/width_scale need a 4-D input, got rank %d", rank)
		}
		h := n.AttrFloat("height_scale", 1)
		w := n.AttrFloat("width_scale", 1)
		return graph.MustFromSlice([]int{4}, []float32{1, 1, h, w}), nil
	}
	return nil, ops.Invalidf(n, "missing scales attribute")
}
