package native

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/binary"
	"github.com/switchyard-hal/switchyard/hal"
)

// unaryTask is an element-wise loop (chunksFor): y = fn(x).
type unaryTask struct {
	fn   unaryFn
	y, x []float32
}

// unaryFn is an element-wise float32 function over a range.
type unaryFn func(dst, src []float32)

func unaryOf(bc *buildCtx, n *graph.Node) (unaryFn, error) {
	switch n.OpType {
	case "Relu":
		return func(d, s []float32) { clampTo(d, s, 0, posInf) }, nil
	case "LeakyRelu":
		a := n.AttrFloat("alpha", 0.01)
		return func(d, s []float32) {
			for i, v := range s {
				if v < 0 {
					v *= a
				}
				d[i] = v
			}
		}, nil
	case "Clip":
		lo, hi := clipBounds(bc.sg, n)
		return func(d, s []float32) { clampTo(d, s, lo, hi) }, nil
	case "Sigmoid":
		return vsigmoid, nil // vmath.go
	case "Tanh":
		return vtanh, nil
	case "Exp":
		return vexp, nil
	case "Erf":
		return verf, nil // erf.go
	case "HardSigmoid":
		a, b := n.AttrFloat("alpha", 0.2), n.AttrFloat("beta", 0.5)
		return func(d, s []float32) {
			for i, v := range s {
				d[i] = hardSigmoid(v, a, b)
			}
		}, nil
	case "HardSwish":
		return func(d, s []float32) {
			for i, v := range s {
				if h := hardSigmoid(v, 1.0/6, 0.5); h == 0 {
					d[i] = 0 // also the limit at -Inf, where v·h is NaN
				} else {
					d[i] = v * h
				}
			}
		}, nil
	}
	return nil, fmt.Errorf("%w: no element-wise kernel for %s", kernels.ErrUnsupported, n.OpType)
}

// hardSigmoid is max(0, min(1, a·v + b)), NaN kept.
func hardSigmoid(v, a, b float32) float32 {
	x := a*v + b
	if x < 0 {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}

func buildUnary(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	fn, err := unaryOf(bc, n)
	if err != nil {
		return nil, err
	}
	if f != nil && f.silu {
		fn = vsilu
	}
	op := n.OpType
	// Exp and Erf are claimed for every dtype (referenceOps): the
	// reference kernel runs what is not float32
	ref, _ := kernels.Lookup("", op)
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x.DType != graph.Float32 {
			if (op == "Exp" || op == "Erf") && ref != nil {
				return ref.Kernel(ctx, node, in)
			}
			return nil, fmt.Errorf("%w: %s of %v", kernels.ErrInvalid, op, x.DType)
		}
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		X, Y := f32(x), f32(y)
		chunksFor(bc.pool, len(X), unaryTask{fn, Y, X}, func(a unaryTask, i0, i1 int) { a.fn(a.y[i0:i1], a.x[i0:i1]) })
		return ctx.Outputs(y), nil
	}, nil
}

// binary ops: a fast path for equal shapes, a scalar operand, and an
// operand that varies along one contiguous range of the output's dims
// (per-channel, per-row); other broadcasts run the reference kernel.
// The float32 loops and op codes are the reference kernels' (core/kernels/binary).
type binOp = binary.Op32

const (
	opAdd = binary.Add32
	opSub = binary.Sub32
	opMul = binary.Mul32
	opDiv = binary.Div32
)

func buildBinary(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	op := map[string]binOp{"Add": opAdd, "Sub": opSub, "Mul": opMul, "Div": opDiv}[n.OpType]
	ref, _ := kernels.Lookup("", n.OpType)
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		a, b := in[0], in[1]
		if a.DType != graph.Float32 || b.DType != graph.Float32 {
			return nil, fmt.Errorf("%w: %s of %v and %v", kernels.ErrInvalid, node.OpType, a.DType, b.DType)
		}
		var ob [8]int
		out, err := broadcastInto(&ob, a.Shape, b.Shape)
		if err != nil {
			return nil, fmt.Errorf("%w: %s of %v and %v: %v", kernels.ErrInvalid, node.OpType, a.Shape, b.Shape, err)
		}
		total := kernels.Prod(out)
		pa, oka := bcastPattern(out, a.Shape)
		pb, okb := bcastPattern(out, b.Shape)
		if !oka || !okb {
			outs, err := ref.Kernel(ctx, node, in)
			if err == nil && f != nil && f.clamp && len(outs) == 1 {
				Y := f32(outs[0])
				clampTo(Y, Y, f.lo, f.hi)
			}
			return outs, err
		}
		y, err := ctx.NewUninit(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		t := binTask{op: op, y: f32(y), a: f32(a), b: f32(b), pa: pa, pb: pb}
		if f != nil && f.clamp {
			t.clamp, t.lo, t.hi = true, f.lo, f.hi
		}
		chunksFor(bc.pool, total, t, func(t binTask, i0, i1 int) {
			binaryRange(t.op, t.y, t.a, t.b, t.pa, t.pb, i0, i1)
			if t.clamp {
				clampTo(t.y[i0:i1], t.y[i0:i1], t.lo, t.hi)
			}
		})
		return ctx.Outputs(y), nil
	}, nil
}

