package nn

import (
	nnops "github.com/switchyard-hal/switchyard/core/ops/nn"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "MatMul", matMulKernel)
	kernels.RegisterKernel("", "Gemm", gemmKernel)
}

// matMulPlan is the numpy matmul shape analysis: 1-D operands are promoted
// (a to [1,K], b to [K,1]) and the promoted dim removed from the result;
// leading dims broadcast.
type matMulPlan struct {
	m, k, n  int
	out      []int
	batches  int
	aBatch   []int // flat batch index into a for each output batch
	bBatch   []int
	aMatSize int
	bMatSize int
}

func planMatMul(as, bs []int) (*matMulPlan, error) {
	if len(as) == 0 || len(bs) == 0 {
		return nil, nnops.ErrInvalid("MatMul operands must have rank >= 1, got shapes %v and %v", as, bs)
	}
	a2, b2 := as, bs
	if len(as) == 1 {
		a2 = []int{1, as[0]}
	}
	if len(bs) == 1 {
		b2 = []int{bs[0], 1}
	}
	p := &matMulPlan{
		m: a2[len(a2)-2], k: a2[len(a2)-1], n: b2[len(b2)-1],
	}
	if b2[len(b2)-2] != p.k {
		return nil, nnops.ErrInvalid("MatMul inner dimensions differ: shapes %v and %v", as, bs)
	}
	ab, bb := a2[:len(a2)-2], b2[:len(b2)-2]
	batch, err := kernels.BroadcastShapes(ab, bb)
	if err != nil {
		return nil, nnops.ErrInvalid("MatMul batch dimensions of %v and %v do not broadcast", as, bs)
	}
	p.out = append([]int{}, batch...)
	if len(as) > 1 {
		p.out = append(p.out, p.m)
	}
	if len(bs) > 1 {
		p.out = append(p.out, p.n)
	}
	p.batches = kernels.Prod(batch)
	p.aMatSize = p.m * p.k
	p.bMatSize = p.k * p.n
	if p.batches > 0 {
		p.aBatch = kernels.BroadcastIndex(batch, ab)
		p.bBatch = kernels.BroadcastIndex(batch, bb)
	}
	return p, nil
}

func matMulKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, b := kernels.Input(in, 0), kernels.Input(in, 1)
	if a == nil || b == nil {
		return nil, kernels.Invalidf(n, "MatMul needs two inputs")
	}
	if a.DType != b.DType {
		return nil, kernels.Invalidf(n, "input dtypes differ: %v and %v", a.DType, b.DType)
	}
	p, err := planMatMul(a.Shape, b.Shape)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	if _, err := graph.CheckAlloc(a.DType, p.out); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	switch a.DType {
	case graph.Float32:
		out, err := ctx.New(graph.Float32, p.out)
		if err != nil {
			return nil, err
		}
		matMulF32(stopOf(ctx), p, graph.Data[float32](a), graph.Data[float32](b), graph.Data[float32](out))
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		return ctx.Outputs(out), nil
	case graph.Float16, graph.BFloat16:
		af := graph.Data[float32](kernels.ToFloat32(a))
		bf := graph.Data[float32](kernels.ToFloat32(b))
		res := make([]float32, kernels.Prod(p.out))
		matMulF32(stopOf(ctx), p, af, bf, res)
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		out, err := kernels.FromFloat32(ctx, a.DType, p.out, res)
		if err != nil {
			return nil, err
		}
		return ctx.Outputs(out), nil
	}
	out, err := ctx.New(a.DType, p.out)
	if err != nil {
		return nil, err
	}
	switch a.DType {
	case graph.Float64:
		matMulGeneric[float64](stopOf(ctx), p, a, b, out)
	case graph.Int8:
		matMulGeneric[int8](stopOf(ctx), p, a, b, out)
	case graph.Int16:
		matMulGeneric[int16](stopOf(ctx), p, a, b, out)
	case graph.Int32:
		matMulGeneric[int32](stopOf(ctx), p, a, b, out)
	case graph.Int64:
		matMulGeneric[int64](stopOf(ctx), p, a, b, out)
	case graph.Uint8:
		matMulGeneric[uint8](stopOf(ctx), p, a, b, out)
	case graph.Uint16:
		matMulGeneric[uint16](stopOf(ctx), p, a, b, out)
	case graph.Uint32:
		matMulGeneric[uint32](stopOf(ctx), p, a, b, out)
	case graph.Uint64:
		matMulGeneric[uint64](stopOf(ctx), p, a, b, out)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", a.DType)
	}
	if ctx.Stopped() {
		return nil, ctx.Stop(n)
	}
	return ctx.Outputs(out), nil
}

