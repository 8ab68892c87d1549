package kernels

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
)

// The shape toolkit shared with shape inference lives in core/ops; these
// names keep it where kernels are written.

// NormAxis maps a possibly negative axis into [0, rank) (ops.NormAxis).
func NormAxis(axis int64, rank int) (int, error) { return ops.NormAxis(axis, rank) }

// Strides returns row-major strides for shape (ops.Strides).
func Strides(shape []int) []int { return ops.Strides(shape) }

// Prod multiplies the dims (ops.Prod).
func Prod(dims []int) int { return ops.Prod(dims) }

// BroadcastShapes applies numpy-style multidirectional broadcasting
// (ops.BroadcastShapes).
func BroadcastShapes(shapes ...[]int) ([]int, error) { return ops.BroadcastShapes(shapes...) }

// FloatTypes, IntTypes… are common Schema.Types lists (the ops lists).
var (
	FloatTypes   = ops.FloatTypes
	IntTypes     = ops.IntTypes
	NumericTypes = ops.NumericTypes
	AllTypes     = ops.AllTypes
)

// SameAsInput is an InferFunc for ops whose single output has the type and
// shape of input 0 (ops.SameAsInput).
func SameAsInput(n *graph.Node, opset int64, in []InferInput) ([]graph.ValueType, error) {
	return ops.SameAsInput(n, opset, in)
}

// BroadcastInfer is an InferFunc for elementwise ops (ops.BroadcastInfer).
func BroadcastInfer(outType graph.DType) InferFunc { return ops.BroadcastInfer(outType) }

// BroadcastSymbolic broadcasts declared shapes (ops.BroadcastSymbolic).
func BroadcastSymbolic(shapes ...graph.Shape) (graph.Shape, error) {
	return ops.BroadcastSymbolic(shapes...)
}

// BroadcastIndex returns, for every element of outShape (row-major), the
// flat index of the element of an input of shape inShape that broadcasts to
// it. inShape must be broadcast-compatible with outShape.
func BroadcastIndex(outShape, inShape []int) []int {
	if graph.SameShape(outShape, inShape) {
		idx := make([]int, Prod(outShape))
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
	return StridedOffsets(outShape, st)
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

// Input returns inputs[i] or nil when absent.
func Input(inputs []*graph.Tensor, i int) *graph.Tensor {
	if i < len(inputs) {
		return inputs[i]
	}
	return nil
}

// CheckInput validates a required input tensor: present and well formed.
func CheckInput(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return Invalidf(n, "missing input %s", what)
	}
	if err := t.Check(); err != nil {
		return Invalidf(n, "input %s: %v", what, err)
	}
	return nil
}

// CheckFloatInput validates a required input of a float dtype.
func CheckFloatInput(n *graph.Node, t *graph.Tensor, what string) error {
	if err := CheckInput(n, t, what); err != nil {
		return err
	}
	if !t.DType.IsFloat() {
		return Unsupportedf(n, "input %s has dtype %v, want a float type", what, t.DType)
	}
	return nil
}

// NewFromFloat64 allocates a float tensor of dtype dt with ctx and stores
// vals into it, rounding once to the element type (kernels that compute
// in float64 whatever their input precision).
func NewFromFloat64(ctx *Context, n *graph.Node, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, Invalidf(n, "%v", err)
	}
	if out.Len() != len(vals) {
		return nil, Invalidf(n, "internal size mismatch: %d values for shape %v", len(vals), shape)
	}
	StoreFloat64(out, vals)
	return out, nil
}

// StoreFloat64 writes vals into the float tensor t, rounding once to its
// element type (bfloat16 via float32).
func StoreFloat64(t *graph.Tensor, vals []float64) {
	switch d := t.Data.(type) {
	case []float32:
		for i, v := range vals {
			d[i] = float32(v)
		}
	case []float64:
		copy(d, vals)
	case []graph.F16:
		for i, v := range vals {
			d[i] = graph.F16FromFloat64(v)
		}
	case []graph.BF16:
		for i, v := range vals {
			d[i] = graph.BF16FromFloat32(float32(v))
		}
	default:
		for i, v := range vals {
			t.SetFloat64(i, v)
		}
	}
}
