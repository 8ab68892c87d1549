package ops

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// NormAxis maps a possibly negative axis into [0, rank).
func NormAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, fmt.Errorf("%w: axis %d out of range for rank %d", ErrInvalid, axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// Strides returns row-major strides for shape.
func Strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// Prod multiplies the dims.
func Prod(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}

// BroadcastShapes applies numpy-style multidirectional broadcasting.
func BroadcastShapes(shapes ...[]int) ([]int, error) {
	rank := 0
	for _, s := range shapes {
		if len(s) > rank {
			rank = len(s)
		}
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			o := out[off+i]
			switch {
			case d == o, d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("%w: shapes %v are not broadcast-compatible", ErrInvalid, shapes)
			}
		}
	}
	return out, nil
}

// FloatTypes, IntTypes… are common Schema.Types lists.
var (
	FloatTypes   = []graph.DType{graph.Float32, graph.Float64, graph.Float16, graph.BFloat16}
	IntTypes     = []graph.DType{graph.Int8, graph.Int16, graph.Int32, graph.Int64, graph.Uint8, graph.Uint16, graph.Uint32, graph.Uint64}
	NumericTypes = append(append([]graph.DType{}, FloatTypes...), IntTypes...)
	AllTypes     = append(append([]graph.DType{}, NumericTypes...), graph.Bool, graph.String)
)

// SameAsInput is an InferFunc for ops whose single output has the type and
// shape of input 0.
func SameAsInput(n *graph.Node, opset int64, in []InferInput) ([]graph.ValueType, error) {
	if len(in) == 0 {
		return nil, nil
	}
	return []graph.ValueType{in[0].Type}, nil
}

// BroadcastInfer is an InferFunc for elementwise ops: the output dtype is
// input 0's (or outType if not Undefined) and the shape is the broadcast of
// all input shapes where known.
func BroadcastInfer(outType graph.DType) InferFunc {
	return func(n *graph.Node, opset int64, in []InferInput) ([]graph.ValueType, error) {
		dt := outType
		if dt == graph.Undefined && len(in) > 0 {
			dt = in[0].Type.DType
		}
		var shapes []graph.Shape
		for _, i := range in {
			if i.Type.Shape == nil {
				return []graph.ValueType{{Kind: "tensor", DType: dt}}, nil
			}
			shapes = append(shapes, i.Type.Shape)
		}
		s, err := BroadcastSymbolic(shapes...)
		if err != nil {
			return nil, Errorf(n, "%v", err)
		}
		return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: s}}, nil
	}
}

// BroadcastSymbolic broadcasts declared shapes; unknown or symbolic dims
// that cannot be decided become unknown.
func BroadcastSymbolic(shapes ...graph.Shape) (graph.Shape, error) {
	rank := 0
	for _, s := range shapes {
		if len(s) > rank {
			rank = len(s)
		}
	}
	out := make(graph.Shape, rank)
	for i := range out {
		out[i] = graph.Dim{Value: 1}
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			o := out[off+i]
			switch {
			case d.Static() && d.Value == 1:
			case o.Static() && o.Value == 1:
				out[off+i] = d
			case d == o:
			case d.Static() && o.Static():
				return nil, fmt.Errorf("%w: shapes %v are not broadcast-compatible", ErrInvalid, shapes)
			default:
				out[off+i] = graph.Dim{Value: -1}
			}
		}
	}
	return out, nil
}

// InputType returns input i's type, or an unknown tensor type when the
// node has no input i.
func InputType(in []InferInput, i int) graph.ValueType {
	if i < len(in) {
		return in[i].Type
	}
	return graph.ValueType{Kind: "tensor"}
}

// TensorType is the tensor type of dtype dt and shape s.
func TensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}

// CopyShape copies s (nil stays nil: an unknown rank).
func CopyShape(s graph.Shape) graph.Shape {
	if s == nil {
		return nil
	}
	return append(graph.Shape{}, s...)
}

// AddDims adds two dims when both are static (a static 0 keeps the other
// dim); otherwise the sum is unknown.
func AddDims(a, b graph.Dim) graph.Dim {
	switch {
	case a.Static() && b.Static():
		return graph.Dim{Value: a.Value + b.Value}
	case a.Static() && a.Value == 0:
		return b
	case b.Static() && b.Value == 0:
		return a
	}
	return graph.Dim{Value: -1}
}

// DivDim divides a static dim by k (> 0) when it divides evenly; otherwise
// the quotient is unknown.
func DivDim(a graph.Dim, k int64) graph.Dim {
	if a.Static() && k > 0 && a.Value%k == 0 {
		return graph.Dim{Value: a.Value / k}
	}
	return graph.Dim{Value: -1}
}
