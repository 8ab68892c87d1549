package nn

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func matMulInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) < 2 {
		return nil, nil
	}
	dt := in[0].Type.DType
	as, bs := in[0].Type.Shape, in[1].Type.Shape
	if as == nil || bs == nil {
		return []graph.ValueType{{Kind: "tensor", DType: dt}}, nil
	}
	if len(as) == 0 || len(bs) == 0 {
		return nil, ops.Invalidf(n, "MatMul operands must have rank >= 1")
	}
	a2, b2 := as, bs
	if len(as) == 1 {
		a2 = graph.Shape{{Value: 1}, as[0]}
	}
	if len(bs) == 1 {
		b2 = graph.Shape{bs[0], {Value: 1}}
	}
	ka, kb := a2[len(a2)-1], b2[len(b2)-2]
	if ka.Static() && kb.Static() && ka.Value != kb.Value {
		return nil, ops.Invalidf(n, "MatMul inner dimensions differ: %v and %v", as, bs)
	}
	batch, err := ops.BroadcastSymbolic(a2[:len(a2)-2], b2[:len(b2)-2])
	if err != nil {
		return nil, ops.Errorf(n, "%w", err)
	}
	out := append(graph.Shape{}, batch...)
	if len(as) > 1 {
		out = append(out, a2[len(a2)-2])
	}
	if len(bs) > 1 {
		out = append(out, b2[len(b2)-1])
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
}

// GemmAttrs reads Gemm's attributes.
type GemmAttrs struct {
	TransA, TransB bool
	Alpha, Beta    float32
	Broadcast      bool // opset < 7: C broadcasts only when set
}

func ReadGemmAttrs(n *graph.Node, opset int64) GemmAttrs {
	g := GemmAttrs{
		TransA: n.AttrInt("transA", 0) != 0,
		TransB: n.AttrInt("transB", 0) != 0,
		Alpha:  n.AttrFloat("alpha", 1),
		Beta:   n.AttrFloat("beta", 1),
	}
	g.Broadcast = opset >= 7 || n.AttrInt("broadcast", 0) != 0
	return g
}

func gemmInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) < 2 {
		return nil, nil
	}
	dt := in[0].Type.DType
	as, bs := in[0].Type.Shape, in[1].Type.Shape
	g := ReadGemmAttrs(n, opset)
	mDim, nDim := graph.Dim{Value: -1}, graph.Dim{Value: -1}
	var kA, kB graph.Dim
	if as != nil {
		if len(as) != 2 {
			return nil, ops.Invalidf(n, "A must be 2-D, got %v", as)
		}
		mDim, kA = as[0], as[1]
		if g.TransA {
			mDim, kA = as[1], as[0]
		}
	}
	if bs != nil {
		if len(bs) != 2 {
			return nil, ops.Invalidf(n, "B must be 2-D, got %v", bs)
		}
		kB, nDim = bs[0], bs[1]
		if g.TransB {
			kB, nDim = bs[1], bs[0]
		}
	}
	if as != nil && bs != nil && kA.Static() && kB.Static() && kA.Value != kB.Value {
		return nil, ops.Invalidf(n, "inner dimensions differ: A %v, B %v", as, bs)
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: graph.Shape{mDim, nDim}}}, nil
}
