package nn

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// maxPoolTypes: MaxPool also takes 8-bit integers.
var maxPoolTypes = append(append([]graph.DType{}, ops.FloatTypes...), graph.Int8, graph.Uint8)

// schemas are the operators of this group, all since opset 1.
var schemas = []ops.Schema{
	{OpType: "Conv", MinInputs: 2, MaxInputs: 3, Types: ops.FloatTypes, Infer: convInfer},
	{OpType: "ConvTranspose", MinInputs: 2, MaxInputs: 3, Types: ops.FloatTypes, Infer: convTransposeInfer},
	{OpType: "LRN", MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: ops.SameAsInput},
	{OpType: "MatMul", MinInputs: 2, MaxInputs: 2, Types: ops.NumericTypes, Infer: matMulInfer},
	{OpType: "Gemm", MinInputs: 2, MaxInputs: 3, Types: ops.NumericTypes, Infer: gemmInfer},
	{OpType: "MaxPool", MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 2, Types: maxPoolTypes, Infer: poolInfer(true)},
	{OpType: "AveragePool", MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: poolInfer(false)},
	{OpType: "GlobalAveragePool", MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: globalPoolInfer},
	{OpType: "GlobalMaxPool", MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: globalPoolInfer},
}

func init() {
	for _, s := range schemas {
		s.MinOpset = 1
		ops.Register(s)
	}
}
