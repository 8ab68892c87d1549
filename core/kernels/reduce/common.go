package reduce

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// intElem is the set of integer element types (native arithmetic, wrapping
// on overflow like ONNX Runtime and numpy).
type intElem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// checkTensor validates a required input tensor.
func checkTensor(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return kernels.Invalidf(n, "missing input %s", what)
	}
	if err := t.Check(); err != nil {
		return kernels.Invalidf(n, "input %s: %v", what, err)
	}
	return nil
}

// checkFloat validates a required float input.
func checkFloat(n *graph.Node, t *graph.Tensor, what string) error {
	if err := checkTensor(n, t, what); err != nil {
		return err
	}
	if !t.DType.IsFloat() {
		return kernels.Unsupportedf(n, "input %s has dtype %v, want a float type", what, t.DType)
	}
	return nil
}

// intBounds returns the range of T as float64s.
func intBounds[T intElem]() (lo, hi float64) {
	var z T
	switch any(z).(type) {
	case int8:
		return math.MinInt8, math.MaxInt8
	case int16:
		return math.MinInt16, math.MaxInt16
	case int32:
		return math.MinInt32, math.MaxInt32
	case int64:
		return math.MinInt64, math.MaxInt64
	case uint8:
		return 0, math.MaxUint8
	case uint16:
		return 0, math.MaxUint16
	case uint32:
		return 0, math.MaxUint32
	}
	return 0, math.MaxUint64
}

// minMaxOf returns the smallest and largest values of T.
func minMaxOf[T intElem]() (lo, hi T) {
	var z T
	switch any(z).(type) {
	case int8:
		var l, h int8 = math.MinInt8, math.MaxInt8
		return T(l), T(h)
	case int16:
		var l, h int16 = math.MinInt16, math.MaxInt16
		return T(l), T(h)
	case int32:
		var l, h int32 = math.MinInt32, math.MaxInt32
		return T(l), T(h)
	case int64:
		var l, h int64 = math.MinInt64, math.MaxInt64
		return T(l), T(h)
	}
	// unsigned: 0 and all bits set
	return 0, ^T(0)
}

// satInt converts v to T, truncating toward zero and saturating at T's
// range (NaN becomes 0), so float results never hit Go's
// implementation-defined out-of-range conversion.
func satInt[T intElem](v float64) T {
	if v != v {
		return 0
	}
	lo, hi := intBounds[T]()
	v = math.Trunc(v)
	if v <= lo {
		l, _ := minMaxOf[T]()
		return l
	}
	if v >= hi {
		_, h := minMaxOf[T]()
		return h
	}
	return T(v)
}

// newFromFloat64 allocates a tensor of dtype dt and stores vals into it
// (floats round to nearest, integers truncate and saturate, bool is v != 0).
func newFromFloat64(ctx *kernels.Context, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, err
	}
	if out.Len() != len(vals) {
		return nil, kernels.ErrInvalid
	}
	storeFloat64(out, vals)
	return out, nil
}

// storeFloat64 writes vals into t (see newFromFloat64 for the conversions).
func storeFloat64(t *graph.Tensor, vals []float64) {
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
			d[i] = bf16FromFloat64(v)
		}
	case []int8:
		storeInts(d, vals)
	case []int16:
		storeInts(d, vals)
	case []int32:
		storeInts(d, vals)
	case []int64:
		storeInts(d, vals)
	case []uint8:
		storeInts(d, vals)
	case []uint16:
		storeInts(d, vals)
	case []uint32:
		storeInts(d, vals)
	case []uint64:
		storeInts(d, vals)
	case []bool:
		for i, v := range vals {
			d[i] = v != 0
		}
	}
}

func bf16FromFloat64(v float64) graph.BF16 { return graph.BF16FromFloat32(float32(v)) }

func storeInts[T intElem](d []T, vals []float64) {
	for i, v := range vals {
		d[i] = satInt[T](v)
	}
}

// splitAt returns the products of shape[:axis], shape[axis] and shape[axis+1:].
func splitAt(shape []int, axis int) (outer, d, inner int) {
	return kernels.Prod(shape[:axis]), shape[axis], kernels.Prod(shape[axis+1:])
}

// take gathers src[idx[i]] into a new slice.
func take[T any](src []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = src[j]
	}
	return out
}

// gather builds a tensor of x's dtype and the given shape whose element i is
// x's flat element idx[i].
func gather(ctx *kernels.Context, x *graph.Tensor, shape []int, idx []int) (*graph.Tensor, error) {
	out, err := ctx.New(x.DType, shape)
	if err != nil {
		return nil, err
	}
	var data any
	switch d := x.Data.(type) {
	case []float32:
		data = take(d, idx)
	case []float64:
		data = take(d, idx)
	case []graph.F16:
		data = take(d, idx)
	case []graph.BF16:
		data = take(d, idx)
	case []int8:
		data = take(d, idx)
	case []int16:
		data = take(d, idx)
	case []int32:
		data = take(d, idx)
	case []int64:
		data = take(d, idx)
	case []uint8:
		data = take(d, idx)
	case []uint16:
		data = take(d, idx)
	case []uint32:
		data = take(d, idx)
	case []uint64:
		data = take(d, idx)
	case []bool:
		data = take(d, idx)
	case []string:
		data = take(d, idx)
	default:
		return nil, kernels.ErrUnsupported
	}
	graph.CopyData(out.Data, data)
	return out, nil
}
