package binary

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// arith is the per-dtype-family definition of a two-input arithmetic op.
// Signed integers are widened to int64 and unsigned to uint64; the result is
// truncated back (two's-complement wrap-around, as numpy and C do).
// float16/bfloat16 compute in float32 and round once to the output type.
type arith struct {
	fast Op32 // float32 fast-path op; NoOp32: use f32
	f32  func(a, b float32) float32
	f64  func(a, b float64) float64
	i64  func(a, b int64) int64
	u64  func(a, b uint64) uint64
}

type sInt interface {
	~int8 | ~int16 | ~int32 | ~int64
}
type uInt interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

func add[T graph.Numeric](a, b T) T     { return a + b }
func sub[T graph.Numeric](a, b T) T     { return a - b }
func mul[T graph.Numeric](a, b T) T     { return a * b }
func div[T float32 | float64](a, b T) T { return a / b }

// Integer division truncates toward zero (C semantics); division by zero
// yields 0 instead of trapping. MinInt / -1 wraps to MinInt.
func idiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func udiv(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a / b
}

var (
	addOp = arith{fast: Add32, f32: add[float32], f64: add[float64], i64: add[int64], u64: add[uint64]}
	subOp = arith{fast: Sub32, f32: sub[float32], f64: sub[float64], i64: sub[int64], u64: sub[uint64]}
	mulOp = arith{fast: Mul32, f32: mul[float32], f64: mul[float64], i64: mul[int64], u64: mul[uint64]}
	divOp = arith{fast: Div32, f32: div[float32], f64: div[float64], i64: idiv, u64: udiv}
)

// fmodOp is Mod with fmod=1: the remainder has the dividend's sign (C fmod /
// truncated division). A zero integer divisor yields 0.
var fmodOp = arith{
	f32: func(a, b float32) float32 { return float32(math.Mod(float64(a), float64(b))) },
	f64: math.Mod,
	i64: func(a, b int64) int64 {
		if b == 0 {
			return 0
		}
		return a % b
	},
	u64: umod,
}

// intModOp is Mod with fmod=0 on integers: the remainder has the divisor's
// sign (Python / floored division). A zero divisor yields 0.
var intModOp = arith{
	i64: func(a, b int64) int64 {
		if b == 0 {
			return 0
		}
		r := a % b
		if r != 0 && (r < 0) != (b < 0) {
			r += b
		}
		return r
	},
	u64: umod,
}

func umod(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a % b
}

// intArith runs op on integer data: signed types widened to int64 and
// unsigned to uint64, the result truncated back (64-bit types directly).
func intArith[T sInt | uInt](p *plan, x []T, b, out *graph.Tensor, op arith) {
	y, o := b.Data.([]T), out.Data.([]T)
	if f, ok := any(op.i64).(func(T, T) T); ok {
		loop2(p, x, y, o, f)
		return
	}
	if f, ok := any(op.u64).(func(T, T) T); ok {
		loop2(p, x, y, o, f)
		return
	}
	var zero T
	if zero-1 < zero { // signed
		loop2(p, x, y, o, func(u, v T) T { return T(op.i64(int64(u), int64(v))) })
	} else {
		loop2(p, x, y, o, func(u, v T) T { return T(op.u64(uint64(u), uint64(v))) })
	}
}

// applyArith computes op over two same-dtype tensors into out.
func applyArith(n *graph.Node, p *plan, a, b, out *graph.Tensor, op arith) error {
	switch x := a.Data.(type) {
	case []float32:
		y, o := b.Data.([]float32), out.Data.([]float32)
		if op.fast != NoOp32 {
			fastF32(p, x, y, o, op.fast)
		} else {
			loop2(p, x, y, o, op.f32)
		}
	case []float64:
		loop2(p, x, b.Data.([]float64), out.Data.([]float64), op.f64)
	case []graph.F16:
		if op.f32 == nil {
			return kernels.Unsupportedf(n, "dtype %v", a.DType)
		}
		loop2(p, x, b.Data.([]graph.F16), out.Data.([]graph.F16), func(u, v graph.F16) graph.F16 {
			return graph.F16FromFloat32(op.f32(u.Float32(), v.Float32()))
		})
	case []graph.BF16:
		if op.f32 == nil {
			return kernels.Unsupportedf(n, "dtype %v", a.DType)
		}
		loop2(p, x, b.Data.([]graph.BF16), out.Data.([]graph.BF16), func(u, v graph.BF16) graph.BF16 {
			return graph.BF16FromFloat32(op.f32(u.Float32(), v.Float32()))
		})
	case []int8:
		intArith(p, x, b, out, op)
	case []int16:
		intArith(p, x, b, out, op)
	case []int32:
		intArith(p, x, b, out, op)
	case []int64:
		intArith(p, x, b, out, op)
	case []uint8:
		intArith(p, x, b, out, op)
	case []uint16:
		intArith(p, x, b, out, op)
	case []uint32:
		intArith(p, x, b, out, op)
	case []uint64:
		intArith(p, x, b, out, op)
	default:
		return kernels.Unsupportedf(n, "dtype %v", a.DType)
	}
	return nil
}

