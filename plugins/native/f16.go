package native

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// BlockQuantMatMul nodes of type F16 or BF16 hold W [N, K] as the file's
// 16-bit values (B uint8 [N, 2K], little-endian halves or bfloat16s): the
// initializer's bytes, a GGUF file's mapping, are read in place, never
// widened to float32 (a Llama-3.2-1B-shape F16 file took 14.6 GB resident
// as float32 copies, transposes and packed panels; now its 2.5 GB).
//
// Each output is, by definition (f16RowDot), the float32 dot product of
// the activation row with the weight row widened exactly to float32,
// summed in order k = 0, 1, … K-1 with one fused multiply-add a step,
// from +0:
//
//	acc = fma(x[k], w(n, k), acc)   (float32, rounded once a step)
//
// which is what the packed float32 GEMM computed when these matrices
// were widened at load (every GEMM micro-kernel sums each output in k
// order with FMA), so results are bit-identical to that path. With
// reduced precision (llama.cpp's vec_dot_type, Config.RoundActivations)
// the graph rounds x to the weight's type first, and every product is
// then exact in float32.
//
// Kernels (f16Kernels, the best the CPU has unless
// SWITCHYARD_NATIVE_QKERNEL forces a family): AVX-512 (VCVTPH2PS, or
// VPMOVZXWD and a shift for BF16) and AVX2+F16C assembly
// (internal/asmgenf16) take 8 to 32 weight rows a call, convert 8
// values of each, transpose them in registers so that a vector lane is a
// weight row, and add x[k]·column k into one accumulator per row: each
// lane's sum is the sequential one above; each row is prefetched 384
// bytes ahead (32 interleaved streams outrun the hardware prefetcher:
// 40% more GB/s from DRAM). Rows and k past the kernels'
// multiples, and machines without them, run the Go loop (f16RowDot).
// Rows are split over the pool's threads as the other weights' are.
//
// Up to four activation rows share a pass of the dot kernels over the
// weights (each 8×rows block widened and transposed once for all); more
// than f16GEMMRows (prefill) run the packed GEMM: each panel of nr weight rows is widened and transposed into a
// per-call buffer (kc·nr floats at a time: no copy of the matrix) and
// the micro-kernel multiplies it with every row, the same sums again.
type f16Weights struct {
	n, k int
	bf   bool
	raw  []byte // N rows of 2K bytes
	kern *f16Kernel
}

// f16Kernel is one family's kernels. dots[xr] are the dot kernels for xr
// activation rows at once (1..4), most weight rows first: each computes,
// for its rows weight rows (ldw bytes apart, starting at w) and xr rows of
// x (ldx floats apart), the sums of k8 chunks of 8 values from +0, into
// y[i*ldy+r]. packs write rows weight rows widened and transposed for the
// GEMM: dst[kk*ld+r] for kk < 8·k8.
type f16Kernel struct {
	name  string
	dots  [5][]f16Dot
	packs []f16Pack
}

// f16Dot is a dot kernel of rows weight rows.
type f16Dot struct {
	rows int
	fn   func(w *byte, ldw int, x *float32, ldx int, k8 int, y *float32, ldy int)
}

// f16Pack is a pack kernel of rows weight rows.
type f16Pack struct {
	rows int
	fn   func(w *byte, ldw int, dst *float32, ld int, k8 int)
}

// f16Go is the portable kernel: the definition, row by row.
var f16Go = &f16Kernel{name: "generic"}

// isF16Node reports whether n is a BlockQuantMatMul of type F16 or BF16.
func isF16Node(n *graph.Node) bool {
	t := n.AttrString("type", "")
	return t == ggml.F16.String() || t == ggml.BF16.String()
}

