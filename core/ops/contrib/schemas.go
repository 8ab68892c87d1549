package contrib

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// The contrib domain has one version (1); every schema here is opset 1.
func init() {
	reg := func(s ops.Schema) {
		s.Domain = Domain
		s.MinOpset, s.MaxOpset = 1, 1
		s.Types = ops.FloatTypes
		ops.Register(s)
	}
	reg(ops.Schema{OpType: "Attention", MinInputs: 2, MaxInputs: 7, MinOutputs: 1, MaxOutputs: 2, Infer: attentionInfer})
	reg(ops.Schema{OpType: "MultiHeadAttention", MinInputs: 1, MaxInputs: 8, MinOutputs: 1, MaxOutputs: 4, Infer: mhaInfer})
	// present_key and present_value may be past_key's and past_value's
	// buffers (ONNX Runtime's past_present_share_buffer): the new rows are
	// written in place.
	reg(ops.Schema{OpType: "GroupQueryAttention", MinInputs: 7, MaxInputs: 12, MinOutputs: 3, MaxOutputs: 4, Infer: gqaInfer,
		InPlace: []ops.InPlace{{Output: 1, Input: 3}, {Output: 2, Input: 4}}})
	reg(ops.Schema{OpType: "RotaryEmbedding", MinInputs: 4, MaxInputs: 4, Infer: rotaryInfer})
	reg(ops.Schema{OpType: "SkipLayerNormalization", MinInputs: 3, MaxInputs: 5, MinOutputs: 1, MaxOutputs: 4, Infer: skipNormInfer})
	reg(ops.Schema{OpType: "SkipSimplifiedLayerNormalization", MinInputs: 3, MaxInputs: 4, MinOutputs: 1, MaxOutputs: 4, Infer: skipNormInfer})
	reg(ops.Schema{OpType: "EmbedLayerNormalization", MinInputs: 7, MaxInputs: 9, MinOutputs: 2, MaxOutputs: 3, TypeInput: 2, Infer: embedNormInfer})
	reg(ops.Schema{OpType: "FastGelu", MinInputs: 1, MaxInputs: 2, Infer: ops.SameAsInput})
	reg(ops.Schema{OpType: "BiasGelu", MinInputs: 2, MaxInputs: 2, Infer: ops.SameAsInput})
	reg(ops.Schema{OpType: "Gelu", MinInputs: 1, MaxInputs: 1, Infer: ops.SameAsInput})
	// ONNX Runtime registers SimplifiedLayerNormalization in the default
	// domain, since opset 1.
	ops.Register(ops.Schema{OpType: "SimplifiedLayerNormalization", MinOpset: 1, MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 2, Types: ops.FloatTypes, Infer: simplifiedNormInfer})
}

var unknown = graph.Dim{Value: -1}

func dim(v int64) graph.Dim { return graph.Dim{Value: v} }

func mulDim(a graph.Dim, k int64) graph.Dim {
	if a.Static() {
		return dim(a.Value * k)
	}
	return unknown
}

// outputs returns one unknown-shape tensor type per node output.
func outputs(n *graph.Node, dt graph.DType) []graph.ValueType {
	outs := make([]graph.ValueType, len(n.Outputs))
	for i := range outs {
		outs[i] = ops.TensorType(dt, nil)
	}
	return outs
}

func set(outs []graph.ValueType, i int, s graph.Shape) {
	if i < len(outs) {
		outs[i].Shape = s
	}
}