// supportsArith reports whether op has a function for dt.
func supportsArith(op arith, dt graph.DType) bool {
	switch {
	case dt == graph.Float32:
		return op.fast != NoOp32 || op.f32 != nil
	case dt == graph.Float64:
		return op.f64 != nil
	case dt == graph.Float16 || dt == graph.BFloat16:
		return op.f32 != nil
	case dt.IsInteger() && dt.IsSigned():
		return op.i64 != nil
	case dt.IsInteger():
		return op.u64 != nil
	}
	return false
}

// arithKernel runs a two-input same-dtype arithmetic op; pick selects the
// op per node (Mod's fmod attribute).
func arithKernel(legacy bool, pick func(n *graph.Node, dt graph.DType) (arith, error)) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if err := checkInputs(n, in, 2); err != nil {
			return nil, err
		}
		a, b := in[0], in[1]
		if a.DType != b.DType {
			return nil, kernels.Invalidf(n, "input dtypes differ: %v and %v", a.DType, b.DType)
		}
		op, err := pick(n, a.DType)
		if err != nil {
			return nil, err
		}
		if !supportsArith(op, a.DType) {
			return nil, kernels.Unsupportedf(n, "dtype %v", a.DType)
		}
		shape, p, err := binaryShapes(ctx, n, a.Shape, b.Shape, legacy)
		if err != nil {
			return nil, err
		}
		out, err := ctx.New(a.DType, shape)
		if err != nil {
			return nil, err
		}
		if err := applyArith(n, p, a, b, out, op); err != nil {
			return nil, err
		}
		return ctx.Outputs(out), nil
	}
}

func fixed(op arith) func(*graph.Node, graph.DType) (arith, error) {
	return func(*graph.Node, graph.DType) (arith, error) { return op, nil }
}

func pickMod(n *graph.Node, dt graph.DType) (arith, error) {
	switch n.AttrInt("fmod", 0) {
	case 0:
		if dt.IsFloat() {
			return arith{}, kernels.Invalidf(n, "Mod on %v requires fmod=1", dt)
		}
		return intModOp, nil
	case 1:
		return fmodOp, nil
	}
	return arith{}, kernels.Invalidf(n, "fmod must be 0 or 1, got %d", n.AttrInt("fmod", 0))
}

// fastF32 is the float32 Add/Sub/Mul/Div loop, specialised per access
// pattern so the inner loops have no indirect calls.
func fastF32(p *plan, a, b, o []float32, op Op32) {
	sa, sb := p.inner[0], p.inner[1]
	p.run(func(off []int, n int) {
		dst := o[off[0] : off[0]+n]
		switch {
		case sa == 1 && sb == 1:
			VV32(op, dst, a[off[1]:off[1]+n], b[off[2]:off[2]+n])
		case sa == 1:
			VS32(op, dst, a[off[1]:off[1]+n], b[off[2]])
		case sb == 1:
			SV32(op, dst, a[off[1]], b[off[2]:off[2]+n])
		default:
			v := Apply32(op, a[off[1]], b[off[2]])
			for i := range dst {
				dst[i] = v
			}
		}
	})
}

// ---- Pow ----