// binTask is a broadcasting binary op's loop (chunksFor).
type binTask struct {
	op      binOp
	y, a, b []float32
	pa, pb  pattern
	clamp   bool
	lo, hi  float32
}

// broadcastInto is kernels.BroadcastShapes writing into buf when the
// result has at most 8 axes (a shape equal to a's is a itself).
func broadcastInto(buf *[8]int, a, b []int) ([]int, error) {
	if graph.SameShape(a, b) {
		return a, nil
	}
	r := max(len(a), len(b))
	if r > len(buf) {
		return kernels.BroadcastShapes(a, b)
	}
	out := buf[:r]
	for i := range out {
		da, db := 1, 1
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return kernels.BroadcastShapes(a, b) // its error
		}
	}
	return out, nil
}

// pattern says how an operand's flat index follows the output's: element
// (i / inner) % mid of the operand (full: inner 1, mid total; scalar: mid 1).
type pattern struct{ inner, mid int }

func bcastPattern(out, in []int) (pattern, bool) {
	total := kernels.Prod(out)
	n := kernels.Prod(in)
	if n == total {
		return pattern{1, max(total, 1)}, true
	}
	if n == 1 {
		return pattern{1, 1}, true
	}
	off := len(out) - len(in)
	first, last := -1, -1
	for i, d := range in {
		if d != 1 {
			if first < 0 {
				first = i + off
			}
			last = i + off
		}
	}
	for i := first; i <= last; i++ {
		if in[i-off] != out[i] {
			return pattern{}, false
		}
	}
	inner := kernels.Prod(out[last+1:])
	return pattern{inner, n}, true
}

func binaryRange(op binOp, y, a, b []float32, pa, pb pattern, i0, i1 int) {
	for i := i0; i < i1; {
		ja, ra, ca := locate(pa, i, len(y))
		jb, rb, cb := locate(pb, i, len(y))
		run := min(ra, rb, i1-i)
		ys := y[i : i+run]
		switch {
		case ca && cb:
			v := apply(op, a[ja], b[jb])
			for k := range ys {
				ys[k] = v
			}
		case ca:
			binaryScalarA(op, ys, a[ja], b[jb:jb+run])
		case cb:
			binaryScalarB(op, ys, a[ja:ja+run], b[jb])
		default:
			binaryVec(op, ys, a[ja:ja+run], b[jb:jb+run])
		}
		i += run
	}
}

func apply(op binOp, a, b float32) float32 { return binary.Apply32(op, a, b) }

// locate is the operand index of output element i, how many following
// elements keep the operand's access pattern, and whether the operand is
// constant over them (else it is consecutive).
func locate(p pattern, i, total int) (j, run int, constant bool) {
	if p.mid == 1 {
		return 0, total - i, true
	}
	if p.inner == 1 {
		j = i % p.mid
		return j, p.mid - j, false
	}
	j = (i / p.inner) % p.mid
	return j, p.inner - i%p.inner, true
}

func binaryVec(op binOp, y, a, b []float32) {
	if !binVV(op, y, a, b) {
		binary.VV32(op, y, a, b)
	}
}

// binaryScalarA: a constant over the run.
func binaryScalarA(op binOp, y []float32, a float32, b []float32) {
	if !binSV(op, y, a, b) {
		binary.SV32(op, y, a, b)
	}
}

func binaryScalarB(op binOp, y, a []float32, b float32) {
	if !binVS(op, y, a, b) {
		binary.VS32(op, y, a, b)
	}
}