func newF16Weights(n *graph.Node, b *graph.Tensor) (*f16Weights, error) {
	t, _ := ggml.ParseType(n.AttrString("type", ""))
	N, K := int(n.AttrInt("N", 0)), int(n.AttrInt("K", 0))
	if N <= 0 || K <= 0 || int64(N) > graph.MaxTensorBytes/2/int64(K) {
		return nil, fmt.Errorf("BlockQuantMatMul: N %d and K %d must be positive", N, K)
	}
	if b == nil || b.DType != graph.Uint8 || !graph.SameShape(b.Shape, []int{N, 2 * K}) {
		var got any = "nothing"
		if b != nil {
			got = fmt.Sprint(b.DType, b.Shape)
		}
		return nil, fmt.Errorf("BlockQuantMatMul: %s B must be uint8 [%d %d], got %v", t, N, 2*K, got)
	}
	return &f16Weights{n: N, k: K, bf: t == ggml.BF16, raw: graph.Data[uint8](b), kern: f16KernelFor(t == ggml.BF16, qkernelFamily())}, nil
}

func checkF16(sg *hal.Subgraph, n *graph.Node) string {
	return checkWideWeights(sg, n, "F16/BF16", func(b *graph.Tensor) error {
		_, err := newF16Weights(n, b)
		return err
	})
}

// checkWideWeights is the check of a BlockQuantMatMul over unquantized
// weights (what: "F16/BF16", "F32"): float32 activations, no scales, and
// weights mk accepts.
func checkWideWeights(sg *hal.Subgraph, n *graph.Node, what string, mk func(b *graph.Tensor) error) string {
	if r := needF32(sg, n, 0); r != "" {
		return r
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		return "native: an " + what + " BlockQuantMatMul takes no scales"
	}
	if err := mk(constInput(sg, n, 1)); err != nil {
		return "native: " + err.Error()
	}
	return ""
}

func buildF16(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	w, err := newF16Weights(n, constInput(bc.sg, n, 1))
	if err != nil {
		return nil, err
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		a := in[0]
		y, err := bqMatMulOut(ctx, a, w.k, w.n)
		if err != nil {
			return nil, err
		}
		w.run(bc.pool, bc.kern, f32(a), f32(y), a.Len()/w.k)
		return ctx.Outputs(y), nil
	}, nil
}

// f16Widen is one 16-bit value widened exactly to float32.
func f16Widen(h uint16, bf bool) float32 {
	if bf {
		return math.Float32frombits(uint32(h) << 16)
	}
	return graph.F16(h).Float32()
}

// fma32Soft is a·b+c rounded once to float32 (IEEE fusedMultiplyAdd in
// binary32): the product is exact in float64, the sum is rounded to odd
// there (53 ≥ 24+2 bits, so the final rounding to float32 is correct).
// fma32 is it, or the CPU's instruction where the compiler emits one.
func fma32Soft(a, b, c float32) float32 { return ggml.FMA32(a, b, c) }

// f16RowDot continues the sum acc over k = k0..len(x)-1 of x[k]·row's
// value k, one fma32 a step: the definition every kernel computes.
func f16RowDot(row []byte, bf bool, x []float32, k0 int, acc float32) float32 {
	for k := k0; k < len(x); k++ {
		acc = fma32(x[k], f16Widen(binary.LittleEndian.Uint16(row[2*k:]), bf), acc)
	}
	return acc
}

// f16GEMMRows is the most activation rows the dot kernels take (two
// passes over the weights); more go through the GEMM.
var f16GEMMRows = 8

// f16Job is one call's arguments for parallelFor.
type f16Job struct {
	w      *f16Weights
	x, y   []float32
	m, per int
}

// run computes y [m, n] = x [m, k] · Wᵀ.
func (w *f16Weights) run(p *pool, kern *microKernel, x, y []float32, m int) {
	if m > f16GEMMRows && kern != nil && kern.name != generic.name {
		// an assembly micro-kernel (FMA): the definition's sums
		w.runGEMM(p, kern, x, y, m)
		return
	}
	j := f16Job{w: w, x: x, y: y, m: m, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		// two tasks a thread, whole 32-row blocks
		j.per = (w.n + 2*t - 1) / (2 * t)
		j.per = (j.per + 31) &^ 31
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j f16Job, t int) {
		j.w.rows(j.x, j.y, j.m, t*j.per, min(j.w.n, (t+1)*j.per))
	})
}

