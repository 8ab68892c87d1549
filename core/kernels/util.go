package kernels

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

// BroadcastIndex returns, for every element of outShape (row-major), the
// flat index of the element of an input of shape inShape that broadcasts to
// it. inShape must be broadcast-compatible with outShape.
func BroadcastIndex(outShape, inShape []int) []int {
	n := Prod(outShape)
	idx := make([]int, n)
	if graph.SameShape(outShape, inShape) {
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	rank := len(outShape)
	// strides of the input aligned to the output's rank, 0 where broadcast
	st := make([]int, rank)
	inSt := Strides(inShape)
	off := rank - len(inShape)
	for i := range inShape {
		if inShape[i] != 1 {
			st[off+i] = inSt[i]
		}
	}
	if n == 0 {
		return idx
	}
	counter := make([]int, rank)
	cur := 0
	for i := 0; i < n; i++ {
		idx[i] = cur
		for d := rank - 1; d >= 0; d-- {
			counter[d]++
			cur += st[d]
			if counter[d] < outShape[d] {
				break
			}
			cur -= st[d] * counter[d]
			counter[d] = 0
		}
	}
	return idx
}

// ToFloat32 returns a float32 copy of a float16/bfloat16 tensor, or t itself
// when it already holds float32/float64 (callers must not write to it).
func ToFloat32(t *graph.Tensor) *graph.Tensor {
	switch d := t.Data.(type) {
	case []graph.F16:
		out := make([]float32, len(d))
		for i, v := range d {
			out[i] = v.Float32()
		}
		return &graph.Tensor{DType: graph.Float32, Shape: t.Shape, Data: out}
	case []graph.BF16:
		out := make([]float32, len(d))
		for i, v := range d {
			out[i] = v.Float32()
		}
		return &graph.Tensor{DType: graph.Float32, Shape: t.Shape, Data: out}
	}
	return t
}

// FromFloat32 stores float32 values into a new tensor of dtype dt
// (float16/bfloat16 round to nearest even) allocated with ctx.
func FromFloat32(ctx *Context, dt graph.DType, shape []int, vals []float32) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, err
	}
	switch d := out.Data.(type) {
	case []float32:
		copy(d, vals)
	case []graph.F16:
		for i, v := range vals {
			d[i] = graph.F16FromFloat32(v)
		}
	case []graph.BF16:
		for i, v := range vals {
			d[i] = graph.BF16FromFloat32(v)
		}
	default:
		for i, v := range vals {
			out.SetFloat64(i, float64(v))
		}
	}
	return out, nil
}

// ShapeInts converts an int tensor (a shape, axes, pads…) to []int64.
func ShapeInts(t *graph.Tensor) []int64 {
	if t == nil {
		return nil
	}
	return t.Int64s()
}

// Input returns inputs[i] or nil when absent.
func Input(inputs []*graph.Tensor, i int) *graph.Tensor {
	if i < len(inputs) {
		return inputs[i]
	}
	return nil
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