// powSquare is the kernel of a Pow whose exponent is the constant 2:
// x·x for float32 x (what the reference's float64 Pow rounds to: the
// square of a float32 is exact in float64), the reference kernel for any
// other input.
func powSquare(bc *buildCtx) kernels.Func {
	ref, _ := kernels.Lookup("", "Pow")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x.DType != graph.Float32 || len(in) != 2 || len(in[1].Shape) > len(x.Shape) || ref == nil {
			return ref.Kernel(ctx, node, in)
		}
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		X, Y := f32(x), f32(y)
		chunksFor(bc.pool, len(X), unaryTask{nil, Y, X}, func(a unaryTask, i0, i1 int) { binaryVec(opMul, a.y[i0:i1], a.x[i0:i1], a.x[i0:i1]) })
		return ctx.Outputs(y), nil
	}
}

// isSquare: t is one float32 2 (a Pow exponent).
func isSquare(t *graph.Tensor) bool {
	return t != nil && t.DType == graph.Float32 && t.Len() == 1 && graph.Data[float32](t)[0] == 2
}

// zeroConsts marks the inputs of n that are constant float32 tensors of
// zeros only (Concat clears those parts of its output instead of copying
// them: blazeface pads its residuals' channels so).
func zeroConsts(sg *hal.Subgraph, n *graph.Node) []bool {
	var z []bool
	for i := range n.Inputs {
		t := constInput(sg, n, i)
		if t == nil || t.DType != graph.Float32 {
			continue
		}
		all := true
		for _, v := range f32(t) {
			if math.Float32bits(v) != 0 {
				all = false
				break
			}
		}
		if all {
			if z == nil {
				z = make([]bool, len(n.Inputs))
			}
			z[i] = true
		}
	}
	return z
}

// concatKernel is Concat of float32 inputs of equal rank and equal sizes
// off the axis (concatF32, ufc_concat.go: one copy per input and outer
// index, large ones split over p); zero[i]: input i is all zeros
// (cleared, not copied). The reference kernel runs anything else (and
// the errors).
func concatKernel(p *pool, zero []bool) kernels.Func {
	ref, _ := kernels.Lookup("", "Concat")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if len(in) == 0 || in[0] == nil {
			return ref.Kernel(ctx, node, in)
		}
		r := len(in[0].Shape)
		ax := int(node.AttrInt("axis", 0))
		if ax < 0 {
			ax += r
		}
		if ax < 0 || ax >= r {
			return ref.Kernel(ctx, node, in)
		}
		var ob [8]int
		out := append(ob[:0], in[0].Shape...)
		out[ax] = 0
		for _, t := range in {
			if t == nil || t.DType != graph.Float32 || len(t.Shape) != r {
				return ref.Kernel(ctx, node, in)
			}
			for d := range t.Shape {
				if d != ax && t.Shape[d] != out[d] {
					return ref.Kernel(ctx, node, in)
				}
			}
			out[ax] += t.Shape[ax]
		}
		y, err := ctx.NewUninit(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		concatF32(p, f32(y), in, zero, ax, kernels.Prod(out[ax:])) // ufc_concat.go
		return ctx.Outputs(y), nil
	}
}

// sigmoid is one float32 sigmoid in float64 (the LSTM's gates).
func sigmoid(v float32) float32 {
	if v >= 0 {
		return float32(1 / (1 + math.Exp(-float64(v))))
	}
	e := math.Exp(float64(v))
	return float32(e / (1 + e))
}

// geluKernel runs com.microsoft Gelu and FastGelu of float32 without a
// bias on erf.go's vector kernels, anything else on the reference kernel.
func geluKernel(bc *buildCtx, n *graph.Node) kernels.Func {
	fn := vgelu
	if n.OpType == "FastGelu" {
		fn = vfastGelu
	}
	ref, _ := kernels.Lookup("com.microsoft", n.OpType)
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := kernels.Input(in, 0)
		if x == nil || x.DType != graph.Float32 || kernels.Input(in, 1) != nil {
			if ref == nil {
				return nil, fmt.Errorf("%w: %s", kernels.ErrUnsupported, node.OpType)
			}
			return ref.Kernel(ctx, node, in)
		}
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		X, Y := f32(x), f32(y)
		chunksFor(bc.pool, len(X), unaryTask{fn, Y, X}, func(a unaryTask, i0, i1 int) { a.fn(a.y[i0:i1], a.x[i0:i1]) })
		return ctx.Outputs(y), nil
	}
}