// rows computes outputs n0..n1-1 of every row of x: up to four rows of x
// a pass over the weights.
func (w *f16Weights) rows(x, y []float32, m, n0, n1 int) {
	K, N, rb := w.k, w.n, 2*w.k
	k8 := K / 8
	for r0 := 0; r0 < m; r0 += 4 {
		xr := min(4, m-r0)
		j := n0
		if k8 > 0 {
			for _, d := range w.kern.dots[xr] {
				for ; j+d.rows <= n1; j += d.rows {
					d.fn(&w.raw[j*rb], rb, &x[r0*K], K, k8, &y[r0*N+j], N)
					if 8*k8 < K {
						for r := r0; r < r0+xr; r++ {
							for i := j; i < j+d.rows; i++ {
								y[r*N+i] = f16RowDot(w.raw[i*rb:(i+1)*rb], w.bf, x[r*K:r*K+K], 8*k8, y[r*N+i])
							}
						}
					}
				}
			}
		}
		for r := r0; r < r0+xr; r++ {
			for i := j; i < n1; i++ {
				y[r*N+i] = f16RowDot(w.raw[i*rb:(i+1)*rb], w.bf, x[r*K:r*K+K], 0, 0)
			}
		}
	}
}

// f16Panels are the GEMM path's per-thread panel buffers.
var f16Panels = sync.Pool{New: func() any { return new([]float32) }}

// f16GEMMJob is one GEMM call's arguments for parallelFor.
type f16GEMMJob struct {
	w      *f16Weights
	kern   *microKernel
	x, y   []float32
	m, per int
}

// runGEMM computes y = x·Wᵀ for m ≥ 2 rows with the packed GEMM, each nr
// weight rows widened into a panel buffer in blocks of kc values of k.
func (w *f16Weights) runGEMM(p *pool, kern *microKernel, x, y []float32, m int) {
	np := panelsOf(w.n, kern.nr)
	j := f16GEMMJob{w: w, kern: kern, x: x, y: y, m: m, per: np}
	if t := p.threads(); t > 1 {
		j.per = (np + 2*t - 1) / (2 * t)
	}
	parallelFor(p, (np+j.per-1)/j.per, j, func(j f16GEMMJob, t int) {
		j.w.gemmPanels(j.kern, j.x, j.y, j.m, t*j.per, min(panelsOf(j.w.n, j.kern.nr), (t+1)*j.per))
	})
}

// gemmPanels computes the columns of panels p0..p1-1.
func (w *f16Weights) gemmPanels(kern *microKernel, x, y []float32, m, p0, p1 int) {
	nr, K, rb := kern.nr, w.k, 2*w.k
	bp := f16Panels.Get().(*[]float32)
	defer f16Panels.Put(bp)
	if len(*bp) < K*nr {
		*bp = make([]float32, K*nr)
	}
	buf := (*bp)[:K*nr]
	for pn := p0; pn < p1; pn++ {
		j0 := pn * nr
		cols := min(nr, w.n-j0)
		w.packPanel(buf, nr, j0, cols, rb)
		gemmBlock(kern, &gemmOp{m: m, n: cols, k: K, a: x, lda: K, b: buf, c: y[j0:], ldc: w.n}, 0, m, 0, 1)
	}
}

// packPanel widens rows j0..j0+cols-1 into buf as a GEMM panel of nr
// columns: buf[kk*nr+c] is row j0+c's value kk, columns past cols zero.
func (w *f16Weights) packPanel(buf []float32, nr, j0, cols, rb int) {
	K := w.k
	k8 := K / 8
	c := 0
	for _, p := range w.kern.packs {
		for ; k8 > 0 && c+p.rows <= cols; c += p.rows {
			p.fn(&w.raw[(j0+c)*rb], rb, &buf[c], nr, k8)
		}
	}
	for kk := 8 * k8; kk < K; kk++ {
		for i := 0; i < c; i++ {
			buf[kk*nr+i] = f16Widen(binary.LittleEndian.Uint16(w.raw[(j0+i)*rb+2*kk:]), w.bf)
		}
	}
	for ; c < cols; c++ {
		row := w.raw[(j0+c)*rb : (j0+c+1)*rb]
		for kk := 0; kk < K; kk++ {
			buf[kk*nr+c] = f16Widen(binary.LittleEndian.Uint16(row[2*kk:]), w.bf)
		}
	}
	if cols < nr {
		for kk := 0; kk < K; kk++ {
			clear(buf[kk*nr+cols : kk*nr+nr])
		}
	}
}
