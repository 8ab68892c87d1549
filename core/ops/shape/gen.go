package shape

import (
	"errors"
	"math"
	"math/big"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Shape", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Infer: shapeInfer})
	ops.Register(ops.Schema{OpType: "Size", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Infer: sizeInfer})
	ops.Register(ops.Schema{OpType: "Constant", MinOpset: 1, MinInputs: 0, MaxInputs: 0, Infer: constantInfer})
	ops.Register(ops.Schema{OpType: "ConstantOfShape", MinOpset: 9, MinInputs: 1, MaxInputs: 1, Types: []graph.DType{graph.Int64}, Infer: constantOfShapeInfer})
	ops.Register(ops.Schema{OpType: "Range", MinOpset: 11, MinInputs: 3, MaxInputs: 3,
		Types: []graph.DType{graph.Float32, graph.Float64, graph.Float16, graph.BFloat16, graph.Int16, graph.Int32, graph.Int64},
		Infer: rangeInfer})
}

// ShapeBounds applies Shape's start/end attributes (opset 15) to a rank.
func ShapeBounds(n *graph.Node, opset int64, rank int) (int, int) {
	r := int64(rank)
	if opset < 15 {
		return 0, rank
	}
	norm := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return clampInt(v, 0, r)
	}
	s := norm(n.AttrInt("start", 0))
	e := r
	if n.HasAttr("end") {
		e = norm(n.AttrInt("end", r))
	}
	if e < s {
		e = s
	}
	return int(s), int(e)
}

func shapeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(graph.Int64, unknownDims(1))}, nil
	}
	s, e := ShapeBounds(n, opset, len(x.Shape))
	return []graph.ValueType{tensorType(graph.Int64, graph.Shape{{Value: int64(e - s)}})}, nil
}

func sizeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	return []graph.ValueType{tensorType(graph.Int64, graph.Shape{})}, nil
}

var constantAttrs = []string{"value", "sparse_value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings"}

// ConstantValue builds the (not yet copied) value of a Constant node.
func ConstantValue(n *graph.Node) (*graph.Tensor, error) {
	var name string
	for _, a := range constantAttrs {
		if n.HasAttr(a) {
			if name != "" {
				return nil, ops.Invalidf(n, "both %s and %s are set", name, a)
			}
			name = a
		}
	}
	a := n.Attr(name)
	switch name {
	case "":
		return nil, ops.Invalidf(n, "no value attribute")
	case "value":
		if a.Type != graph.AttrTensor || a.T == nil {
			return nil, ops.Invalidf(n, "value attribute is a %v, want tensor", a.Type)
		}
		if !a.T.DType.Supported() {
			return nil, ops.Unsupportedf(n, "value of dtype %v", a.T.DType)
		}
		if err := a.T.Check(); err != nil {
			return nil, ops.Invalidf(n, "value: %v", err)
		}
		return a.T, nil
	case "sparse_value":
		return nil, ops.Unsupportedf(n, "sparse_value")
	case "value_float":
		if a.Type != graph.AttrFloat {
			return nil, ops.Invalidf(n, "value_float attribute is a %v", a.Type)
		}
		return graph.Scalar(a.F), nil
	case "value_floats":
		if a.Type != graph.AttrFloats {
			return nil, ops.Invalidf(n, "value_floats attribute is a %v", a.Type)
		}
		return graph.MustFromSlice([]int{len(a.Floats)}, a.Floats), nil
	case "value_int":
		if a.Type != graph.AttrInt {
			return nil, ops.Invalidf(n, "value_int attribute is a %v", a.Type)
		}
		return graph.Scalar(a.I), nil
	case "value_ints":
		if a.Type != graph.AttrInts {
			return nil, ops.Invalidf(n, "value_ints attribute is a %v", a.Type)
		}
		return graph.MustFromSlice([]int{len(a.Ints)}, a.Ints), nil
	case "value_string":
		if a.Type != graph.AttrString {
			return nil, ops.Invalidf(n, "value_string attribute is a %v", a.Type)
		}
		return graph.Scalar(a.S), nil
	default: // value_strings
		if a.Type != graph.AttrStrings {
			return nil, ops.Invalidf(n, "value_strings attribute is a %v", a.Type)
		}
		return graph.MustFromSlice([]int{len(a.Strings)}, a.Strings), nil
	}
}

func constantInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	v, err := ConstantValue(n)
	if err != nil {
		if errors.Is(err, ops.ErrUnsupported) {
			dt := graph.Undefined
			if v := n.AttrTensor("value"); v != nil {
				dt = v.DType
			}
			return []graph.ValueType{tensorType(dt, nil)}, nil
		}
		return nil, err
	}
	return []graph.ValueType{tensorType(v.DType, staticDims(v.Shape))}, nil
}

