package native

import (
	"fmt"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

func checkMatMul(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0, 1); r != "" {
		return r
	}
	ra, rb := rankOf(sg, n.Inputs[0]), rankOf(sg, n.Inputs[1])
	if ra < 1 || rb < 1 {
		return "native: MatMul with an input of unknown rank"
	}
	if rb == 1 {
		return "native: MatMul with a 1-D B not implemented"
	}
	if w := constInput(sg, n, 1); w != nil && len(w.Shape) == 2 {
		return ""
	}
	if ra < 2 {
		return "native: MatMul with a 1-D A and a non-constant B not implemented"
	}
	return ""
}

// scratch hands out float32 buffers of one size, kept between calls.
type scratch struct {
	n int
	p sync.Pool
}

func (s *scratch) get() *[]float32 {
	if b, ok := s.p.Get().(*[]float32); ok {
		return b
	}
	b := make([]float32, s.n)
	return &b
}

func (s *scratch) put(b *[]float32) { s.p.Put(b) }

// scratchFor returns a scratch of at least n floats, growing it (shared
// by concurrent calls).
type scratchSet struct {
	mu sync.Mutex
	by map[int]*scratch
}

func (s *scratchSet) of(n int) *scratch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[int]*scratch{}
	}
	sc, ok := s.by[n]
	if !ok {
		if len(s.by) > 16 {
			clear(s.by)
		}
		sc = &scratch{n: n}
		s.by[n] = sc
	}
	return sc
}

// denseB is a constant 2-D B (k×n) packed for the kernel, with the fused
// column bias and clamp.
type denseB struct {
	k, n   int
	packed []float32
	bias   []float32 // padded to whole panels, or nil
	clamp  bool
	lo, hi float32
}

// run computes out = a·B for a of shape [..., m, k].
func (d *denseB) run(bc *buildCtx, ctx *kernels.Context, n *graph.Node, a *graph.Tensor, outShape []int) (*graph.Tensor, error) {
	y, err := ctx.NewUninit(graph.Float32, outShape)
	if err != nil {
		return nil, err
	}
	m := a.Len() / max(d.k, 1)
	if d.k == 0 {
		m = y.Len() / max(d.n, 1)
	}
	g := &gemmOp{m: m, n: d.n, k: d.k, a: f32(a), lda: d.k, b: d.packed, c: f32(y), ldc: d.n, clamp: d.clamp, lo: d.lo, hi: d.hi}
	if d.bias != nil {
		g.bias, g.biasMode = d.bias, initColBias
	}
	gemm(bc.kern, bc.pool, g)
	return y, nil
}

func newDenseB(bc *buildCtx, w []float32, k, n, rs, cs int, f *fusion) *denseB {
	d := &denseB{k: k, n: n, packed: make([]float32, packedLen(k, n, bc.kern.nr)), lo: negInf, hi: posInf}
	packB(d.packed, w, k, n, bc.kern.nr, rs, cs)
	if f != nil {
		d.clamp, d.lo, d.hi = f.clamp, f.lo, f.hi
	}
	return d
}

func buildMatMul(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	if w := constInput(bc.sg, n, 1); w != nil && len(w.Shape) == 2 {
		k, nn := w.Shape[0], w.Shape[1]
		d := newDenseB(bc, f32(w), k, nn, nn, 1, f)
		return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
			a := in[0]
			if a.DType != graph.Float32 || len(a.Shape) < 1 || a.Shape[len(a.Shape)-1] != k {
				return nil, fmt.Errorf("%w: MatMul %v×[%d %d]", kernels.ErrInvalid, a.Shape, k, nn)
			}
			var ob [8]int
			out := append(ob[:0], a.Shape...)
			out[len(out)-1] = nn
			if len(a.Shape) == 1 {
				out = append(ob[:0], nn)
			}
			y, err := d.run(bc, ctx, node, a, out)
			return ctx.Outputs(y), err
		}, nil
	}
	var ss scratchSet
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		y, err := batchedMatMul(bc, ctx, &ss, in[0], in[1])
		return ctx.Outputs(y), err
	}, nil
}

// batchedMatMul is MatMul of two rank ≥ 2 tensors with broadcast batch
// dimensions, packing each B per call.
// smallM: batched products of at most this many rows skip packing B;
// parallelMin: the multiply-adds below which they stay on one goroutine.
const smallM, parallelMin = 2, 1 << 16