// ipow is integer exponentiation with wrap-around. Negative exponents give
// the truncated value of 1/b^-e (0 unless |b| == 1).
func ipow(b, e int64) int64 {
	if e < 0 {
		switch b {
		case 1:
			return 1
		case -1:
			if e&1 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	for e > 0 {
		if e&1 == 1 {
			r *= b
		}
		b *= b
		e >>= 1
	}
	return r
}

func upow(b uint64, e int64) uint64 {
	if e < 0 {
		if b == 1 {
			return 1
		}
		return 0
	}
	r := uint64(1)
	for e > 0 {
		if e&1 == 1 {
			r *= b
		}
		b *= b
		e >>= 1
	}
	return r
}

// f2i converts a float to int64 truncating toward zero; NaN gives 0 and
// out-of-range values saturate.
func f2i(v float64) int64 {
	switch {
	case v != v:
		return 0
	case v >= 9.223372036854775807e18:
		return math.MaxInt64
	case v <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(v)
}

// f2u converts a float to uint64 (values below 0 wrap through int64 like a
// C cast through a signed type; NaN gives 0; too large saturates).
func f2u(v float64) uint64 {
	if v >= 9.223372036854775807e18 {
		if v >= 1.8446744073709551615e19 {
			return math.MaxUint64
		}
		return uint64(v)
	}
	return uint64(f2i(v))
}

func powFloatBase[T float32 | float64](p *plan, a []T, e []float64, o []T) {
	loop2(p, a, e, o, func(x T, y float64) T { return T(math.Pow(float64(x), y)) })
}

func powSignedInt[T sInt](p *plan, a []T, e []int64, o []T) {
	loop2(p, a, e, o, func(x T, y int64) T { return T(ipow(int64(x), y)) })
}

func powSignedFloat[T sInt](p *plan, a []T, e []float64, o []T) {
	loop2(p, a, e, o, func(x T, y float64) T { return T(f2i(math.Pow(float64(x), y))) })
}

func powUnsignedInt[T uInt](p *plan, a []T, e []int64, o []T) {
	loop2(p, a, e, o, func(x T, y int64) T { return T(upow(uint64(x), y)) })
}

func powUnsignedFloat[T uInt](p *plan, a []T, e []float64, o []T) {
	loop2(p, a, e, o, func(x T, y float64) T { return T(f2u(math.Pow(float64(x), y))) })
}

func powKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInputs(n, in, 2); err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if !a.DType.IsNumeric() {
		return nil, kernels.Unsupportedf(n, "base dtype %v", a.DType)
	}
	if !b.DType.IsNumeric() {
		return nil, kernels.Unsupportedf(n, "exponent dtype %v", b.DType)
	}
	shape, p, err := binaryShapes(ctx, n, a.Shape, b.Shape, true)
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(a.DType, shape)
	if err != nil {
		return nil, err
	}
	if x, ok := a.Data.([]float32); ok {
		if y, ok := b.Data.([]float32); ok {
			loop2(p, x, y, out.Data.([]float32), func(u, v float32) float32 {
				return float32(math.Pow(float64(u), float64(v)))
			})
			return ctx.Outputs(out), nil
		}
	}
	intExp := b.DType.IsInteger()
	var ef []float64
	var ei []int64
	if intExp {
		ei = b.Int64s()
	} else {
		ef = b.Float64s()
	}
	switch x := a.Data.(type) {
	case []float32:
		if intExp {
			ef = b.Float64s()
		}
		powFloatBase(p, x, ef, out.Data.([]float32))
	case []float64:
		if intExp {
			ef = b.Float64s()
		}
		powFloatBase(p, x, ef, out.Data.([]float64))
	case []graph.F16, []graph.BF16:
		if intExp {
			ef = b.Float64s()
		}
		r := make([]float64, out.Len())
		powFloatBase(p, a.Float64s(), ef, r)
		roundFloatOut(out, r)
	case []int8:
		powSigned(p, x, ei, ef, out.Data.([]int8))
	case []int16:
		powSigned(p, x, ei, ef, out.Data.([]int16))
	case []int32:
		powSigned(p, x, ei, ef, out.Data.([]int32))
	case []int64:
		powSigned(p, x, ei, ef, out.Data.([]int64))
	case []uint8:
		powUnsigned(p, x, ei, ef, out.Data.([]uint8))
	case []uint16:
		powUnsigned(p, x, ei, ef, out.Data.([]uint16))
	case []uint32:
		powUnsigned(p, x, ei, ef, out.Data.([]uint32))
	case []uint64:
		powUnsigned(p, x, ei, ef, out.Data.([]uint64))
	default:
		return nil, kernels.Unsupportedf(n, "base dtype %v", a.DType)
	}
	return ctx.Outputs(out), nil
}

func powSigned[T sInt](p *plan, a []T, ei []int64, ef []float64, o []T) {
	if ei != nil {
		powSignedInt(p, a, ei, o)
	} else {
		powSignedFloat(p, a, ef, o)
	}
}

func powUnsigned[T uInt](p *plan, a []T, ei []int64, ef []float64, o []T) {
	if ei != nil {
		powUnsignedInt(p, a, ei, o)
	} else {
		powUnsignedFloat(p, a, ef, o)
	}
}

// roundFloatOut stores float64 results into a float16/bfloat16 tensor with a
// single correct rounding.
func roundFloatOut(out *graph.Tensor, r []float64) {
	switch d := out.Data.(type) {
	case []graph.F16:
		for i, v := range r {
			d[i] = f16From64(v)
		}
	case []graph.BF16:
		for i, v := range r {
			d[i] = bf16From64(v)
		}
	}
}

// roundToOdd32 rounds v to float32 with round-to-odd; rounding that once
// more to float16/bfloat16 equals the correctly rounded (nearest-even) value.
func roundToOdd32(v float64) float32 {
	r := float32(v)
	if float64(r) == v || r != r || math.IsInf(float64(r), 0) {
		return r
	}
	if math.Abs(float64(r)) > math.Abs(v) {
		r = math.Nextafter32(r, 0)
	}
	return math.Float32frombits(math.Float32bits(r) | 1)
}

func f16From64(v float64) graph.F16   { return graph.F16FromFloat32(roundToOdd32(v)) }
func bf16From64(v float64) graph.BF16 { return graph.BF16FromFloat32(roundToOdd32(v)) }

// ---- PRelu ----

func preluT[T graph.Numeric](p *plan, x, s, o []T) {
	loop2(p, x, s, o, func(v, k T) T {
		if v < 0 {
			return k * v
		}
		return v
	})
}

func preluKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInputs(n, in, 2); err != nil {
		return nil, err
	}
	x, s := in[0], in[1]
	if x.DType != s.DType {
		return nil, kernels.Invalidf(n, "X is %v but slope is %v", x.DType, s.DType)
	}
	ss := s.Shape
	// Before opset 7 a 1-D slope of X.shape[1] values holds one value per
	// channel (axis 1); from opset 7 it broadcasts numpy-style to X.
	if opsetOf(ctx) < 7 && len(ss) == 1 && len(x.Shape) >= 3 && ss[0] == x.Shape[1] && ss[0] != 1 {
		ss = make([]int, len(x.Shape)-1)
		for i := range ss {
			ss[i] = 1
		}
		ss[0] = x.Shape[1]
	}
	if bs, err := kernels.BroadcastShapes(x.Shape, ss); err != nil || !graph.SameShape(bs, x.Shape) {
		return nil, kernels.Invalidf(n, "slope shape %v does not broadcast to X shape %v", s.Shape, x.Shape)
	}
	p := newPlan(x.Shape, x.Shape, ss)
	p.done = kernels.DoneOf(ctx)
	out, err := ctx.New(x.DType, x.Shape)
	if err != nil {
		return nil, err
	}
	switch v := x.Data.(type) {
	case []float32:
		preluT(p, v, s.Data.([]float32), out.Data.([]float32))
	case []float64:
		preluT(p, v, s.Data.([]float64), out.Data.([]float64))
	case []graph.F16:
		loop2(p, v, s.Data.([]graph.F16), out.Data.([]graph.F16), func(a, k graph.F16) graph.F16 {
			if f := a.Float32(); f < 0 {
				return graph.F16FromFloat32(f * k.Float32())
			}
			return a
		})
	case []graph.BF16:
		loop2(p, v, s.Data.([]graph.BF16), out.Data.([]graph.BF16), func(a, k graph.BF16) graph.BF16 {
			if f := a.Float32(); f < 0 {
				return graph.BF16FromFloat32(f * k.Float32())
			}
			return a
		})
	case []int8:
		preluT(p, v, s.Data.([]int8), out.Data.([]int8))
	case []int16:
		preluT(p, v, s.Data.([]int16), out.Data.([]int16))
	case []int32:
		preluT(p, v, s.Data.([]int32), out.Data.([]int32))
	case []int64:
		preluT(p, v, s.Data.([]int64), out.Data.([]int64))
	case []uint8:
		preluT(p, v, s.Data.([]uint8), out.Data.([]uint8))
	case []uint16:
		preluT(p, v, s.Data.([]uint16), out.Data.([]uint16))
	case []uint32:
		preluT(p, v, s.Data.([]uint32), out.Data.([]uint32))
	case []uint64:
		preluT(p, v, s.Data.([]uint64), out.Data.([]uint64))
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	return ctx.Outputs(out), nil
}

func init() {
	kernels.RegisterKernel("", "Add", arithKernel(true, fixed(addOp)))
	kernels.RegisterKernel("", "Sub", arithKernel(true, fixed(subOp)))
	kernels.RegisterKernel("", "Mul", arithKernel(true, fixed(mulOp)))
	kernels.RegisterKernel("", "Div", arithKernel(true, fixed(divOp)))
	kernels.RegisterKernel("", "Mod", arithKernel(false, pickMod))
	kernels.RegisterKernel("", "Pow", powKernel)
	kernels.RegisterKernel("", "PRelu", preluKernel)
}
