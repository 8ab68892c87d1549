package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// roiInfer gives [num_rois, C, h, w] from X (input 0) and rois (input 1).
func roiInfer(in []ops.InferInput, h, w graph.Dim) []graph.ValueType {
	xs, rs := in[0].Type.Shape, in[1].Type.Shape
	return []graph.ValueType{{Kind: "tensor", DType: in[0].Type.DType, Shape: graph.Shape{dimOf(rs, 0), dimOf(xs, 1), h, w}}}
}

// roiAlignInfer: RoiAlign's output is [num_rois, C, output_height, output_width].
func roiAlignInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	oh, ow := n.AttrInt("output_height", 1), n.AttrInt("output_width", 1)
	return roiInfer(in, graph.Dim{Value: oh}, graph.Dim{Value: ow}), nil
}

// maxRoiPoolInfer: MaxRoiPool's output is [num_rois, C, pooled_shape...].
func maxRoiPoolInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	ps := n.AttrInts("pooled_shape", nil)
	h, w := graph.Dim{Value: -1}, graph.Dim{Value: -1}
	if len(ps) == 2 {
		h, w = graph.Dim{Value: ps[0]}, graph.Dim{Value: ps[1]}
	}
	return roiInfer(in, h, w), nil
}