// attentionInfer: input (B, S, D_in), weights (D_in, qH+kH+vH), past
// (2, B, N, P, H) → output (B, S, vH), present (2, B, N, P+S, H).
func attentionInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x, w, past := ops.InputType(in, 0), ops.InputType(in, 1), ops.InputType(in, 4)
	outs := outputs(n, x.DType)
	heads := n.AttrInt("num_heads", 0)
	if heads <= 0 {
		return nil, ops.Invalidf(n, "num_heads must be positive, got %d", heads)
	}
	if x.Shape != nil && len(x.Shape) != 3 {
		return nil, ops.Invalidf(n, "input must be 3-D (batch, sequence, hidden), got %v", x.Shape)
	}
	if w.Shape != nil && len(w.Shape) != 2 {
		return nil, ops.Invalidf(n, "weights must be 2-D, got %v", w.Shape)
	}
	sizes := n.AttrInts("qkv_hidden_sizes", nil)
	if sizes != nil && len(sizes) != 3 {
		return nil, ops.Invalidf(n, "qkv_hidden_sizes must have 3 values, got %v", sizes)
	}
	if x.Shape == nil {
		return outs, nil
	}
	B, S := x.Shape[0], x.Shape[1]
	vHidden, qHidden := unknown, unknown
	if sizes != nil {
		qHidden, vHidden = dim(sizes[0]), dim(sizes[2])
	} else if w.Shape != nil {
		qHidden = ops.DivDim(w.Shape[1], 3)
		vHidden = qHidden
	}
	set(outs, 0, graph.Shape{B, S, vHidden})
	if len(outs) > 1 {
		T := S
		if n.Input(4) != "" {
			T = unknown
			if len(past.Shape) == 5 {
				T = ops.AddDims(past.Shape[3], S)
			}
		}
		set(outs, 1, graph.Shape{dim(2), B, dim(heads), T, ops.DivDim(qHidden, heads)})
	}
	return outs, nil
}

// mhaInfer: query (B, S, D) or packed (B, S, N, 3, H); key (B, L, Dk),
// (B, N, L, H) or packed (B, L, N, 2, H); value (B, L, Dv) or (B, N, L,
// Hv) → output (B, S, N·Hv), present_key (B, N, P+L, H), present_value
// (B, N, P+L, Hv), qk (B, N, S, P+L).
func mhaInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	q, k, v, pastK := ops.InputType(in, 0), ops.InputType(in, 1), ops.InputType(in, 2), ops.InputType(in, 6)
	outs := outputs(n, q.DType)
	heads := n.AttrInt("num_heads", 0)
	if heads <= 0 {
		return nil, ops.Invalidf(n, "num_heads must be positive, got %d", heads)
	}
	if q.Shape == nil {
		return outs, nil
	}
	switch len(q.Shape) {
	case 3, 5:
	default:
		return nil, ops.Invalidf(n, "query must be 3-D or packed 5-D, got %v", q.Shape)
	}
	B, S := q.Shape[0], q.Shape[1]
	var L, H, Hv graph.Dim = unknown, unknown, unknown
	if len(q.Shape) == 5 {
		L, H, Hv = S, q.Shape[4], q.Shape[4]
	} else {
		H = ops.DivDim(q.Shape[2], heads)
		switch len(k.Shape) {
		case 3:
			L = k.Shape[1]
		case 4:
			L = k.Shape[2]
		case 5:
			L, Hv = k.Shape[1], k.Shape[4]
		}
		switch len(v.Shape) {
		case 3:
			Hv = ops.DivDim(v.Shape[2], heads)
		case 4:
			Hv = v.Shape[3]
		}
		if n.Input(1) == "" {
			L, Hv = S, H
		}
	}
	T := L
	if n.Input(6) != "" {
		T = unknown
		if len(pastK.Shape) == 4 {
			T = ops.AddDims(pastK.Shape[2], L)
		}
	}
	set(outs, 0, graph.Shape{B, S, mulDim(Hv, heads)})
	set(outs, 1, graph.Shape{B, dim(heads), T, H})
	set(outs, 2, graph.Shape{B, dim(heads), T, Hv})
	set(outs, 3, graph.Shape{B, dim(heads), S, T})
	return outs, nil
}

func rotaryInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := ops.InputType(in, 0)
	if x.Shape != nil && len(x.Shape) != 3 && len(x.Shape) != 4 {
		return nil, ops.Invalidf(n, "input must be 3-D or 4-D, got %v", x.Shape)
	}
	return []graph.ValueType{ops.TensorType(x.DType, ops.CopyShape(x.Shape))}, nil
}

// statShape is x's shape with the last dim 1 (the mean and inverse
// standard deviation outputs).
func statShape(s graph.Shape) graph.Shape {
	if len(s) == 0 {
		return nil
	}
	out := ops.CopyShape(s)
	out[len(out)-1] = dim(1)
	return out
}

