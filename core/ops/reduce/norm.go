package reduce

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "BatchNormalization", MinOpset: 1, MinInputs: 5, MaxInputs: 5, MinOutputs: 1, MaxOutputs: 5, Types: floatTypes, Infer: batchNormInfer})
	ops.Register(ops.Schema{OpType: "LayerNormalization", MinOpset: 17, MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 3, Types: floatTypes, Infer: layerNormInfer})
	ops.Register(ops.Schema{OpType: "InstanceNormalization", MinOpset: 1, MinInputs: 3, MaxInputs: 3, Types: floatTypes, Infer: ops.SameAsInput})
	ops.Register(ops.Schema{OpType: "GroupNormalization", MinOpset: 18, MinInputs: 3, MaxInputs: 3, Types: floatTypes, Infer: ops.SameAsInput})
}

func batchNormInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	outs := []graph.ValueType{tensorType(x.DType, copyShape(x.Shape))}
	mdt := inType(in, 3).DType
	if mdt == graph.Undefined {
		mdt = x.DType
	}
	var c graph.Shape
	if len(x.Shape) >= 2 {
		c = graph.Shape{x.Shape[1]}
	}
	for i := 1; i < len(n.Outputs); i++ {
		outs = append(outs, tensorType(mdt, copyShape(c)))
	}
	return outs, nil
}

// StashType is the dtype of LayerNormalization's Mean and InvStdDev.
func StashType(n *graph.Node) graph.DType {
	return graph.DType(n.AttrInt("stash_type", int64(graph.Float32)))
}

func layerNormInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	outs := []graph.ValueType{tensorType(x.DType, copyShape(x.Shape))}
	var stat graph.Shape
	if len(x.Shape) > 0 {
		axis, err := ops.NormAxis(n.AttrInt("axis", -1), len(x.Shape))
		if err != nil {
			return nil, ops.Invalidf(n, "%v", err)
		}
		stat = copyShape(x.Shape)
		for i := axis; i < len(stat); i++ {
			stat[i] = graph.Dim{Value: 1}
		}
	}
	for i := 1; i < len(n.Outputs); i++ {
		outs = append(outs, tensorType(StashType(n), copyShape(stat)))
	}
	return outs, nil
}