func batchedMatMul(bc *buildCtx, ctx *kernels.Context, ss *scratchSet, a, b *graph.Tensor) (*graph.Tensor, error) {
	if a.DType != graph.Float32 || b.DType != graph.Float32 || len(a.Shape) < 2 || len(b.Shape) < 2 {
		return nil, fmt.Errorf("%w: MatMul %v×%v", kernels.ErrInvalid, a.Shape, b.Shape)
	}
	ra, rb := len(a.Shape), len(b.Shape)
	m, k, k2, nn := a.Shape[ra-2], a.Shape[ra-1], b.Shape[rb-2], b.Shape[rb-1]
	if k != k2 {
		return nil, fmt.Errorf("%w: MatMul %v×%v: inner dims differ", kernels.ErrInvalid, a.Shape, b.Shape)
	}
	batch, err := kernels.BroadcastShapes(a.Shape[:ra-2], b.Shape[:rb-2])
	if err != nil {
		return nil, fmt.Errorf("%w: MatMul %v×%v: %v", kernels.ErrInvalid, a.Shape, b.Shape, err)
	}
	out := append(append([]int{}, batch...), m, nn)
	y, err := ctx.NewUninit(graph.Float32, out)
	if err != nil {
		return nil, err
	}
	nb := kernels.Prod(batch)
	ai := kernels.BroadcastIndex(batch, a.Shape[:ra-2])
	bi := kernels.BroadcastIndex(batch, b.Shape[:rb-2])
	A, B, Y := f32(a), f32(b), f32(y)
	if m <= smallM {
		// a few rows (a decoder's one query per head): packing B would
		// cost as much as the product; rows of B are added in, scaled
		one := func(i int) {
			for r := 0; r < m; r++ {
				row := Y[(i*m+r)*nn : (i*m+r+1)*nn]
				clear(row)
				ar := A[(ai[i]*m+r)*k : (ai[i]*m+r+1)*k]
				bb := B[bi[i]*k*nn:]
				for kk, av := range ar {
					axpy(av, bb[kk*nn:(kk+1)*nn], row)
				}
			}
		}
		if nb >= bc.pool.threads() && nb > 1 && m*k*nn*nb >= parallelMin {
			bc.pool.parallel(nb, one)
		} else {
			for i := 0; i < nb; i++ {
				one(i)
			}
		}
		return y, nil
	}
	kern := bc.kern
	sc := ss.of(packedLen(k, nn, kern.nr))
	one := func(i int, p *pool) {
		buf := sc.get()
		packBRows(*buf, B[bi[i]*k*nn:], k, nn, kern.nr, nn, 0, panelsOf(nn, kern.nr))
		gemm(kern, p, &gemmOp{m: m, n: nn, k: k, a: A[ai[i]*m*k:], lda: k, b: *buf, c: Y[i*m*nn:], ldc: nn})
		sc.put(buf)
	}
	if nb >= bc.pool.threads() && nb > 1 {
		bc.pool.parallel(nb, func(i int) { one(i, nil) })
	} else {
		for i := 0; i < nb; i++ {
			one(i, bc.pool)
		}
	}
	return y, nil
}

func checkGemm(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0, 1, 2); r != "" {
		return r
	}
	if n.AttrInt("transA", 0) != 0 {
		return "native: Gemm with transA=1 not implemented"
	}
	w := constInput(sg, n, 1)
	if w == nil || len(w.Shape) != 2 {
		return "native: Gemm with a non-constant B not implemented"
	}
	if rankOf(sg, n.Inputs[0]) != 2 {
		return "native: Gemm A must be 2-D"
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		c := constInput(sg, n, 2)
		nn := w.Shape[1]
		if n.AttrInt("transB", 0) != 0 {
			nn = w.Shape[0]
		}
		if c == nil {
			return "native: Gemm with a non-constant C not implemented"
		}
		if !(c.Len() == 1 || c.Len() == nn && (len(c.Shape) == 1 || len(c.Shape) == 2 && c.Shape[0] == 1)) {
			return fmt.Sprintf("native: Gemm C of shape %v (only a scalar or one row of %d) not implemented", c.Shape, nn)
		}
	}
	return ""
}

func buildGemm(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	w := constInput(bc.sg, n, 1)
	alpha, beta := n.AttrFloat("alpha", 1), n.AttrFloat("beta", 1)
	k, nn, rs, cs := w.Shape[0], w.Shape[1], w.Shape[1], 1
	if n.AttrInt("transB", 0) != 0 {
		k, nn, rs, cs = w.Shape[1], w.Shape[0], 1, w.Shape[1]
	}
	wd := f32(w)
	if alpha != 1 {
		wd = make([]float32, len(wd))
		for i, v := range f32(w) {
			wd[i] = alpha * v
		}
	}
	d := newDenseB(bc, wd, k, nn, rs, cs, f)
	if c := constInput(bc.sg, n, 2); c != nil {
		d.bias = make([]float32, panelsOf(nn, bc.kern.nr)*bc.kern.nr)
		cv := f32(c)
		for j := 0; j < nn; j++ {
			d.bias[j] = beta * cv[j%len(cv)]
		}
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		a := in[0]
		if a.DType != graph.Float32 || len(a.Shape) != 2 || a.Shape[1] != k {
			return nil, fmt.Errorf("%w: Gemm %v×[%d %d]", kernels.ErrInvalid, a.Shape, k, nn)
		}
		y, err := d.run(bc, ctx, node, a, []int{a.Shape[0], nn})
		return ctx.Outputs(y), err
	}, nil
}