func matMulF32(st stop, p *matMulPlan, a, b, c []float32) {
	mn := p.m * p.n
	par := workers()
	if p.batches == 1 || p.batches*p.m*p.n*p.k < gemmParallelMin {
		// One product at a time, each parallel inside.
		if p.batches > 1 {
			par = 1
		}
		for t := 0; t < p.batches && !st.done(); t++ {
			sgemm(st, p.m, p.n, p.k, 1,
				mat[float32]{a[p.aBatch[t]*p.aMatSize:], p.k, 1},
				mat[float32]{b[p.bBatch[t]*p.bMatSize:], p.n, 1},
				c[t*mn:], p.n, par)
		}
		return
	}
	// Many products: spread them over the workers, and let each use the
	// leftover parallelism inside.
	inner := par / p.batches
	if inner < 1 {
		inner = 1
	}
	parallelTasks(st, p.batches, par, func(t int) {
		sgemm(st, p.m, p.n, p.k, 1,
			mat[float32]{a[p.aBatch[t]*p.aMatSize:], p.k, 1},
			mat[float32]{b[p.bBatch[t]*p.bMatSize:], p.n, 1},
			c[t*mn:], p.n, inner)
	})
}

func matMulGeneric[T graph.Numeric](st stop, p *matMulPlan, at, bt, ct *graph.Tensor) {
	a, b, c := graph.Data[T](at), graph.Data[T](bt), graph.Data[T](ct)
	mn := p.m * p.n
	par := workers()
	if p.batches > 1 {
		par = 1
	}
	for t := 0; t < p.batches && !st.done(); t++ {
		gemmGeneric(st, p.m, p.n, p.k,
			mat[T]{a[p.aBatch[t]*p.aMatSize:], p.k, 1},
			mat[T]{b[p.bBatch[t]*p.bMatSize:], p.n, 1},
			c[t*mn:], p.n, par)
	}
}

func gemmKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, b, cT := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	if a == nil || b == nil {
		return nil, kernels.Invalidf(n, "Gemm needs inputs A and B")
	}
	if a.DType != b.DType || (cT != nil && cT.DType != a.DType) {
		return nil, kernels.Invalidf(n, "input dtypes differ")
	}
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return nil, kernels.Invalidf(n, "A and B must be 2-D, got shapes %v and %v", a.Shape, b.Shape)
	}
	g := nnops.ReadGemmAttrs(n, ctx.Opset)
	am := mat[int]{nil, a.Shape[1], 1}
	m, k := a.Shape[0], a.Shape[1]
	if g.TransA {
		m, k = k, m
		am = am.t()
	}
	bm := mat[int]{nil, b.Shape[1], 1}
	k2, nn := b.Shape[0], b.Shape[1]
	if g.TransB {
		k2, nn = nn, k2
		bm = bm.t()
	}
	if k != k2 {
		return nil, kernels.Invalidf(n, "inner dimensions differ: A %v, B %v (transA=%v, transB=%v)", a.Shape, b.Shape, g.TransA, g.TransB)
	}
	outShape := []int{m, nn}
	var cIdx []int
	if cT != nil {
		if !g.Broadcast {
			if !graph.SameShape(cT.Shape, outShape) {
				return nil, kernels.Invalidf(n, "C has shape %v, expected %v (broadcast=0)", cT.Shape, outShape)
			}
		} else if !unidirBroadcastable(cT.Shape, outShape) {
			return nil, kernels.Invalidf(n, "C of shape %v does not broadcast to %v", cT.Shape, outShape)
		}
		if _, err := graph.CheckAlloc(a.DType, outShape); err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		cIdx = kernels.BroadcastIndex(outShape, cT.Shape)
	}
	out, err := ctx.New(a.DType, outShape)
	if err != nil {
		return nil, err
	}
	switch a.DType {
	case graph.Float32, graph.Float16, graph.BFloat16:
		af := graph.Data[float32](kernels.ToFloat32(a))
		bf := graph.Data[float32](kernels.ToFloat32(b))
		y := make([]float32, m*nn)
		if a.DType == graph.Float32 {
			y = graph.Data[float32](out)
		}
		if cT != nil {
			cf := graph.Data[float32](kernels.ToFloat32(cT))
			for i, ci := range cIdx {
				y[i] = g.Beta * cf[ci]
			}
		}
		sgemm(stopOf(ctx), m, nn, k, g.Alpha, mat[float32]{af, am.rs, am.cs}, mat[float32]{bf, bm.rs, bm.cs}, y, nn, workers())
		if a.DType != graph.Float32 {
			out, err = kernels.FromFloat32(ctx, a.DType, outShape, y)
			if err != nil {
				return nil, err
			}
		}
	case graph.Float64:
		gemmFloat64(stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Int8:
		gemmInt[int8](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Int16:
		gemmInt[int16](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Int32:
		gemmInt[int32](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Int64:
		gemmInt[int64](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Uint8:
		gemmInt[uint8](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Uint16:
		gemmInt[uint16](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Uint32:
		gemmInt[uint32](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	case graph.Uint64:
		gemmInt[uint64](stopOf(ctx), g, m, nn, k, am, bm, a, b, cT, cIdx, out)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", a.DType)
	}
	if ctx.Stopped() {
		return nil, ctx.Stop(n)
	}
	return ctx.Outputs(out), nil
}

func gemmFloat64(st stop, g nnops.GemmAttrs, m, nn, k int, am, bm mat[int], a, b, cT *graph.Tensor, cIdx []int, out *graph.Tensor) {
	y := graph.Data[float64](out)
	ab := make([]float64, m*nn)
	gemmGeneric(st, m, nn, k,
		mat[float64]{graph.Data[float64](a), am.rs, am.cs},
		mat[float64]{graph.Data[float64](b), bm.rs, bm.cs}, ab, nn, workers())
	if st.done() {
		return
	}
	alpha, beta := float64(g.Alpha), float64(g.Beta)
	for i := range y {
		y[i] = alpha * ab[i]
	}
	if cT != nil {
		cf := graph.Data[float64](cT)
		for i, ci := range cIdx {
			y[i] += beta * cf[ci]
		}
	}
}

// gemmInt computes the integer product exactly (wrapping), then applies
// alpha and beta in float64 and converts back (truncating) unless both are 1.
func gemmInt[T graph.Numeric](st stop, g nnops.GemmAttrs, m, nn, k int, am, bm mat[int], a, b, cT *graph.Tensor, cIdx []int, out *graph.Tensor) {
	y := graph.Data[T](out)
	gemmGeneric(st, m, nn, k,
		mat[T]{graph.Data[T](a), am.rs, am.cs},
		mat[T]{graph.Data[T](b), bm.rs, bm.cs}, y, nn, workers())
	var cd []T
	if cT != nil {
		cd = graph.Data[T](cT)
	}
	if g.Alpha == 1 && g.Beta == 1 {
		for i, ci := range cIdx {
			y[i] += cd[ci]
		}
		return
	}
	alpha, beta := float64(g.Alpha), float64(g.Beta)
	for i := range y {
		v := alpha * float64(y[i])
		if cd != nil {
			v += beta * float64(cd[cIdx[i]])
		}
		y[i] = T(v)
	}
}

// unidirBroadcastable reports whether shape s broadcasts to target without
// changing target.
func unidirBroadcastable(s, target []int) bool {
	if len(s) > len(target) {
		return false
	}
	off := len(target) - len(s)
	for i, d := range s {
		if d != 1 && d != target[off+i] {
			return false
		}
	}
	return true
}
