package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

var indexTypes = []graph.DType{graph.Int32, graph.Int64}

func init() {
	for _, op := range []string{"HannWindow", "HammingWindow", "BlackmanWindow"} {
		ops.Register(ops.Schema{OpType: op, MinOpset: 17, MinInputs: 1, MaxInputs: 1, Types: indexTypes, Infer: windowInfer})
	}
	ops.Register(ops.Schema{OpType: "MelWeightMatrix", MinOpset: 17, MinInputs: 5, MaxInputs: 5, Types: indexTypes, Infer: melInfer})
}

// OutDType reads the output_datatype attribute (default float32) and checks
// that it is a numeric type Switchyard holds.
func OutDType(n *graph.Node) (graph.DType, error) {
	dt := graph.DType(n.AttrInt("output_datatype", int64(graph.Float32)))
	if !dt.IsNumeric() {
		if dt.Supported() {
			return dt, ops.Invalidf(n, "output_datatype %v is not numeric", dt)
		}
		return dt, ops.Unsupportedf(n, "output_datatype %v", dt)
	}
	return dt, nil
}

func windowInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt, err := OutDType(n)
	if err != nil {
		dt = graph.Undefined
	}
	s := dims(-1)
	if c := inConst(in, 0); c != nil && c.Len() == 1 {
		if v := c.Int64At(0); v >= 0 {
			s = dims(v)
		}
	}
	return []graph.ValueType{ops.TensorType(dt, s)}, nil
}

func melInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt, err := OutDType(n)
	if err != nil {
		dt = graph.Undefined
	}
	rows, cols := int64(-1), int64(-1)
	if c := inConst(in, 1); c != nil && c.Len() == 1 && c.Int64At(0) >= 0 {
		rows = c.Int64At(0)/2 + 1
	}
	if c := inConst(in, 0); c != nil && c.Len() == 1 && c.Int64At(0) >= 0 {
		cols = c.Int64At(0)
	}
	return []graph.ValueType{ops.TensorType(dt, dims(rows, cols))}, nil
}
