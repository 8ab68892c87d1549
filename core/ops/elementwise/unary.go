package elementwise

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// register adds a one-input, one-output elementwise op.
func register(op string, minOpset int64, types []graph.DType, boolOut bool) {
	infer := ops.InferFunc(ops.SameAsInput)
	if boolOut {
		infer = boolInfer
	}
	ops.Register(ops.Schema{
		OpType:    op,
		MinOpset:  minOpset,
		MinInputs: 1, MaxInputs: 1,
		MinOutputs: 1, MaxOutputs: 1,
		Types: types,
		Infer: infer,
	})
}

func boolInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	vt := graph.ValueType{Kind: "tensor", DType: graph.Bool}
	if len(in) > 0 {
		vt.Shape = in[0].Type.Shape
	}
	return []graph.ValueType{vt}, nil
}

var floatTypes = ops.FloatTypes

var signedTypes = []graph.DType{graph.Float32, graph.Float64, graph.Float16, graph.BFloat16, graph.Int8, graph.Int16, graph.Int32, graph.Int64}

var numTypes = ops.NumericTypes

func init() {
	register("Abs", 1, numTypes, false)
	register("Neg", 1, signedTypes, false)
	register("Sign", 9, numTypes, false)
	register("Exp", 1, floatTypes, false)
	register("Log", 1, floatTypes, false)
	register("Sqrt", 1, floatTypes, false)
	register("Reciprocal", 1, floatTypes, false)
	register("Floor", 1, floatTypes, false)
	register("Ceil", 1, floatTypes, false)
	register("Round", 11, floatTypes, false)
	register("Sin", 7, floatTypes, false)
	register("Cos", 7, floatTypes, false)
	register("Tan", 7, floatTypes, false)
	register("Asin", 7, floatTypes, false)
	register("Acos", 7, floatTypes, false)
	register("Atan", 7, floatTypes, false)
	register("Sinh", 9, floatTypes, false)
	register("Cosh", 9, floatTypes, false)
	register("Asinh", 9, floatTypes, false)
	register("Acosh", 9, floatTypes, false)
	register("Atanh", 9, floatTypes, false)
	register("Tanh", 1, floatTypes, false)
	register("Sigmoid", 1, floatTypes, false)
	register("Softplus", 1, floatTypes, false)
	register("Softsign", 1, floatTypes, false)
	register("Mish", 18, floatTypes, false)
	// Erf accepts every numeric type; integer results truncate toward zero
	// like a numpy astype of the float result.
	register("Erf", 9, numTypes, false)
	register("Not", 1, []graph.DType{graph.Bool}, false)
	register("Relu", 1, signedTypes, false)
	register("LeakyRelu", 1, floatTypes, false)
	register("Elu", 1, floatTypes, false)
	register("Selu", 1, floatTypes, false)
	register("Celu", 12, floatTypes, false)
	register("HardSigmoid", 1, floatTypes, false)
	register("HardSwish", 14, floatTypes, false)
	register("ThresholdedRelu", 10, floatTypes, false)
	register("Gelu", 20, floatTypes, false)
	register("IsNaN", 9, floatTypes, true)
	register("IsInf", 10, floatTypes, true)
}
