package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "BitShift", bitShiftKernel)
	for _, op := range []string{"BitwiseAnd", "BitwiseOr", "BitwiseXor"} {
		kernels.RegisterKernel("", op, bitwiseKernel)
	}
	kernels.RegisterKernel("", "BitwiseNot", bitwiseNotKernel)
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// binaryInts applies f elementwise with numpy broadcasting.
func binaryInts[T integer](a, b, z []T, ia, ib []int, f func(x, y T) T) {
	for i := range z {
		z[i] = f(a[ia[i]], b[ib[i]])
	}
}

// prepBinary checks two same-dtype inputs and allocates the broadcast output.
func prepBinary(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) (a, b, out *graph.Tensor, ia, ib []int, err error) {
	a, b = kernels.Input(in, 0), kernels.Input(in, 1)
	if err = checkIn(n, a, "A"); err != nil {
		return
	}
	if err = checkIn(n, b, "B"); err != nil {
		return
	}
	if a.DType != b.DType {
		err = kernels.Invalidf(n, "input dtypes differ: %v and %v", a.DType, b.DType)
		return
	}
	shape, e := kernels.BroadcastShapes(a.Shape, b.Shape)
	if e != nil {
		err = kernels.Invalidf(n, "%v", e)
		return
	}
	if out, err = alloc(ctx, n, a.DType, shape); err != nil {
		return
	}
	ia, ib = kernels.BroadcastIndex(shape, a.Shape), kernels.BroadcastIndex(shape, b.Shape)
	return
}

func shiftOp[T integer](left bool) func(x, y T) T {
	if left {
		return func(x, y T) T { return x << y } // shifts >= width give 0 in Go
	}
	return func(x, y T) T { return x >> y }
}

func bitShiftKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	var left bool
	switch dir := n.AttrString("direction", ""); dir {
	case "LEFT":
		left = true
	case "RIGHT":
	default:
		return nil, kernels.Invalidf(n, "direction must be LEFT or RIGHT, got %q", dir)
	}
	a, b, out, ia, ib, err := prepBinary(ctx, n, in)
	if err != nil {
		return nil, err
	}
	switch x := a.Data.(type) {
	case []uint8:
		binaryInts(x, b.Data.([]uint8), out.Data.([]uint8), ia, ib, shiftOp[uint8](left))
	case []uint16:
		binaryInts(x, b.Data.([]uint16), out.Data.([]uint16), ia, ib, shiftOp[uint16](left))
	case []uint32:
		binaryInts(x, b.Data.([]uint32), out.Data.([]uint32), ia, ib, shiftOp[uint32](left))
	case []uint64:
		binaryInts(x, b.Data.([]uint64), out.Data.([]uint64), ia, ib, shiftOp[uint64](left))
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", a.DType)
	}
	return ctx.Outputs(out), nil
}

func bitOp[T integer](op string) func(x, y T) T {
	switch op {
	case "BitwiseAnd":
		return func(x, y T) T { return x & y }
	case "BitwiseOr":
		return func(x, y T) T { return x | y }
	}
	return func(x, y T) T { return x ^ y }
}

func bitwiseKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, b, out, ia, ib, err := prepBinary(ctx, n, in)
	if err != nil {
		return nil, err
	}
	op := n.OpType
	switch x := a.Data.(type) {
	case []int8:
		binaryInts(x, b.Data.([]int8), out.Data.([]int8), ia, ib, bitOp[int8](op))
	case []int16:
		binaryInts(x, b.Data.([]int16), out.Data.([]int16), ia, ib, bitOp[int16](op))
	case []int32:
		binaryInts(x, b.Data.([]int32), out.Data.([]int32), ia, ib, bitOp[int32](op))
	case []int64:
		binaryInts(x, b.Data.([]int64), out.Data.([]int64), ia, ib, bitOp[int64](op))
	case []uint8:
		binaryInts(x, b.Data.([]uint8), out.Data.([]uint8), ia, ib, bitOp[uint8](op))
	case []uint16:
		binaryInts(x, b.Data.([]uint16), out.Data.([]uint16), ia, ib, bitOp[uint16](op))
	case []uint32:
		binaryInts(x, b.Data.([]uint32), out.Data.([]uint32), ia, ib, bitOp[uint32](op))
	case []uint64:
		binaryInts(x, b.Data.([]uint64), out.Data.([]uint64), ia, ib, bitOp[uint64](op))
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", a.DType)
	}
	return ctx.Outputs(out), nil
}

func notInts[T integer](x, y []T) {
	for i, v := range x {
		y[i] = ^v
	}
}

func bitwiseNotKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkIn(n, x, "X"); err != nil {
		return nil, err
	}
	out, err := alloc(ctx, n, x.DType, x.Shape)
	if err != nil {
		return nil, err
	}
	switch d := x.Data.(type) {
	case []int8:
		notInts(d, out.Data.([]int8))
	case []int16:
		notInts(d, out.Data.([]int16))
	case []int32:
		notInts(d, out.Data.([]int32))
	case []int64:
		notInts(d, out.Data.([]int64))
	case []uint8:
		notInts(d, out.Data.([]uint8))
	case []uint16:
		notInts(d, out.Data.([]uint16))
	case []uint32:
		notInts(d, out.Data.([]uint32))
	case []uint64:
		notInts(d, out.Data.([]uint64))
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	return ctx.Outputs(out), nil
}
