package elementwise

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// fns holds the per-dtype-family element functions of one unary op. A nil
// member means the op does not accept that family of dtypes.
type fns struct {
	// f computes on every float dtype: float32, float16 and bfloat16 values
	// are widened exactly to float64 and the result is rounded once to the
	// output type.
	f func(float64) float64
	// i computes on signed integers (widened to int64; the result is
	// truncated back with two's-complement wrap-around, like numpy).
	i func(int64) int64
	// u computes on unsigned integers (widened to uint64).
	u func(uint64) uint64
	// b computes on bool.
	b func(bool) bool
	// pred maps a float value to a bool output (IsNaN, IsInf); when set the
	// output dtype is bool.
	pred func(float64) bool
}

type sInt interface {
	~int8 | ~int16 | ~int32 | ~int64
}
type uInt interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

func mapSigned[T sInt](in, out []T, f func(int64) int64) {
	for i, v := range in {
		out[i] = T(f(int64(v)))
	}
}

func mapUnsigned[T uInt](in, out []T, f func(uint64) uint64) {
	for i, v := range in {
		out[i] = T(f(uint64(v)))
	}
}

// apply runs fs elementwise over x into a freshly allocated tensor.
func apply(ctx *kernels.Context, n *graph.Node, x *graph.Tensor, fs fns) (*graph.Tensor, error) {
	if x == nil {
		return nil, kernels.Invalidf(n, "missing input 0")
	}
	if err := x.Check(); err != nil {
		return nil, kernels.Invalidf(n, "input 0: %v", err)
	}
	if fs.pred != nil {
		if !x.DType.IsFloat() {
			return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
		}
		out, err := ctx.New(graph.Bool, x.Shape)
		if err != nil {
			return nil, err
		}
		o := out.Data.([]bool)
		for lo := 0; lo < len(o); lo += kernels.StopCheckElems {
			if ctx.Stopped() {
				return nil, ctx.Stop(n)
			}
			for i := lo; i < min(lo+kernels.StopCheckElems, len(o)); i++ {
				o[i] = fs.pred(x.Float64At(i))
			}
		}
		return out, nil
	}
	ok := false
	switch {
	case x.DType.IsFloat():
		ok = fs.f != nil
	case x.DType.IsInteger() && x.DType.IsSigned():
		ok = fs.i != nil
	case x.DType.IsInteger():
		ok = fs.u != nil
	case x.DType == graph.Bool:
		ok = fs.b != nil
	}
	if !ok {
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	out, err := ctx.New(x.DType, x.Shape)
	if err != nil {
		return nil, err
	}
	// a block at a time, checking the context between blocks
	total := x.Len()
	for lo := 0; lo < total; lo += kernels.StopCheckElems {
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		hi := min(lo+kernels.StopCheckElems, total)
		xd, od := x.Data, out.Data // one block: the whole data, not re-boxed sub-slices
		if lo > 0 || hi < total {
			xd, od = graph.SliceData(x.Data, lo, hi), graph.SliceData(out.Data, lo, hi)
		}
		if err := applyBlock(n, xd, od, x.DType, fs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// applyBlock runs fs over the elements of xd into od (same length).
func applyBlock(n *graph.Node, xd, od any, dt graph.DType, fs fns) error {
	out := &graph.Tensor{Data: od}
	switch d := xd.(type) {
	case []float32:
		o := out.Data.([]float32)
		for i, v := range d {
			o[i] = float32(fs.f(float64(v)))
		}
	case []float64:
		o := out.Data.([]float64)
		for i, v := range d {
			o[i] = fs.f(v)
		}
	case []graph.F16:
		o := out.Data.([]graph.F16)
		for i, v := range d {
			o[i] = f16FromFloat64(fs.f(float64(v.Float32())))
		}
	case []graph.BF16:
		o := out.Data.([]graph.BF16)
		for i, v := range d {
			o[i] = bf16FromFloat64(fs.f(float64(v.Float32())))
		}
	case []int8:
		mapSigned(d, out.Data.([]int8), fs.i)
	case []int16:
		mapSigned(d, out.Data.([]int16), fs.i)
	case []int32:
		mapSigned(d, out.Data.([]int32), fs.i)
	case []int64:
		mapSigned(d, out.Data.([]int64), fs.i)
	case []uint8:
		mapUnsigned(d, out.Data.([]uint8), fs.u)
	case []uint16:
		mapUnsigned(d, out.Data.([]uint16), fs.u)
	case []uint32:
		mapUnsigned(d, out.Data.([]uint32), fs.u)
	case []uint64:
		mapUnsigned(d, out.Data.([]uint64), fs.u)
	case []bool:
		o := out.Data.([]bool)
		for i, v := range d {
			o[i] = fs.b(v)
		}
	default:
		return kernels.Unsupportedf(n, "dtype %v", dt)
	}
	return nil
}

// roundToOddFloat32 rounds v to float32 with round-to-odd. Rounding that
// result once more to a format with at most 22 significand bits (float16,
// bfloat16) gives the correctly rounded (nearest-even) value of v, which a
// plain nearest-even float32 intermediate does not in rare tie cases.
func roundToOddFloat32(v float64) float32 {
	r := float32(v)
	if float64(r) == v || r != r || math.IsInf(float64(r), 0) {
		return r
	}
	// truncate toward zero
	if math.Abs(float64(r)) > math.Abs(v) {
		r = math.Nextafter32(r, 0)
	}
	return math.Float32frombits(math.Float32bits(r) | 1)
}

// f16FromFloat64 rounds a float64 to half precision, nearest even.
func f16FromFloat64(v float64) graph.F16 { return graph.F16FromFloat32(roundToOddFloat32(v)) }

// bf16FromFloat64 rounds a float64 to bfloat16, nearest even.
func bf16FromFloat64(v float64) graph.BF16 { return graph.BF16FromFloat32(roundToOddFloat32(v)) }
