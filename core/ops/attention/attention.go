package attention

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Attention", MinOpset: 23, MinInputs: 3, MaxInputs: 7, MinOutputs: 1, MaxOutputs: 4, Types: ops.FloatTypes, Infer: attentionInfer})
}

func attentionInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	q, k, v := ops.InputType(in, 0), ops.InputType(in, 1), ops.InputType(in, 2)
	pastK := ops.InputType(in, 4)
	dt := q.DType
	outs := make([]graph.ValueType, len(n.Outputs))
	for i := range outs {
		outs[i] = ops.TensorType(dt, nil)
	}
	qAttr, kvAttr := n.AttrInt("q_num_heads", 0), n.AttrInt("kv_num_heads", 0)
	rank := -1
	for _, t := range []graph.ValueType{q, k, v} {
		if t.Shape == nil {
			continue
		}
		if len(t.Shape) != 3 && len(t.Shape) != 4 || rank >= 0 && len(t.Shape) != rank {
			return nil, ops.Invalidf(n, "Q %v, K %v and V %v must all be 3-D or all 4-D", q.Shape, k.Shape, v.Shape)
		}
		rank = len(t.Shape)
	}
	if rank == 3 && (qAttr <= 0 || kvAttr <= 0) {
		return nil, ops.Invalidf(n, "3-D inputs need the q_num_heads and kv_num_heads attributes")
	}
	if q.Shape == nil || k.Shape == nil || v.Shape == nil {
		return outs, nil
	}
	// per-head views: B, heads, seq, head size
	var B, qH, S, D, kvH, L, Dv graph.Dim
	if rank == 4 {
		B, qH, S, D = q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
		kvH, L, Dv = k.Shape[1], k.Shape[2], v.Shape[3]
	} else {
		B, S, L = q.Shape[0], q.Shape[1], k.Shape[1]
		qH, kvH = graph.Dim{Value: qAttr}, graph.Dim{Value: kvAttr}
		D = ops.DivDim(k.Shape[2], kvAttr)
		Dv = ops.DivDim(v.Shape[2], kvAttr)
	}
	T := L
	if n.Input(4) != "" {
		T = unknownDim
		if len(pastK.Shape) == 4 {
			T = ops.AddDims(pastK.Shape[2], L)
		}
	}
	if len(outs) > 0 {
		if rank == 4 {
			outs[0].Shape = graph.Shape{B, qH, S, Dv}
		} else {
			hid := unknownDim
			if Dv.Static() {
				hid = graph.Dim{Value: qAttr * Dv.Value}
			}
			outs[0].Shape = graph.Shape{B, S, hid}
		}
	}
	if len(outs) > 1 {
		outs[1].Shape = graph.Shape{B, kvH, T, D}
	}
	if len(outs) > 2 {
		outs[2].Shape = graph.Shape{B, kvH, T, Dv}
	}
	if len(outs) > 3 {
		outs[3].Shape = graph.Shape{B, qH, S, T}
	}
	return outs, nil
}