// skipNormInfer: output and input_skip_bias_sum are shaped like input;
// mean and inv_std_var are float32 with the last dim 1.
func skipNormInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := ops.InputType(in, 0)
	if x.Shape != nil && len(x.Shape) != 2 && len(x.Shape) != 3 {
		return nil, ops.Invalidf(n, "input must be 2-D or 3-D, got %v", x.Shape)
	}
	outs := outputs(n, x.DType)
	set(outs, 0, ops.CopyShape(x.Shape))
	for i := 1; i <= 2 && i < len(outs); i++ {
		outs[i] = ops.TensorType(graph.Float32, statShape(x.Shape))
	}
	set(outs, 3, ops.CopyShape(x.Shape))
	return outs, nil
}

// simplifiedNormInfer: Y has scale's dtype and X's shape; inv_std_var is
// float32 with the normalized axes set to 1.
func simplifiedNormInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x, scale := ops.InputType(in, 0), ops.InputType(in, 1)
	dt := scale.DType
	if dt == graph.Undefined {
		dt = x.DType
	}
	outs := outputs(n, dt)
	if x.Shape == nil {
		if len(outs) > 1 {
			outs[1].DType = graph.Float32
		}
		return outs, nil
	}
	ax, err := ops.NormAxis(n.AttrInt("axis", -1), len(x.Shape))
	if err != nil {
		return nil, ops.Invalidf(n, "axis: %v", err)
	}
	set(outs, 0, ops.CopyShape(x.Shape))
	if len(outs) > 1 {
		s := ops.CopyShape(x.Shape)
		for i := ax; i < len(s); i++ {
			s[i] = dim(1)
		}
		outs[1] = ops.TensorType(graph.Float32, s)
	}
	return outs, nil
}

// embedNormInfer: input_ids (B, S), word_embedding (V, H) → output (B, S,
// H), mask_index int32 (B), embedding_sum (B, S, H).
func embedNormInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	ids, word := ops.InputType(in, 0), ops.InputType(in, 2)
	if ids.Shape != nil && len(ids.Shape) != 2 {
		return nil, ops.Invalidf(n, "input_ids must be 2-D (batch, sequence), got %v", ids.Shape)
	}
	if word.Shape != nil && len(word.Shape) != 2 {
		return nil, ops.Invalidf(n, "word_embedding must be 2-D, got %v", word.Shape)
	}
	outs := outputs(n, word.DType)
	if len(outs) > 1 {
		outs[1].DType = graph.Int32
	}
	if ids.Shape == nil {
		return outs, nil
	}
	H := unknown
	if word.Shape != nil {
		H = word.Shape[1]
	}
	set(outs, 0, graph.Shape{ids.Shape[0], ids.Shape[1], H})
	set(outs, 1, graph.Shape{ids.Shape[0]})
	set(outs, 2, graph.Shape{ids.Shape[0], ids.Shape[1], H})
	return outs, nil
}

// gqaInfer: query (B, S, N·H) (or packed (B, S, (N+2·KV)·H) without key
// and value), past_key (B, KV, P, H) → output (B, S, N·H), present_key
// and present_value (B, KV, max(P, total), H).
func gqaInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	q := ops.InputType(in, 0)
	outs := outputs(n, q.DType)
	N, KV := n.AttrInt("num_heads", 0), n.AttrInt("kv_num_heads", 0)
	if N <= 0 || KV <= 0 || N%KV != 0 {
		return nil, ops.Invalidf(n, "num_heads %d and kv_num_heads %d must be positive, num_heads a multiple", N, KV)
	}
	if q.Shape == nil {
		return outs, nil
	}
	if len(q.Shape) != 3 {
		return nil, ops.Invalidf(n, "query must be 3-D, got %v", q.Shape)
	}
	B, S := q.Shape[0], q.Shape[1]
	hidden := q.Shape[2]
	if n.Input(1) == "" {
		hidden = mulDim(ops.DivDim(hidden, N+2*KV), N)
	}
	H := ops.DivDim(hidden, N)
	set(outs, 0, graph.Shape{B, S, hidden})
	for i := 1; i < 3; i++ {
		set(outs, i, graph.Shape{B, dim(KV), unknown, H})
		// a cache of its own type (float16; q8_0 blocks as uint8 rows of
		// H/32·34 bytes) gives the presents its dtype and row width
		if p := ops.InputType(in, 2+i); p.DType != 0 && p.DType != q.DType && i < len(outs) {
			outs[i].DType = p.DType
			if len(p.Shape) == 4 {
				outs[i].Shape[3] = p.Shape[3]
			}
		}
	}
	return outs, nil
}