func ConstantOfShapeValue(n *graph.Node) (*graph.Tensor, error) {
	if !n.HasAttr("value") {
		return graph.Scalar(float32(0)), nil
	}
	v := n.AttrTensor("value")
	if v == nil {
		return nil, ops.Invalidf(n, "value attribute must be a tensor")
	}
	if !v.DType.Supported() {
		return nil, ops.Unsupportedf(n, "value of dtype %v", v.DType)
	}
	if err := v.Check(); err != nil {
		return nil, ops.Invalidf(n, "value: %v", err)
	}
	if v.Len() != 1 {
		return nil, ops.Invalidf(n, "value must hold one element, has shape %v", v.Shape)
	}
	return v, nil
}

func constantOfShapeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	v, err := ConstantOfShapeValue(n)
	if errors.Is(err, ops.ErrUnsupported) {
		return []graph.ValueType{tensorType(n.AttrTensor("value").DType, nil)}, nil
	}
	if err != nil {
		return nil, err
	}
	if dims, ok := constInts(in, 0); ok {
		s := make(graph.Shape, len(dims))
		for i, d := range dims {
			if d < 0 {
				return nil, ops.Invalidf(n, "shape %v has invalid dimension %d", dims, d)
			}
			s[i] = graph.Dim{Value: d}
		}
		return []graph.ValueType{tensorType(v.DType, s)}, nil
	}
	if s := inType(in, 0).Shape; len(s) == 1 && s[0].Static() {
		return []graph.ValueType{tensorType(v.DType, unknownDims(int(s[0].Value)))}, nil
	}
	return []graph.ValueType{tensorType(v.DType, nil)}, nil
}

// maxRangeCount bounds Range's element count before any allocation.
const maxRangeCount = math.MaxInt32 * 8

// RangeCount returns max(ceil((limit-start)/delta), 0) for Range's scalar
// inputs (all of dtype st.DType).
func RangeCount(n *graph.Node, st, lim, del *graph.Tensor) (int, error) {
	dt := st.DType
	if dt.IsInteger() {
		s, l, d := st.Int64At(0), lim.Int64At(0), del.Int64At(0)
		if d == 0 {
			return 0, ops.Invalidf(n, "delta is zero")
		}
		diff := new(big.Int).Sub(big.NewInt(l), big.NewInt(s))
		bd := big.NewInt(d)
		if diff.Sign() == 0 || diff.Sign() != bd.Sign() {
			return 0, nil
		}
		// ceil(diff/d) for same-sign operands: (|diff| + |d| - 1) / |d|
		diff.Abs(diff)
		bd.Abs(bd)
		diff.Add(diff, bd).Sub(diff, big.NewInt(1)).Quo(diff, bd)
		if !diff.IsInt64() || diff.Int64() > maxRangeCount {
			return 0, ops.Invalidf(n, "range has too many elements (%v)", diff)
		}
		return int(diff.Int64()), nil
	}
	var c float64
	if dt == graph.Float64 {
		s, l, d := st.Float64At(0), lim.Float64At(0), del.Float64At(0)
		if d == 0 {
			return 0, ops.Invalidf(n, "delta is zero")
		}
		c = math.Ceil((l - s) / d)
	} else {
		s, l, d := float32(st.Float64At(0)), float32(lim.Float64At(0)), float32(del.Float64At(0))
		if d == 0 {
			return 0, ops.Invalidf(n, "delta is zero")
		}
		c = math.Ceil(float64((l - s) / d))
	}
	if math.IsNaN(c) || c > maxRangeCount {
		return 0, ops.Invalidf(n, "range count %v is not a valid size", c)
	}
	if c < 0 {
		return 0, nil
	}
	return int(c), nil
}

func rangeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := inType(in, 0).DType
	if len(in) == 3 && in[0].Const != nil && in[1].Const != nil && in[2].Const != nil {
		ok := true
		for _, i := range in {
			if i.Const.Check() != nil || i.Const.Len() != 1 || i.Const.DType != in[0].Const.DType {
				ok = false
			}
		}
		if ok {
			if cnt, err := RangeCount(n, in[0].Const, in[1].Const, in[2].Const); err == nil {
				return []graph.ValueType{tensorType(in[0].Const.DType, graph.Shape{{Value: int64(cnt)}})}, nil
			}
		}
	}
	return []graph.ValueType{tensorType(dt, unknownDims(1))}, nil
}
