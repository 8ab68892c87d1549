package blockquant

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// GatherOpType is the row lookup in a block-quantized table:
// BlockQuantGather(data, indices) with the string attribute type (a ggml
// block-quantized type name, F32, F16 or BF16, as BlockQuantMatMul's) and K, the elements a
// row. data is uint8 [V, R], V rows of K elements in ggml's block layout
// (R the bytes of a row); indices is int64 or int32 of any shape, each in
// [-V, V) (negative counts from the end, as Gather's). The output is
// float32 [indices..., K]: the rows dequantized exactly as ggml does
// (core/ggml.Dequantize). It is Gather on axis 0 of the dequantized table
// without the table ever being dequantized: a language model's token
// embedding stays in its file's form (a 32000×2048 Q6_K table is 54 MB,
// 262 MB as float32).
const GatherOpType = "BlockQuantGather"

func init() {
	kernels.Register(kernels.Schema{
		Domain: Domain, OpType: GatherOpType, MinOpset: 1, MaxOpset: 1,
		MinInputs: 2, MaxInputs: 2, Types: []graph.DType{graph.Uint8},
		Infer: inferGather, Kernel: gatherKernel,
	})
}

func inferGather(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	return floatOut(n, "K", in[1].Type.Shape, false)
}

func gatherKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	data, idx := kernels.Input(in, 0), kernels.Input(in, 1)
	for i, what := range []string{"data", "indices"} {
		if err := kernels.CheckInput(n, in[i], what); err != nil {
			return nil, err
		}
	}
	name := n.AttrString("type", "")
	t, ok := ggml.ParseType(name)
	if !ok || !TypedWeight(t) {
		return nil, kernels.Unsupportedf(n, "type %q is not a ggml block-quantized type, F32, F16 or BF16", name)
	}
	K := int(n.AttrInt("K", 0))
	if K <= 0 || int64(K) > graph.MaxTensorBytes/4 {
		return nil, kernels.Invalidf(n, "K %d must be positive", K)
	}
	rb, err := t.RowBytes(K)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if data.DType != graph.Uint8 || data.Rank() != 2 || data.Shape[1] != rb {
		return nil, kernels.Invalidf(n, "%s data must be uint8 [V %d], got %v%v", t, rb, data.DType, data.Shape)
	}
	V := data.Shape[0]
	var ids []int64
	switch idx.DType {
	case graph.Int64:
		ids = graph.Data[int64](idx)
	case graph.Int32:
		ids = make([]int64, idx.Len())
		for i, v := range graph.Data[int32](idx) {
			ids[i] = int64(v)
		}
	default:
		return nil, kernels.Invalidf(n, "indices must be int64 or int32, got %v", idx.DType)
	}
	if len(ids) > 0 && int64(K) > graph.MaxTensorBytes/4/int64(len(ids)) {
		return nil, kernels.Invalidf(n, "%d rows of %d elements is too large", len(ids), K)
	}
	var shape [8]int // the output's shape, on the stack (New copies it)
	out, err := ctx.New(graph.Float32, append(append(shape[:0], idx.Shape...), K))
	if err != nil {
		return nil, err
	}
	raw, y := graph.Data[uint8](data), graph.Data[float32](out)
	for i, r := range ids {
		if r < 0 {
			r += int64(V)
		}
		if r < 0 || r >= int64(V) {
			return nil, kernels.Invalidf(n, "index %d is outside [-%d, %d)", ids[i], V, V)
		}
		if err := ggml.Dequantize(t, raw[int(r)*rb:(int(r)+1)*rb], y[i*K:(i+1)*K]); err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
	}
	return ctx.Outputs(out), nil
}
